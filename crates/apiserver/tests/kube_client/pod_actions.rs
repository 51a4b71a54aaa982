//! The writes that act on a pod instead of being stored: binding it to a node (as a
//! scheduler does) and evicting it (as `kubectl drain` does), with PodDisruptionBudgets.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube_client::api::{Api, EvictParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::common::{client, code, raw, server};

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]},
    }))
    .unwrap()
}

#[tokio::test]
async fn a_binding_sets_the_node_of_its_pod() {
    let server = server().await;
    let client = client(&server).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    for name in ["p1", "p2", "p3"] {
        pods.create(&PostParams::default(), &pod(name))
            .await
            .unwrap();
    }
    let binding = |pod: &str, kind: &str| {
        serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": pod}, "target": {"apiVersion": "v1", "kind": kind, "name": "node-a"}}))
        .unwrap()
    };
    let sub = "/api/v1/namespaces/default/pods/p1/binding";
    let (status, _, body) = raw(
        &client,
        "POST",
        sub,
        "application/json",
        binding("p1", "Node"),
    )
    .await;
    assert_eq!(
        (status, body["status"].as_str()),
        (201, Some("Success")),
        "{body}"
    );
    let p1 = pods.get("p1").await.unwrap();
    assert_eq!(p1.spec.unwrap().node_name.as_deref(), Some("node-a"));
    let conditions = p1.status.unwrap().conditions.unwrap();
    assert!(
        conditions
            .iter()
            .any(|c| c.type_ == "PodScheduled" && c.status == "True")
    );

    let (status, _, body) = raw(
        &client,
        "POST",
        sub,
        "application/json",
        binding("p1", "Node"),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        body["message"],
        "Operation cannot be fulfilled on pods/binding \"p1\": pod p1 is already assigned to node \"node-a\""
    );
    let (status, _, body) = raw(
        &client,
        "POST",
        sub,
        "application/json",
        binding("p2", "Node"),
    )
    .await;
    assert_eq!(
        (status, body["message"].as_str()),
        (
            400,
            Some("name in URL does not match name in Binding object")
        )
    );

    let coll = "/api/v1/namespaces/default/bindings";
    let (status, _, _) = raw(
        &client,
        "POST",
        coll,
        "application/json",
        binding("p2", "Node"),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(
        pods.get("p2")
            .await
            .unwrap()
            .spec
            .unwrap()
            .node_name
            .as_deref(),
        Some("node-a")
    );
    let (status, _, body) = raw(
        &client,
        "POST",
        coll,
        "application/json",
        binding("p3", "Pod"),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["message"],
        "Binding \"p3\" is invalid: target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\""
    );
    // Nothing was stored under `bindings` (it is create-only; a list is not served).
    let (status, _, _) = raw(&client, "GET", coll, "application/json", Vec::new()).await;
    assert_eq!(status, 405);
}

#[tokio::test]
async fn an_eviction_respects_the_disruption_budget() {
    let server = server().await;
    let client = client(&server).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), "default");
    pods.create(&PostParams::default(), &pod("free"))
        .await
        .unwrap();
    pods.create(&PostParams::default(), &pod("guarded"))
        .await
        .unwrap();

    pods.evict("free", &EvictParams::default()).await.unwrap();
    assert_eq!(code(&pods.get("free").await.unwrap_err()), 404);

    let pdb: PodDisruptionBudget = serde_json::from_value(json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "guard"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
    }))
    .unwrap();
    pdbs.create(&PostParams::default(), &pdb).await.unwrap();
    // (A budget that allows no disruption answers 429, which kube-client retries with backoff:
    // the storage tests check that answer.)
    // As the disruption controller would: one disruption allowed.
    let status = json!({"status": {"observedGeneration": 1, "disruptionsAllowed": 1,
        "currentHealthy": 1, "desiredHealthy": 0, "expectedPods": 1}});
    pdbs.patch_status("guard", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    // As a kubelet would: the pod runs, Ready (a Pending pod is evicted whatever its budget).
    let running = json!({"status": {"phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}]}});
    pods.patch_status("guarded", &PatchParams::default(), &Patch::Merge(&running))
        .await
        .unwrap();
    pods.evict("guarded", &EvictParams::default())
        .await
        .unwrap();
    assert_eq!(code(&pods.get("guarded").await.unwrap_err()), 404);
    let after = pdbs.get("guard").await.unwrap().status.unwrap();
    assert_eq!(after.disruptions_allowed, 0);
    assert!(after.disrupted_pods.unwrap().contains_key("guarded"));
}
