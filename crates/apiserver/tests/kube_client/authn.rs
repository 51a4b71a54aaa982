//! Authentication over HTTPS: static users' tokens, client certificates and ServiceAccount
//! tokens authenticate as upstream names them (asked through SelfSubjectReview and
//! TokenReview); bad credentials of every kind are 401 with the body `Unauthorized`, and none
//! of them shows in the server's logs.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use crt_apiserver::auth::StaticUser;
use crt_apiserver::auth::serviceaccount::{Claims, ObjectClaim, TokenSigner};
use crt_apiserver::auth::x509::{ClientCa, ClientCertificateParams};
use crt_apiserver::{Config, Server};
use http_body_util::BodyExt;
use kube_client::Client;
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::common::client_from_kubeconfig;

const API_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";

/// Everything the server logs (every level), for the test's thread.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock()).into_owned()
    }
}

async fn server_with_jane() -> Server {
    Server::start(Config {
        users: vec![StaticUser::new("jane-token", "jane", &["devs"]).with_uid("u-42")],
        ..Config::default()
    })
    .await
    .expect("server starts")
}

/// A client with no credentials of its own (requests carry their own `Authorization`).
async fn anonymous(server: &Server) -> Client {
    let user = format!("user:\n    token: {}\n", server.token());
    client_from_kubeconfig(&server.kubeconfig().replace(&user, "user: {}\n")).await
}

/// A client presenting `cert_pem`/`key_pem`.
async fn with_certificate(server: &Server, cert_pem: &str, key_pem: &str) -> Client {
    use base64::Engine;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let user = format!("user:\n    token: {}\n", server.token());
    let creds = format!(
        "user:\n    client-certificate-data: {}\n    client-key-data: {}\n",
        b64(cert_pem),
        b64(key_pem)
    );
    client_from_kubeconfig(&server.kubeconfig().replace(&user, &creds)).await
}

