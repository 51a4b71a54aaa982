//! The webhook server over HTTPS, called as the API server calls it: AdmissionReview and
//! ConversionReview JSON bodies, a client trusting the test's CA, certificates rotated on disk,
//! metrics, and the server run by a Manager before its caches.

use crate::support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use controller_runtime::CancellationToken;
use controller_runtime::builder::WebhookBuilder;
use controller_runtime::manager::{BindAddress, Manager, ManagerOptions, RunnableGroup, from_fn};
use controller_runtime::serving::TlsOptions;
use controller_runtime::webhook::admission::{
    Defaulter, Denial, Request, Response, ValidationResult, Validator, Webhook,
};
use controller_runtime::webhook::conversion::{Conversion, Convertible, Hub};
use controller_runtime::webhook::{BoxError, ClientConfig, Options, Server, WebhookMetrics};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_derive::CustomResource;
use parking_lot::Mutex;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

// --- certificates -------------------------------------------------------------------------

/// A CA and a serving certificate for 127.0.0.1 signed by it, as PEM.
struct Certs {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
}

impl Certs {
    fn generate(common_name: &str) -> Certs {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "test-ca");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        let cert = params.signed_by(&key, &ca).unwrap();
        Certs {
            ca_pem: ca.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    fn write(&self, dir: &Path) {
        std::fs::write(dir.join("tls.crt"), &self.cert_pem).unwrap();
        std::fs::write(dir.join("tls.key"), &self.key_pem).unwrap();
    }

    fn cert_der(&self) -> CertificateDer<'static> {
        CertificateDer::from_pem_slice(self.cert_pem.as_bytes()).unwrap()
    }
}

// --- an HTTPS client trusting the test CAs --------------------------------------------------

struct Answer {
    status: u16,
    body: Value,
    /// The leaf certificate the server presented.
    peer: CertificateDer<'static>,
}

/// POSTs `body` (with `content_type`) to `path` over a new TLS connection trusting `cas`.
async fn post_raw(
    addr: std::net::SocketAddr,
    cas: &[&str],
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Answer {
    let mut roots = rustls::RootCertStore::empty();
    for ca in cas {
        roots
            .add(CertificateDer::from_pem_slice(ca.as_bytes()).unwrap())
            .unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(addr).await.unwrap();
    let tls = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .expect("TLS handshake");
    let peer = tls.get_ref().1.peer_certificates().unwrap()[0].clone();
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "127.0.0.1")
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let response = send.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    Answer { status, body, peer }
}

/// A running standalone server on a free port, with its certificates.
struct Running {
    server: Server,
    certs: Certs,
    dir: tempfile::TempDir,
    ctx: CancellationToken,
    addr: std::net::SocketAddr,
}

impl Running {
    async fn start(register: impl FnOnce(&Server), poll: Duration) -> Running {
        let dir = tempfile::tempdir().unwrap();
        let certs = Certs::generate("webhook-1");
        certs.write(dir.path());
        let options = Options::default()
            .with_host([127, 0, 0, 1].into())
            .with_port(0)
            .with_tls(
                TlsOptions::default()
                    .with_cert_dir(dir.path())
                    .with_cert_poll_interval(poll),
            );
        let server = Server::new(options, WebhookMetrics::unregistered());
        register(&server);
        let ctx = CancellationToken::new();
        tokio::spawn({
            let (server, ctx) = (server.clone(), ctx.clone());
            async move { server.start(ctx).await }
        });
        let addr = server.listening().await.expect("the server listens");
        Running {
            server,
            certs,
            dir,
            ctx,
            addr,
        }
    }

    async fn post(&self, path: &str, body: Value) -> Answer {
        post_raw(
            self.addr,
            &[&self.certs.ca_pem],
            "POST",
            path,
            "application/json",
            serde_json::to_vec(&body).unwrap(),
        )
        .await
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.ctx.cancel();
    }
}

// --- admission ---------------------------------------------------------------------------

fn cm(name: &str, data: &[(&str, &str)]) -> Value {
    let data: serde_json::Map<String, Value> = data
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": data,
    })
}

fn review(uid: &str, operation: &str, object: Value, old: Value) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "name": "x",
            "namespace": "default",
            "operation": operation,
            "userInfo": {"username": "alice"},
            "object": object,
            "oldObject": old,
            "dryRun": false,
        }
    })
}

