//! RBAC from behaviour: the minimal ClusterRole for what an identity was allowed to do, and how
//! a shipped role compares with it.
//!
//! The embedded API server records, once [started](crt_apiserver::auth::AccessRecorder::start),
//! every access each user was allowed (verb, API group, resource, subresource, namespace):
//! run the operator as its ServiceAccount through a test's scenarios, read
//! [`recorded`](crt_apiserver::auth::AccessRecorder::recorded) for
//! `system:serviceaccount:NS:NAME`, and
//!
//! - [`cluster_role`] writes the minimal ClusterRole granting exactly those accesses: one rule
//!   per API group and resource (a subresource is its own resource, `memos/status`), its verbs
//!   in Kubernetes' order (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
//!   `deletecollection`, then any other alphabetically);
//! - [`missing`] lists the accesses a role does not grant (each would be a 403 in a cluster);
//! - [`unused`] lists what a role grants that was never used, verb by verb (wildcards and
//!   `resourceNames` rules are taken as granted, and listed as they are written);
//! - [`roles`] splits the same grants into a namespaced Role per namespace the accesses are
//!   confined to and a ClusterRole for the rest ([`Roles::missing`] and [`Roles::unused`]
//!   compare shipped roles with them).
//!
//! Which namespaces are "confined" is the caller's to say: the namespace an operator runs in
//! (its leader-election Lease, its own Secrets) is one, while the namespace a test creates its
//! objects in stands for every namespace a user will create them in, so what the operator does
//! there belongs in the ClusterRole. An access at the cluster scope or across namespaces (a
//! cache's cluster-wide list and watch) is always the ClusterRole's.
//!
//! A `watch` brings `list` with it: an informer watches a collection with its initial events
//! where the server serves them (the embedded one does), and lists first where it does not, so
//! a role for any cluster grants both.
//!
//! The role is as good as the scenarios: an access only a rare path makes (an error branch, a
//! deletion) is in it only when a test takes that path.

use std::collections::{BTreeMap, BTreeSet};

use crt_apiserver::auth::Access;
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule, Role};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The verbs in the order Kubernetes' own roles list them.
const VERB_ORDER: [&str; 8] = [
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

fn verb_rank(verb: &str) -> (usize, String) {
    let rank = VERB_ORDER
        .iter()
        .position(|v| *v == verb)
        .unwrap_or(VERB_ORDER.len());
    (rank, verb.to_string())
}

/// What `accesses` need granted: themselves, and a `list` beside each `watch` (see the
/// module's docs).
pub fn needed<'a>(accesses: impl IntoIterator<Item = &'a Access>) -> BTreeSet<Access> {
    let mut needed = BTreeSet::new();
    for access in accesses {
        if access.verb == "watch" {
            needed.insert(Access {
                verb: "list".into(),
                ..access.clone()
            });
        }
        needed.insert(access.clone());
    }
    needed
}

/// The rules granting exactly `needed`: one per API group and resource, in group then
/// resource order, its verbs in Kubernetes' order.
fn rules<'a>(needed: impl IntoIterator<Item = &'a Access>) -> Vec<PolicyRule> {
    let mut verbs: BTreeMap<(String, String), BTreeSet<(usize, String)>> = BTreeMap::new();
    for access in needed {
        verbs
            .entry((access.api_group.clone(), access.rbac_resource()))
            .or_default()
            .insert(verb_rank(&access.verb));
    }
    verbs
        .into_iter()
        .map(|((group, resource), verbs)| PolicyRule {
            api_groups: Some(vec![group]),
            resources: Some(vec![resource]),
            verbs: verbs.into_iter().map(|(_, v)| v).collect(),
            ..Default::default()
        })
        .collect()
}

/// The ClusterRole named `name` granting exactly what `accesses` [need](needed), one rule per API group and
/// resource, in group then resource order.
pub fn cluster_role<'a>(name: &str, accesses: impl IntoIterator<Item = &'a Access>) -> ClusterRole {
    ClusterRole {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        rules: Some(rules(&needed(accesses))),
        ..Default::default()
    }
}

