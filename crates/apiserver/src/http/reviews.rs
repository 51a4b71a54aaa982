//! The review APIs, answered on create and never stored: who a token or the caller is
//! (`TokenReview`, `SelfSubjectReview`: `kubectl auth whoami`) and whether someone may do
//! something (`SubjectAccessReview`, `LocalSubjectAccessReview`, `SelfSubjectAccessReview`:
//! `kubectl auth can-i`; `SelfSubjectRulesReview`: `kubectl auth can-i --list`).
//!
//! A `TokenReview` asks the server's [`Authenticator`] about any token it knows (the admin's, a
//! static user's, a ServiceAccount's), for the audiences in `spec.audiences` (the API server's
//! when none), and answers the user and the audiences the token is valid for, as upstream's
//! TokenReview does; why a token is refused is not told. A `SelfSubjectReview` answers the
//! caller. Access reviews ask the server's [`Authorizer`] about the caller (self reviews) or
//! the user the spec names, as upstream's registries do: the attributes are the spec's (an
//! empty version is `*`), the status is `allowed`, `reason` (`RBAC: allowed by ...`, or why a
//! refusal could not consider every binding) and, as RBAC never denies outright, no `denied`.
//! A rules review lists RBAC's rules for the caller in the namespace, `incomplete: false` and
//! any resolution error as `evaluationError`, as upstream's RBAC rule resolver answers. Creating
//! a review is itself authorized like any create (`create subjectaccessreviews`, which
//! `system:basic-user` grants every authenticated user for the self reviews only).

use crate::json;
use serde_json::{Map, Value, json};

use crate::auth::UserInfo;
use crate::auth::authn::Authenticator;
use crate::auth::authz::{Authorizer, Decision, RequestAttributes};
use crate::error::ApiError;
use crate::resource::ResourceInfo;
use crate::validation::{FieldError, invalid_kind};

/// The review resources, served next to storage's (create only).
pub fn resources() -> Vec<ResourceInfo> {
    crate::resource::ResourceInfo::reviews()
}

/// Who asks and who answers a review.
pub struct Reviewer<'a> {
    /// The user who posted it.
    pub user: &'a UserInfo,
    /// The server's authenticator (`TokenReview`).
    pub authn: &'a Authenticator,
    /// The server's authorizer (access and rules reviews).
    pub authz: &'a Authorizer,
    /// The namespace of the request's path (`LocalSubjectAccessReview`).
    pub namespace: Option<&'a str>,
}

/// Answers a review `body` posted to `plural`.
pub fn answer(plural: &str, body: Value, by: &Reviewer<'_>) -> Result<Value, ApiError> {
    let mut body = body;
    let status = match plural {
        "selfsubjectaccessreviews" => {
            let spec = body.get("spec").cloned().unwrap_or(Value::Null);
            let mut errs = check_attributes(&spec);
            errs.extend(check_metadata(&body, false));
            if !errs.is_empty() {
                return Err(invalid_kind("SelfSubjectAccessReview", GROUP, "", &errs));
            }
            access_status(by.authz, by.user, &spec)
        }
        "subjectaccessreviews" | "localsubjectaccessreviews" => {
            let local = plural == "localsubjectaccessreviews";
            if local {
                set_namespace(&mut body, by.namespace)?;
            }
            let spec = body.get("spec").cloned().unwrap_or(Value::Null);
            let mut errs = check_attributes(&spec);
            if json::str_at(&spec, &["user"]).is_empty() && strings(&spec, "groups").is_empty() {
                errs.push(FieldError::invalid_go(
                    "spec.user",
                    "\"\"",
                    "at least one of user or group must be specified",
                ));
            }
            errs.extend(check_metadata(&body, local));
            if local {
                errs.extend(check_local(&body, &spec));
            }
            if !errs.is_empty() {
                let kind = if local {
                    "LocalSubjectAccessReview"
                } else {
                    "SubjectAccessReview"
                };
                return Err(invalid_kind(kind, GROUP, "", &errs));
            }
            access_status(by.authz, &subject_of(&spec), &spec)
        }
        "selfsubjectrulesreviews" => {
            let namespace = json::str_at(&body, &["spec", "namespace"]);
            if namespace.is_empty() {
                return Err(ApiError::bad_request("no namespace on request"));
            }
            let (rules, error) = by.authz.rules_for(by.user, namespace);
            let resource: Vec<Value> = rules
                .iter()
                .filter(|r| !r.resources.is_empty())
                .map(|r| {
                    let mut out = json!({"verbs": r.verbs, "apiGroups": r.api_groups, "resources": r.resources});
                    if !r.resource_names.is_empty() {
                        out["resourceNames"] = json!(r.resource_names);
                    }
                    out
                })
                .collect();
            let non_resource: Vec<Value> = rules
                .iter()
                .filter(|r| !r.non_resource_urls.is_empty())
                .map(|r| json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}))
                .collect();
            let mut status = json!({
                "resourceRules": resource,
                "nonResourceRules": non_resource,
                "incomplete": false,
            });
            if !error.is_empty() {
                status["evaluationError"] = json!(error);
            }
            status
        }
        "selfsubjectreviews" => json!({ "userInfo": by.user.to_json() }),
        "tokenreviews" => {
            let asked = body.pointer("/spec/token").and_then(Value::as_str);
            let audiences: Vec<String> = body
                .pointer("/spec/audiences")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            if let Some((found, auds)) = asked.and_then(|t| by.authn.review_token(t, &audiences)) {
                json!({ "authenticated": true, "user": found.to_json(), "audiences": auds })
            } else {
                json!({ "authenticated": false, "user": {}, "error": "invalid bearer token" })
            }
        }
        _ => return Err(super::response::not_found()),
    };
    body["status"] = status;
    if body.get("metadata").is_none_or(|m| !m.is_object()) {
        body["metadata"] = json!({});
    }
    Ok(body)
}

