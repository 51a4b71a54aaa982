//! RBAC, evaluated as kube-apiserver's `plugin/pkg/auth/authorizer/rbac` evaluates it.
//!
//! A [`Policy`] is the stored Roles, ClusterRoles, RoleBindings and ClusterRoleBindings read
//! once into an index; the authorizer rebuilds it when one of them changes and otherwise asks
//! the same one. For a user it visits, as upstream's rule resolver, the ClusterRoleBindings
//! naming the user (directly, through a group, or as a ServiceAccount), then the RoleBindings of
//! the request's namespace; each binding's role's rules are asked in order, and the first rule
//! that allows the request answers it. The index finds the bindings by subject (user names,
//! ServiceAccount user names, group names) instead of scanning them all, and visits them in
//! name order.
//!
//! A rule allows a resource request when its verbs, API groups and resources match (`*`;
//! `resource/subresource`; `*/subresource`) and, when it names resources, the request's name
//! is one of them (so a named rule never allows a `list`, `watch`, `create` or
//! `deletecollection`, which have no name); a non-resource request when its verbs match and
//! one of its `nonResourceURLs` is the path, `*`, or a prefix ending in `*`. As upstream,
//! `resource/*` is no wildcard: it matches only the literal subresource `*`.
//!
//! A binding to a role that does not exist is no grant; a refusal's reason then names it
//! (`RBAC: clusterrole.rbac.authorization.k8s.io "x" not found`), as upstream's does.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use crate::json;
use serde_json::{Value, json};

use super::attributes::RequestAttributes;
use super::user::UserInfo;

/// The username prefix of ServiceAccounts.
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// The username of the ServiceAccount `namespace/name`.
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
}

/// One `PolicyRule`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    /// `verbs`.
    pub verbs: Vec<String>,
    /// `apiGroups`.
    pub api_groups: Vec<String>,
    /// `resources`.
    pub resources: Vec<String>,
    /// `resourceNames`.
    pub resource_names: Vec<String>,
    /// `nonResourceURLs`.
    pub non_resource_urls: Vec<String>,
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

impl Rule {
    /// A rule from its JSON (`rbac.authorization.k8s.io/v1` `PolicyRule`).
    pub fn from_json(v: &Value) -> Rule {
        Rule {
            verbs: strings(v, "verbs"),
            api_groups: strings(v, "apiGroups"),
            resources: strings(v, "resources"),
            resource_names: strings(v, "resourceNames"),
            non_resource_urls: strings(v, "nonResourceURLs"),
        }
    }

    /// The rules of a role's JSON.
    pub fn list(role: &Value) -> Vec<Rule> {
        role.get("rules")
            .and_then(Value::as_array)
            .map(|r| r.iter().map(Rule::from_json).collect())
            .unwrap_or_default()
    }

    /// Whether the rule allows what `attrs` describe (upstream's `RuleAllows`).
    pub fn allows(&self, attrs: &RequestAttributes) -> bool {
        if !self.verb_matches(&attrs.verb) {
            return false;
        }
        if !attrs.resource_request {
            return self.url_matches(&attrs.path);
        }
        self.group_matches(&attrs.api_group)
            && self.resource_matches(&attrs.resource, &attrs.subresource)
            && self.name_matches(&attrs.name)
    }

    fn verb_matches(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == "*" || v == verb)
    }

    fn group_matches(&self, group: &str) -> bool {
        self.api_groups.iter().any(|g| g == "*" || g == group)
    }

    fn resource_matches(&self, resource: &str, subresource: &str) -> bool {
        self.resources.iter().any(|r| {
            if r == "*" {
                return true;
            }
            if subresource.is_empty() {
                return r == resource;
            }
            // `resource/subresource`, or `*/subresource`.
            match r.split_once('/') {
                Some((res, sub)) => sub == subresource && (res == resource || res == "*"),
                None => false,
            }
        })
    }

    fn name_matches(&self, name: &str) -> bool {
        self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == name)
    }

    fn url_matches(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|u| {
            u == "*"
                || u == path
                || u.strip_suffix('*')
                    .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
        })
    }

    /// The rule's JSON, empty lists left out.
    pub fn to_json(&self) -> Value {
        let mut out = json!({ "verbs": self.verbs });
        for (key, list) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !list.is_empty() {
                out[key] = json!(list);
            }
        }
        out
    }
}

/// A binding's subject.
#[derive(Clone, Debug)]
struct Subject {
    kind: String,
    name: String,
    namespace: String,
}

