//! Pods.

use crate::kinds::{StatusStrategy, Strategy, defaults::*, label, strategy::DEFAULT};
use crate::patch::MergeRoot;
use crate::table::columns::*;
use crate::validation;
use serde_json::{Value, json};

/// The Pod strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    defaults: Some(pod_defaults),
    validate: Some(validation::pod::pod),
    subresource_validators: &[
        (
            "ephemeralcontainers",
            validation::pod::ephemeral_containers_update,
        ),
        ("resize", validation::pod::resize),
    ],
    own_subresources: &["ephemeralcontainers", "resize"],
    status: StatusStrategy::SpecAnd(&["deletionTimestamp", "ownerReferences"]),
    initial_status: Some(|| json!({"phase": "Pending", "qosClass": "BestEffort"})),
    field_labels: &[
        label("spec.nodeName"),
        label("spec.restartPolicy"),
        label("spec.schedulerName"),
        label("spec.serviceAccountName"),
        label("spec.hostNetwork").absent("false"),
        label("status.phase"),
        label("status.podIP"),
        label("status.nominatedNodeName"),
    ],
    merge_root: MergeRoot::Pod,
    columns: pod_columns,
    columns_wide: pod_wide,
    delete_returns_object: true,
    action_subresources: &["binding", "eviction"],
    ..DEFAULT
};

fn pod_defaults(obj: &mut Value, _next_cluster_ip: &mut u32) {
    if let Some(spec) = obj.get_mut("spec") {
        default_pod_spec(spec);
    }
    default_at(obj, ".spec.enableServiceLinks", json!(true));
}

fn pod_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Ready", |o| json!(print_pod(o, chrono::Utc::now()).ready)),
        ("Status", |o| json!(print_pod(o, chrono::Utc::now()).status)),
        ("Restarts", |o| {
            json!(print_pod(o, chrono::Utc::now()).restarts)
        }),
    ]
}

fn pod_wide() -> Vec<(&'static str, CellFn)> {
    vec![
        ("IP", |o| {
            or_none(
                get(o, "/status/podIPs/0/ip")
                    .cloned()
                    .unwrap_or_else(|| string(o, "/status/podIP")),
            )
        }),
        ("Node", |o| or_none(string(o, "/spec/nodeName"))),
        ("Nominated Node", |o| {
            or_none(string(o, "/status/nominatedNodeName"))
        }),
        ("Readiness Gates", readiness_gates),
    ]
}

