//! A small HTTPS admission webhook server for the tests: its own CA and serving certificate
//! (for `127.0.0.1`, `localhost` and the `hook.default.svc` Service name), answering every
//! AdmissionReview with what a test's handler says, and recording the reviews it received.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};
use parking_lot::Mutex;
use serde_json::{Value, json};

/// What a handler answers: the `response` fields besides `uid` (`allowed`, `status`,
/// `patch`, `patchType`, `warnings`), for the request path and the review's `request`.
pub type Handler = Arc<dyn Fn(&str, &Value) -> Value + Send + Sync>;

/// A running webhook server; stopped when dropped.
pub struct WebhookServer {
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    /// Its CA, PEM.
    pub ca_pem: String,
    /// The `(path, request)` of every review received, in order.
    pub calls: Arc<Mutex<Vec<(String, Value)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `allowed: true`.
pub fn allow() -> Value {
    json!({"allowed": true})
}

/// `allowed: false` with a status code and message.
pub fn deny(code: u16, message: &str) -> Value {
    json!({"allowed": false, "status": {"code": code, "message": message}})
}

/// `allowed: true` with a JSON patch.
pub fn patch(ops: Value) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD.encode(ops.to_string());
    json!({"allowed": true, "patchType": "JSONPatch", "patch": b64})
}

impl WebhookServer {
    /// Starts a server answering with `handler`. A path starting with `/slow` sleeps 5s
    /// first (a webhook slower than its timeout).
    pub async fn start(handler: Handler) -> WebhookServer {
        let certs = crt_apiserver::tls::Certificates::generate(&["hook.default.svc".into()])
            .expect("certificates");
        let acceptor = tokio_rustls::TlsAcceptor::from(certs.server_config().unwrap());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let calls = Arc::new(Mutex::new(Vec::new()));
        let recorded = calls.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let acceptor = acceptor.clone();
                let handler = handler.clone();
                let recorded = recorded.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(
                        move |req: http::Request<hyper::body::Incoming>| {
                            let handler = handler.clone();
                            let recorded = recorded.clone();
                            async move {
                                let path = req.uri().path().to_string();
                                let body = req.into_body().collect().await.unwrap().to_bytes();
                                let review: Value =
                                    serde_json::from_slice(&body).unwrap_or_default();
                                let request = review["request"].clone();
                                recorded.lock().push((path.clone(), request.clone()));
                                if path.starts_with("/slow") {
                                    tokio::time::sleep(Duration::from_secs(5)).await;
                                }
                                let mut response = handler(&path, &request);
                                response["uid"] = request["uid"].clone();
                                let answer = json!({"apiVersion": "admission.k8s.io/v1",
                                "kind": "AdmissionReview", "response": response});
                                Ok::<_, Infallible>(
                                    http::Response::builder()
                                        .header("content-type", "application/json")
                                        .body(Full::new(Bytes::from(answer.to_string())))
                                        .unwrap(),
                                )
                            }
                        },
                    );
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        WebhookServer {
            port,
            ca_pem: certs.ca_pem,
            calls,
            task,
        }
    }

    /// `caBundle`: the CA, PEM, base64.
    pub fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    /// A `clientConfig` with the URL of `path`.
    pub fn url_config(&self, path: &str) -> Value {
        json!({"url": format!("https://127.0.0.1:{}{path}", self.port),
               "caBundle": self.ca_bundle()})
    }

    /// The paths called so far.
    pub fn paths(&self) -> Vec<String> {
        self.calls.lock().iter().map(|(p, _)| p.clone()).collect()
    }
}

/// A configuration (`Mutating` or `Validating` per `kind`) named `name` holding `webhooks`.
pub fn configuration(kind: &str, name: &str, webhooks: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1",
           "kind": format!("{kind}WebhookConfiguration"),
           "metadata": {"name": name}, "webhooks": webhooks})
}

/// A webhook entry: `name`, `clientConfig`, `rules`, `sideEffects: None`,
/// `admissionReviewVersions: [v1]`, plus `extra` fields.
pub fn hook(name: &str, client_config: Value, rules: Value, extra: Value) -> Value {
    let mut h = json!({"name": name, "clientConfig": client_config, "rules": rules,
        "sideEffects": "None", "admissionReviewVersions": ["v1"]});
    if let (Some(h), Some(e)) = (h.as_object_mut(), extra.as_object()) {
        h.extend(e.clone());
    }
    h
}

/// A rule on `resources` of `group` for `operations`.
pub fn rule(group: &str, resources: &[&str], operations: &[&str]) -> Value {
    json!([{"apiGroups": [group], "apiVersions": ["*"], "resources": resources,
            "operations": operations}])
}