struct Labeller;

impl Defaulter<ConfigMap> for Labeller {
    async fn default(&self, cm: &mut ConfigMap, req: &Request) -> Result<(), Denial> {
        if cm.data.as_ref().is_some_and(|d| d.contains_key("refuse")) {
            return Err(Denial::new("refused by the defaulter"));
        }
        cm.metadata.labels.get_or_insert_default().insert(
            "defaulted-by".into(),
            req.user_info.username.clone().unwrap_or_default(),
        );
        cm.data
            .get_or_insert_default()
            .entry("color".into())
            .or_insert_with(|| "blue".into());
        Ok(())
    }
}

struct Rules;

impl Validator<ConfigMap> for Rules {
    async fn validate_create(&self, cm: &ConfigMap, _: &Request) -> ValidationResult {
        match cm.data.as_ref().and_then(|d| d.get("password")) {
            Some(_) => Err(Denial::new("passwords belong in Secrets")
                .with_code(422)
                .with_reason("Invalid")
                .with_warning("found data.password")),
            None => Ok(vec!["created without a password: good".into()]),
        }
    }

    async fn validate_update(
        &self,
        old: &ConfigMap,
        new: &ConfigMap,
        _: &Request,
    ) -> ValidationResult {
        if old.data != new.data {
            return Err(Denial::new("data is immutable"));
        }
        Ok(vec![])
    }

    async fn validate_delete(&self, old: &ConfigMap, _: &Request) -> ValidationResult {
        if old.data.as_ref().is_some_and(|d| d.contains_key("keep")) {
            return Err(Denial::new("this one is kept"));
        }
        Ok(vec!["deleted".into()])
    }
}

fn typed_server(server: &Server) {
    server
        .register(Webhook::defaulting::<ConfigMap, _>(Labeller))
        .unwrap();
    server
        .register(Webhook::validating::<ConfigMap, _>(Rules))
        .unwrap();
}

#[tokio::test]
async fn a_defaulter_answers_the_json_patch_to_its_object() {
    let running = Running::start(typed_server, Duration::from_secs(10)).await;
    let object = cm("a", &[("size", "3")]);
    let answer = running
        .post(
            "/mutate-core-v1-configmap",
            review("uid-1", "CREATE", object.clone(), Value::Null),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let response = &answer.body["response"];
    assert_eq!(answer.body["kind"], "AdmissionReview");
    assert_eq!(answer.body["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(response["uid"], "uid-1");
    assert_eq!(response["allowed"], true);
    assert_eq!(response["patchType"], "JSONPatch");
    // The patch is base64 JSON, applying to the object sent.
    // As Go encodes `[]byte`: a base64 string.
    let patch = base64_decode(response["patch"].as_str().expect("a base64 string"));
    let patch: json_patch::Patch = serde_json::from_slice(&patch).unwrap();
    let mut patched = object.clone();
    json_patch::patch(&mut patched, &patch).unwrap();
    assert_eq!(patched["metadata"]["labels"]["defaulted-by"], "alice");
    assert_eq!(patched["data"], json!({"size": "3", "color": "blue"}));

    // Nothing to default: allowed, no patch.
    let complete = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "b", "namespace": "default", "labels": {"defaulted-by": "alice"}},
        "data": {"color": "red"},
    });
    let answer = running
        .post(
            "/mutate-core-v1-configmap",
            review("uid-2", "UPDATE", complete, Value::Null),
        )
        .await;
    assert_eq!(answer.body["response"]["allowed"], true);
    assert!(
        answer.body["response"].get("patch").is_none(),
        "{}",
        answer.body
    );

    // A defaulter's error is a denial.
    let answer = running
        .post(
            "/mutate-core-v1-configmap",
            review("uid-3", "CREATE", cm("c", &[("refuse", "1")]), Value::Null),
        )
        .await;
    let response = &answer.body["response"];
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["message"], "refused by the defaulter");
    assert_eq!(response["status"]["code"], 403);
    assert_eq!(response["status"]["reason"], "Forbidden");
}