impl Subject {
    /// Whether the subject names `user`; `namespace` is the binding's (a ServiceAccount
    /// subject without one means a ServiceAccount of the binding's namespace).
    fn applies_to(&self, user: &UserInfo, namespace: &str) -> bool {
        match self.kind.as_str() {
            "User" => user.name == self.name,
            "Group" => user.in_group(&self.name),
            "ServiceAccount" => match self.sa_username(namespace) {
                Some(name) => user.name == name,
                None => false,
            },
            _ => false,
        }
    }

    fn sa_username(&self, namespace: &str) -> Option<String> {
        let ns = if self.namespace.is_empty() {
            namespace
        } else {
            &self.namespace
        };
        (!ns.is_empty()).then(|| service_account_username(ns, &self.name))
    }

    /// How upstream's `describeSubject` names it in an allow reason.
    fn describe(&self, namespace: &str) -> String {
        match self.kind.as_str() {
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    namespace
                } else {
                    &self.namespace
                };
                format!("{} {:?}", self.kind, format!("{}/{ns}", self.name))
            }
            _ => format!("{} {:?}", self.kind, self.name),
        }
    }
}

/// A RoleBinding or ClusterRoleBinding.
#[derive(Clone, Debug)]
struct Binding {
    name: String,
    /// `""` for a ClusterRoleBinding.
    namespace: String,
    role_kind: String,
    role_name: String,
    subjects: Vec<Subject>,
}

impl Binding {
    fn from_json(v: &Value) -> Binding {
        let subjects = v
            .get("subjects")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|s| Subject {
                kind: json::str_at(s, &["kind"]).to_string(),
                name: json::str_at(s, &["name"]).to_string(),
                namespace: json::str_at(s, &["namespace"]).to_string(),
            })
            .collect();
        Binding {
            name: json::str_at(v, &["metadata", "name"]).to_string(),
            namespace: json::str_at(v, &["metadata", "namespace"]).to_string(),
            role_kind: json::str_at(v, &["roleRef", "kind"]).to_string(),
            role_name: json::str_at(v, &["roleRef", "name"]).to_string(),
            subjects,
        }
    }

    /// The first subject naming `user`.
    fn subject_for(&self, user: &UserInfo) -> Option<&Subject> {
        self.subjects
            .iter()
            .find(|s| s.applies_to(user, &self.namespace))
    }

    /// Upstream's `clusterRoleBindingDescriber` / `roleBindingDescriber`.
    fn describe(&self, subject: &Subject) -> String {
        if self.namespace.is_empty() {
            format!(
                "ClusterRoleBinding {:?} of {} {:?} to {}",
                self.name,
                self.role_kind,
                self.role_name,
                subject.describe("")
            )
        } else {
            format!(
                "RoleBinding {:?} of {} {:?} to {}",
                format!("{}/{}", self.name, self.namespace),
                self.role_kind,
                self.role_name,
                subject.describe(&self.namespace)
            )
        }
    }
}

/// The bindings of one scope (the cluster's, or one namespace's), indexed by subject.
#[derive(Debug, Default)]
struct Bindings {
    /// In name order.
    all: Vec<Binding>,
    /// User name (ServiceAccount subjects by their user name) -> indexes in `all`.
    by_user: HashMap<String, Vec<usize>>,
    /// Group name -> indexes in `all`.
    by_group: HashMap<String, Vec<usize>>,
}

impl Bindings {
    fn push(&mut self, binding: Binding) {
        let at = self.all.len();
        for s in &binding.subjects {
            let key = match s.kind.as_str() {
                "User" => Some((&mut self.by_user, s.name.clone())),
                "Group" => Some((&mut self.by_group, s.name.clone())),
                "ServiceAccount" => s
                    .sa_username(&binding.namespace)
                    .map(|n| (&mut self.by_user, n)),
                _ => None,
            };
            if let Some((map, key)) = key {
                let list = map.entry(key).or_default();
                if list.last() != Some(&at) {
                    list.push(at);
                }
            }
        }
        self.all.push(binding);
    }

    /// The bindings naming `user`, in name order.
    fn for_user(&self, user: &UserInfo) -> Vec<&Binding> {
        let mut found: Vec<usize> = Vec::new();
        if let Some(list) = self.by_user.get(&user.name) {
            found.extend(list);
        }
        for g in &user.groups {
            if let Some(list) = self.by_group.get(g) {
                found.extend(list);
            }
        }
        found.sort_unstable();
        found.dedup();
        found.into_iter().map(|i| &self.all[i]).collect()
    }
}

