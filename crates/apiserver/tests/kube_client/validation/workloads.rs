//! Bad inputs of pods, pod templates and the workloads that carry them (apps, batch).

use serde_json::json;

use super::{Case, check_all, object};

#[tokio::test]
async fn workload_bad_inputs_are_refused_as_upstream_refuses_them() {
    check_all(vec![Case::create(
        "ValidatePodSpec: containers required",
        object("v1", "Pod", "empty", json!({"spec": {"containers": []}})),
        "Pod \"empty\" is invalid: spec.containers: Required value",
    )])
    .await;
}
