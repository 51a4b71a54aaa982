//! API priority and fairness as clients see it: the bootstrap configuration created at start
//! ([`install`], the objects of `kinds::flowcontrol::bootstrap`), request classification as
//! kube-apiserver's priority-and-fairness filter classifies every request it serves
//! (upstream's `util/flowcontrol`), and the config controller's `Dangling` condition on
//! FlowSchemas. Requests are classified, never queued nor rejected.
//!
//! A request is matched against the FlowSchemas in order of `matchingPrecedence` (ascending,
//! ties broken by name); the first one with a rule matching it classifies it, into that
//! FlowSchema's priority level. A rule matches when one of its subjects is the user (a `User`
//! by name, a `Group` the user is in, a `ServiceAccount` by namespace and name; `*` is any
//! name) and, for a resource request, one of its `resourceRules` (verbs, API groups,
//! `resource` or `resource/subresource`, and either `clusterScope` for a request without
//! namespace or the namespace among `namespaces`; a list of exactly `["*"]` matches all), or,
//! for any other request, one of its `nonResourceRules` (verbs and URLs: `*`, the path itself,
//! or a prefix: `/apis/*` and `/apis` both match `/apis/x`). FlowSchemas whose priority level
//! does not exist are skipped; a missing mandatory FlowSchema or priority level (`exempt`,
//! `catch-all`) is imagined from the bootstrap configuration, with no uid.
//!
//! The answer is what the response headers `X-Kubernetes-PF-FlowSchema-UID` and
//! `X-Kubernetes-PF-PriorityLevel-UID` carry. Long-running requests other than watches
//! (`proxy`, `log`, `exec`, `attach`, `portforward`) are not classified, as upstream's filter
//! lets them through untracked.
//!
//! [`PriorityAndFairness`] keeps the sorted FlowSchemas and the priority levels' uids as a
//! snapshot rebuilt only when a FlowSchema or PriorityLevelConfiguration changed (one lock and
//! two lookups per request otherwise). Each rebuild also runs the config controller's status
//! sync: every FlowSchema's `Dangling` condition says whether its priority level exists
//! (`False`/`Found` or `True`/`NotFound`), written by server-side apply of the status as
//! `api-priority-and-fairness-config-consumer-v1`. The HTTP layer asks for a rebuild right
//! after a write to this group, so the condition is there when the write returns.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use serde_json::{Value, json};

use crate::auth::authz::RequestAttributes;
use crate::kinds::flowcontrol::bootstrap::{self, GROUP};
use crate::storage::{PatchType, Storage, WriteOptions};
use crate::user::UserInfo;

/// Storage keys of FlowSchemas and PriorityLevelConfigurations.
const KEYS: [&str; 2] = [
    "flowschemas.flowcontrol.apiserver.k8s.io",
    "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io",
];
/// The field manager of the `Dangling` condition.
const CONSUMER: &str = "api-priority-and-fairness-config-consumer-v1";
/// The response header naming the FlowSchema's uid.
pub const FLOW_SCHEMA_HEADER: &str = "x-kubernetes-pf-flowschema-uid";
/// The response header naming the priority level's uid.
pub const PRIORITY_LEVEL_HEADER: &str = "x-kubernetes-pf-prioritylevel-uid";

/// What a request was classified into: the uids of its FlowSchema and priority level (empty
/// for an imagined mandatory one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classification {
    /// The FlowSchema's name.
    pub flow_schema: String,
    /// The FlowSchema's uid.
    pub flow_schema_uid: String,
    /// The priority level's name.
    pub priority_level: String,
    /// The priority level's uid.
    pub priority_level_uid: String,
}

/// The classifier the HTTP layer holds: a snapshot of the configuration, rebuilt when it
/// changed.
#[derive(Debug, Default)]
pub struct PriorityAndFairness {
    /// The snapshot and the resourceVersion of the change it was built at.
    snapshot: RwLock<Option<(u64, Arc<Snapshot>)>>,
}