const GROUP: &str = "authorization.k8s.io";

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

fn present(v: &Value, key: &str) -> bool {
    v.get(key).is_some_and(|a| !a.is_null())
}

/// Exactly one of `resourceAttributes` and `nonResourceAttributes` (upstream's spec checks).
fn check_attributes(spec: &Value) -> Vec<FieldError> {
    let res = present(spec, "resourceAttributes");
    let non = present(spec, "nonResourceAttributes");
    let mut errs = Vec::new();
    if res && non {
        let na = &spec["nonResourceAttributes"];
        errs.push(FieldError::invalid_go(
            "spec.nonResourceAttributes",
            &format!(
                "authorization.NonResourceAttributes{{Path:{:?}, Verb:{:?}}}",
                json::str_at(na, &["path"]),
                json::str_at(na, &["verb"])
            ),
            "cannot be specified in combination with resourceAttributes",
        ));
    }
    if !res && !non {
        errs.push(FieldError::invalid_go(
            "spec.resourceAttributes",
            "\"null\"",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ));
    }
    errs
}

/// Review metadata must be empty (a `LocalSubjectAccessReview`'s but for its namespace).
fn check_metadata(body: &Value, local: bool) -> Vec<FieldError> {
    let Some(meta) = body.get("metadata").and_then(Value::as_object) else {
        return Vec::new();
    };
    let empty = |v: &Value| match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Number(n) => n.as_i64() == Some(0),
        Value::Bool(b) => !b,
    };
    let set = meta
        .iter()
        .any(|(k, v)| k != "managedFields" && !(local && k == "namespace") && !empty(v));
    if !set {
        return Vec::new();
    }
    let detail = if local {
        "must be empty except for namespace"
    } else {
        "must be empty"
    };
    vec![FieldError::invalid_go(
        "metadata",
        &format!(
            "v1.ObjectMeta{{Name:{:?}, ...}}",
            json::str_at(body, &["metadata", "name"])
        ),
        detail,
    )]
}

/// A local review's namespace: the path's, which a namespace in the body must equal.
fn set_namespace(body: &mut Value, namespace: Option<&str>) -> Result<(), ApiError> {
    let path_ns = namespace.unwrap_or("");
    if path_ns.is_empty() {
        return Err(ApiError::bad_request(format!(
            "namespace is required on this type: {path_ns}"
        )));
    }
    let given = json::str_at(body, &["metadata", "namespace"]).to_string();
    if !given.is_empty() && given != path_ns {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    if !body.get("metadata").is_some_and(Value::is_object) {
        body["metadata"] = json!({});
    }
    body["metadata"]["namespace"] = json!(path_ns);
    Ok(())
}

/// A local review asks about its own namespace, and about resources only.
fn check_local(body: &Value, spec: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ns = json::str_at(body, &["metadata", "namespace"]);
    if present(spec, "resourceAttributes") {
        let asked = json::str_at(spec, &["resourceAttributes", "namespace"]);
        if asked != ns {
            errs.push(FieldError::invalid(
                "spec.resourceAttributes.namespace",
                &json!(asked),
                "must match metadata.namespace",
            ));
        }
    }
    if present(spec, "nonResourceAttributes") {
        let na = &spec["nonResourceAttributes"];
        errs.push(FieldError::invalid_go(
            "spec.nonResourceAttributes",
            &format!(
                "authorization.NonResourceAttributes{{Path:{:?}, Verb:{:?}}}",
                json::str_at(na, &["path"]),
                json::str_at(na, &["verb"])
            ),
            "disallowed on this kind of request",
        ));
    }
    errs
}

/// The user a (Local)SubjectAccessReview asks about.
fn subject_of(spec: &Value) -> UserInfo {
    let extra = spec
        .get("extra")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let values = v
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(Value::as_str)
                                .map(String::from)
                                .collect()
                        })
                        .unwrap_or_default();
                    (k.clone(), values)
                })
                .collect()
        })
        .unwrap_or_default();
    UserInfo {
        name: json::str_at(spec, &["user"]).to_string(),
        uid: json::str_at(spec, &["uid"]).to_string(),
        groups: strings(spec, "groups"),
        extra,
    }
}