/// Standard base64 (the encoding of `[]byte` in JSON).
fn base64_decode(s: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let (mut buffer, mut bits) = (0u32, 0);
    for c in s.bytes().filter(|c| *c != b'=') {
        let value = ALPHABET.iter().position(|a| *a == c).expect("base64") as u32;
        buffer = (buffer << 6) | value;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    out
}

#[tokio::test]
async fn a_validator_allows_or_denies_creates_updates_and_deletes_with_warnings() {
    let running = Running::start(typed_server, Duration::from_secs(10)).await;
    let path = "/validate-core-v1-configmap";

    let ok = running
        .post(
            path,
            review("c1", "CREATE", cm("a", &[("x", "1")]), Value::Null),
        )
        .await;
    assert_eq!(ok.body["response"]["allowed"], true);
    assert_eq!(
        ok.body["response"]["warnings"],
        json!(["created without a password: good"])
    );

    let denied = running
        .post(
            path,
            review(
                "c2",
                "CREATE",
                cm("a", &[("password", "hunter2")]),
                Value::Null,
            ),
        )
        .await;
    let response = &denied.body["response"];
    assert_eq!(response["uid"], "c2");
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["message"], "passwords belong in Secrets");
    assert_eq!(response["status"]["reason"], "Invalid");
    assert_eq!(response["status"]["code"], 422);
    assert_eq!(response["warnings"], json!(["found data.password"]));

    let same = running
        .post(
            path,
            review(
                "u1",
                "UPDATE",
                cm("a", &[("x", "1")]),
                cm("a", &[("x", "1")]),
            ),
        )
        .await;
    assert_eq!(same.body["response"]["allowed"], true);
    assert!(same.body["response"].get("warnings").is_none());
    let changed = running
        .post(
            path,
            review(
                "u2",
                "UPDATE",
                cm("a", &[("x", "2")]),
                cm("a", &[("x", "1")]),
            ),
        )
        .await;
    assert_eq!(changed.body["response"]["allowed"], false);
    assert_eq!(
        changed.body["response"]["status"]["message"],
        "data is immutable"
    );

    let deleted = running
        .post(path, review("d1", "DELETE", Value::Null, cm("a", &[])))
        .await;
    assert_eq!(deleted.body["response"]["allowed"], true);
    assert_eq!(deleted.body["response"]["warnings"], json!(["deleted"]));
    let kept = running
        .post(
            path,
            review("d2", "DELETE", Value::Null, cm("a", &[("keep", "")])),
        )
        .await;
    assert_eq!(kept.body["response"]["allowed"], false);
    assert_eq!(
        kept.body["response"]["status"]["message"],
        "this one is kept"
    );

    // An object that is not a ConfigMap is refused with the decoding error, not a crash.
    let bad = running
        .post(path, review("b1", "CREATE", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": 7}), Value::Null))
        .await;
    assert_eq!(bad.status, 200);
    assert_eq!(bad.body["response"]["allowed"], false);
    assert_eq!(bad.body["response"]["status"]["code"], 400);
    let message = bad.body["response"]["status"]["message"].as_str().unwrap();
    assert!(message.starts_with("decoding the ConfigMap"), "{message}");
}

#[tokio::test]
async fn malformed_requests_get_400_and_unknown_paths_404() {
    let running = Running::start(typed_server, Duration::from_secs(10)).await;
    let path = "/validate-core-v1-configmap";
    let ca = [running.certs.ca_pem.as_str()];

    let garbage = post_raw(
        running.addr,
        &ca,
        "POST",
        path,
        "application/json",
        b"{not json".to_vec(),
    )
    .await;
    assert_eq!(garbage.status, 400);
    let message = garbage.body["response"]["status"]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.starts_with("decoding the AdmissionReview"),
        "{message}"
    );

    let no_request = running
        .post(
            path,
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}),
        )
        .await;
    assert_eq!(no_request.status, 400);
    assert_eq!(
        no_request.body["response"]["status"]["message"],
        "the AdmissionReview has no request"
    );

    let empty = post_raw(
        running.addr,
        &ca,
        "POST",
        path,
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!(empty.status, 400);
    let yaml = post_raw(
        running.addr,
        &ca,
        "POST",
        path,
        "application/yaml",
        b"a: b".to_vec(),
    )
    .await;
    assert_eq!(yaml.status, 400);
    assert_eq!(
        yaml.body,
        "contentType=application/yaml, expected application/json\n"
    );
    let get = post_raw(
        running.addr,
        &ca,
        "GET",
        path,
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!(get.status, 405);
    let unknown = running.post("/validate-nothing", json!({})).await;
    assert_eq!(unknown.status, 404);
    // No conversion registered: /convert is unknown too.
    assert_eq!(running.post("/convert", json!({})).await.status, 404);
}

#[tokio::test]
async fn a_panicking_handler_is_a_denial_and_the_server_keeps_serving() {
    let running = Running::start(
        |server| {
            server
                .register(Webhook::new("/panics", |req: Request| async move {
                    if req.name == "x" {
                        panic!("the handler broke");
                    }
                    Response::from(&req)
                }))
                .unwrap();
        },
        Duration::from_secs(10),
    )
    .await;
    let answer = running
        .post("/panics", review("p1", "CREATE", cm("x", &[]), Value::Null))
        .await;
    assert_eq!(answer.status, 200);
    let response = &answer.body["response"];
    assert_eq!(response["uid"], "p1");
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 500);
    assert_eq!(
        response["status"]["message"],
        "panic: the handler broke [recovered]"
    );

    let mut fine = review("p2", "CREATE", cm("y", &[]), Value::Null);
    fine["request"]["name"] = json!("y");
    let answer = running.post("/panics", fine).await;
    assert_eq!(answer.body["response"]["allowed"], true);
    assert_eq!(answer.body["response"]["uid"], "p2");
}

