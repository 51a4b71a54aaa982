//! The API priority and fairness configuration every kube-apiserver creates at start
//! (upstream's `apis/flowcontrol/bootstrap`, 1.33): the mandatory PriorityLevelConfigurations
//! `exempt` and `catch-all` with their FlowSchemas of the same names, and the suggested ones
//! (`system`, `node-high`, `leader-election`, `workload-high`, `workload-low`,
//! `global-default` and the eleven FlowSchemas sending to them). Each carries
//! `apf.kubernetes.io/autoupdate-spec: "true"`; the server creates them at start as the field
//! manager `api-priority-and-fairness-config-producer-v1`, as upstream's ensurer does (see
//! `http::flowcontrol`).

use serde_json::{Value, json};

/// The API group.
pub(crate) const GROUP: &str = "flowcontrol.apiserver.k8s.io";
/// The annotation marking an object the server keeps up to date.
pub(crate) const AUTOUPDATE: &str = "apf.kubernetes.io/autoupdate-spec";
/// The field manager of the objects created at start.
pub(crate) const PRODUCER: &str = "api-priority-and-fairness-config-producer-v1";

/// Every verb, group, resource, namespace or non-resource URL (`*`).
const ALL: &[&str] = &["*"];
/// The leader-election verbs.
const GET_CREATE_UPDATE: &[&str] = &["get", "create", "update"];

/// The groups of every request, authenticated or not.
const EVERYONE: &[&str] = &["system:unauthenticated", "system:authenticated"];

fn metadata(name: &str) -> Value {
    json!({"name": name, "annotations": {AUTOUPDATE: "true"}})
}

/// A limited priority level that queues: nominal concurrency shares, lendable percent, queues,
/// hand size and queue length limit.
fn queuing(name: &str, shares: i32, lendable: i32, queues: i32, hand: i32, length: i32) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": "PriorityLevelConfiguration",
        "metadata": metadata(name),
        "spec": {
            "type": "Limited",
            "limited": {
                "nominalConcurrencyShares": shares,
                "lendablePercent": lendable,
                "limitResponse": {
                    "type": "Queue",
                    "queuing": {"queues": queues, "handSize": hand, "queueLengthLimit": length},
                },
            },
        },
    })
}

/// The mandatory priority level `exempt`.
pub(crate) fn exempt_priority_level() -> Value {
    json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": "PriorityLevelConfiguration",
        "metadata": metadata("exempt"),
        "spec": {
            "type": "Exempt",
            "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0},
        },
    })
}

/// The mandatory priority level `catch-all`.
pub(crate) fn catch_all_priority_level() -> Value {
    json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": "PriorityLevelConfiguration",
        "metadata": metadata("catch-all"),
        "spec": {
            "type": "Limited",
            "limited": {
                "nominalConcurrencyShares": 5,
                "lendablePercent": 0,
                "limitResponse": {"type": "Reject"},
            },
        },
    })
}

/// The PriorityLevelConfigurations, mandatory then suggested, in upstream's order.
pub(crate) fn priority_levels() -> Vec<Value> {
    vec![
        catch_all_priority_level(),
        exempt_priority_level(),
        queuing("system", 30, 33, 64, 6, 50),
        queuing("node-high", 40, 25, 64, 6, 50),
        queuing("leader-election", 10, 0, 16, 4, 50),
        queuing("workload-high", 40, 50, 128, 6, 50),
        queuing("workload-low", 100, 90, 128, 6, 50),
        queuing("global-default", 20, 50, 128, 6, 50),
    ]
}

fn groups(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| json!({"kind": "Group", "group": {"name": n}}))
        .collect()
}

fn users(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| json!({"kind": "User", "user": {"name": n}}))
        .collect()
}

fn kube_system_service_accounts(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| json!({"kind": "ServiceAccount", "serviceAccount": {"name": n, "namespace": "kube-system"}}))
        .collect()
}

fn resource_rule(
    verbs: &[&str],
    groups: &[&str],
    resources: &[&str],
    namespaces: &[&str],
    cluster_scope: bool,
) -> Value {
    json!({
        "verbs": verbs,
        "apiGroups": groups,
        "resources": resources,
        "namespaces": namespaces,
        "clusterScope": cluster_scope,
    })
}

/// The rule of everything: every resource anywhere and every non-resource URL.
fn everything(subjects: Vec<Value>) -> Value {
    json!({
        "subjects": subjects,
        "resourceRules": [resource_rule(ALL, ALL, ALL, ALL, true)],
        "nonResourceRules": [{"verbs": ALL, "nonResourceURLs": ALL}],
    })
}

