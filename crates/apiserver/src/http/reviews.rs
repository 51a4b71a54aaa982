//! The review APIs, answered on create and never stored: who a token or the caller is
//! (`TokenReview`, `SelfSubjectReview`: `kubectl auth whoami`) and whether someone may do
//! something (`SubjectAccessReview`, `LocalSubjectAccessReview`, `SelfSubjectAccessReview`:
//! `kubectl auth can-i`; `SelfSubjectRulesReview`: `kubectl auth can-i --list`).
//!
//! A `TokenReview` asks the server's [`Authenticator`] about any token it knows (the admin's, a
//! static user's, a ServiceAccount's), for the audiences in `spec.audiences` (the API server's
//! when none), and answers the user and the audiences the token is valid for, as upstream's
//! TokenReview does; why a token is refused is not told. A `SelfSubjectReview` answers the
//! caller. Access reviews are answered by the server's authorizer.

use serde_json::{Value, json};

use crate::auth::UserInfo;
use crate::auth::authn::Authenticator;
use crate::error::ApiError;
use crate::resource::ResourceInfo;

/// The review resources, served next to storage's (create only).
pub fn resources() -> Vec<ResourceInfo> {
    crate::resource::review_resources()
}

/// Answers a review `body` posted to `plural` by `user`.
pub fn answer(
    plural: &str,
    body: Value,
    user: &UserInfo,
    authn: &Authenticator,
) -> Result<Value, ApiError> {
    let mut body = body;
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
        "selfsubjectreviews" => json!({ "userInfo": user.to_json() }),
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
            if let Some((found, auds)) = asked.and_then(|t| authn.review_token(t, &audiences)) {
                json!({ "authenticated": true, "user": found.to_json(), "audiences": auds })
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

    fn answer(plural: &str, body: Value, token: &str) -> Result<Value, ApiError> {
        let authn = Authenticator::new(token.into());
        super::answer(plural, body, &UserInfo::admin(), &authn)
    }
    const USERNAME: &str = crate::auth::user::ADMIN;

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
    fn token_reviews_authenticate_the_server_token_for_its_audience() {
        let review = |t: &str| json!({"kind": "TokenReview", "spec": {"token": t}});
        let ok = answer("tokenreviews", review("tok"), "tok").unwrap();
        assert_eq!(ok["status"]["authenticated"], true);
        assert_eq!(ok["status"]["user"]["username"], USERNAME);
        let api = crate::auth::serviceaccount::ISSUER;
        assert_eq!(ok["status"]["audiences"], json!([api]));
        // Audiences asked for: the admin token is valid for the API server's only.
        let with_auds = |auds: Value| json!({"spec": {"token": "tok", "audiences": auds}});
        let ok = answer("tokenreviews", with_auds(json!(["x", api])), "tok").unwrap();
        assert_eq!(ok["status"]["audiences"], json!([api]));
        let no = answer("tokenreviews", with_auds(json!(["x"])), "tok").unwrap();
        assert_eq!(no["status"]["authenticated"], false);
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
