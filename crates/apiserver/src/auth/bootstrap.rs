//! The default policy created at server start, as kube-apiserver's `bootstrappolicy` creates
//! it: the ClusterRoles operators bind to and the `system:` ones every cluster has, and their
//! ClusterRoleBindings, each labelled `kubernetes.io/bootstrapping: rbac-defaults` and
//! annotated `rbac.authorization.kubernetes.io/autoupdate: "true"`.
//!
//! - `cluster-admin` (everything), bound to the group `system:masters`.
//! - `admin`, `edit`, `view`: aggregated (their rules are written by the ClusterRole
//!   aggregation from the roles labelled `rbac.authorization.k8s.io/aggregate-to-admin`,
//!   `-edit`, `-view`: `system:aggregate-to-*` here, an operator's own roles too); `edit` is
//!   aggregated into `admin` and `view` into `edit`, as upstream.
//! - `system:discovery` and `system:basic-user` (access reviews of oneself, `whoami`), bound to
//!   `system:authenticated`; `system:public-info-viewer` (`/healthz`, `/livez`, `/readyz`,
//!   `/version`), bound to `system:authenticated` and `system:unauthenticated`.
//! - `system:auth-delegator` (TokenReview, SubjectAccessReview: what a metrics filter needs),
//!   `system:monitoring` (health and `/metrics`, bound to the group `system:monitoring`),
//!   `system:service-account-issuer-discovery` (bound to `system:serviceaccounts`).
//!
//! The rules are upstream's (`policy.go`, 1.33), written as tables here.

use serde_json::{Value, json};

use crate::storage::{Storage, WriteOptions};

const GROUP: &str = "rbac.authorization.k8s.io";

/// One rule of a table: verbs, API groups, resources (or, with no groups, non-resource URLs).
type RuleRow = (
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
);

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

const AGGREGATE_TO_ADMIN: &[RuleRow] = &[
    (
        &["create"],
        &["authorization.k8s.io"],
        &["localsubjectaccessreviews"],
    ),
    (READ_WRITE, &[GROUP], &["rolebindings", "roles"]),
];

const AGGREGATE_TO_EDIT: &[RuleRow] = &[
    (
        READ,
        &[""],
        &[
            "pods/attach",
            "pods/exec",
            "pods/portforward",
            "pods/proxy",
            "secrets",
            "services/proxy",
        ],
    ),
    (&["impersonate"], &[""], &["serviceaccounts"]),
    (
        WRITE,
        &[""],
        &[
            "pods",
            "pods/attach",
            "pods/exec",
            "pods/portforward",
            "pods/proxy",
        ],
    ),
    (&["create"], &[""], &["pods/eviction"]),
    (
        WRITE,
        &[""],
        &[
            "configmaps",
            "events",
            "persistentvolumeclaims",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "secrets",
            "serviceaccounts",
            "services",
            "services/proxy",
        ],
    ),
    (&["create"], &[""], &["serviceaccounts/token"]),
    (
        WRITE,
        &["apps"],
        &[
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "replicasets",
            "replicasets/scale",
            "statefulsets",
            "statefulsets/scale",
        ],
    ),
    (WRITE, &["autoscaling"], &["horizontalpodautoscalers"]),
    (WRITE, &["batch"], &["cronjobs", "jobs"]),
    (
        WRITE,
        &["extensions"],
        &[
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "ingresses",
            "networkpolicies",
            "replicasets",
            "replicasets/scale",
            "replicationcontrollers/scale",
        ],
    ),
    (WRITE, &["policy"], &["poddisruptionbudgets"]),
    (
        WRITE,
        &["networking.k8s.io"],
        &["ingresses", "networkpolicies"],
    ),
    (READ_WRITE, &["coordination.k8s.io"], &["leases"]),
];

const AGGREGATE_TO_VIEW: &[RuleRow] = &[
    (
        READ,
        &[""],
        &[
            "configmaps",
            "endpoints",
            "persistentvolumeclaims",
            "persistentvolumeclaims/status",
            "pods",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/status",
        ],
    ),
    (
        READ,
        &[""],
        &[
            "bindings",
            "events",
            "limitranges",
            "namespaces/status",
            "pods/log",
            "pods/status",
            "replicationcontrollers/status",
            "resourcequotas",
            "resourcequotas/status",
        ],
    ),
    (READ, &[""], &["namespaces"]),
    (READ, &["discovery.k8s.io"], &["endpointslices"]),
    (
        READ,
        &["apps"],
        &[
            "controllerrevisions",
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "statefulsets",
            "statefulsets/scale",
            "statefulsets/status",
        ],
    ),
    (
        READ,
        &["autoscaling"],
        &[
            "horizontalpodautoscalers",
            "horizontalpodautoscalers/status",
        ],
    ),
    (
        READ,
        &["batch"],
        &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
    ),
    (
        READ,
        &["extensions"],
        &[
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "ingresses",
            "ingresses/status",
            "networkpolicies",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "replicationcontrollers/scale",
        ],
    ),
    (
        READ,
        &["policy"],
        &["poddisruptionbudgets", "poddisruptionbudgets/status"],
    ),
    (
        READ,
        &["networking.k8s.io"],
        &["ingresses", "ingresses/status", "networkpolicies"],
    ),
];

