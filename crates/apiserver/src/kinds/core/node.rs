//! Nodes.

use crate::kinds::{Strategy, label, strategy::DEFAULT};
use crate::patch::MergeRoot;
use crate::table::columns::*;
use serde_json::{Value, json};

/// The Node strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    field_labels: &[label("spec.unschedulable").absent("false")],
    merge_root: MergeRoot::Node,
    columns: node_columns,
    columns_after_age: || vec![("Version", |o| info(o, "kubeletVersion", ""))],
    columns_wide: || {
        vec![
            ("Internal-IP", |o| address(o, "InternalIP")),
            ("External-IP", |o| address(o, "ExternalIP")),
            ("OS-Image", |o| info(o, "osImage", "<unknown>")),
            ("Kernel-Version", |o| info(o, "kernelVersion", "<unknown>")),
            ("Container-Runtime", |o| {
                info(o, "containerRuntimeVersion", "<unknown>")
            }),
        ]
    },
    ..DEFAULT
};

/// A `status.nodeInfo` field, `absent` when unset.
fn info(o: &Value, field: &str, absent: &str) -> Value {
    json!(
        get(o, &format!("/status/nodeInfo/{field}"))
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .unwrap_or(absent)
    )
}

/// The first address of `kind` in `status.addresses`, `<none>` without one.
fn address(o: &Value, kind: &str) -> Value {
    json!(
        get(o, "/status/addresses")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().find(|a| a["type"] == kind))
            .and_then(|a| a["address"].as_str())
            .unwrap_or("<none>")
    )
}

/// The roles upstream's printer shows: the `node-role.kubernetes.io/<role>` labels' roles and
/// the `kubernetes.io/role` label's value, sorted, or `<none>`.
fn roles(o: &Value) -> Value {
    let mut roles: Vec<&str> = get(o, "/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| match k.strip_prefix("node-role.kubernetes.io/") {
            Some(role) if !role.is_empty() => Some(role),
            _ if k == "kubernetes.io/role" => v.as_str().filter(|v| !v.is_empty()),
            _ => None,
        })
        .collect();
    roles.sort_unstable();
    roles.dedup();
    json!(if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.join(",")
    })
}

fn node_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Status", status), ("Roles", roles)]
}

/// `Ready` or `NotReady` (`Unknown` without conditions), `,SchedulingDisabled` when cordoned.
fn status(o: &Value) -> Value {
    let conditions = get(o, "/status/conditions").and_then(Value::as_array);
    let mut status = match conditions {
        None => "Unknown".to_string(),
        Some(cs) => match cs.iter().find(|c| c["type"] == "Ready") {
            Some(c) if c["status"] == "True" => "Ready".into(),
            Some(_) => "NotReady".into(),
            None => "Unknown".into(),
        },
    };
    if get(o, "/spec/unschedulable") == Some(&json!(true)) {
        status.push_str(",SchedulingDisabled");
    }
    json!(status)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn the_table_prints_what_upstream_prints() {
        let node = json!({
            "metadata": {"labels": {"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/control-plane": ""}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.2"}],
                       "nodeInfo": {"kubeletVersion": "v1.33.0", "osImage": "crt"}}});
        let s = &super::STRATEGY;
        let cells = |cols: Vec<(&'static str, crate::table::columns::CellFn)>| {
            cols.into_iter()
                .map(|(n, f)| (n, f(&node)))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            cells((s.columns)()),
            [
                ("Status", json!("Ready,SchedulingDisabled")),
                ("Roles", json!("control-plane,worker"))
            ]
        );
        assert_eq!(
            cells((s.columns_after_age)()),
            [("Version", json!("v1.33.0"))]
        );
        assert_eq!(
            cells((s.columns_wide)()),
            [
                ("Internal-IP", json!("10.0.0.2")),
                ("External-IP", json!("<none>")),
                ("OS-Image", json!("crt")),
                ("Kernel-Version", json!("<unknown>")),
                ("Container-Runtime", json!("<unknown>"))
            ]
        );
        let bare = json!({});
        assert_eq!(((s.columns)()[0].1)(&bare), json!("Unknown"));
        assert_eq!(((s.columns)()[1].1)(&bare), json!("<none>"));
    }
}