/// The roles an identity needs: a ClusterRole for what it does at the cluster scope, across
/// namespaces or in namespaces that stand for any, and a Role in each namespace some of its
/// accesses are confined to. Made by [`roles`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Roles {
    /// The ClusterRole (without rules when nothing needs one).
    pub cluster_role: ClusterRole,
    /// One Role per confined namespace that needs one, in namespace order.
    pub roles: Vec<Role>,
}

/// Splits what `accesses` [need](needed) between a ClusterRole and namespaced Roles, all named
/// `name`: an access in one of the `confined` namespaces goes to that namespace's Role, unless
/// the ClusterRole grants it anyway; everything else (the cluster scope, every namespace, a
/// namespace not confined) to the ClusterRole. Rules as [`cluster_role`] writes them.
pub fn roles<'a>(
    name: &str,
    accesses: impl IntoIterator<Item = &'a Access>,
    confined: &[&str],
) -> Roles {
    let needed = needed(accesses);
    let is_confined = |a: &Access| !a.namespace.is_empty() && confined.contains(&&*a.namespace);
    let cluster: Vec<&Access> = needed.iter().filter(|a| !is_confined(a)).collect();
    let cluster_grants: BTreeSet<(&str, String, &str)> = cluster
        .iter()
        .map(|a| (&*a.api_group, a.rbac_resource(), &*a.verb))
        .collect();
    let mut by_namespace: BTreeMap<&str, Vec<&Access>> = BTreeMap::new();
    for access in needed.iter().filter(|a| is_confined(a)) {
        let key = (&*access.api_group, access.rbac_resource(), &*access.verb);
        if !cluster_grants.contains(&key) {
            by_namespace
                .entry(&access.namespace)
                .or_default()
                .push(access);
        }
    }
    Roles {
        cluster_role: ClusterRole {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                ..Default::default()
            },
            rules: Some(rules(cluster)),
            ..Default::default()
        },
        roles: by_namespace
            .into_iter()
            .map(|(namespace, accesses)| Role {
                metadata: ObjectMeta {
                    name: Some(name.to_string()),
                    namespace: Some(namespace.to_string()),
                    ..Default::default()
                },
                rules: Some(rules(accesses)),
            })
            .collect(),
    }
}

impl Roles {
    /// The Role of `namespace`, if any.
    pub fn role(&self, namespace: &str) -> Option<&Role> {
        self.roles
            .iter()
            .find(|r| r.metadata.namespace.as_deref() == Some(namespace))
    }

    /// The accesses neither the ClusterRole nor the Role of their namespace grants, of what
    /// `accesses` [need](needed), in order.
    pub fn missing<'a>(&self, accesses: impl IntoIterator<Item = &'a Access>) -> Vec<Access> {
        let cluster = self.cluster_role.rules.as_deref().unwrap_or_default();
        needed(accesses)
            .into_iter()
            .filter(|access| {
                let in_role = || {
                    self.role(&access.namespace)
                        .and_then(|r| r.rules.as_deref())
                        .unwrap_or_default()
                        .iter()
                        .any(|rule| grants(rule, access))
                };
                !cluster.iter().any(|rule| grants(rule, access))
                    && (access.namespace.is_empty() || !in_role())
            })
            .collect()
    }

    /// What the roles grant that none of `accesses` [need](needed): the ClusterRole's unused
    /// grants (namespace `""`), then each Role's, for the accesses in its namespace.
    pub fn unused<'a>(&self, accesses: impl IntoIterator<Item = &'a Access> + Clone) -> Vec<Grant> {
        let mut out = unused(&self.cluster_role, accesses.clone());
        for role in &self.roles {
            let namespace = role.metadata.namespace.clone().unwrap_or_default();
            let here: Vec<&Access> = accesses
                .clone()
                .into_iter()
                .filter(|a| a.namespace == namespace)
                .collect();
            out.extend(
                unused_rules(role.rules.as_deref().unwrap_or_default(), here)
                    .into_iter()
                    .map(|grant| Grant {
                        namespace: namespace.clone(),
                        ..grant
                    }),
            );
        }
        out
    }
}

