//! The TokenRequest subresource, `POST /api/v1/namespaces/NS/serviceaccounts/NAME/token`
//! (`kubectl create token NAME`): a signed ServiceAccount token
//! ([`crate::auth::serviceaccount`]), checked and answered as kube-apiserver's `TokenREST`
//! does.
//!
//! The body is an `authentication.k8s.io/v1` `TokenRequest` (JSON, or protobuf as kubectl
//! sends it). `metadata.name` and `namespace`, when given, must be the ServiceAccount's; the
//! ServiceAccount must exist (404); `spec.audiences` defaults to the API server's,
//! `spec.expirationSeconds` to 3600 and must lie between 10 minutes and 2^32 seconds (422
//! with upstream's message); `spec.boundObjectRef` may bind the token to a Pod running as the
//! ServiceAccount or to a Secret, which must exist with the uid given (if any). The answer (201)
//! is the request with `status.token` and `status.expirationTimestamp`.

use chrono::{DateTime, SecondsFormat, Utc};
use http::{Method, Request, Response, header};
use serde_json::{Value, json};

use super::AppState;
use super::request::{ResourcePath, decode_object};
use super::response::{Body, json, method_not_allowed, read_body};
use crate::auth::serviceaccount::{Claims, ObjectClaim, new_token_id};
use crate::error::ApiError;

/// `expirationSeconds` when the request names none.
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest lifetime a token may be asked for (10 minutes).
pub const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest lifetime a token may be asked for.
pub const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

const GROUP: &str = "authentication.k8s.io";
const KIND: &str = "TokenRequest";

fn invalid(name: &str, field: &str, value: impl std::fmt::Display, detail: &str) -> ApiError {
    ApiError::invalid(
        KIND,
        GROUP,
        name,
        &[(field.into(), format!("Invalid value: {value}: {detail}"))],
    )
}

/// Serves a request to `serviceaccounts/NAME/token`.
pub async fn serve<B>(
    state: &AppState,
    req: Request<B>,
    path: &ResourcePath,
) -> Result<Response<Body>, ApiError>
where
    B: hyper::body::Body + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    if req.method() != Method::POST {
        return Err(method_not_allowed());
    }
    let (Some(ns), Some(name)) = (path.namespace.as_deref(), path.name.as_deref()) else {
        return Err(super::response::not_found());
    };
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let body = read_body(req.into_body(), None, state.max_body_bytes).await?;
    let request = decode_object(content_type.as_deref(), &body)?;
    let answer = issue(state, ns, name, request, Utc::now())?;
    Ok(json(201, &answer))
}