#[tokio::test]
async fn requests_are_counted_in_the_webhook_metrics() {
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = WebhookMetrics::register(&mut registry);
    let dir = tempfile::tempdir().unwrap();
    let certs = Certs::generate("metrics");
    certs.write(dir.path());
    let options = Options::default()
        .with_host([127, 0, 0, 1].into())
        .with_port(0)
        .with_tls(TlsOptions::default().with_cert_dir(dir.path()));
    let server = Server::new(options, metrics.clone());
    typed_server(&server);
    let ctx = CancellationToken::new();
    tokio::spawn({
        let (server, ctx) = (server.clone(), ctx.clone());
        async move { server.start(ctx).await }
    });
    let addr = server.listening().await.unwrap();
    let path = "/validate-core-v1-configmap";
    let body = serde_json::to_vec(&review("m", "CREATE", cm("a", &[]), Value::Null)).unwrap();
    for _ in 0..3 {
        let answer = post_raw(
            addr,
            &[&certs.ca_pem],
            "POST",
            path,
            "application/json",
            body.clone(),
        )
        .await;
        assert_eq!(answer.status, 200);
    }
    post_raw(
        addr,
        &[&certs.ca_pem],
        "POST",
        path,
        "application/json",
        b"x".to_vec(),
    )
    .await;
    post_raw(
        addr,
        &[&certs.ca_pem],
        "POST",
        "/unknown",
        "application/json",
        b"x".to_vec(),
    )
    .await;
    assert_eq!(metrics.requests(path, 200), 3);
    assert_eq!(metrics.requests(path, 400), 1);
    assert_eq!(metrics.in_flight(path), 0);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(
        text.contains(&format!(
            "controller_runtime_webhook_requests_total{{webhook=\"{path}\",code=\"200\"}} 3"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "controller_runtime_webhook_latency_seconds_count{{webhook=\"{path}\"}} 4"
        )),
        "{text}"
    );
    assert!(
        !text.contains("/unknown"),
        "unregistered paths are not counted"
    );
    ctx.cancel();
}

// --- certificates rotated on disk ----------------------------------------------------------

#[tokio::test]
async fn a_rotated_certificate_is_served_to_new_connections_without_a_restart() {
    let running = Running::start(typed_server, Duration::from_millis(20)).await;
    let first = running
        .post(
            "/validate-core-v1-configmap",
            review("r1", "CREATE", cm("a", &[]), Value::Null),
        )
        .await;
    assert_eq!(first.peer, running.certs.cert_der());

    // A half-written rotation (the new certificate beside the old key) is not served.
    let second = Certs::generate("webhook-2");
    std::fs::write(running.dir.path().join("tls.crt"), &second.cert_pem).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let during = running
        .post(
            "/validate-core-v1-configmap",
            review("r2", "CREATE", cm("a", &[]), Value::Null),
        )
        .await;
    assert_eq!(
        during.peer,
        running.certs.cert_der(),
        "the old pair is served until the key matches"
    );

    std::fs::write(running.dir.path().join("tls.key"), &second.key_pem).unwrap();
    let cas = [running.certs.ca_pem.as_str(), second.ca_pem.as_str()];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let answer = post_raw(
            running.addr,
            &cas,
            "POST",
            "/validate-core-v1-configmap",
            "application/json",
            serde_json::to_vec(&review("r3", "CREATE", cm("a", &[]), Value::Null)).unwrap(),
        )
        .await;
        assert_eq!(answer.status, 200);
        if answer.peer == second.cert_der() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the new certificate was never served"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// --- conversion ------------------------------------------------------------------------------

mod v1 {
    use super::*;
    #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
    #[kube(
        group = "example.com",
        version = "v1",
        kind = "Greeting",
        namespaced,
        crates(kube_core = "::kube_core")
    )]
    pub struct GreetingSpec {
        pub text: String,
    }
}