fn matches(granted: &[String], wanted: &str) -> bool {
    granted.iter().any(|g| g == "*" || g == wanted)
}

fn grants(rule: &PolicyRule, access: &Access) -> bool {
    rule.resource_names.as_ref().is_none_or(Vec::is_empty)
        && matches(
            rule.api_groups.as_deref().unwrap_or_default(),
            &access.api_group,
        )
        && matches(
            rule.resources.as_deref().unwrap_or_default(),
            &access.rbac_resource(),
        )
        && matches(&rule.verbs, &access.verb)
}

/// The accesses `role` does not grant of what `accesses` [need](needed), in order.
pub fn missing<'a>(
    role: &ClusterRole,
    accesses: impl IntoIterator<Item = &'a Access>,
) -> Vec<Access> {
    let rules = role.rules.as_deref().unwrap_or_default();
    needed(accesses)
        .into_iter()
        .filter(|access| !rules.iter().any(|rule| grants(rule, access)))
        .collect()
}

/// One grant of a role: a verb on an API group's resource.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Grant {
    /// The API group, `""` for core.
    pub api_group: String,
    /// The resource, `resource/subresource` for a subresource.
    pub resource: String,
    /// The verb.
    pub verb: String,
    /// The namespace of the Role that grants it; `""` for a ClusterRole's.
    pub namespace: String,
}

impl std::fmt::Display for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let group = if self.api_group.is_empty() {
            "\"\""
        } else {
            &self.api_group
        };
        write!(f, "{} {} in API group {group}", self.verb, self.resource)?;
        if !self.namespace.is_empty() {
            write!(f, " in namespace {}", self.namespace)?;
        }
        Ok(())
    }
}

/// What `role` grants that none of `accesses` [need](needed): each (group, resource, verb) its
/// rules spell out, in order.
pub fn unused<'a>(
    role: &ClusterRole,
    accesses: impl IntoIterator<Item = &'a Access>,
) -> Vec<Grant> {
    unused_rules(role.rules.as_deref().unwrap_or_default(), accesses)
}

