//! The manager's `/metrics` over HTTPS behind the authentication and authorization filter,
//! against the embedded API server (feature `envtest`): the filter's TokenReviews and
//! SubjectAccessReviews are answered by a real API server.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use controller_runtime::CancellationToken;
use controller_runtime::envtest::Environment;
use controller_runtime::manager::{Manager, ManagerOptions};
use controller_runtime::metrics::filters::AuthFilterOptions;
use controller_runtime::metrics::server::Options as MetricsServerOptions;
use controller_runtime::serving::TlsOptions;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};

/// A CA, and a serving certificate for `127.0.0.1` it signed, written as `tls.crt` and
/// `tls.key` into `dir`; answers the CA (PEM).
fn serving_certificate(dir: &std::path::Path) -> String {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "metrics-test-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params.signed_by(&key, &ca).unwrap();
    std::fs::write(dir.join("tls.crt"), cert.pem()).unwrap();
    std::fs::write(dir.join("tls.key"), key.serialize_pem()).unwrap();
    ca.pem()
}

/// A GET of `/metrics` over HTTPS trusting `ca` alone, with `token` as bearer: (status, body).
async fn scrape(addr: std::net::SocketAddr, ca: &str, token: Option<&str>) -> (u16, String) {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.as_bytes()).unwrap())
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .expect("the metrics serving certificate is trusted through its CA");
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut request = http::Request::get("/metrics").header("host", addr.to_string());
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = send
        .send_request(request.body(Full::new(Bytes::new())).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_over_https_need_a_token_the_api_server_authenticates_and_authorizes() {
    let env = Environment::new()
        .use_existing_cluster(false)
        .start()
        .await
        .unwrap();
    let admin_token = env.server().unwrap().token().to_string();
    let certs = tempfile::tempdir().unwrap();
    let ca = serving_certificate(certs.path());

    let metrics = MetricsServerOptions::default()
        .with_secure_serving(true)
        .with_tls(TlsOptions::default().with_cert_dir(certs.path()))
        .with_authentication_and_authorization(
            AuthFilterOptions::default().with_deny_cache_ttl(Duration::ZERO),
        );
    let options = ManagerOptions::default()
        .with_metrics_bind_address("127.0.0.1:0".parse().unwrap())
        .with_metrics_server(metrics);
    let mgr = Manager::new(env.client(), options).unwrap();
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    let addr = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Some(addr) = mgr.metrics_addr() {
                return addr;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the metrics server listens");

    // The admin token: authenticated by the TokenReview, allowed by the SubjectAccessReview.
    let (status, body) = scrape(addr, &ca, Some(&admin_token)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.ends_with("# EOF\n"), "{body}");
    // Again: answered from the caches.
    assert_eq!(scrape(addr, &ca, Some(&admin_token)).await.0, 200);

    // No token, a token the server does not know: 401, whatever is cached.
    assert_eq!(
        scrape(addr, &ca, None).await,
        (401, "Unauthorized\n".into())
    );
    let forged = format!("{admin_token}x");
    assert_eq!(scrape(addr, &ca, Some(&forged)).await.0, 401);
    assert_eq!(scrape(addr, &ca, Some("not-a-token")).await.0, 401);

    // An authenticated user without the non-resource `get /metrics`: 403. A ServiceAccount
    // token, asked through the TokenRequest subresource; the deny cache is off, so the
    // permission granted next is seen at once.
    let scraper = env
        .service_account_config("monitoring", "scraper")
        .await
        .unwrap();
    let sa_token = scraper_token(&env).await;
    drop(scraper);
    let (status, body) = scrape(addr, &ca, Some(&sa_token)).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body,
        "Authorization denied for user system:serviceaccount:monitoring:scraper\n"
    );
    // The ClusterRole a Prometheus deployment binds to grant scraping, then 200.
    grant_metrics_reader(&env, "monitoring", "scraper").await;
    let (status, body) = scrape(addr, &ca, Some(&sa_token)).await;
    assert_eq!(status, 200, "{body}");

    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("the manager stops")
        .unwrap()
        .unwrap();
    env.stop().await.unwrap();
}

/// A token of the ServiceAccount `monitoring/scraper` (which exists), through TokenRequest.
async fn scraper_token(env: &controller_runtime::envtest::Running) -> String {
    use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
    use k8s_openapi::api::core::v1::ServiceAccount;
    let accounts: kube_client::Api<ServiceAccount> =
        kube_client::Api::namespaced(env.client(), "monitoring");
    let request = TokenRequest {
        spec: TokenRequestSpec::default(),
        ..Default::default()
    };
    accounts
        .create_token_request("scraper", &Default::default(), &request)
        .await
        .unwrap()
        .status
        .unwrap()
        .token
}

/// Grants `namespace/name` the non-resource `get /metrics`, as a metrics-reader ClusterRole
/// and its binding do in a kubebuilder project.
async fn grant_metrics_reader(
    env: &controller_runtime::envtest::Running,
    namespace: &str,
    name: &str,
) {
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    let role: ClusterRole = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "metrics-reader"},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    }))
    .unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "metrics-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "metrics-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    }))
    .unwrap();
    let pp = Default::default();
    kube_client::Api::<ClusterRole>::all(env.client())
        .create(&pp, &role)
        .await
        .unwrap();
    kube_client::Api::<ClusterRoleBinding>::all(env.client())
        .create(&pp, &binding)
        .await
        .unwrap();
}