mod v2 {
    use super::*;
    #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
    #[kube(
        group = "example.com",
        version = "v2",
        kind = "Greeting",
        namespaced,
        crates(kube_core = "::kube_core")
    )]
    pub struct GreetingSpec {
        pub greeting: String,
        pub name: String,
    }
}

impl Hub for v2::Greeting {}

impl Convertible<v2::Greeting> for v1::Greeting {
    fn convert_to(&self) -> Result<v2::Greeting, BoxError> {
        let (greeting, name) = self
            .spec
            .text
            .split_once(' ')
            .ok_or("spec.text needs two words")?;
        Ok(v2::Greeting {
            metadata: self.metadata.clone(),
            spec: v2::GreetingSpec {
                greeting: greeting.into(),
                name: name.into(),
            },
        })
    }

    fn convert_from(hub: &v2::Greeting) -> Result<Self, BoxError> {
        Ok(v1::Greeting {
            metadata: hub.metadata.clone(),
            spec: v1::GreetingSpec {
                text: format!("{} {}", hub.spec.greeting, hub.spec.name),
            },
        })
    }
}

fn conversion_review(uid: &str, desired: &str, objects: Vec<Value>) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
    })
}

fn greeting_v1(name: &str, text: &str) -> Value {
    json!({
        "apiVersion": "example.com/v1", "kind": "Greeting",
        "metadata": {"name": name, "namespace": "default", "resourceVersion": "7", "labels": {"a": "b"}},
        "spec": {"text": text},
    })
}

