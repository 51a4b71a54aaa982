//! `rbac.authorization.k8s.io/v1` (`pkg/apis/rbac/validation/validation.go`): the rules of
//! Roles and ClusterRoles, the role reference and subjects of their bindings.
//!
//! Upstream defaults an empty `roleRef.apiGroup`, and a User's or Group's empty
//! `subjects[].apiGroup`, to `rbac.authorization.k8s.io` before validating; an empty one is
//! read here as that default.

use serde_json::Value;

use super::field::{NameFormat, is_dns1123_subdomain, name_problems, validate_name};
use super::{FieldError, array_at, str_at};

const GROUP: &str = "rbac.authorization.k8s.io";

/// `ValidateRole` / `ValidateRoleUpdate`.
pub(crate) fn role(obj: &Value, _old: Option<&Value>, errs: &mut Vec<FieldError>) {
    rules(obj, true, errs);
}

/// `ValidateClusterRole` / `ValidateClusterRoleUpdate`.
pub(crate) fn cluster_role(obj: &Value, _old: Option<&Value>, errs: &mut Vec<FieldError>) {
    rules(obj, false, errs);
}

/// `validatePolicyRule` of every rule.
fn rules(obj: &Value, namespaced: bool, errs: &mut Vec<FieldError>) {
    for (i, rule) in array_at(obj, &["rules"]).iter().enumerate() {
        let path = |f: &str| format!("rules[{i}].{f}");
        let len = |f: &str| array_at(rule, &[f]).len();
        if len("verbs") == 0 {
            errs.push(FieldError::required(
                path("verbs"),
                "verbs must contain at least one value",
            ));
        }
        let urls = array_at(rule, &["nonResourceURLs"]);
        if !urls.is_empty() {
            let shown = || super::field::go_strings(urls.iter().filter_map(Value::as_str));
            if namespaced {
                errs.push(FieldError::invalid_go(
                    path("nonResourceURLs"),
                    &shown(),
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if len("apiGroups") > 0 || len("resources") > 0 || len("resourceNames") > 0 {
                errs.push(FieldError::invalid_go(
                    path("nonResourceURLs"),
                    &shown(),
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if len("apiGroups") == 0 {
            errs.push(FieldError::required(
                path("apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if len("resources") == 0 {
            errs.push(FieldError::required(
                path("resources"),
                "resource rules must supply at least one resource",
            ));
        }
        if len("resourceNames") > 0 && len("resources") > 1 {
            errs.push(FieldError::required(
                path("resourceNames"),
                "resource names cannot apply to multiple resources",
            ));
        }
    }
}

/// `ValidateRoleBinding` / `ValidateRoleBindingUpdate`.
pub(crate) fn role_binding(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    binding(obj, old, true, errs);
}

/// `ValidateClusterRoleBinding` / `ValidateClusterRoleBindingUpdate`.
pub(crate) fn cluster_role_binding(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    binding(obj, old, false, errs);
}

/// A binding's `roleRef` after upstream's defaulting: (apiGroup, kind, name).
fn role_ref(obj: &Value) -> (&str, &str, &str) {
    let group = str_at(obj, &["roleRef", "apiGroup"]);
    (
        if group.is_empty() { GROUP } else { group },
        str_at(obj, &["roleRef", "kind"]),
        str_at(obj, &["roleRef", "name"]),
    )
}

fn binding(obj: &Value, old: Option<&Value>, namespaced: bool, errs: &mut Vec<FieldError>) {
    let (group, kind, name) = role_ref(obj);
    if group != GROUP {
        errs.push(FieldError::not_supported(
            "roleRef.apiGroup",
            &Value::from(group),
            &[GROUP],
        ));
    }
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&kind) {
        errs.push(FieldError::not_supported(
            "roleRef.kind",
            &Value::from(kind),
            kinds,
        ));
    }
    if name.is_empty() {
        errs.push(FieldError::required("roleRef.name", ""));
    } else {
        for msg in name_problems(NameFormat::PathSegment, name, false) {
            errs.push(FieldError::invalid(
                "roleRef.name",
                &Value::from(name),
                &msg,
            ));
        }
    }
    for (i, subject) in array_at(obj, &["subjects"]).iter().enumerate() {
        validate_subject(subject, i, namespaced, errs);
    }
    if let Some(old) = old
        && role_ref(old) != (group, kind, name)
    {
        errs.push(FieldError::invalid_go(
            "roleRef",
            &format!("rbac.RoleRef{{APIGroup:{group:?}, Kind:{kind:?}, Name:{name:?}}}"),
            "cannot change roleRef",
        ));
    }
}

/// `validateRoleBindingSubject`.
fn validate_subject(subject: &Value, i: usize, namespaced: bool, errs: &mut Vec<FieldError>) {
    let path = |f: &str| format!("subjects[{i}].{f}");
    let s = |f: &str| subject.get(f).and_then(Value::as_str).unwrap_or("");
    let name = s("name");
    if name.is_empty() {
        errs.push(FieldError::required(path("name"), ""));
    }
    let group = s("apiGroup");
    match s("kind") {
        "ServiceAccount" => {
            if !name.is_empty() && !is_dns1123_subdomain(name) {
                errs.extend(validate_name(NameFormat::Subdomain, name, &path("name")));
            }
            if !group.is_empty() {
                errs.push(FieldError::not_supported(
                    path("apiGroup"),
                    &Value::from(group),
                    &[""],
                ));
            }
            if !namespaced && s("namespace").is_empty() {
                errs.push(FieldError::required(path("namespace"), ""));
            }
        }
        kind @ ("User" | "Group") => {
            if name.is_empty() {
                let what = if kind == "User" { "user" } else { "group" };
                errs.push(FieldError::invalid(
                    path("name"),
                    &Value::from(""),
                    &format!("{what} name cannot be empty"),
                ));
            }
            if !group.is_empty() && group != GROUP {
                errs.push(FieldError::not_supported(
                    path("apiGroup"),
                    &Value::from(group),
                    &[GROUP],
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            path("kind"),
            &Value::from(other),
            &["ServiceAccount", "User", "Group"],
        )),
    }
}
