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
//!   `resourceNames` rules are taken as granted, and listed as they are written).
//!
//! A `watch` brings `list` with it: an informer watches a collection with its initial events
//! where the server serves them (the embedded one does), and lists first where it does not, so
//! a role for any cluster grants both.
//!
//! The role is as good as the scenarios: an access only a rare path makes (an error branch, a
//! deletion) is in it only when a test takes that path.

use std::collections::{BTreeMap, BTreeSet};

use crt_apiserver::auth::Access;
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
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

/// The ClusterRole named `name` granting exactly what `accesses` [need](needed), one rule per API group and
/// resource, in group then resource order.
pub fn cluster_role<'a>(name: &str, accesses: impl IntoIterator<Item = &'a Access>) -> ClusterRole {
    let mut verbs: BTreeMap<(String, String), BTreeSet<(usize, String)>> = BTreeMap::new();
    for access in &needed(accesses) {
        verbs
            .entry((access.api_group.clone(), access.rbac_resource()))
            .or_default()
            .insert(verb_rank(&access.verb));
    }
    ClusterRole {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        rules: Some(
            verbs
                .into_iter()
                .map(|((group, resource), verbs)| PolicyRule {
                    api_groups: Some(vec![group]),
                    resources: Some(vec![resource]),
                    verbs: verbs.into_iter().map(|(_, v)| v).collect(),
                    ..Default::default()
                })
                .collect(),
        ),
        ..Default::default()
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
}

impl std::fmt::Display for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let group = if self.api_group.is_empty() {
            "\"\""
        } else {
            &self.api_group
        };
        write!(f, "{} {} in API group {group}", self.verb, self.resource)
    }
}

/// What `role` grants that none of `accesses` [need](needed): each (group, resource, verb) its
/// rules spell out, in order.
pub fn unused<'a>(
    role: &ClusterRole,
    accesses: impl IntoIterator<Item = &'a Access>,
) -> Vec<Grant> {
    let accesses = needed(accesses);
    let mut out = BTreeSet::new();
    for rule in role.rules.as_deref().unwrap_or_default() {
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
}