const CLUSTER_ADMIN: &[RuleRow] = &[(&["*"], &["*"], &["*"]), (&["*"], &[], &["*"])];

const DISCOVERY: &[RuleRow] = &[(
    &["get"],
    &[],
    &[
        "/api",
        "/api/*",
        "/apis",
        "/apis/*",
        "/healthz",
        "/livez",
        "/openapi",
        "/openapi/*",
        "/readyz",
        "/version",
        "/version/",
    ],
)];

const BASIC_USER: &[RuleRow] = &[
    (
        &["create"],
        &["authorization.k8s.io"],
        &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
    ),
    (
        &["create"],
        &["authentication.k8s.io"],
        &["selfsubjectreviews"],
    ),
];

const PUBLIC_INFO_VIEWER: &[RuleRow] = &[(
    &["get"],
    &[],
    &["/healthz", "/livez", "/readyz", "/version", "/version/"],
)];

const AUTH_DELEGATOR: &[RuleRow] = &[
    (&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
    (
        &["create"],
        &["authorization.k8s.io"],
        &["subjectaccessreviews"],
    ),
];

const MONITORING: &[RuleRow] = &[(
    &["get"],
    &[],
    &[
        "/healthz",
        "/healthz/*",
        "/livez",
        "/livez/*",
        "/metrics",
        "/metrics/slis",
        "/readyz",
        "/readyz/*",
    ],
)];

const ISSUER_DISCOVERY: &[RuleRow] = &[(
    &["get"],
    &[],
    &["/.well-known/openid-configuration", "/openid/v1/jwks"],
)];

/// A default ClusterRole: name, labels beside the bootstrapping one, the label an aggregating
/// role selects (if it aggregates), rules.
struct RoleRow {
    name: &'static str,
    aggregate_to: Option<&'static str>,
    aggregates: Option<&'static str>,
    rules: &'static [RuleRow],
}

const ROLES: &[RoleRow] = &[
    RoleRow {
        name: "cluster-admin",
        aggregate_to: None,
        aggregates: None,
        rules: CLUSTER_ADMIN,
    },
    RoleRow {
        name: "admin",
        aggregate_to: None,
        aggregates: Some("admin"),
        rules: &[],
    },
    RoleRow {
        name: "edit",
        aggregate_to: Some("admin"),
        aggregates: Some("edit"),
        rules: &[],
    },
    RoleRow {
        name: "view",
        aggregate_to: Some("edit"),
        aggregates: Some("view"),
        rules: &[],
    },
    RoleRow {
        name: "system:aggregate-to-admin",
        aggregate_to: Some("admin"),
        aggregates: None,
        rules: AGGREGATE_TO_ADMIN,
    },
    RoleRow {
        name: "system:aggregate-to-edit",
        aggregate_to: Some("edit"),
        aggregates: None,
        rules: AGGREGATE_TO_EDIT,
    },
    RoleRow {
        name: "system:aggregate-to-view",
        aggregate_to: Some("view"),
        aggregates: None,
        rules: AGGREGATE_TO_VIEW,
    },
    RoleRow {
        name: "system:discovery",
        aggregate_to: None,
        aggregates: None,
        rules: DISCOVERY,
    },
    RoleRow {
        name: "system:basic-user",
        aggregate_to: None,
        aggregates: None,
        rules: BASIC_USER,
    },
    RoleRow {
        name: "system:public-info-viewer",
        aggregate_to: None,
        aggregates: None,
        rules: PUBLIC_INFO_VIEWER,
    },
    RoleRow {
        name: "system:auth-delegator",
        aggregate_to: None,
        aggregates: None,
        rules: AUTH_DELEGATOR,
    },
    RoleRow {
        name: "system:monitoring",
        aggregate_to: None,
        aggregates: None,
        rules: MONITORING,
    },
    RoleRow {
        name: "system:service-account-issuer-discovery",
        aggregate_to: None,
        aggregates: None,
        rules: ISSUER_DISCOVERY,
    },
];

/// The default ClusterRoleBindings: name (= the role's), groups bound.
const BINDINGS: &[(&str, &[&str])] = &[
    ("cluster-admin", &["system:masters"]),
    ("system:discovery", &["system:authenticated"]),
    ("system:basic-user", &["system:authenticated"]),
    (
        "system:public-info-viewer",
        &["system:authenticated", "system:unauthenticated"],
    ),
    ("system:monitoring", &["system:monitoring"]),
    (
        "system:service-account-issuer-discovery",
        &["system:serviceaccounts"],
    ),
];

fn metadata(name: &str) -> Value {
    json!({
        "name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    })
}

fn rule_json(&(verbs, groups, targets): &RuleRow) -> Value {
    if groups.is_empty() {
        json!({"verbs": verbs, "nonResourceURLs": targets})
    } else {
        json!({"verbs": verbs, "apiGroups": groups, "resources": targets})
    }
}

/// The default ClusterRoles, as objects.
pub fn cluster_roles() -> Vec<Value> {
    ROLES
        .iter()
        .map(|r| {
            let mut meta = metadata(r.name);
            if let Some(to) = r.aggregate_to {
                meta["labels"][format!("{GROUP}/aggregate-to-{to}")] = json!("true");
            }
            let mut role = json!({
                "apiVersion": format!("{GROUP}/v1"),
                "kind": "ClusterRole",
                "metadata": meta,
                "rules": r.rules.iter().map(rule_json).collect::<Vec<_>>(),
            });
            if let Some(from) = r.aggregates {
                role["aggregationRule"] = json!({"clusterRoleSelectors": [
                    {"matchLabels": {format!("{GROUP}/aggregate-to-{from}"): "true"}}
                ]});
            }
            role
        })
        .collect()
}

/// The default ClusterRoleBindings, as objects.
pub fn cluster_role_bindings() -> Vec<Value> {
    BINDINGS
        .iter()
        .map(|(name, groups)| {
            json!({
                "apiVersion": format!("{GROUP}/v1"),
                "kind": "ClusterRoleBinding",
                "metadata": metadata(name),
                "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
                "subjects": groups.iter().map(|g| json!({"apiGroup": GROUP, "kind": "Group", "name": g})).collect::<Vec<_>>(),
            })
        })
        .collect()
}

/// Creates the default policy in `storage` (what is there already is left alone).
pub fn install(storage: &Storage) {
    let opts = WriteOptions {
        field_manager: Some("kube-apiserver".into()),
        ..Default::default()
    };
    for (plural, objects) in [
        ("clusterroles", cluster_roles()),
        ("clusterrolebindings", cluster_role_bindings()),
    ] {
        let Some(res) = storage.resolve(GROUP, "v1", plural) else {
            continue;
        };
        for obj in objects {
            if let Err(e) = storage.create(&res, None, obj, &opts)
                && e.code != 409
            {
                tracing::error!("creating the default {plural}: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::ListOptions;

    #[test]
    fn defaults_are_valid_and_labelled_and_view_edit_admin_are_aggregated() {
        let store = Storage::default();
        install(&store);
        let res = store.resolve(GROUP, "v1", "clusterroles").unwrap();
        let get = |name: &str| store.get(&res, None, name, None).unwrap();
        for role in cluster_roles() {
            let name = role["metadata"]["name"].as_str().unwrap();
            let stored = get(name);
            assert_eq!(
                stored["metadata"]["labels"]["kubernetes.io/bootstrapping"],
                "rbac-defaults"
            );
            assert_eq!(
                stored["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
                "true"
            );
        }
        let rules = |name: &str| get(name)["rules"].as_array().unwrap().clone();
        let view = rules("view");
        assert_eq!(view, rules("system:aggregate-to-view"));
        let edit = rules("edit");
        assert_eq!(
            edit.len(),
            rules("system:aggregate-to-edit").len() + view.len()
        );
        assert!(view.iter().all(|r| edit.contains(r)));
        let admin = rules("admin");
        assert!(edit.iter().all(|r| admin.contains(r)));
        assert!(
            rules("system:aggregate-to-admin")
                .iter()
                .all(|r| admin.contains(r))
        );
        // The aggregation's managed fields are upstream's controller's.
        let managers: Vec<String> = get("admin")["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["manager"].as_str().unwrap().to_string())
            .collect();
        assert!(
            managers.contains(&"clusterrole-aggregation-controller".to_string()),
            "{managers:?}"
        );
        let bindings = store.resolve(GROUP, "v1", "clusterrolebindings").unwrap();
        let list = store
            .list(&bindings, None, &ListOptions::default())
            .unwrap();
        assert_eq!(list["items"].as_array().unwrap().len(), BINDINGS.len());
        // Installing again changes nothing.
        let rv = store.resource_version();
        install(&store);
        assert_eq!(store.resource_version(), rv);
    }
}