impl PriorityAndFairness {
    /// The classification of a request by `user` with `attrs`, `None` for a long-running
    /// request other than a watch.
    pub fn classify(
        &self,
        storage: &Storage,
        user: &UserInfo,
        attrs: &RequestAttributes,
    ) -> Option<Classification> {
        let long_running = attrs.resource_request
            && (attrs.verb == "proxy"
                || matches!(
                    attrs.subresource.as_str(),
                    "attach" | "exec" | "proxy" | "log" | "portforward"
                ));
        if long_running {
            return None;
        }
        Some(self.refresh(storage).classify(user, attrs))
    }

    /// The current snapshot: the one kept unless a FlowSchema or priority level changed since
    /// it was built; a rebuild also syncs the FlowSchemas' `Dangling` conditions.
    pub fn refresh(&self, storage: &Storage) -> Arc<Snapshot> {
        let since = self.snapshot.read().as_ref().map(|(rv, _)| *rv);
        let Some((rv, objects)) = storage.objects_changed_since(&KEYS, since) else {
            if let Some((_, s)) = &*self.snapshot.read() {
                return s.clone();
            }
            return Arc::new(Snapshot::new(&[], &[]));
        };
        let snapshot = Arc::new(Snapshot::new(&objects[0], &objects[1]));
        {
            let mut kept = self.snapshot.write();
            if kept.as_ref().is_none_or(|(at, _)| *at < rv) {
                *kept = Some((rv, snapshot.clone()));
            }
        }
        sync_conditions(storage);
        snapshot
    }
}

/// Creates the bootstrap configuration (priority levels first, so that no FlowSchema is ever dangling),
/// leaving any object that already exists as it is, then sets each FlowSchema's `Dangling`
/// condition.
pub(crate) fn install(storage: &Storage) {
    let opts = WriteOptions {
        field_manager: Some(bootstrap::PRODUCER.into()),
        ..Default::default()
    };
    for (plural, objects) in [
        ("prioritylevelconfigurations", bootstrap::priority_levels()),
        ("flowschemas", bootstrap::flow_schemas()),
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
    sync_conditions(storage);
}

/// Serializes the status syncs, so that two requests seeing the same change write once.
static SYNC: Mutex<()> = Mutex::new(());

/// Sets every FlowSchema's `Dangling` condition (status, reason and message as upstream's
/// config controller words them) where it is missing or says otherwise.
pub(crate) fn sync_conditions(storage: &Storage) {
    let _one_at_a_time = SYNC.lock();
    let Some((_, objects)) = storage.objects_changed_since(&KEYS, None) else {
        return;
    };
    let Some(res) = storage.resolve(GROUP, "v1", "flowschemas") else {
        return;
    };
    let levels: std::collections::HashSet<&str> = objects[1]
        .iter()
        .filter_map(|pl| pl["metadata"]["name"].as_str())
        .collect();
    let opts = WriteOptions {
        field_manager: Some(CONSUMER.into()),
        force: true,
        ..Default::default()
    };
    for fs in &objects[0] {
        let Some(name) = fs["metadata"]["name"].as_str() else {
            continue;
        };
        let level = fs["spec"]["priorityLevelConfiguration"]["name"]
            .as_str()
            .unwrap_or("");
        let (status, reason, message) = dangling(level, levels.contains(level));
        let current = fs["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Dangling"));
        if current.is_some_and(|c| {
            c["status"] == status && c["reason"] == reason && c["message"] == message.as_str()
        }) {
            continue;
        }
        let body = json!({
            "apiVersion": format!("{GROUP}/v1"),
            "kind": "FlowSchema",
            "metadata": {"name": name},
            "status": {"conditions": [{
                "type": "Dangling",
                "status": status,
                "lastTransitionTime": chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
                "reason": reason,
                "message": message,
            }]},
        });
        let body = serde_json::to_vec(&body).unwrap_or_default();
        let patched = storage.patch(
            &res,
            None,
            name,
            Some("status"),
            PatchType::Apply,
            &body,
            &opts,
        );
        // A FlowSchema deleted meanwhile needs nothing more.
        if let Err(e) = patched
            && e.code != 404
        {
            tracing::error!("failed to set a status.condition for FlowSchema {name}: {e}");
        }
    }
}