#[tokio::test]
async fn conversion_round_trips_through_the_hub_and_refuses_unknown_versions() {
    let running = Running::start(
        |server| {
            server
                .register_conversion(Conversion::<v2::Greeting>::new().with_spoke::<v1::Greeting>())
                .unwrap();
            assert!(matches!(
                server.register_conversion(Conversion::<v2::Greeting>::new()),
                Err(controller_runtime::webhook::Error::DuplicateConversion { .. })
            ));
        },
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(running.server.paths(), ["/convert"]);

    let original = greeting_v1("hi", "hello world");
    let up = running
        .post(
            "/convert",
            conversion_review(
                "c1",
                "example.com/v2",
                vec![original.clone(), greeting_v1("yo", "hey you")],
            ),
        )
        .await;
    assert_eq!(up.status, 200, "{}", up.body);
    assert_eq!(up.body["kind"], "ConversionReview");
    let response = &up.body["response"];
    assert_eq!(response["uid"], "c1");
    assert_eq!(response["result"]["status"], "Success");
    let converted = response["convertedObjects"].as_array().unwrap();
    assert_eq!(converted.len(), 2);
    assert_eq!(converted[0]["apiVersion"], "example.com/v2");
    assert_eq!(converted[0]["kind"], "Greeting");
    assert_eq!(
        converted[0]["spec"],
        json!({"greeting": "hello", "name": "world"})
    );
    assert_eq!(converted[0]["metadata"], original["metadata"]);
    assert_eq!(converted[1]["spec"]["name"], "you");

    let down = running
        .post(
            "/convert",
            conversion_review("c2", "example.com/v1", vec![converted[0].clone()]),
        )
        .await;
    assert_eq!(down.body["response"]["result"]["status"], "Success");
    assert_eq!(down.body["response"]["convertedObjects"][0], original);

    // Same version: unchanged.
    let same = running
        .post(
            "/convert",
            conversion_review("c3", "example.com/v1", vec![original.clone()]),
        )
        .await;
    assert_eq!(same.body["response"]["convertedObjects"][0], original);

    let unknown = running
        .post(
            "/convert",
            conversion_review("c4", "example.com/v3", vec![original.clone()]),
        )
        .await;
    assert_eq!(unknown.status, 200);
    let result = &unknown.body["response"]["result"];
    assert_eq!(result["status"], "Failure");
    assert_eq!(
        result["message"],
        "version \"v3\" of Greeting.example.com is not served by this conversion webhook (versions: v1, v2)"
    );
    assert_eq!(unknown.body["response"]["uid"], "c4");

    let mut other_kind = original.clone();
    other_kind["kind"] = json!("Farewell");
    let unknown_kind = running
        .post(
            "/convert",
            conversion_review("c5", "example.com/v2", vec![other_kind]),
        )
        .await;
    assert_eq!(
        unknown_kind.body["response"]["result"]["message"],
        "no conversion is registered for kind \"Farewell\" in group \"example.com\""
    );

    let failing = running
        .post(
            "/convert",
            conversion_review("c6", "example.com/v2", vec![greeting_v1("x", "oneword")]),
        )
        .await;
    assert_eq!(failing.body["response"]["result"]["status"], "Failure");
    assert_eq!(
        failing.body["response"]["result"]["message"],
        "converting example.com/v1 to example.com/v2: spec.text needs two words"
    );

    let malformed = running
        .post("/convert", json!({"kind": "ConversionReview"}))
        .await;
    assert_eq!(malformed.status, 400);
}

// --- configuration objects --------------------------------------------------------------------

#[tokio::test]
async fn the_configuration_objects_list_what_is_registered() {
    let server = Server::new(Options::default(), WebhookMetrics::unregistered());
    typed_server(&server);
    server
        .register(Webhook::new("/raw", |req: Request| async move {
            Response::from(&req)
        }))
        .unwrap();
    server
        .register_conversion(Conversion::<v2::Greeting>::new().with_spoke::<v1::Greeting>())
        .unwrap();
    assert!(matches!(
        server.register(Webhook::defaulting::<ConfigMap, _>(Labeller)),
        Err(controller_runtime::webhook::Error::DuplicatePath(p)) if p == "/mutate-core-v1-configmap"
    ));
    assert!(
        server
            .register(Webhook::new("/convert", |req: Request| async move {
                Response::from(&req)
            }))
            .is_err()
    );

    let client = ClientConfig::url("https://127.0.0.1:9443/", b"CA".to_vec());
    let mutating = server.mutating_webhook_configuration("mutating-webhook-configuration", &client);
    let mutating = serde_json::to_value(&mutating).unwrap();
    assert_eq!(
        mutating,
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "mutating-webhook-configuration"},
            "webhooks": [{
                "name": "mconfigmap-v1.kb.io",
                "admissionReviewVersions": ["v1"],
                "clientConfig": {"url": "https://127.0.0.1:9443/mutate-core-v1-configmap", "caBundle": "Q0E="},
                "failurePolicy": "Fail",
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "operations": ["CREATE", "UPDATE"]}],
                "sideEffects": "None",
            }],
        })
    );
    let validating = server.validating_webhook_configuration(
        "validating-webhook-configuration",
        &ClientConfig::service("system", "webhook-service", b"CA".to_vec()).with_port(8443),
    );
    let webhooks = validating.webhooks.unwrap();
    assert_eq!(webhooks.len(), 1, "the raw webhook is not listed");
    assert_eq!(webhooks[0].name, "vconfigmap-v1.kb.io");
    let service = webhooks[0].client_config.service.as_ref().unwrap();
    assert_eq!(
        (
            service.namespace.as_str(),
            service.name.as_str(),
            service.path.as_deref(),
            service.port
        ),
        (
            "system",
            "webhook-service",
            Some("/validate-core-v1-configmap"),
            Some(8443)
        )
    );
    assert_eq!(
        webhooks[0].rules.as_ref().unwrap()[0].operations.as_deref(),
        Some(&["CREATE".to_string(), "UPDATE".into(), "DELETE".into()][..])
    );

    let conversion = server
        .crd_conversion("example.com", "Greeting", &client)
        .unwrap();
    assert_eq!(
        serde_json::to_value(&conversion).unwrap(),
        json!({
            "strategy": "Webhook",
            "webhook": {
                "clientConfig": {"url": "https://127.0.0.1:9443/convert", "caBundle": "Q0E="},
                "conversionReviewVersions": ["v1"],
            },
        })
    );
    assert!(
        server
            .crd_conversion("example.com", "Farewell", &client)
            .is_none()
    );
}