/// Checks `request` for ServiceAccount `ns/name` and answers it with a token issued at `now`.
fn issue(
    state: &AppState,
    ns: &str,
    name: &str,
    mut request: Value,
    now: DateTime<Utc>,
) -> Result<Value, ApiError> {
    if let Some(kind) = request.get("kind").and_then(Value::as_str)
        && kind != KIND
    {
        return Err(ApiError::bad_request(format!(
            "the body must be a {GROUP}/v1 {KIND}, not a {kind}"
        )));
    }
    let given = |field: &str| {
        request
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .map(String::from)
    };
    if let Some(given) = given("name")
        && given != name
    {
        return Err(invalid(
            name,
            "metadata.name",
            format!("{given:?}"),
            "must match the service account name if specified",
        ));
    }
    if let Some(given) = given("namespace")
        && given != ns
    {
        return Err(invalid(
            name,
            "metadata.namespace",
            format!("{given:?}"),
            "must match the service account namespace if specified",
        ));
    }
    let storage = &state.storage;
    let get = |plural: &str, object: &str| -> Result<Value, ApiError> {
        let res = storage
            .resolve("", "v1", plural)
            .ok_or_else(|| ApiError::not_found(plural, object))?;
        storage.get(&res, Some(ns), object, None)
    };
    let sa = get("serviceaccounts", name)?;
    let uid_of = |obj: &Value| obj["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let signer = state
        .authn
        .token_signer()
        .ok_or_else(|| ApiError::internal("service account tokens are not enabled"))?;

    if !request.get("spec").is_some_and(Value::is_object) {
        request["spec"] = json!({});
    }
    let spec = &mut request["spec"];
    let audiences: Vec<String> = match spec.get("audiences").and_then(Value::as_array) {
        Some(a) if !a.is_empty() => a
            .iter()
            .map(|v| v.as_str().map(String::from))
            .collect::<Option<_>>()
            .ok_or_else(|| ApiError::bad_request("spec.audiences must be strings"))?,
        _ => signer.api_audiences().to_vec(),
    };
    spec["audiences"] = json!(audiences);
    let expiration = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| ApiError::bad_request("spec.expirationSeconds must be an integer"))?,
    };
    spec["expirationSeconds"] = json!(expiration);
    if expiration < MIN_EXPIRATION_SECONDS {
        return Err(invalid(
            "",
            "spec.expirationSeconds",
            expiration,
            "may not specify a duration less than 10 minutes",
        ));
    }
    if expiration > MAX_EXPIRATION_SECONDS {
        return Err(invalid(
            "",
            "spec.expirationSeconds",
            expiration,
            "may not specify a duration larger than 2^32 seconds",
        ));
    }

    let mut claims = Claims {
        namespace: ns.into(),
        service_account: ObjectClaim {
            name: name.into(),
            uid: uid_of(&sa),
        },
        audiences,
        issued_at: now.timestamp(),
        expires_at: now.timestamp() + expiration,
        id: new_token_id(),
        ..Default::default()
    };
    if let Some(bound) = spec.get("boundObjectRef").filter(|b| b.is_object()) {
        let field = |f: &str| bound.get(f).and_then(Value::as_str).unwrap_or("");
        let (kind, api_version, object, want_uid) = (
            field("kind"),
            field("apiVersion"),
            field("name"),
            field("uid"),
        );
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let version = api_version.rsplit_once('/').map_or(api_version, |(_, v)| v);
        let found = match (group, kind) {
            ("", "Pod") => {
                let pod = get("pods", object)?;
                if pod
                    .pointer("/spec/serviceAccountName")
                    .and_then(Value::as_str)
                    != Some(name)
                {
                    return Err(ApiError::bad_request(format!(
                        "cannot bind token for serviceaccount {name:?} to pod running with different serviceaccount name."
                    )));
                }
                claims.pod = Some(ObjectClaim {
                    name: object.into(),
                    uid: uid_of(&pod),
                });
                pod
            }
            ("", "Secret") => {
                let secret = get("secrets", object)?;
                claims.secret = Some(ObjectClaim {
                    name: object.into(),
                    uid: uid_of(&secret),
                });
                secret
            }
            _ => {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token to object of type {group}/{version}, Kind={kind}"
                )));
            }
        };
        if !want_uid.is_empty() && want_uid != uid_of(&found) {
            return Err(ApiError::conflict(
                kind,
                object,
                &format!(
                    "the UID in the bound object reference ({want_uid}) does not match the UID in record. The object might have been deleted and then recreated"
                ),
            ));
        }
    }

    let token = signer
        .sign(&claims)
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let expires = now + chrono::Duration::seconds(expiration);
    request["apiVersion"] = json!(format!("{GROUP}/v1"));
    request["kind"] = json!(KIND);
    if !request.get("metadata").is_some_and(Value::is_object) {
        request["metadata"] = json!({});
    }
    request["metadata"]["name"] = json!(name);
    request["metadata"]["namespace"] = json!(ns);
    request["metadata"]["creationTimestamp"] =
        json!(now.to_rfc3339_opts(SecondsFormat::Secs, true));
    request["status"] = json!({
        "token": token,
        "expirationTimestamp": expires.to_rfc3339_opts(SecondsFormat::Secs, true),
    });
    Ok(request)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::auth::authn::Authenticator;
    use crate::auth::authz::Authorizer;
    use crate::auth::serviceaccount::TokenSigner;
    use crate::storage::{Storage, WriteOptions};

    fn state() -> AppState {
        let storage = Storage::default();
        let signer = Arc::new(TokenSigner::generate().unwrap());
        let res = storage.resolve("", "v1", "serviceaccounts").unwrap();
        storage
            .create(
                &res,
                Some("default"),
                json!({"metadata": {"name": "app"}}),
                &WriteOptions::default(),
            )
            .unwrap();
        AppState {
            faults: crate::Faults::new(storage.clone()),
            authn: Authenticator::new("admin".into())
                .with_service_accounts(signer, Arc::new(storage.clone())),
            authz: Authorizer::new(storage.clone()),
            storage,
            max_body_bytes: 1 << 20,
            server_address: "127.0.0.1:0".into(),
            apf: Default::default(),
        }
    }

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000, 0).unwrap()
    }

    #[test]
    fn issues_a_token_with_defaults_that_authenticates() {
        let state = state();
        let answer = issue(&state, "default", "app", json!({}), Utc::now()).unwrap();
        assert_eq!(answer["kind"], "TokenRequest");
        assert_eq!(answer["apiVersion"], "authentication.k8s.io/v1");
        assert_eq!(answer["spec"]["expirationSeconds"], 3600);
        assert_eq!(
            answer["spec"]["audiences"],
            json!([crate::auth::serviceaccount::ISSUER])
        );
        let token = answer["status"]["token"].as_str().unwrap();
        let user = state.authn.authenticate_token(token).unwrap();
        assert_eq!(user.name, "system:serviceaccount:default:app");

        let answer = issue(&state, "default", "app", json!({}), now()).unwrap();
        assert_eq!(
            answer["status"]["expirationTimestamp"],
            "2023-11-14T23:13:20Z"
        );
        assert_eq!(
            answer["metadata"]["creationTimestamp"],
            "2023-11-14T22:13:20Z"
        );
    }

    #[test]
    fn refusals_are_worded_as_upstream() {
        let state = state();
        let err =
            |ns: &str, name: &str, body: Value| issue(&state, ns, name, body, now()).unwrap_err();
        let e = err(
            "default",
            "app",
            json!({"spec": {"expirationSeconds": 599}}),
        );
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                422,
                r#"TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"#
            )
        );
        let e = err(
            "default",
            "app",
            json!({"spec": {"expirationSeconds": (1i64 << 32) + 1}}),
        );
        assert_eq!(e.code, 422);
        assert!(
            e.message
                .ends_with("may not specify a duration larger than 2^32 seconds")
        );
        assert!(
            issue(
                &state,
                "default",
                "app",
                json!({"spec": {"expirationSeconds": 600}}),
                now()
            )
            .is_ok()
        );
        let e = err("default", "missing", json!({}));
        assert_eq!(
            (e.code, e.message.as_str()),
            (404, r#"serviceaccounts "missing" not found"#)
        );
        let e = err("default", "app", json!({"metadata": {"name": "other"}}));
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                422,
                r#"TokenRequest.authentication.k8s.io "app" is invalid: metadata.name: Invalid value: "other": must match the service account name if specified"#
            )
        );
        let e = err(
            "default",
            "app",
            json!({"spec": {"boundObjectRef": {"kind": "Node", "apiVersion": "v1", "name": "n"}}}),
        );
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "cannot bind token to object of type /v1, Kind=Node")
        );
        let e = err(
            "default",
            "app",
            json!({"spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p"}}}),
        );
        assert_eq!(e.code, 404);
    }

    #[test]
    fn tokens_bind_to_a_pod_of_the_service_account() {
        let state = state();
        let pods = state.storage.resolve("", "v1", "pods").unwrap();
        let pod = |name: &str, sa: &str| {
            state
                .storage
                .create(
                    &pods,
                    Some("default"),
                    json!({"metadata": {"name": name}, "spec": {"serviceAccountName": sa,
                           "containers": [{"name": "c", "image": "nginx"}]}}),
                    &WriteOptions::default(),
                )
                .unwrap()
        };
        let web = pod("web", "app");
        pod("other", "someone-else");
        let bind = |name: &str, uid: &str| json!({"spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": name, "uid": uid}}});
        let uid = web["metadata"]["uid"].as_str().unwrap();
        let answer = issue(&state, "default", "app", bind("web", uid), Utc::now()).unwrap();
        let user = state
            .authn
            .authenticate_token(answer["status"]["token"].as_str().unwrap())
            .unwrap();
        assert_eq!(user.extra["authentication.kubernetes.io/pod-name"], ["web"]);
        let e = issue(&state, "default", "app", bind("other", ""), now()).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                400,
                r#"cannot bind token for serviceaccount "app" to pod running with different serviceaccount name."#
            )
        );
        let e = issue(&state, "default", "app", bind("web", "nope"), now()).unwrap_err();
        assert_eq!(e.code, 409);
        assert!(e.message.starts_with(r#"Operation cannot be fulfilled on Pod "web": the UID in the bound object reference (nope) does not match"#), "{}", e.message);
    }
}