/// The RBAC objects, indexed for evaluation.
#[derive(Debug, Default)]
pub struct Policy {
    cluster_roles: HashMap<String, Arc<[Rule]>>,
    roles: HashMap<(String, String), Arc<[Rule]>>,
    cluster_bindings: Bindings,
    bindings: HashMap<String, Bindings>,
}

impl Policy {
    /// The index of these objects (each list as stored: ClusterRoles, Roles,
    /// ClusterRoleBindings, RoleBindings, in key order).
    pub fn new(
        cluster_roles: &[Arc<Value>],
        roles: &[Arc<Value>],
        cluster_bindings: &[Arc<Value>],
        bindings: &[Arc<Value>],
    ) -> Policy {
        let mut policy = Policy::default();
        for r in cluster_roles {
            let name = json::str_at(r, &["metadata", "name"]).to_string();
            policy.cluster_roles.insert(name, Rule::list(r).into());
        }
        for r in roles {
            let key = (
                json::str_at(r, &["metadata", "namespace"]).to_string(),
                json::str_at(r, &["metadata", "name"]).to_string(),
            );
            policy.roles.insert(key, Rule::list(r).into());
        }
        for b in cluster_bindings {
            let mut b = Binding::from_json(b);
            b.namespace.clear();
            policy.cluster_bindings.push(b);
        }
        for b in bindings {
            let b = Binding::from_json(b);
            policy
                .bindings
                .entry(b.namespace.clone())
                .or_default()
                .push(b);
        }
        policy
    }

    fn role_rules(&self, b: &Binding) -> Result<&Arc<[Rule]>, String> {
        let missing = |kind: &str| {
            format!(
                "{kind}.rbac.authorization.k8s.io {:?} not found",
                b.role_name
            )
        };
        match b.role_kind.as_str() {
            "ClusterRole" => self
                .cluster_roles
                .get(&b.role_name)
                .ok_or_else(|| missing("clusterrole")),
            "Role" => self
                .roles
                .get(&(b.namespace.clone(), b.role_name.clone()))
                .ok_or_else(|| missing("role")),
            other => Err(format!("unsupported role reference kind: {other:?}")),
        }
    }

    /// Visits the rules that apply to `user` in `namespace` (`""`: the cluster's only), as
    /// upstream's `VisitRulesFor`: ClusterRoleBindings, then the namespace's RoleBindings;
    /// `visit` returns `false` to stop. Answers the resolution errors met.
    fn visit_rules(
        &self,
        user: &UserInfo,
        namespace: &str,
        mut visit: impl FnMut(&Binding, &Subject, &Rule) -> bool,
    ) -> Vec<String> {
        let mut errors = Vec::new();
        let mut scopes = vec![&self.cluster_bindings];
        if !namespace.is_empty()
            && let Some(b) = self.bindings.get(namespace)
        {
            scopes.push(b);
        }
        for scope in scopes {
            for binding in scope.for_user(user) {
                let Some(subject) = binding.subject_for(user) else {
                    continue;
                };
                match self.role_rules(binding) {
                    Ok(rules) => {
                        for rule in rules.iter() {
                            if !visit(binding, subject, rule) {
                                return errors;
                            }
                        }
                    }
                    Err(e) => errors.push(e),
                }
            }
        }
        errors
    }

    /// Whether `user` may do what `attrs` describe: `Ok(reason)` naming the binding that
    /// allows it, or `Err(reason)` (empty, or `RBAC: ` and the roles that could not be found).
    pub fn authorize(&self, user: &UserInfo, attrs: &RequestAttributes) -> Result<String, String> {
        let mut allowed = None;
        let errors = self.visit_rules(user, &attrs.namespace, |binding, subject, rule| {
            if rule.allows(attrs) {
                allowed = Some(format!("RBAC: allowed by {}", binding.describe(subject)));
                return false;
            }
            true
        });
        match allowed {
            Some(reason) => Ok(reason),
            None if errors.is_empty() => Err(String::new()),
            None => Err(format!("RBAC: {}", aggregate(&errors))),
        }
    }

    /// The rules `user` has in `namespace` (upstream's `RulesFor`), and the resolution errors
    /// as one message (empty when none).
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<Rule>, String) {
        let mut rules = Vec::new();
        let errors = self.visit_rules(user, namespace, |_, _, rule| {
            rules.push(rule.clone());
            true
        });
        (rules, aggregate(&errors))
    }
}