/// A FlowSchema: name, priority level, matching precedence, distinguisher method (`None` for
/// none) and rules.
fn flow_schema(
    name: &str,
    priority_level: &str,
    precedence: i32,
    distinguisher: Option<&str>,
    rules: Value,
) -> Value {
    let mut spec = json!({
        "priorityLevelConfiguration": {"name": priority_level},
        "matchingPrecedence": precedence,
        "rules": [rules],
    });
    if let Some(method) = distinguisher {
        spec["distinguisherMethod"] = json!({"type": method});
    }
    json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": "FlowSchema",
        "metadata": metadata(name),
        "spec": spec,
    })
}

/// The mandatory FlowSchema `exempt`: `system:masters`, everything, at precedence 1.
pub(crate) fn exempt_flow_schema() -> Value {
    flow_schema(
        "exempt",
        "exempt",
        1,
        None,
        everything(groups(&["system:masters"])),
    )
}

/// The mandatory FlowSchema `catch-all`: everyone, everything, at precedence 10000.
pub(crate) fn catch_all_flow_schema() -> Value {
    flow_schema(
        "catch-all",
        "catch-all",
        10000,
        Some("ByUser"),
        everything(groups(EVERYONE)),
    )
}

/// The FlowSchemas, mandatory then suggested, in upstream's order.
pub(crate) fn flow_schemas() -> Vec<Value> {
    let leases = |namespaces: &[&str]| {
        resource_rule(
            GET_CREATE_UPDATE,
            &["coordination.k8s.io"],
            &["leases"],
            namespaces,
            false,
        )
    };
    let mut leader_election_subjects =
        users(&["system:kube-controller-manager", "system:kube-scheduler"]);
    leader_election_subjects.extend(kube_system_service_accounts(ALL));
    let mut endpoint_subjects = users(&["system:kube-controller-manager"]);
    endpoint_subjects.extend(kube_system_service_accounts(&[
        "endpoint-controller",
        "endpointslicemirroring-controller",
    ]));
    vec![
        exempt_flow_schema(),
        catch_all_flow_schema(),
        flow_schema(
            "system-nodes",
            "system",
            500,
            Some("ByUser"),
            everything(groups(&["system:nodes"])),
        ),
        flow_schema(
            "system-node-high",
            "node-high",
            400,
            Some("ByUser"),
            json!({
                "subjects": groups(&["system:nodes"]),
                "resourceRules": [
                    resource_rule(ALL, &[""], &["nodes", "nodes/status"], ALL, true),
                    resource_rule(ALL, &["coordination.k8s.io"], &["leases"], ALL, false),
                ],
            }),
        ),
        flow_schema(
            "probes",
            "exempt",
            2,
            None,
            json!({
                "subjects": groups(EVERYONE),
                "nonResourceRules": [
                    {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]},
                ],
            }),
        ),
        flow_schema(
            "system-leader-election",
            "leader-election",
            100,
            Some("ByUser"),
            json!({
                "subjects": leader_election_subjects,
                "resourceRules": [leases(ALL)],
            }),
        ),
        flow_schema(
            "workload-leader-election",
            "leader-election",
            200,
            Some("ByUser"),
            json!({
                "subjects": kube_system_service_accounts(ALL),
                "resourceRules": [
                    resource_rule(GET_CREATE_UPDATE, &[""], &["endpoints", "configmaps"], ALL, false),
                    leases(ALL),
                ],
            }),
        ),
        flow_schema(
            "endpoint-controller",
            "workload-high",
            150,
            Some("ByUser"),
            json!({
                "subjects": endpoint_subjects,
                "resourceRules": [
                    resource_rule(GET_CREATE_UPDATE, &[""], &["endpoints"], ALL, false),
                ],
            }),
        ),
        flow_schema(
            "kube-controller-manager",
            "workload-high",
            800,
            Some("ByNamespace"),
            everything(users(&["system:kube-controller-manager"])),
        ),
        flow_schema(
            "kube-scheduler",
            "workload-high",
            800,
            Some("ByNamespace"),
            everything(users(&["system:kube-scheduler"])),
        ),
        flow_schema(
            "kube-system-service-accounts",
            "workload-high",
            900,
            Some("ByNamespace"),
            everything(kube_system_service_accounts(ALL)),
        ),
        flow_schema(
            "service-accounts",
            "workload-low",
            9000,
            Some("ByUser"),
            everything(groups(&["system:serviceaccounts"])),
        ),
        flow_schema(
            "global-default",
            "global-default",
            9900,
            Some("ByUser"),
            everything(groups(EVERYONE)),
        ),
    ]
}