/// A request with an optional `Authorization` header: status and body.
async fn send(
    client: &Client,
    method: &str,
    uri: &str,
    authorization: Option<&str>,
    body: Value,
) -> (u16, String) {
    let mut req = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json");
    if let Some(a) = authorization {
        req = req.header("authorization", a);
    }
    let req = req
        .body(kube_client::client::Body::from(Bytes::from(
            body.to_string(),
        )))
        .unwrap();
    let resp = client.send(req).await.expect("request sent");
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

const WHOAMI: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";

async fn whoami(client: &Client, authorization: Option<&str>) -> (u16, Value) {
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let (status, text) = send(client, "POST", WHOAMI, authorization, body).await;
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn create_service_account(server: &Server, ns: &str, name: &str) -> Value {
    let admin = crate::common::client(server).await;
    let (status, _, sa) = crate::common::raw(
        &admin,
        "POST",
        &format!("/api/v1/namespaces/{ns}/serviceaccounts"),
        "application/json",
        json!({"metadata": {"name": name}}).to_string(),
    )
    .await;
    assert_eq!(status, 201, "{sa}");
    sa
}

/// A TokenRequest through the API, as the admin: (status, answer).
async fn token_request(server: &Server, ns: &str, name: &str, spec: Value) -> (u16, Value) {
    let admin = crate::common::client(server).await;
    let (status, _, answer) = crate::common::raw(
        &admin,
        "POST",
        &format!("/api/v1/namespaces/{ns}/serviceaccounts/{name}/token"),
        "application/json",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
            .to_string(),
    )
    .await;
    (status, answer)
}

async fn token_review(server: &Server, token: &str, audiences: &[&str]) -> Value {
    let admin = crate::common::client(server).await;
    let (status, _, answer) = crate::common::raw(
        &admin,
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        "application/json",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
               "spec": {"token": token, "audiences": audiences}})
        .to_string(),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    answer["status"].clone()
}

#[tokio::test]
async fn static_users_certificates_and_service_accounts_are_who_they_say() {
    let server = server_with_jane().await;
    let client = anonymous(&server).await;

    // A static user, in its groups and system:authenticated.
    let (status, who) = whoami(&client, Some("Bearer jane-token")).await;
    assert_eq!(status, 201, "{who}");
    assert_eq!(
        who["status"]["userInfo"],
        json!({"username": "jane", "uid": "u-42", "groups": ["devs", "system:authenticated"]})
    );
    // The admin token is unchanged.
    let (_, who) = whoami(&client, Some(&format!("Bearer {}", server.token()))).await;
    assert_eq!(who["status"]["userInfo"]["username"], "crt-admin");
    // Non-admin users are refused by the authorizer (403), not by authentication.
    let (status, body) = send(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        Some("Bearer jane-token"),
        Value::Null,
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains(r#"User \"jane\" cannot list resource \"configmaps\""#),
        "{body}"
    );

    // A client certificate: CN user, O groups.
    let (cert, key) = server.client_certificate("carol", &["ops", "qa"]).unwrap();
    let carol = with_certificate(&server, &cert, &key).await;
    let (status, who) = whoami(&carol, None).await;
    assert_eq!(status, 201, "{who}");
    assert_eq!(
        who["status"]["userInfo"],
        json!({"username": "carol", "groups": ["ops", "qa", "system:authenticated"]})
    );
    // kube-client reads the certificate kubeconfig the server writes.
    let dave =
        client_from_kubeconfig(&server.kubeconfig_for_certificate("dave", &[]).unwrap()).await;
    let (_, who) = whoami(&dave, None).await;
    assert_eq!(who["status"]["userInfo"]["username"], "dave");

    // A ServiceAccount token from the TokenRequest API.
    let sa = create_service_account(&server, "default", "app").await;
    let uid = sa["metadata"]["uid"].as_str().unwrap();
    let (status, answer) = token_request(&server, "default", "app", json!({})).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["kind"], "TokenRequest");
    assert_eq!(answer["spec"]["expirationSeconds"], 3600);
    assert_eq!(answer["spec"]["audiences"], json!([API_AUDIENCE]));
    assert!(answer["status"]["expirationTimestamp"].is_string());
    let token = answer["status"]["token"].as_str().unwrap().to_string();
    let (status, who) = whoami(&client, Some(&format!("Bearer {token}"))).await;
    assert_eq!(status, 201, "{who}");
    let user = &who["status"]["userInfo"];
    assert_eq!(user["username"], "system:serviceaccount:default:app");
    assert_eq!(user["uid"], uid);
    assert_eq!(
        user["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    assert!(
        user["extra"]["authentication.kubernetes.io/credential-id"][0]
            .as_str()
            .is_some_and(|id| id.starts_with("JTI="))
    );
    // Server::service_account_token mints the same kind of token.
    let minted = server
        .service_account_token("default", "app", Duration::from_secs(600))
        .unwrap();
    let sa_client = client_from_kubeconfig(&server.kubeconfig_for_token(&minted)).await;
    let (_, who) = whoami(&sa_client, None).await;
    assert_eq!(
        who["status"]["userInfo"]["username"],
        "system:serviceaccount:default:app"
    );

    // TokenReview: every kind of token, audiences per upstream.
    let review = token_review(&server, &token, &[]).await;
    assert_eq!(review["authenticated"], true);
    assert_eq!(
        review["user"]["username"],
        "system:serviceaccount:default:app"
    );
    assert_eq!(review["audiences"], json!([API_AUDIENCE]));
    let review = token_review(&server, "jane-token", &[]).await;
    assert_eq!(
        (
            review["authenticated"].as_bool(),
            review["user"]["username"].as_str()
        ),
        (Some(true), Some("jane"))
    );
    let review = token_review(&server, &token, &["vault"]).await;
    assert_eq!(review["authenticated"], false);
    let (_, vault) = token_request(
        &server,
        "default",
        "app",
        json!({"audiences": ["vault", "other"]}),
    )
    .await;
    let vault_token = vault["status"]["token"].as_str().unwrap();
    let review = token_review(&server, vault_token, &["vault"]).await;
    assert_eq!(
        (review["authenticated"].as_bool(), &review["audiences"]),
        (Some(true), &json!(["vault"]))
    );
    assert_eq!(
        token_review(&server, vault_token, &[]).await["authenticated"],
        false
    );

    // TokenRequest refusals.
    let (status, answer) =
        token_request(&server, "default", "app", json!({"expirationSeconds": 599})).await;
    assert_eq!(
        (status, answer["message"].as_str()),
        (
            422,
            Some(
                r#"TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"#
            )
        )
    );
    let (status, answer) = token_request(&server, "default", "ghost", json!({})).await;
    assert_eq!(
        (status, answer["message"].as_str()),
        (404, Some(r#"serviceaccounts "ghost" not found"#))
    );

    // Deleting the ServiceAccount revokes its tokens; recreating it does not bring them back.
    let admin = crate::common::client(&server).await;
    let (status, _, _) = crate::common::raw(
        &admin,
        "DELETE",
        "/api/v1/namespaces/default/serviceaccounts/app",
        "application/json",
        "",
    )
    .await;
    assert_eq!(status, 200);
    let (status, body) = whoami(&client, Some(&format!("Bearer {token}"))).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (401, Some("Unauthorized"))
    );
    create_service_account(&server, "default", "app").await;
    let (status, _) = whoami(&client, Some(&format!("Bearer {token}"))).await;
    assert_eq!(status, 401);
    assert_eq!(
        token_review(&server, &token, &[]).await["authenticated"],
        false
    );
}

#[tokio::test]
async fn bad_credentials_of_every_kind_are_401_and_never_logged() {
    let logs = Logs::default();
    let sink = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || sink.clone())
        .with_ansi(false)
        .finish();
    // The process-wide subscriber (this binary's only one): a thread-local one can miss events
    // whose callsites another test's thread registered first with no subscriber. Other tests'
    // logs land here too, which only makes the check wider.
    tracing::subscriber::set_global_default(subscriber).expect("no other global subscriber");

    let server = server_with_jane().await;
    let client = anonymous(&server).await;
    create_service_account(&server, "default", "app").await;
    let (_, answer) = token_request(&server, "default", "app", json!({})).await;
    let good = answer["status"]["token"].as_str().unwrap().to_string();
    let (_, answer) =
        token_request(&server, "default", "app", json!({"audiences": ["vault"]})).await;
    let other_audience = answer["status"]["token"].as_str().unwrap().to_string();

    // A token signed with another key, for a ServiceAccount that exists.
    let sa = create_service_account(&server, "default", "forged").await;
    let foreign = TokenSigner::generate().unwrap();
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let forged = foreign
        .sign(&Claims {
            namespace: "default".into(),
            service_account: ObjectClaim {
                name: "forged".into(),
                uid: sa["metadata"]["uid"].as_str().unwrap().into(),
            },
            audiences: vec![API_AUDIENCE.into()],
            issued_at: now,
            expires_at: now + 3600,
            id: "forged-jti".into(),
            ..Default::default()
        })
        .unwrap();
    // The good token with its signature's last characters changed.
    let tampered = format!("{}AAAA", &good[..good.len() - 4]);
    // The good token's claims, re-encoded for another ServiceAccount, under its signature.
    let mut parts: Vec<String> = good.split('.').map(String::from).collect();
    {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut claims: Value = serde_json::from_slice(&b64.decode(&parts[1]).unwrap()).unwrap();
        claims["sub"] = json!("system:serviceaccount:kube-system:admin");
        parts[1] = b64.encode(claims.to_string());
    }
    let swapped = parts.join(".");

    let secrets = [
        good.clone(),
        other_audience.clone(),
        forged.clone(),
        tampered.clone(),
        swapped.clone(),
        "jane-token-wrong".to_string(),
    ];
    for (what, auth) in [
        (
            "malformed JWT",
            "Bearer eyJhbGciOiJFUzI1NiJ9.bm90IGpzb24.c2ln".to_string(),
        ),
        ("garbage token", "Bearer not-a-token".to_string()),
        (
            "unknown static token",
            "Bearer jane-token-wrong".to_string(),
        ),
        ("bearer without token", "Bearer".to_string()),
        ("other scheme", "Basic amFuZTpwYXNz".to_string()),
        (
            "token for another audience",
            format!("Bearer {other_audience}"),
        ),
        ("another key's signature", format!("Bearer {forged}")),
        ("tampered signature", format!("Bearer {tampered}")),
        ("claims changed after signing", format!("Bearer {swapped}")),
    ] {
        for (method, uri) in [
            ("POST", WHOAMI),
            ("GET", "/api/v1/namespaces"),
            ("GET", "/healthz"),
        ] {
            let (status, body) = send(&client, method, uri, Some(&auth), json!({})).await;
            assert_eq!(status, 401, "{what}: {method} {uri}: {body}");
            let body: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(
                (
                    body["kind"].as_str(),
                    body["reason"].as_str(),
                    body["message"].as_str(),
                    body["code"].as_u64()
                ),
                (
                    Some("Status"),
                    Some("Unauthorized"),
                    Some("Unauthorized"),
                    Some(401)
                ),
                "{what}"
            );
        }
    }

    // Client certificates: another CA's, expired, not for client auth.
    let other_ca = ClientCa::generate().unwrap();
    let (foreign_cert, foreign_key) = other_ca
        .issue(&ClientCertificateParams::new(
            "mallory",
            &["system:masters"],
        ))
        .unwrap();
    let mut expired = ClientCertificateParams::new("old", &[]);
    expired.not_before = SystemTime::now() - Duration::from_secs(7200);
    expired.not_after = SystemTime::now() - Duration::from_secs(3600);
    let (expired_cert, expired_key) = server.client_ca().issue(&expired).unwrap();
    let mut server_only = ClientCertificateParams::new("srv", &[]);
    server_only.client_auth = false;
    let (server_cert, server_key) = server.client_ca().issue(&server_only).unwrap();
    let mut keys = Vec::new();
    for (what, cert, key) in [
        ("unknown CA", &foreign_cert, &foreign_key),
        ("expired", &expired_cert, &expired_key),
        ("not for client auth", &server_cert, &server_key),
    ] {
        keys.push(key.clone());
        let c = with_certificate(&server, cert, key).await;
        let (status, body) = whoami(&c, None).await;
        assert_eq!(
            (status, body["message"].as_str()),
            (401, Some("Unauthorized")),
            "{what}"
        );
        // A good token beside a bad certificate still authenticates, as upstream's union does.
        let (status, body) = whoami(&c, Some("Bearer jane-token")).await;
        assert_eq!(
            (status, body["status"]["userInfo"]["username"].as_str()),
            (201, Some("jane")),
            "{what}"
        );
    }

    // Nothing of any credential shows in the server's logs.
    let logged = logs.text();
    assert!(
        logged.contains("TRACE"),
        "the logs are captured (or this test proves nothing)"
    );
    for secret in secrets
        .iter()
        .chain([&"jane-token".to_string(), &server.token().to_string()])
    {
        assert!(!logged.contains(secret.as_str()), "a token was logged");
        // Not even a JWT's signature part.
        if let Some(sig) = secret.rsplit('.').next().filter(|s| s.len() > 20) {
            assert!(!logged.contains(sig), "a signature was logged");
        }
    }
    for key in keys {
        let body: String = key.lines().filter(|l| !l.starts_with("-----")).collect();
        assert!(!logged.contains(&body[..40]), "a private key was logged");
    }
}

/// Admission sees the request's user: a ValidatingAdmissionPolicy on `request.userInfo` refuses
/// two `system:masters` users (one by name, one by group; masters, so that authorization lets
/// them reach admission before RBAC exists) and lets the admin through, on creates and deletes
/// alike.
#[tokio::test]
async fn admission_policies_see_the_requests_user() {
    let server = Server::start(Config {
        users: vec![
            StaticUser::new("ops-token", "ops", &["system:masters"]),
            StaticUser::new("carl-token", "carl", &["ops-team", "system:masters"]),
        ],
        ..Config::default()
    })
    .await
    .expect("server starts");
    let admin = crate::common::client(&server).await;
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "no-ops"},
        "spec": {"failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE", "DELETE"], "resources": ["configmaps"]}]},
            "validations": [{
                "expression": "request.userInfo.username != 'ops' && !('ops-team' in request.userInfo.groups)",
                "message": "not for ops"}]}});
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "no-ops"},
        "spec": {"policyName": "no-ops", "validationActions": ["Deny"]}});
    for (uri, body) in [
        (
            "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
            policy,
        ),
        (
            "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
            binding,
        ),
    ] {
        let (status, _, answer) =
            crate::common::raw(&admin, "POST", uri, "application/json", body.to_string()).await;
        assert_eq!(status, 201, "{answer}");
    }
    let client = anonymous(&server).await;
    let cms = "/api/v1/namespaces/default/configmaps";
    let cm =
        |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    let admin_auth = format!("Bearer {}", server.token());
    let (status, body) = send(&client, "POST", cms, Some(&admin_auth), cm("a")).await;
    assert_eq!(status, 201, "{body}");
    for token in ["ops-token", "carl-token"] {
        let auth = format!("Bearer {token}");
        let (status, body) = send(&client, "POST", cms, Some(&auth), cm("b")).await;
        // Upstream's code for a denial without a reason: 422 Invalid.
        assert_eq!(status, 422, "{token}: {body}");
        assert!(body.contains("denied request: not for ops"), "{body}");
        let (status, body) = send(
            &client,
            "DELETE",
            &format!("{cms}/a"),
            Some(&auth),
            json!({}),
        )
        .await;
        assert_eq!(status, 422, "{token}: {body}");
        assert!(body.contains("denied request: not for ops"), "{body}");
    }
    let (status, body) = send(
        &client,
        "DELETE",
        &format!("{cms}/a"),
        Some(&admin_auth),
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}