/// The `Dangling` condition's status, reason and message for a FlowSchema referring to the
/// priority level `level`.
fn dangling(level: &str, found: bool) -> (&'static str, &'static str, String) {
    if found {
        (
            "False",
            "Found",
            format!(
                "This FlowSchema references the PriorityLevelConfiguration object named {level:?} and it exists"
            ),
        )
    } else {
        (
            "True",
            "NotFound",
            format!(
                "This FlowSchema references the PriorityLevelConfiguration object named {level:?} but there is no such object"
            ),
        )
    }
}

/// A subject of a FlowSchema rule.
#[derive(Debug)]
enum Subject {
    User(String),
    Group(String),
    ServiceAccount { namespace: String, name: String },
    Unknown,
}

impl Subject {
    fn parse(v: &Value) -> Subject {
        let s = |v: &Value| v.as_str().unwrap_or("").to_string();
        match v["kind"].as_str() {
            Some("User") if v["user"].is_object() => Subject::User(s(&v["user"]["name"])),
            Some("Group") if v["group"].is_object() => Subject::Group(s(&v["group"]["name"])),
            Some("ServiceAccount") if v["serviceAccount"].is_object() => Subject::ServiceAccount {
                namespace: s(&v["serviceAccount"]["namespace"]),
                name: s(&v["serviceAccount"]["name"]),
            },
            _ => Subject::Unknown,
        }
    }

    fn matches(&self, user: &UserInfo) -> bool {
        match self {
            Subject::User(name) => name == "*" || *name == user.name,
            Subject::Group(group) => group == "*" || user.in_group(group),
            Subject::ServiceAccount { namespace, name } => user
                .name
                .strip_prefix("system:serviceaccount:")
                .and_then(|rest| rest.strip_prefix(namespace.as_str()))
                .and_then(|rest| rest.strip_prefix(':'))
                .is_some_and(|sa| name == "*" || sa == name),
            Subject::Unknown => false,
        }
    }
}

/// A list of names that a list of exactly `["*"]` makes match everything.
#[derive(Debug)]
struct Names(Vec<String>);

impl Names {
    fn parse(v: &Value) -> Names {
        Names(
            v.as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default(),
        )
    }

    fn contains(&self, x: &str) -> bool {
        matches!(self.0.as_slice(), [only] if only == "*") || self.0.iter().any(|y| y == x)
    }
}

#[derive(Debug)]
struct ResourceRule {
    verbs: Names,
    api_groups: Names,
    resources: Names,
    cluster_scope: bool,
    namespaces: Names,
}

impl ResourceRule {
    fn matches(&self, attrs: &RequestAttributes) -> bool {
        let resource = if attrs.subresource.is_empty() {
            attrs.resource.clone()
        } else {
            format!("{}/{}", attrs.resource, attrs.subresource)
        };
        self.verbs.contains(&attrs.verb)
            && self.resources.contains(&resource)
            && self.api_groups.contains(&attrs.api_group)
            && if attrs.namespace.is_empty() {
                self.cluster_scope
            } else {
                self.namespaces.contains(&attrs.namespace)
            }
    }
}

#[derive(Debug)]
struct NonResourceRule {
    verbs: Names,
    urls: Vec<String>,
}

impl NonResourceRule {
    fn matches(&self, attrs: &RequestAttributes) -> bool {
        self.verbs.contains(&attrs.verb)
            && self.urls.iter().any(|url| {
                if url == "*" || *url == attrs.path {
                    return true;
                }
                let prefix = url.strip_suffix('*').unwrap_or(url);
                if prefix.ends_with('/') {
                    attrs.path.starts_with(prefix)
                } else {
                    attrs
                        .path
                        .strip_prefix(prefix)
                        .is_some_and(|rest| rest.starts_with('/'))
                }
            })
    }
}