/// `true/total` of the pod's readiness gates whose condition is `True`, `<none>` without any.
fn readiness_gates(o: &Value) -> Value {
    let gates = get(o, "/spec/readinessGates")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if gates.is_empty() {
        return json!("<none>");
    }
    let conditions = get(o, "/status/conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let met = gates
        .iter()
        .filter(|g| {
            conditions
                .iter()
                .find(|c| c.get("type") == g.get("conditionType"))
                .is_some_and(|c| c["status"] == "True")
        })
        .count();
    json!(format!("{met}/{}", gates.len()))
}

/// The READY, STATUS and RESTARTS cells of a pod.
struct PodCells {
    ready: String,
    status: String,
    restarts: String,
}

/// A pod's cells as upstream's `printPod` computes them: the phase, or the status' reason,
/// overridden by the first init container still running or failed (`Init:1/2`,
/// `Init:CrashLoopBackOff`, `Init:ExitCode:1`), then by the containers' waiting or
/// terminated reasons (`ContainerCreating`, `CrashLoopBackOff`, `Completed`, `ExitCode:1`),
/// `Terminating` while deleted; restarts with the time since the last (`3 (5m ago)`);
/// sidecars (init containers that restart `Always`) counted with the containers.
fn print_pod(o: &Value, now: chrono::DateTime<chrono::Utc>) -> PodCells {
    let list = |p: &str| {
        get(o, p)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    let str_at = |v: &'_ Value, p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let phase = str_at(o, "/status/phase");
    let mut reason = match str_at(o, "/status/reason") {
        r if r.is_empty() => phase.clone(),
        r => r,
    };
    let conditions = list("/status/conditions");
    if conditions
        .iter()
        .any(|c| c["type"] == "PodScheduled" && c["reason"] == "SchedulingGated")
    {
        reason = "SchedulingGated".into();
    }
    let init_specs = list("/spec/initContainers");
    let sidecar = |name: &str| {
        init_specs
            .iter()
            .any(|c| c["name"] == name && c["restartPolicy"] == "Always")
    };
    let total = list("/spec/containers").len()
        + init_specs
            .iter()
            .filter(|c| c["restartPolicy"] == "Always")
            .count();
    let mut ready = 0;
    let mut restarts = 0;
    let mut sidecar_restarts = 0;
    // RFC 3339 timestamps compare as strings.
    let mut last_restart = String::new();
    let mut last_sidecar_restart = String::new();
    let finished = |c: &Value| str_at(c, "/lastState/terminated/finishedAt");
    let mut initializing = false;
    let init_statuses = list("/status/initContainerStatuses");
    for (i, c) in init_statuses.iter().enumerate() {
        let count = c["restartCount"].as_i64().unwrap_or(0);
        restarts += count;
        let at = finished(c);
        if at > last_restart {
            last_restart = at.clone();
        }
        let name = c["name"].as_str().unwrap_or("");
        if sidecar(name) {
            sidecar_restarts += count;
            if at > last_sidecar_restart {
                last_sidecar_restart = at;
            }
        }
        let terminated = c.pointer("/state/terminated");
        let waiting_reason = str_at(c, "/state/waiting/reason");
        if terminated.is_some_and(|t| t["exitCode"].as_i64() == Some(0)) {
            continue;
        }
        if sidecar(name) && c["started"] == json!(true) {
            if c["ready"] == json!(true) {
                ready += 1;
            }
            continue;
        }
        if let Some(t) = terminated {
            reason = match t["reason"].as_str().unwrap_or("") {
                "" => match t["signal"].as_i64().unwrap_or(0) {
                    0 => format!("Init:ExitCode:{}", t["exitCode"].as_i64().unwrap_or(0)),
                    s => format!("Init:Signal:{s}"),
                },
                r => format!("Init:{r}"),
            };
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            reason = format!("Init:{waiting_reason}");
        } else {
            reason = format!("Init:{i}/{}", init_specs.len());
        }
        initializing = true;
        break;
    }
    let initialized = conditions
        .iter()
        .any(|c| c["type"] == "Initialized" && c["status"] == "True");
    if !initializing || initialized {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut running = false;
        for c in list("/status/containerStatuses").iter().rev() {
            restarts += c["restartCount"].as_i64().unwrap_or(0);
            let at = finished(c);
            if at > last_restart {
                last_restart = at;
            }
            let waiting = str_at(c, "/state/waiting/reason");
            let terminated = c.pointer("/state/terminated");
            if !waiting.is_empty() {
                reason = waiting;
            } else if let Some(t) = terminated {
                reason = match t["reason"].as_str().unwrap_or("") {
                    "" => match t["signal"].as_i64().unwrap_or(0) {
                        0 => format!("ExitCode:{}", t["exitCode"].as_i64().unwrap_or(0)),
                        s => format!("Signal:{s}"),
                    },
                    r => r.to_string(),
                };
            } else if c["ready"] == json!(true) && c.pointer("/state/running").is_some() {
                running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && running {
            let pod_ready = conditions
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.into();
        }
    }
    if o.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        reason = if str_at(o, "/status/reason") == "NodeLost" {
            "Unknown".into()
        } else {
            "Terminating".into()
        };
    }
    let restarts = if restarts != 0 && !last_restart.is_empty() {
        format!(
            "{restarts} ({} ago)",
            crate::table::age(Some(&Value::from(last_restart)), now)
        )
    } else {
        restarts.to_string()
    };
    PodCells {
        ready: format!("{ready}/{total}"),
        status: reason,
        restarts,
    }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use serde_json::{Value, json};

    use super::{pod_wide, print_pod};

    /// `(READY, STATUS, RESTARTS)` at 12:00.
    fn cells(pod: &Value) -> (String, String, String) {
        let now = Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap();
        let c = print_pod(pod, now);
        (c.ready, c.status, c.restarts)
    }

    fn t(a: &str, b: &str, c: &str) -> (String, String, String) {
        (a.into(), b.into(), c.into())
    }

    #[test]
    fn the_status_column_reads_as_kubectl_prints_it() {
        let mut pod = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Pending", "containerStatuses": [
                {"name": "a", "ready": false, "restartCount": 0,
                 "state": {"waiting": {"reason": "ContainerCreating"}}},
                {"name": "b", "ready": true, "restartCount": 0,
                 "state": {"running": {}}}]}});
        assert_eq!(cells(&pod), t("1/2", "ContainerCreating", "0"));
        pod["status"]["phase"] = json!("Running");
        pod["status"]["containerStatuses"][0] = json!({"name": "a", "ready": false,
            "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2026-01-01T11:55:00Z"}}});
        assert_eq!(cells(&pod), t("1/2", "CrashLoopBackOff", "3 (5m ago)"));
        pod["metadata"] = json!({"deletionTimestamp": "2026-01-01T11:59:00Z"});
        assert_eq!(cells(&pod).1, "Terminating");

        let init = json!({"spec": {"containers": [{"name": "a"}],
                "initContainers": [{"name": "i1"}, {"name": "i2"}, {"name": "side", "restartPolicy": "Always"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [
                {"name": "i1", "restartCount": 0, "state": {"terminated": {"exitCode": 0}}},
                {"name": "i2", "restartCount": 0, "state": {"running": {}}}]}});
        assert_eq!(cells(&init), t("0/2", "Init:1/3", "0"));
        let failed = json!({"spec": {"containers": [{"name": "a"}], "initContainers": [{"name": "i"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [
                {"name": "i", "restartCount": 0, "state": {"terminated": {"exitCode": 2}}}]}});
        assert_eq!(cells(&failed).1, "Init:ExitCode:2");
        let done = json!({"spec": {"containers": [{"name": "a"}]},
            "status": {"phase": "Succeeded", "containerStatuses": [{"name": "a", "ready": false,
                "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}});
        assert_eq!(cells(&done), t("0/1", "Completed", "0"));
    }

    #[test]
    fn wide_columns_add_the_nominated_node_and_readiness_gates() {
        let cols = pod_wide();
        let names: Vec<&str> = cols.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["IP", "Node", "Nominated Node", "Readiness Gates"]);
        let pod = json!({"spec": {"nodeName": "n1", "readinessGates": [
                {"conditionType": "example.com/a"}, {"conditionType": "example.com/b"}]},
            "status": {"podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}],
                "nominatedNodeName": "n2", "conditions": [
                {"type": "example.com/a", "status": "True"},
                {"type": "example.com/b", "status": "False"}]}});
        let row: Vec<Value> = cols.iter().map(|(_, f)| f(&pod)).collect();
        assert_eq!(
            row,
            [json!("10.0.0.1"), json!("n1"), json!("n2"), json!("1/2")]
        );
        let bare = json!({"spec": {}, "status": {}});
        let row: Vec<Value> = cols.iter().map(|(_, f)| f(&bare)).collect();
        assert_eq!(row, vec![json!("<none>"); 4]);
    }
}