// --- the manager ------------------------------------------------------------------------------

#[tokio::test]
async fn the_manager_starts_the_webhook_server_before_the_caches_and_reports_ready() {
    let (_api, client) = support::server().await;
    let dir = tempfile::tempdir().unwrap();
    let certs = Certs::generate("manager");
    certs.write(dir.path());
    let options = ManagerOptions::default()
        .with_metrics_bind_address(BindAddress::Disabled)
        .with_health_probe_bind_address("127.0.0.1:0".parse().unwrap())
        .with_webhook_server(
            Options::default()
                .with_host([127, 0, 0, 1].into())
                .with_port(0)
                .with_tls(TlsOptions::default().with_cert_dir(dir.path())),
        );
    let mgr = Manager::new(client, options).unwrap();
    WebhookBuilder::new(&mgr)
        .for_::<ConfigMap>()
        .with_defaulter(Labeller)
        .with_validator(Rules)
        .complete()
        .unwrap();
    WebhookBuilder::new(&mgr)
        .for_::<v2::Greeting>()
        .with_conversion(Conversion::new().with_spoke::<v1::Greeting>())
        .complete()
        .unwrap();
    assert_eq!(
        mgr.webhook_server().paths(),
        [
            "/convert",
            "/mutate-core-v1-configmap",
            "/validate-core-v1-configmap"
        ]
    );
    mgr.add_readyz_check("webhook", mgr.webhook_server().started_checker());
    assert!((mgr.webhook_server().started_checker())().is_err());

    // A runnable of the caches group: the webhook server must already listen when it starts
    // (read synchronously in `start`), and answer.
    let seen_by_caches: Arc<Mutex<Option<Option<u16>>>> = Arc::default();
    mgr.add(from_fn("probe", RunnableGroup::Caches, {
        let (server, seen, ca) = (
            mgr.webhook_server().clone(),
            seen_by_caches.clone(),
            certs.ca_pem.clone(),
        );
        move |_ctx| {
            let addr = server.addr();
            *seen.lock() = Some(None);
            let (seen, ca) = (seen.clone(), ca.clone());
            async move {
                let addr =
                    addr.ok_or("the webhook server did not listen before the caches started")?;
                let body =
                    serde_json::to_vec(&review("m1", "CREATE", cm("a", &[]), Value::Null)).unwrap();
                let answer = post_raw(
                    addr,
                    &[&ca],
                    "POST",
                    "/validate-core-v1-configmap",
                    "application/json",
                    body,
                )
                .await;
                *seen.lock() = Some(Some(answer.status));
                Ok(())
            }
        }
    }))
    .unwrap();

    let ctx = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, ctx) = (mgr.clone(), ctx.clone());
        async move { mgr.start(ctx).await }
    });
    tokio::time::timeout(Duration::from_secs(20), mgr.elected())
        .await
        .expect("the manager runs");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while *seen_by_caches.lock() != Some(Some(200)) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the probe never got its answer"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!((mgr.webhook_server().started_checker())().is_ok());
    let probe = mgr.health_probe_addr().unwrap();
    let mut stream = TcpStream::connect(probe).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream
        .write_all(b"GET /readyz/webhook HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    ctx.cancel();
    tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        (mgr.webhook_server().started_checker())().is_err(),
        "stopped"
    );
}

#[tokio::test]
async fn a_missing_certificate_fails_the_manager() {
    let (_api, client) = support::server().await;
    let dir = tempfile::tempdir().unwrap();
    let options = ManagerOptions::default()
        .with_metrics_bind_address(BindAddress::Disabled)
        .with_webhook_server(
            Options::default()
                .with_port(0)
                .with_tls(TlsOptions::default().with_cert_dir(dir.path())),
        );
    let mgr = Manager::new(client, options).unwrap();
    WebhookBuilder::new(&mgr)
        .for_::<ConfigMap>()
        .with_validator(Rules)
        .complete()
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), mgr.start(CancellationToken::new()))
        .await
        .expect("the manager stops");
    let error = result.unwrap_err().to_string();
    assert!(
        error.starts_with("runnable webhook server failed: webhook serving certificate: reading"),
        "{error}"
    );
}