#[derive(Debug)]
struct PolicyRules {
    subjects: Vec<Subject>,
    resource_rules: Vec<ResourceRule>,
    non_resource_rules: Vec<NonResourceRule>,
}

impl PolicyRules {
    fn parse(v: &Value) -> PolicyRules {
        let list = |key: &str| v[key].as_array().cloned().unwrap_or_default();
        PolicyRules {
            subjects: list("subjects").iter().map(Subject::parse).collect(),
            resource_rules: list("resourceRules")
                .iter()
                .map(|r| ResourceRule {
                    verbs: Names::parse(&r["verbs"]),
                    api_groups: Names::parse(&r["apiGroups"]),
                    resources: Names::parse(&r["resources"]),
                    cluster_scope: r["clusterScope"].as_bool().unwrap_or(false),
                    namespaces: Names::parse(&r["namespaces"]),
                })
                .collect(),
            non_resource_rules: list("nonResourceRules")
                .iter()
                .map(|r| NonResourceRule {
                    verbs: Names::parse(&r["verbs"]),
                    urls: Names::parse(&r["nonResourceURLs"]).0,
                })
                .collect(),
        }
    }

    fn matches(&self, user: &UserInfo, attrs: &RequestAttributes) -> bool {
        self.subjects.iter().any(|s| s.matches(user))
            && if attrs.resource_request {
                self.resource_rules.iter().any(|r| r.matches(attrs))
            } else {
                self.non_resource_rules.iter().any(|r| r.matches(attrs))
            }
    }
}

#[derive(Debug)]
struct Schema {
    name: String,
    uid: String,
    precedence: i64,
    priority_level: String,
    rules: Vec<PolicyRules>,
}

impl Schema {
    fn parse(fs: &Value) -> Schema {
        let s = |v: &Value| v.as_str().unwrap_or("").to_string();
        Schema {
            name: s(&fs["metadata"]["name"]),
            uid: s(&fs["metadata"]["uid"]),
            precedence: fs["spec"]["matchingPrecedence"].as_i64().unwrap_or(1000),
            priority_level: s(&fs["spec"]["priorityLevelConfiguration"]["name"]),
            rules: fs["spec"]["rules"]
                .as_array()
                .map(|rs| rs.iter().map(PolicyRules::parse).collect())
                .unwrap_or_default(),
        }
    }
}

/// The configuration as classification reads it: the usable FlowSchemas in matching order and
/// the priority levels' uids by name.
#[derive(Debug)]
pub struct Snapshot {
    schemas: Vec<Schema>,
    priority_levels: HashMap<String, String>,
}

impl Snapshot {
    /// A snapshot of these FlowSchemas and PriorityLevelConfigurations.
    fn new(flow_schemas: &[Arc<Value>], priority_levels: &[Arc<Value>]) -> Snapshot {
        let mut levels: HashMap<String, String> = priority_levels
            .iter()
            .map(|pl| {
                let s = |v: &Value| v.as_str().unwrap_or("").to_string();
                (s(&pl["metadata"]["name"]), s(&pl["metadata"]["uid"]))
            })
            .collect();
        for mandatory in ["exempt", "catch-all"] {
            levels.entry(mandatory.into()).or_default();
        }
        let mut schemas: Vec<Schema> = flow_schemas
            .iter()
            .map(|fs| Schema::parse(fs))
            .filter(|s| levels.contains_key(&s.priority_level))
            .collect();
        schemas.sort_by(|a, b| (a.precedence, &a.name).cmp(&(b.precedence, &b.name)));
        if !schemas.iter().any(|s| s.name == "exempt") {
            schemas.insert(0, Schema::parse(&bootstrap::exempt_flow_schema()));
        }
        if !schemas.iter().any(|s| s.name == "catch-all") {
            schemas.push(Schema::parse(&bootstrap::catch_all_flow_schema()));
        }
        Snapshot {
            schemas,
            priority_levels: levels,
        }
    }