/// The attributes a review's spec asks about (upstream's `ResourceAttributesFrom` and
/// `NonResourceAttributesFrom`).
pub fn attributes_of(spec: &Value) -> RequestAttributes {
    if let Some(ra) = spec.get("resourceAttributes").filter(|v| !v.is_null()) {
        let version = json::str_at(ra, &["version"]);
        return RequestAttributes {
            verb: json::str_at(ra, &["verb"]).to_string(),
            resource_request: true,
            api_group: json::str_at(ra, &["group"]).to_string(),
            api_version: if version.is_empty() { "*" } else { version }.to_string(),
            resource: json::str_at(ra, &["resource"]).to_string(),
            subresource: json::str_at(ra, &["subresource"]).to_string(),
            namespace: json::str_at(ra, &["namespace"]).to_string(),
            name: json::str_at(ra, &["name"]).to_string(),
            ..Default::default()
        };
    }
    let na = spec.get("nonResourceAttributes").unwrap_or(&Value::Null);
    RequestAttributes {
        verb: json::str_at(na, &["verb"]).to_string(),
        path: json::str_at(na, &["path"]).to_string(),
        ..Default::default()
    }
}

/// `SubjectAccessReviewStatus`: `allowed` always, `reason` when not empty.
fn access_status(authz: &Authorizer, user: &UserInfo, spec: &Value) -> Value {
    let (allowed, reason) = match authz.authorize(user, &attributes_of(spec)) {
        Decision::Allow(r) => (true, r),
        Decision::Deny(r) => (false, r),
    };
    let mut status = Map::new();
    status.insert("allowed".into(), json!(allowed));
    if !reason.is_empty() {
        status.insert("reason".into(), json!(reason));
    }
    Value::Object(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Storage;

    const USERNAME: &str = crate::auth::user::ADMIN;

    struct Env {
        authn: Authenticator,
        authz: Authorizer,
    }

    fn env() -> Env {
        let store = Storage::default();
        crate::auth::bootstrap::install(&store);
        Env {
            authn: Authenticator::new("tok".into()),
            authz: Authorizer::new(store),
        }
    }

    fn ask(
        e: &Env,
        plural: &str,
        body: Value,
        user: &UserInfo,
        ns: Option<&str>,
    ) -> Result<Value, ApiError> {
        let by = Reviewer {
            user,
            authn: &e.authn,
            authz: &e.authz,
            namespace: ns,
        };
        answer(plural, body, &by)
    }

    fn bob() -> UserInfo {
        UserInfo {
            name: "bob".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }
    }

    #[test]
    fn access_reviews_answer_what_rbac_answers() {
        let e = env();
        let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "metadata": {"creationTimestamp": null},
            "spec": {"resourceAttributes": {"verb": "create", "resource": "pods", "namespace": "default"}}});
        let admin = ask(
            &e,
            "selfsubjectaccessreviews",
            review.clone(),
            &UserInfo::admin(),
            None,
        )
        .unwrap();
        assert_eq!(admin["status"], json!({"allowed": true}));
        assert_eq!(admin["spec"]["resourceAttributes"]["verb"], "create");
        let no = ask(&e, "selfsubjectaccessreviews", review, &bob(), None).unwrap();
        assert_eq!(no["status"], json!({"allowed": false}));
        let api = json!({"spec": {"nonResourceAttributes": {"verb": "get", "path": "/api"}}});
        assert_eq!(
            ask(&e, "selfsubjectaccessreviews", api, &bob(), None).unwrap()["status"],
            json!({"allowed": true, "reason": "RBAC: allowed by ClusterRoleBinding \"system:discovery\" of ClusterRole \"system:discovery\" to Group \"system:authenticated\""})
        );
        // A SubjectAccessReview asks about the user its spec names.
        let sar = json!({"spec": {"user": "carol", "groups": ["system:masters"], "resourceAttributes": {"verb": "delete", "resource": "nodes"}}});
        assert_eq!(
            ask(&e, "subjectaccessreviews", sar, &bob(), None).unwrap()["status"]["allowed"],
            true
        );
        let sar = json!({"spec": {"user": "carol", "resourceAttributes": {"verb": "delete", "resource": "nodes"}}});
        assert_eq!(
            ask(&e, "subjectaccessreviews", sar, &bob(), None).unwrap()["status"]["allowed"],
            false
        );
    }

    #[test]
    fn malformed_access_reviews_are_refused_as_upstream() {
        let e = env();
        let err = ask(
            &e,
            "selfsubjectaccessreviews",
            json!({"spec": {}}),
            &bob(),
            None,
        )
        .unwrap_err();
        assert_eq!(err.code, 422);
        assert_eq!(
            err.message,
            r#"SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified"#
        );
        let err = ask(
            &e,
            "subjectaccessreviews",
            json!({"spec": {"nonResourceAttributes": {"path": "/", "verb": "get"}}}),
            &bob(),
            None,
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            r#"SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be specified"#
        );
        let local = json!({"spec": {"user": "u", "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "b"}}});
        let err = ask(
            &e,
            "localsubjectaccessreviews",
            local.clone(),
            &bob(),
            Some("a"),
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            r#"LocalSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: Invalid value: "b": must match metadata.namespace"#
        );
        let ok = ask(&e, "localsubjectaccessreviews", local, &bob(), Some("b")).unwrap();
        assert_eq!(ok["metadata"]["namespace"], "b");
        assert_eq!(ok["status"]["allowed"], false);
        let err = ask(
            &e,
            "selfsubjectrulesreviews",
            json!({"spec": {}}),
            &bob(),
            None,
        )
        .unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (400, "no namespace on request")
        );
    }

    #[test]
    fn rules_reviews_list_the_callers_rbac_rules() {
        let e = env();
        let review = json!({"spec": {"namespace": "default"}});
        let mine = ask(&e, "selfsubjectrulesreviews", review.clone(), &bob(), None).unwrap();
        assert_eq!(mine["status"]["incomplete"], false);
        let resources = mine["status"]["resourceRules"].as_array().unwrap();
        assert!(
            resources.contains(
                &json!({"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]})
            ),
            "{resources:?}"
        );
        assert!(!resources.iter().any(|r| r["resources"] == json!(["*"])));
        let admin = ask(
            &e,
            "selfsubjectrulesreviews",
            review,
            &UserInfo::admin(),
            None,
        )
        .unwrap();
        assert!(
            admin["status"]["resourceRules"]
                .as_array()
                .unwrap()
                .contains(&json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}))
        );
        assert!(
            admin["status"]["nonResourceRules"]
                .as_array()
                .unwrap()
                .contains(&json!({"verbs": ["*"], "nonResourceURLs": ["*"]}))
        );
    }

    #[test]
    fn who_am_i_and_token_reviews() {
        let e = env();
        let who = ask(
            &e,
            "selfsubjectreviews",
            json!({}),
            &UserInfo::admin(),
            None,
        )
        .unwrap();
        assert_eq!(who["status"]["userInfo"]["username"], USERNAME);
    }

    #[test]
    fn token_reviews_authenticate_the_server_token_for_its_audience() {
        let e = env();
        let review = |t: &str| json!({"kind": "TokenReview", "spec": {"token": t}});
        let ok = ask(&e, "tokenreviews", review("tok"), &UserInfo::admin(), None).unwrap();
        assert_eq!(ok["status"]["authenticated"], true);
        assert_eq!(ok["status"]["user"]["username"], USERNAME);
        let api = crate::auth::serviceaccount::ISSUER;
        assert_eq!(ok["status"]["audiences"], json!([api]));
        // Audiences asked for: the admin token is valid for the API server's only.
        let with_auds = |auds: Value| json!({"spec": {"token": "tok", "audiences": auds}});
        let ok = ask(
            &e,
            "tokenreviews",
            with_auds(json!(["x", api])),
            &UserInfo::admin(),
            None,
        )
        .unwrap();
        assert_eq!(ok["status"]["audiences"], json!([api]));
        let no = ask(
            &e,
            "tokenreviews",
            with_auds(json!(["x"])),
            &UserInfo::admin(),
            None,
        )
        .unwrap();
        assert_eq!(no["status"]["authenticated"], false);
        for bad in ["other", ""] {
            let no = ask(&e, "tokenreviews", review(bad), &UserInfo::admin(), None).unwrap();
            assert_eq!(no["status"]["authenticated"], false, "{bad:?}");
        }
        assert_eq!(
            ask(&e, "widgets", json!({}), &UserInfo::admin(), None)
                .unwrap_err()
                .code,
            404
        );
    }

    #[test]
    fn every_review_kind_is_served_create_only() {
        let served = resources();
        assert_eq!(served.len(), 6);
        assert!(served.iter().all(|r| r.verbs() == vec!["create"]));
        let local = served
            .iter()
            .find(|r| r.plural == "localsubjectaccessreviews")
            .unwrap();
        assert!(local.namespaced);
    }
}
