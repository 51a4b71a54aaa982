//! A defaulting and a validating webhook for ConfigMaps, served by the Manager's webhook server.
//!
//! The defaulter labels every ConfigMap with its team; the validator refuses passwords in
//! ConfigMaps and warns about empty ones. `WebhookBuilder` registers both at kubebuilder's
//! paths (`/mutate-core-v1-configmap`, `/validate-core-v1-configmap`); the server generates
//! the configuration objects an API server needs to call them.
//!
//! The example writes a fresh serving certificate, starts the manager, then plays the API
//! server's part: it posts two AdmissionReviews over HTTPS (trusting the CA in the generated
//! configuration's `caBundle`) and prints the answers, and stops.
//!
//! ```sh
//! cargo run -p controller-runtime --example admission_webhook
//! ```

mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use controller_runtime::CancellationToken;
use controller_runtime::builder::WebhookBuilder;
use controller_runtime::manager::{BindAddress, Manager, ManagerOptions};
use controller_runtime::serving::TlsOptions;
use controller_runtime::webhook::admission::{
    Defaulter, Denial, Request, ValidationResult, Validator,
};
use controller_runtime::webhook::{ClientConfig, Options};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::ConfigMap;
use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};
use serde_json::{Value, json};

/// The webhooks of ConfigMaps: one type can be both the defaulter and the validator.
struct ConfigMapWebhook {
    team: String,
}

impl Defaulter<ConfigMap> for ConfigMapWebhook {
    async fn default(&self, cm: &mut ConfigMap, _req: &Request) -> Result<(), Denial> {
        let labels = cm.metadata.labels.get_or_insert_default();
        labels
            .entry("team".into())
            .or_insert_with(|| self.team.clone());
        Ok(())
    }
}

impl Validator<ConfigMap> for ConfigMapWebhook {
    async fn validate_create(&self, cm: &ConfigMap, _req: &Request) -> ValidationResult {
        let data = cm.data.clone().unwrap_or_default();
        if data.contains_key("password") {
            return Err(Denial::new("passwords belong in Secrets, not ConfigMaps"));
        }
        if data.is_empty() {
            return Ok(vec!["this ConfigMap has no data".into()]);
        }
        Ok(vec![])
    }
}

/// A CA and a serving certificate for 127.0.0.1 (what cert-manager or envtest provides).
fn certificates(dir: &std::path::Path) -> Result<String, Box<dyn std::error::Error>> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;
    let key = KeyPair::generate()?;
    let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])?.signed_by(&key, &ca)?;
    std::fs::write(dir.join("tls.crt"), cert.pem())?;
    std::fs::write(dir.join("tls.key"), key.serialize_pem())?;
    Ok(ca.pem())
}

/// What the API server does for a webhook: POST an AdmissionReview to its URL over HTTPS,
/// trusting the configuration's CA bundle.
async fn call(
    url: &str,
    ca_bundle: &[u8],
    review: Value,
) -> Result<Value, Box<dyn std::error::Error>> {
    let uri: http::Uri = url.parse()?;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(ca_bundle)?)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let authority = uri.authority().ok_or("no host")?.clone();
    let tcp = tokio::net::TcpStream::connect(authority.as_str()).await?;
    let stream = tokio_rustls::TlsConnector::from(Arc::new(tls))
        .connect(ServerName::try_from(authority.host().to_string())?, tcp)
        .await?;
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let request = http::Request::post(uri.path())
        .header("host", authority.as_str())
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(serde_json::to_vec(&review)?)))?;
    let body = send
        .send_request(request)
        .await?
        .into_body()
        .collect()
        .await?;
    Ok(serde_json::from_slice(&body.to_bytes())?)
}

fn review(uid: &str, data: Value) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "name": "settings", "namespace": "default", "operation": "CREATE",
            "userInfo": {"username": "example"},
            "object": {"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "settings", "namespace": "default"}, "data": data},
        },
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (client, server) = common::cluster().await?;
    let certs = tempfile::tempdir()?;
    let ca = certificates(certs.path())?;
    let options = ManagerOptions::default()
        .with_metrics_bind_address(BindAddress::Disabled)
        .with_webhook_server(
            Options::default()
                .with_host([127, 0, 0, 1].into())
                .with_port(0) // 9443 by default
                .with_tls(TlsOptions::default().with_cert_dir(certs.path())),
        );
    let mgr = Manager::new(client, options)?;
    let webhook = || ConfigMapWebhook {
        team: "platform".into(),
    };
    WebhookBuilder::new(&mgr)
        .for_::<ConfigMap>()
        .with_defaulter(webhook())
        .with_validator(webhook())
        .complete()?;
    mgr.add_readyz_check("webhook", mgr.webhook_server().started_checker());

    let ctx = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, ctx) = (mgr.clone(), ctx.clone());
        async move { mgr.start(ctx).await }
    });
    let addr = mgr.webhook_server().listening().await?;
    println!("webhook server listening on https://{addr}");

    // The configuration objects an API server would be given, pointing at this process.
    let client_config = ClientConfig::url(format!("https://{addr}"), ca.as_bytes());
    let mutating = mgr
        .webhook_server()
        .mutating_webhook_configuration("example-mutating", &client_config);
    let validating = mgr
        .webhook_server()
        .validating_webhook_configuration("example-validating", &client_config);
    for webhook in mutating.webhooks.iter().flatten() {
        println!(
            "mutating webhook {} at {:?}",
            webhook.name, webhook.client_config.url
        );
    }
    for webhook in validating.webhooks.iter().flatten() {
        println!(
            "validating webhook {} at {:?}",
            webhook.name, webhook.client_config.url
        );
    }

    let mutate_url = mutating
        .webhooks
        .as_ref()
        .and_then(|w| w[0].client_config.url.clone())
        .ok_or("no url")?;
    let validate_url = validating
        .webhooks
        .as_ref()
        .and_then(|w| w[0].client_config.url.clone())
        .ok_or("no url")?;
    let defaulted = call(
        &mutate_url,
        ca.as_bytes(),
        review("1", json!({"color": "blue"})),
    )
    .await?;
    println!("defaulting answer: {}", defaulted["response"]);
    let empty = call(&validate_url, ca.as_bytes(), review("2", json!({}))).await?;
    println!("validating an empty ConfigMap: {}", empty["response"]);
    let refused = call(
        &validate_url,
        ca.as_bytes(),
        review("3", json!({"password": "hunter2"})),
    )
    .await?;
    println!("validating a password: {}", refused["response"]);
    if refused["response"]["allowed"] != false || defaulted["response"]["patchType"] != "JSONPatch"
    {
        return Err("the webhooks did not answer as expected".into());
    }

    ctx.cancel();
    tokio::time::timeout(Duration::from_secs(10), running).await???;
    if let Some(server) = server {
        server.stop().await;
    }
    Ok(())
}