    /// The FlowSchema and priority level of a request by `user` with `attrs` (the
    /// `catch-all` one when none matches, as that one matches every request).
    fn classify(&self, user: &UserInfo, attrs: &RequestAttributes) -> Classification {
        let schema = self
            .schemas
            .iter()
            .find(|s| s.rules.iter().any(|r| r.matches(user, attrs)))
            .or_else(|| self.schemas.iter().find(|s| s.name == "catch-all"));
        let (name, uid, level) = schema.map_or(("catch-all", "", "catch-all"), |s| {
            (s.name.as_str(), s.uid.as_str(), s.priority_level.as_str())
        });
        Classification {
            flow_schema: name.into(),
            flow_schema_uid: uid.into(),
            priority_level: level.into(),
            priority_level_uid: self.priority_levels.get(level).cloned().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_uid(mut obj: Value) -> Arc<Value> {
        let uid = format!("uid-{}", obj["metadata"]["name"].as_str().unwrap());
        obj["metadata"]["uid"] = json!(uid);
        Arc::new(obj)
    }

    /// The bootstrap configuration plus `extra` FlowSchemas, each object's uid `uid-NAME`.
    fn snapshot(extra: &[Value]) -> Snapshot {
        let schemas: Vec<_> = bootstrap::flow_schemas()
            .into_iter()
            .chain(extra.iter().cloned())
            .map(with_uid)
            .collect();
        let levels: Vec<_> = bootstrap::priority_levels()
            .into_iter()
            .map(with_uid)
            .collect();
        Snapshot::new(&schemas, &levels)
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    /// `verb group/resource[/subresource] in namespace`, `ns` empty for cluster scope.
    fn res(verb: &str, group: &str, resource: &str, ns: &str) -> RequestAttributes {
        let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
        RequestAttributes {
            verb: verb.into(),
            resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            subresource: subresource.into(),
            namespace: ns.into(),
            ..Default::default()
        }
    }

    fn non_res(verb: &str, path: &str) -> RequestAttributes {
        RequestAttributes {
            verb: verb.into(),
            path: path.into(),
            ..Default::default()
        }
    }

    fn fs(name: &str, level: &str, precedence: i32, rules: Value) -> Value {
        json!({
            "metadata": {"name": name},
            "spec": {
                "priorityLevelConfiguration": {"name": level},
                "matchingPrecedence": precedence,
                "rules": [rules],
            },
        })
    }

    const AUTHED: &str = "system:authenticated";

    #[test]
    fn bootstrap_configuration_classifies_as_upstreams() {
        let s = snapshot(&[]);
        let admin = UserInfo::admin();
        let alice = user("alice", &[AUTHED]);
        let anonymous = UserInfo::anonymous();
        let node = user("system:node:n1", &["system:nodes", AUTHED]);
        let kcm = user("system:kube-controller-manager", &[AUTHED]);
        let kube_system_sa = user(
            "system:serviceaccount:kube-system:deployment-controller",
            &[
                "system:serviceaccounts",
                "system:serviceaccounts:kube-system",
                AUTHED,
            ],
        );
        let endpoint_sa = user(
            "system:serviceaccount:kube-system:endpoint-controller",
            &["system:serviceaccounts", AUTHED],
        );
        let app_sa = user(
            "system:serviceaccount:default:app",
            &[
                "system:serviceaccounts",
                "system:serviceaccounts:default",
                AUTHED,
            ],
        );
        // A user whose name merely starts with a service account namespace's prefix.
        let lookalike = user("system:serviceaccount:kube-systemx:a", &[AUTHED]);
        let cases: &[(&UserInfo, RequestAttributes, &str, &str)] = &[
            (
                &admin,
                res("list", "", "pods", "default"),
                "exempt",
                "exempt",
            ),
            (&admin, non_res("get", "/version"), "exempt", "exempt"),
            (
                &alice,
                res("get", "", "pods", "default"),
                "global-default",
                "global-default",
            ),
            (
                &alice,
                res("list", "apps", "deployments", ""),
                "global-default",
                "global-default",
            ),
            (&alice, non_res("get", "/healthz"), "probes", "exempt"),
            (&alice, non_res("get", "/livez/ping"), "probes", "exempt"),
            (
                &alice,
                non_res("post", "/healthz"),
                "global-default",
                "global-default",
            ),
            (
                &alice,
                non_res("get", "/healthzx"),
                "global-default",
                "global-default",
            ),
            (&anonymous, non_res("get", "/readyz"), "probes", "exempt"),
            (
                &anonymous,
                non_res("get", "/version"),
                "global-default",
                "global-default",
            ),
            (
                &node,
                res("update", "", "nodes/status", ""),
                "system-node-high",
                "node-high",
            ),
            (
                &node,
                res("update", "coordination.k8s.io", "leases", "kube-node-lease"),
                "system-node-high",
                "node-high",
            ),
            // Leases are namespaced in that rule: a cluster-wide list is not.
            (
                &node,
                res("list", "coordination.k8s.io", "leases", ""),
                "system-nodes",
                "system",
            ),
            (
                &node,
                res("get", "", "pods", "default"),
                "system-nodes",
                "system",
            ),
            (
                &kcm,
                res("update", "coordination.k8s.io", "leases", "kube-system"),
                "system-leader-election",
                "leader-election",
            ),
            (
                &kcm,
                res("update", "", "endpoints", "default"),
                "endpoint-controller",
                "workload-high",
            ),
            (
                &kcm,
                res("list", "", "pods", ""),
                "kube-controller-manager",
                "workload-high",
            ),
            (
                &endpoint_sa,
                res("create", "", "endpoints", "web"),
                "endpoint-controller",
                "workload-high",
            ),
            (
                &kube_system_sa,
                res("get", "", "configmaps", "default"),
                "workload-leader-election",
                "leader-election",
            ),
            (
                &kube_system_sa,
                res("patch", "apps", "replicasets", "default"),
                "kube-system-service-accounts",
                "workload-high",
            ),
            (
                &app_sa,
                res("get", "", "configmaps", "default"),
                "service-accounts",
                "workload-low",
            ),
            (
                &lookalike,
                res("get", "", "configmaps", "default"),
                "global-default",
                "global-default",
            ),
        ];
        for (who, attrs, schema, level) in cases {
            let c = s.classify(who, attrs);
            assert_eq!(
                (c.flow_schema.as_str(), c.priority_level.as_str()),
                (*schema, *level),
                "{} {attrs:?}",
                who.name
            );
            assert_eq!(c.flow_schema_uid, format!("uid-{schema}"));
            assert_eq!(c.priority_level_uid, format!("uid-{level}"));
        }
    }

    #[test]
    fn rules_match_subjects_resources_and_urls_as_upstream() {
        let extra = [
            fs(
                "users",
                "workload-high",
                10,
                json!({
                    "subjects": [{"kind": "User", "user": {"name": "bob"}}],
                    "resourceRules": [{
                        "verbs": ["get", "list"], "apiGroups": ["apps"],
                        "resources": ["deployments", "deployments/scale"],
                        "namespaces": ["team-a"], "clusterScope": false,
                    }],
                }),
            ),
            fs(
                "groups",
                "workload-low",
                11,
                json!({
                    "subjects": [{"kind": "Group", "group": {"name": "ops"}}],
                    "resourceRules": [{
                        "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                        "clusterScope": true,
                    }],
                    "nonResourceURLs": [],
                    "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/metrics", "/debug/*"]}],
                }),
            ),
            fs(
                "any-sa-in-ci",
                "system",
                12,
                json!({
                    "subjects": [{"kind": "ServiceAccount", "serviceAccount": {"namespace": "ci", "name": "*"}}],
                    "resourceRules": [{
                        "verbs": ["*"], "apiGroups": [""], "resources": ["*"], "namespaces": ["*"],
                    }],
                }),
            ),
            fs(
                "everyone-named-star",
                "system",
                13,
                json!({
                    "subjects": [{"kind": "User", "user": {"name": "*"}}],
                    "resourceRules": [{
                        "verbs": ["delete"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*", "x"],
                    }],
                }),
            ),
        ];
        let s = snapshot(&extra);
        let bob = user("bob", &[AUTHED]);
        let op = user("carol", &["ops", AUTHED]);
        let ci = user(
            "system:serviceaccount:ci:runner",
            &["system:serviceaccounts", AUTHED],
        );
        let cases: &[(&UserInfo, RequestAttributes, &str)] = &[
            (&bob, res("get", "apps", "deployments", "team-a"), "users"),
            (
                &bob,
                res("get", "apps", "deployments/scale", "team-a"),
                "users",
            ),
            (
                &bob,
                res("get", "apps", "deployments/status", "team-a"),
                "global-default",
            ),
            (
                &bob,
                res("update", "apps", "deployments", "team-a"),
                "global-default",
            ),
            (
                &bob,
                res("get", "apps", "deployments", "team-b"),
                "global-default",
            ),
            (
                &bob,
                res("list", "apps", "deployments", ""),
                "global-default",
            ),
            (
                &bob,
                res("get", "", "deployments", "team-a"),
                "global-default",
            ),
            // Cluster scope only: no namespaces listed.
            (&op, res("list", "", "nodes", ""), "groups"),
            (&op, res("list", "", "pods", "default"), "global-default"),
            (&op, non_res("get", "/metrics"), "groups"),
            (&op, non_res("get", "/metrics/slis"), "groups"),
            (&op, non_res("get", "/debug/pprof/heap"), "groups"),
            (&op, non_res("get", "/debug"), "global-default"),
            (&op, non_res("get", "/metricsx"), "global-default"),
            (
                &ci,
                res("create", "", "pods/eviction", "ci"),
                "any-sa-in-ci",
            ),
            (
                &ci,
                res("create", "batch", "jobs", "ci"),
                "service-accounts",
            ),
            (&ci, res("list", "", "pods", ""), "service-accounts"),
            // `*` among other namespaces is a namespace's name, not a wildcard.
            (&bob, res("delete", "", "pods", "default"), "global-default"),
            (&bob, res("delete", "", "pods", "x"), "everyone-named-star"),
        ];
        for (who, attrs, schema) in cases {
            let c = s.classify(who, attrs);
            assert_eq!(c.flow_schema, *schema, "{} {attrs:?}", who.name);
        }
    }

    #[test]
    fn precedence_ties_are_broken_by_name_and_masters_are_exempt() {
        let rule = json!({
            "subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"], "clusterScope": true}],
        });
        let mut masters_rule = rule.clone();
        masters_rule["subjects"][0]["group"]["name"] = json!("system:masters");
        let s = snapshot(&[
            fs("b-second", "workload-low", 50, rule.clone()),
            fs("a-first", "workload-high", 50, rule.clone()),
            fs("before-all", "system", 1, masters_rule),
        ]);
        let alice = user("alice", &[AUTHED]);
        let c = s.classify(&alice, &res("get", "", "pods", "default"));
        assert_eq!(
            (c.flow_schema.as_str(), c.priority_level.as_str()),
            ("a-first", "workload-high")
        );
        // Precedence 1 ties with `exempt`, which sorts after `before-all`.
        let c = s.classify(&UserInfo::admin(), &res("get", "", "pods", "default"));
        assert_eq!(c.flow_schema, "before-all");
        let s = snapshot(&[fs("b-second", "workload-low", 50, rule)]);
        let c = s.classify(&UserInfo::admin(), &res("get", "", "pods", "default"));
        assert_eq!(
            (c.flow_schema.as_str(), c.flow_schema_uid.as_str()),
            ("exempt", "uid-exempt")
        );
        assert_eq!(c.priority_level_uid, "uid-exempt");
    }

    #[test]
    fn dangling_schemas_are_skipped_and_missing_mandatory_ones_imagined() {
        let everyone = json!({
            "subjects": [{"kind": "Group", "group": {"name": "*"}}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        });
        let s = snapshot(&[fs("dangling", "no-such-level", 3, everyone)]);
        let c = s.classify(&user("alice", &[AUTHED]), &non_res("get", "/version"));
        assert_eq!(c.flow_schema, "global-default");
        // Nothing stored: the mandatory objects, imagined without uids.
        let s = Snapshot::new(&[], &[]);
        let c = s.classify(&UserInfo::admin(), &non_res("get", "/version"));
        assert_eq!(
            (c.flow_schema.as_str(), c.flow_schema_uid.as_str()),
            ("exempt", "")
        );
        let c = s.classify(&user("alice", &[AUTHED]), &non_res("get", "/version"));
        assert_eq!(c.flow_schema, "catch-all");
        assert_eq!(c.priority_level, "catch-all");
    }

    #[test]
    fn long_running_requests_other_than_watches_are_not_classified() {
        let apf = PriorityAndFairness::default();
        let store = Storage::default();
        let alice = user("alice", &[AUTHED]);
        assert_eq!(
            apf.classify(&store, &alice, &res("get", "", "pods/log", "default")),
            None
        );
        assert_eq!(
            apf.classify(&store, &alice, &res("create", "", "pods/exec", "default")),
            None
        );
        let watch = apf.classify(&store, &alice, &res("watch", "", "pods", "default"));
        assert_eq!(watch.unwrap().flow_schema, "catch-all");
    }

    #[test]
    fn bootstrap_objects_are_stored_annotated_and_not_dangling() {
        let store = Storage::default();
        install(&store);
        let apf = PriorityAndFairness::default();
        let fs_res = store.resolve(GROUP, "v1", "flowschemas").unwrap();
        let pl_res = store
            .resolve(GROUP, "v1", "prioritylevelconfigurations")
            .unwrap();
        for fs in bootstrap::flow_schemas() {
            let name = fs["metadata"]["name"].as_str().unwrap();
            let stored = store.get(&fs_res, None, name, None).unwrap();
            assert_eq!(
                stored["metadata"]["annotations"][bootstrap::AUTOUPDATE],
                "true"
            );
            assert_eq!(stored["spec"], fs["spec"], "{name}");
            let cond = &stored["status"]["conditions"][0];
            assert_eq!(
                (&cond["type"], &cond["status"], &cond["reason"]),
                (&json!("Dangling"), &json!("False"), &json!("Found")),
                "{name}"
            );
        }
        let pl = store.get(&pl_res, None, "global-default", None).unwrap();
        assert_eq!(pl["spec"]["limited"]["nominalConcurrencyShares"], 20);
        // A FlowSchema naming a missing level turns dangling on the next refresh, and found
        // again once the level is created.
        let opts = WriteOptions::default();
        let mut broken = fs("broken", "later", 5000, json!({"subjects": []}));
        broken["apiVersion"] = json!("flowcontrol.apiserver.k8s.io/v1");
        broken["kind"] = json!("FlowSchema");
        store.create(&fs_res, None, broken, &opts).unwrap();
        apf.refresh(&store);
        let cond =
            store.get(&fs_res, None, "broken", None).unwrap()["status"]["conditions"][0].clone();
        assert_eq!(cond["status"], "True");
        assert_eq!(cond["reason"], "NotFound");
        assert_eq!(
            cond["message"],
            "This FlowSchema references the PriorityLevelConfiguration object named \"later\" but there is no such object"
        );
        let mut later = bootstrap::exempt_priority_level();
        later["metadata"] = json!({"name": "later"});
        store.create(&pl_res, None, later, &opts).unwrap();
        apf.refresh(&store);
        let stored = store.get(&fs_res, None, "broken", None).unwrap();
        let conditions = stored["status"]["conditions"].as_array().unwrap();
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0]["reason"], "Found");
        assert_eq!(
            conditions[0]["message"],
            "This FlowSchema references the PriorityLevelConfiguration object named \"later\" and it exists"
        );
    }
}
