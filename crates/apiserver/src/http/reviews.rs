//! The review APIs, answered on create and never stored: who a token or the caller is
//! (`TokenReview`, `SelfSubjectReview`: `kubectl auth whoami`) and whether someone may do
//! something (`SubjectAccessReview`, `LocalSubjectAccessReview`, `SelfSubjectAccessReview`:
//! `kubectl auth can-i`; `SelfSubjectRulesReview`: `kubectl auth can-i --list`).
//!
//! The server knows one identity, the bearer token's holder, who may do everything (as
//! `system:masters` on a real cluster): every access review is allowed, and a `TokenReview`
//! authenticates exactly the server's token.

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::resource::ResourceInfo;

/// The username the bearer token authenticates as (the one identity admission sees too).
pub const USERNAME: &str = crate::admission::USERNAME;

/// The groups the bearer token's holder belongs to.
const GROUPS: [&str; 2] = crate::admission::GROUPS;

/// The review resources, served next to storage's (create only).
pub fn resources() -> Vec<ResourceInfo> {
    crate::resource::review_resources()
}

/// Answers a review `body` posted to `plural`; `token` is the server's bearer token.
pub fn answer(plural: &str, body: Value, token: &str) -> Result<Value, ApiError> {
    let mut body = body;
    let user_info = json!({ "username": USERNAME, "groups": GROUPS });
    let status = match plural {
        "selfsubjectaccessreviews" | "subjectaccessreviews" | "localsubjectaccessreviews" => {
            json!({
                "allowed": true,
                "reason": "crt-apiserver: the token holder may do everything",
            })
        }
        "selfsubjectrulesreviews" => json!({
            "resourceRules": [{ "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"] }],
            "nonResourceRules": [{ "verbs": ["*"], "nonResourceURLs": ["*"] }],
            "incomplete": false,
        }),
        "selfsubjectreviews" => json!({ "userInfo": user_info }),
        "tokenreviews" => {
            let asked = body.pointer("/spec/token").and_then(Value::as_str);
            if asked.is_some_and(|t| !t.is_empty() && t == token) {
                json!({ "authenticated": true, "user": user_info, "audiences": [] })
            } else {
                json!({ "authenticated": false, "user": {}, "error": "invalid bearer token" })
            }
        }
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
        let answered = answer("selfsubjectaccessreviews", review, "tok").unwrap();
        assert_eq!(answered["status"]["allowed"], true);
        assert_eq!(answered["spec"]["resourceAttributes"]["verb"], "create");
        for plural in ["subjectaccessreviews", "localsubjectaccessreviews"] {
            let review = json!({"spec": {"user": "bob", "resourceAttributes": {"verb": "get"}}});
            assert_eq!(
                answer(plural, review, "tok").unwrap()["status"]["allowed"],
                true
            );
        }
        let rules = answer("selfsubjectrulesreviews", json!({}), "tok").unwrap();
        assert_eq!(rules["status"]["resourceRules"][0]["verbs"], json!(["*"]));
        let who = answer("selfsubjectreviews", json!({}), "tok").unwrap();
        assert_eq!(who["status"]["userInfo"]["username"], USERNAME);
        assert_eq!(answer("widgets", json!({}), "tok").unwrap_err().code, 404);
    }

    #[test]
    fn token_reviews_authenticate_only_the_server_token() {
        let review = |t: &str| json!({"kind": "TokenReview", "spec": {"token": t}});
        let ok = answer("tokenreviews", review("tok"), "tok").unwrap();
        assert_eq!(ok["status"]["authenticated"], true);
        assert_eq!(ok["status"]["user"]["username"], USERNAME);
        for bad in ["other", ""] {
            let no = answer("tokenreviews", review(bad), "tok").unwrap();
            assert_eq!(no["status"]["authenticated"], false, "{bad:?}");
        }
        let none = answer("tokenreviews", json!({}), "tok").unwrap();
        assert_eq!(none["status"]["authenticated"], false);
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
