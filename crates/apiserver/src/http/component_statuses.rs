//! `componentstatuses` (core/v1, deprecated but served): the health of the control plane's
//! components, computed on every read and never stored. The embedded server is its own
//! scheduler, controller manager and etcd, so each is `Healthy` with the message `ok`, as a
//! healthy kube-apiserver answers. Get and list only; the list ignores selectors, as upstream's
//! does.

use serde_json::{Value, json};

use crate::error::ApiError;

/// The components, in the order kube-apiserver 1.33 checks them.
const COMPONENTS: [&str; 3] = ["scheduler", "controller-manager", "etcd-0"];

/// One component's status (without `kind` and `apiVersion`, as a list item).
fn status(name: &str) -> Value {
    json!({
        "metadata": {"name": name, "creationTimestamp": null},
        "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}],
    })
}

/// The answer of a get (`Some(name)`) or a list (`None`). An unknown name is the 500
/// upstream's storage answers with its plain error.
pub fn answer(name: Option<&str>) -> Result<Value, ApiError> {
    let Some(name) = name else {
        return Ok(json!({
            "kind": "ComponentStatusList",
            "apiVersion": "v1",
            "metadata": {},
            "items": COMPONENTS.iter().map(|c| status(c)).collect::<Vec<_>>(),
        }));
    };
    if !COMPONENTS.contains(&name) {
        return Err(ApiError::internal(format!(
            "Internal error occurred: Component not found: {name}"
        ))
        .with_details(json!({"causes": [{"message": format!("Component not found: {name}")}]})));
    }
    let mut obj = status(name);
    obj["kind"] = json!("ComponentStatus");
    obj["apiVersion"] = json!("v1");
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_component_is_healthy_and_an_unknown_one_is_an_internal_error() {
        let list = answer(None).unwrap();
        let names: Vec<&str> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["scheduler", "controller-manager", "etcd-0"]);
        let one = answer(Some("etcd-0")).unwrap();
        assert_eq!(one["kind"], "ComponentStatus");
        assert_eq!(one["conditions"][0]["type"], "Healthy");
        assert_eq!(one["conditions"][0]["status"], "True");
        let err = answer(Some("kubelet")).unwrap_err();
        assert_eq!(err.code, 500);
        assert_eq!(
            err.message,
            "Internal error occurred: Component not found: kubelet"
        );
    }
}
