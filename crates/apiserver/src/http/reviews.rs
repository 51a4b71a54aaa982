//! The self-review APIs kubectl asks about the caller (`kubectl auth can-i`,
//! `kubectl auth whoami`). The token holder may do everything (as `system:masters` on a real
//! cluster), so every access review is allowed.

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::resource::ResourceInfo;

/// The username the bearer token authenticates as.
pub const USERNAME: &str = "crt-admin";

fn review(group: &str, plural: &str, kind: &str) -> ResourceInfo {
    ResourceInfo {
        group: group.into(),
        version: "v1".into(),
        plural: plural.into(),
        singular: String::new(),
        kind: kind.into(),
        list_kind: format!("{kind}List"),
        namespaced: false,
        short_names: vec![],
        categories: vec![],
        status_subresource: false,
        scale: None,
        generation: false,
        custom: false,
    }
}

/// The review resources, served next to storage's (create only).
pub fn resources() -> Vec<ResourceInfo> {
    vec![
        review(
            "authorization.k8s.io",
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
        ),
        review(
            "authentication.k8s.io",
            "selfsubjectreviews",
            "SelfSubjectReview",
        ),
    ]
}

/// Answers a review `body` posted to `plural`.
pub fn answer(plural: &str, body: Value) -> Result<Value, ApiError> {
    let mut body = body;
    let status = match plural {
        "selfsubjectaccessreviews" => json!({
            "allowed": true,
            "reason": "crt-apiserver: the token holder may do everything",
        }),
        "selfsubjectreviews" => json!({
            "userInfo": { "username": USERNAME, "groups": ["system:masters", "system:authenticated"] },
        }),
        _ => return Err(super::response::not_found()),
    };
    body["status"] = status;
    if body.get("metadata").is_none() {
        body["metadata"] = json!({});
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_reviews_are_allowed() {
        let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "create", "resource": "pods"}}});
        let answered = answer("selfsubjectaccessreviews", review).unwrap();
        assert_eq!(answered["status"]["allowed"], true);
        assert_eq!(answered["spec"]["resourceAttributes"]["verb"], "create");
        let who = answer("selfsubjectreviews", json!({})).unwrap();
        assert_eq!(who["status"]["userInfo"]["username"], USERNAME);
        assert_eq!(answer("tokenreviews", json!({})).unwrap_err().code, 404);
    }
}