fn unused_rules<'a>(
    rules: &[PolicyRule],
    accesses: impl IntoIterator<Item = &'a Access>,
) -> Vec<Grant> {
    let accesses = needed(accesses);
    let mut out = BTreeSet::new();
    for rule in rules {
        for group in rule.api_groups.as_deref().unwrap_or_default() {
            for resource in rule.resources.as_deref().unwrap_or_default() {
                for verb in &rule.verbs {
                    let used = accesses.iter().any(|a| {
                        (group == "*" || *group == a.api_group)
                            && (resource == "*" || *resource == a.rbac_resource())
                            && (verb == "*" || *verb == a.verb)
                    });
                    if !used {
                        out.insert(Grant {
                            api_group: group.clone(),
                            resource: resource.clone(),
                            verb: verb.clone(),
                            namespace: String::new(),
                        });
                    }
                }
            }
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(verb: &str, group: &str, resource: &str, sub: &str, ns: &str) -> Access {
        Access {
            verb: verb.into(),
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: ns.into(),
        }
    }

    fn rule(group: &str, resource: &str, verbs: &[&str]) -> PolicyRule {
        PolicyRule {
            api_groups: Some(vec![group.into()]),
            resources: Some(vec![resource.into()]),
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
            ..Default::default()
        }
    }

    fn recorded() -> Vec<Access> {
        vec![
            access("watch", "", "configmaps", "", ""),
            access("list", "", "configmaps", "", ""),
            access("create", "", "configmaps", "", "default"),
            access("patch", "", "configmaps", "", "other"),
            access("update", "example.com", "memos", "status", "default"),
            access("watch", "example.com", "memos", "", ""),
            access("get", "example.com", "memos", "", "default"),
        ]
    }

    #[test]
    fn the_role_has_a_rule_per_resource_with_verbs_in_kubernetes_order() {
        let role = cluster_role("op", &recorded());
        assert_eq!(role.metadata.name.as_deref(), Some("op"));
        assert_eq!(
            role.rules.unwrap(),
            [
                rule("", "configmaps", &["list", "watch", "create", "patch"]),
                // Watched with initial events, never listed: `list` too.
                rule("example.com", "memos", &["get", "list", "watch"]),
                rule("example.com", "memos/status", &["update"]),
            ]
        );
    }

    #[test]
    fn missing_and_unused_compare_a_role_verb_by_verb() {
        let accesses = recorded();
        let derived = cluster_role("op", &accesses);
        assert!(missing(&derived, &accesses).is_empty());
        assert!(unused(&derived, &accesses).is_empty());

        let shipped = ClusterRole {
            rules: Some(vec![
                rule(
                    "",
                    "configmaps",
                    &["get", "list", "watch", "create", "patch"],
                ),
                rule("example.com", "memos", &["*"]),
            ]),
            ..Default::default()
        };
        assert_eq!(
            missing(&shipped, &accesses),
            [access(
                "update",
                "example.com",
                "memos",
                "status",
                "default"
            )]
        );
        let unused = unused(&shipped, &accesses);
        assert_eq!(unused.len(), 1, "{unused:?}");
        assert_eq!(unused[0].to_string(), "get configmaps in API group \"\"");
    }

    /// Accesses in a confined namespace go to its Role, unless the ClusterRole grants them
    /// anyway; those in other namespaces and across namespaces to the ClusterRole.
    #[test]
    fn roles_confine_what_stays_in_a_namespace() {
        let mut accesses = recorded();
        accesses.extend([
            access("get", "coordination.k8s.io", "leases", "", "op-system"),
            access("create", "coordination.k8s.io", "leases", "", "op-system"),
            access("update", "coordination.k8s.io", "leases", "", "op-system"),
            // Also done elsewhere: the ClusterRole grants it, the Role need not.
            access("create", "", "configmaps", "", "op-system"),
            access("get", "", "secrets", "", "op-system"),
        ]);
        let roles = roles("op", &accesses, &["op-system"]);
        assert_eq!(
            roles.cluster_role.rules.as_deref().unwrap(),
            cluster_role("op", &recorded()).rules.as_deref().unwrap(),
            "the cluster role is what the unconfined accesses need"
        );
        assert_eq!(roles.roles.len(), 1);
        let role = roles.role("op-system").unwrap();
        assert_eq!(role.metadata.name.as_deref(), Some("op"));
        assert_eq!(
            role.rules.as_deref().unwrap(),
            [
                rule("", "secrets", &["get"]),
                rule(
                    "coordination.k8s.io",
                    "leases",
                    &["get", "create", "update"]
                ),
            ]
        );
        assert!(roles.missing(&accesses).is_empty());
        assert!(roles.unused(&accesses).is_empty());

        // Nothing confined: one ClusterRole with everything.
        let all = super::roles("op", &accesses, &[]);
        assert!(all.roles.is_empty());
        assert_eq!(all.cluster_role, cluster_role("op", &accesses));

        // A Role grants only in its namespace; a grant of it nothing used names the namespace.
        let mut shipped = roles.clone();
        shipped.roles[0]
            .rules
            .as_mut()
            .unwrap()
            .push(rule("", "secrets", &["list"]));
        let elsewhere = access("get", "", "secrets", "", "other");
        let mut more = accesses.clone();
        more.push(elsewhere.clone());
        assert_eq!(shipped.missing(&more), [elsewhere]);
        let unused = shipped.unused(&accesses);
        assert_eq!(unused.len(), 1, "{unused:?}");
        assert_eq!(
            unused[0].to_string(),
            "list secrets in API group \"\" in namespace op-system"
        );
    }
}