/// Go's `utilerrors.NewAggregate(...).Error()`: one message as is, several in brackets.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [] => String::new(),
        [one] => one.clone(),
        many => {
            let mut out = String::from("[");
            for (i, e) in many.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{e}");
            }
            out.push(']');
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(v: Value) -> Rule {
        Rule::from_json(&v)
    }

    fn res(
        verb: &str,
        group: &str,
        resource: &str,
        sub: &str,
        ns: &str,
        name: &str,
    ) -> RequestAttributes {
        RequestAttributes {
            verb: verb.into(),
            resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: ns.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    fn url(verb: &str, path: &str) -> RequestAttributes {
        RequestAttributes {
            verb: verb.into(),
            path: path.into(),
            ..Default::default()
        }
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn rules_match_verbs_groups_resources_and_subresources_as_upstream() {
        let pods =
            rule(json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}));
        assert!(pods.allows(&res("get", "", "pods", "", "ns", "p")));
        assert!(pods.allows(&res("list", "", "pods", "", "ns", "")));
        assert!(!pods.allows(&res("delete", "", "pods", "", "ns", "p")));
        assert!(!pods.allows(&res("get", "apps", "pods", "", "ns", "p")));
        assert!(
            !pods.allows(&res("get", "", "pods", "log", "ns", "p")),
            "a subresource is not its resource"
        );
        let all = rule(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}));
        assert!(all.allows(&res("escalate", "x.io", "things", "status", "", "t")));
        let logs = rule(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]}));
        assert!(logs.allows(&res("get", "", "pods", "log", "ns", "p")));
        assert!(!logs.allows(&res("get", "", "pods", "", "ns", "p")));
        let any_status =
            rule(json!({"verbs": ["update"], "apiGroups": ["*"], "resources": ["*/status"]}));
        assert!(any_status.allows(&res("update", "apps", "deployments", "status", "ns", "d")));
        assert!(!any_status.allows(&res("update", "apps", "deployments", "scale", "ns", "d")));
        assert!(!any_status.allows(&res("update", "apps", "deployments", "", "ns", "d")));
        // `pods/*` is no wildcard upstream.
        let pods_star = rule(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/*"]}));
        assert!(!pods_star.allows(&res("get", "", "pods", "log", "ns", "p")));
        assert!(!pods_star.allows(&res("get", "", "pods", "", "ns", "p")));
    }

    #[test]
    fn resource_names_allow_only_named_requests() {
        let named = rule(
            json!({"verbs": ["*"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}),
        );
        assert!(named.allows(&res("get", "", "configmaps", "", "ns", "a")));
        assert!(named.allows(&res("update", "", "configmaps", "", "ns", "a")));
        assert!(!named.allows(&res("get", "", "configmaps", "", "ns", "b")));
        for verb in ["list", "watch", "create", "deletecollection"] {
            assert!(
                !named.allows(&res(verb, "", "configmaps", "", "ns", "")),
                "{verb}"
            );
        }
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_star_suffix() {
        let r =
            rule(json!({"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*", "/version"]}));
        assert!(r.allows(&url("get", "/healthz")));
        assert!(!r.allows(&url("get", "/healthz/ping")));
        assert!(r.allows(&url("get", "/apis/apps/v1")));
        assert!(r.allows(&url("get", "/apis/")));
        assert!(!r.allows(&url("get", "/apis")));
        assert!(!r.allows(&url("post", "/version")));
        let all = rule(json!({"verbs": ["*"], "nonResourceURLs": ["*"]}));
        assert!(all.allows(&url("delete", "/anything")));
        // A resource rule never allows a path, nor a path rule a resource.
        assert!(
            !rule(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}))
                .allows(&url("get", "/api"))
        );
        assert!(!all.allows(&res("get", "", "pods", "", "ns", "p")));
    }

    fn policy() -> Policy {
        let obj = |v: Value| Arc::new(v);
        Policy::new(
            &[
                obj(
                    json!({"metadata": {"name": "reader"}, "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]}),
                ),
                obj(
                    json!({"metadata": {"name": "urls"}, "rules": [{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}]}),
                ),
            ],
            &[obj(
                json!({"metadata": {"name": "cm", "namespace": "a"}, "rules": [{"verbs": ["create"], "apiGroups": [""], "resources": ["configmaps"]}]}),
            )],
            &[
                obj(
                    json!({"metadata": {"name": "devs-read"}, "roleRef": {"kind": "ClusterRole", "name": "reader"},
                    "subjects": [{"kind": "Group", "name": "devs"}]}),
                ),
                obj(
                    json!({"metadata": {"name": "gone"}, "roleRef": {"kind": "ClusterRole", "name": "missing"},
                    "subjects": [{"kind": "User", "name": "eve"}]}),
                ),
                obj(
                    json!({"metadata": {"name": "sa-urls"}, "roleRef": {"kind": "ClusterRole", "name": "urls"},
                    "subjects": [{"kind": "ServiceAccount", "name": "mon", "namespace": "b"},
                                 {"kind": "ServiceAccount", "name": "no-namespace"}]}),
                ),
            ],
            &[
                obj(
                    json!({"metadata": {"name": "cm-rb", "namespace": "a"}, "roleRef": {"kind": "Role", "name": "cm"},
                    "subjects": [{"kind": "ServiceAccount", "name": "op"}]}),
                ),
                obj(
                    json!({"metadata": {"name": "read-rb", "namespace": "a"}, "roleRef": {"kind": "ClusterRole", "name": "reader"},
                    "subjects": [{"kind": "User", "name": "bob"}]}),
                ),
            ],
        )
    }

    #[test]
    fn bindings_grant_by_user_group_and_service_account_in_their_scope() {
        let p = policy();
        let bob = user("bob", &["system:authenticated"]);
        // A RoleBinding to a ClusterRole grants in its namespace only.
        assert_eq!(
            p.authorize(&bob, &res("get", "", "pods", "", "a", "x")),
            Ok(
                r#"RBAC: allowed by RoleBinding "read-rb/a" of ClusterRole "reader" to User "bob""#
                    .into()
            )
        );
        assert_eq!(
            p.authorize(&bob, &res("get", "", "pods", "", "b", "x")),
            Err(String::new())
        );
        assert_eq!(
            p.authorize(&bob, &res("list", "", "pods", "", "", "")),
            Err(String::new())
        );
        let dev = user("carol", &["devs"]);
        assert_eq!(
            p.authorize(&dev, &res("list", "", "pods", "", "", "")),
            Ok(r#"RBAC: allowed by ClusterRoleBinding "devs-read" of ClusterRole "reader" to Group "devs""#.into())
        );
        // A ServiceAccount subject of a RoleBinding without a namespace is the binding's.
        let op = user("system:serviceaccount:a:op", &["system:serviceaccounts"]);
        assert_eq!(
            p.authorize(&op, &res("create", "", "configmaps", "", "a", "")),
            Ok(
                r#"RBAC: allowed by RoleBinding "cm-rb/a" of Role "cm" to ServiceAccount "op/a""#
                    .into()
            )
        );
        assert!(
            p.authorize(&op, &res("create", "", "configmaps", "", "b", ""))
                .is_err()
        );
        let mon = user("system:serviceaccount:b:mon", &[]);
        assert_eq!(
            p.authorize(&mon, &url("get", "/metrics")),
            Ok(r#"RBAC: allowed by ClusterRoleBinding "sa-urls" of ClusterRole "urls" to ServiceAccount "mon/b""#.into())
        );
        // ...and a ClusterRoleBinding's ServiceAccount without a namespace names no one.
        let nobody = user("system:serviceaccount::no-namespace", &[]);
        assert!(p.authorize(&nobody, &url("get", "/metrics")).is_err());
    }

    #[test]
    fn a_missing_role_is_the_refusals_reason() {
        let p = policy();
        let eve = user("eve", &[]);
        assert_eq!(
            p.authorize(&eve, &res("get", "", "pods", "", "a", "x")),
            Err(r#"RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found"#.into())
        );
        let (rules, errors) = p.rules_for(&eve, "a");
        assert!(rules.is_empty());
        assert_eq!(
            errors,
            r#"clusterrole.rbac.authorization.k8s.io "missing" not found"#
        );
        assert_eq!(aggregate(&["a".into(), "b".into()]), "[a, b]");
    }

    #[test]
    fn rules_for_lists_cluster_then_namespace_rules() {
        let p = policy();
        let bob = user("bob", &["devs"]);
        let (rules, errors) = p.rules_for(&bob, "a");
        assert_eq!(errors, "");
        assert_eq!(rules.len(), 2);
        assert_eq!(
            rules[0].to_json(),
            json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]})
        );
        assert_eq!(p.rules_for(&bob, "b").0.len(), 1);
    }
}
