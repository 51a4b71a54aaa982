//! The metrics server (controller-runtime's `pkg/metrics/server`): serves a registry at
//! `/metrics` as OpenMetrics text, over plain HTTP (the default) or HTTPS, optionally behind
//! the [authentication and authorization filter](super::filters).
//!
//! A [`Manager`](crate::manager::Manager) runs one at its metrics bind address, with the
//! [`Options`] given to
//! [`ManagerOptions::with_metrics_server`](crate::manager::ManagerOptions::with_metrics_server):
//!
//! ```no_run
//! use controller_runtime::manager::{Manager, ManagerOptions};
//! use controller_runtime::metrics::filters::AuthFilterOptions;
//! use controller_runtime::metrics::server::Options;
//!
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! // controller-runtime's `SecureServing: true, FilterProvider: filters.WithAuthenticationAndAuthorization`
//! let metrics = Options::default()
//!     .with_secure_serving(true)
//!     .with_authentication_and_authorization(AuthFilterOptions::default());
//! let options = ManagerOptions::default()
//!     .with_metrics_bind_address(":8443".parse()?)
//!     .with_metrics_server(metrics);
//! let mgr = Manager::infer(options).await?;
//! # Ok(()) }
//! ```
//!
//! ## HTTPS
//!
//! With [`with_secure_serving`](Options::with_secure_serving), the server speaks TLS (rustls;
//! HTTP/2 and HTTP/1.1 by ALPN). Its certificate is, as controller-runtime's:
//!
//! - the `tls.crt` and `tls.key` of [`with_tls`](Options::with_tls)'s
//!   [`TlsOptions::with_cert_dir`] (file names and poll interval there too), read by a
//!   [`CertWatcher`](crate::serving::CertWatcher) and read again when they change
//!   (cert-manager rotating them);
//!   a directory given but without the files is an error, so a typo is not silently served
//!   with another certificate;
//! - without a directory, those of `<temp dir>/k8s-metrics-server/serving-certs` when both
//!   exist, else a self-signed certificate for `localhost` and `127.0.0.1` generated at start
//!   (good enough to encrypt the scrape, as kube-controller-manager does; Prometheus then scrapes
//!   with `insecure_skip_verify`).
//!
//! ## Authentication and authorization
//!
//! With [`with_authentication_and_authorization`](Options::with_authentication_and_authorization),
//! every `/metrics` request needs a bearer token the API server authenticates (`TokenReview`,
//! else 401) and whose user may `get` the non-resource URL `/metrics`
//! (`SubjectAccessReview`, else 403); see [`filters`](super::filters) for the RBAC it needs
//! and what is cached for how long. Use it with HTTPS: a token sent over plain HTTP can be
//! read by anyone on the path (the server logs a warning when the filter runs without TLS).
//!
//! Only `GET` and `HEAD` are answered (else 405), only at `/metrics` (else 404). Connections
//! are served by the [`crate::serving`] accept loop.

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::filters::{AuthFilter, AuthFilterOptions, Reviewer};
use crate::serving::{self, Error, Tls, TlsOptions};

/// The path the metrics are served at.
pub const METRICS_PATH: &str = "/metrics";

/// The content type of the OpenMetrics text that `prometheus_client` writes; Prometheus
/// negotiates it (its scrape `Accept` header lists it first).
pub(crate) const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How the metrics server serves (controller-runtime's `metricsserver.Options`, less the bind
/// address, which stays
/// [`ManagerOptions::with_metrics_bind_address`](crate::manager::ManagerOptions::with_metrics_bind_address)).
/// The default is controller-runtime's: plain HTTP, no filter. See the [module docs](self).
///
/// ```
/// use controller_runtime::metrics::server::Options;
/// use controller_runtime::serving::TlsOptions;
///
/// let options = Options::default()
///     .with_secure_serving(true)
///     .with_tls(TlsOptions::default().with_cert_dir("/var/run/metrics-certs"));
/// # let _ = options;
/// ```
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Options {
    /// Serve HTTPS (default `false`: plain HTTP).
    pub(crate) secure_serving: bool,
    /// Where the certificate and key are read (default: see the module docs).
    pub(crate) tls: TlsOptions,
    /// The authentication and authorization filter (default none).
    pub(crate) auth: Option<AuthFilterOptions>,
}

impl Options {
    /// Serve HTTPS (default `false`: plain HTTP, controller-runtime's default).
    pub fn with_secure_serving(self, secure: bool) -> Self {
        Options {
            secure_serving: secure,
            ..self
        }
    }

    /// Where the serving certificate and key are read: [`TlsOptions`]; a directory given
    /// must hold them (default none: `<temp dir>/k8s-metrics-server/serving-certs` when it
    /// holds both, else a self-signed certificate made at start). Used with
    /// [`with_secure_serving`](Self::with_secure_serving). controller-runtime: `CertDir`,
    /// `CertName`, `KeyName`.
    pub fn with_tls(self, tls: TlsOptions) -> Self {
        Options { tls, ..self }
    }

    /// Requires every `/metrics` request to authenticate with a bearer token and to be
    /// authorized, both by the API server (controller-runtime's
    /// `FilterProvider: filters.WithAuthenticationAndAuthorization`; default: no filter). See
    /// [`filters`](super::filters).
    pub fn with_authentication_and_authorization(self, filter: AuthFilterOptions) -> Self {
        Options {
            auth: Some(filter),
            ..self
        }
    }
}

/// Where the serving certificate comes from.
enum Certificate {
    Watched(Arc<serving::CertWatcher>),
    SelfSigned {
        cert: CertificateDer<'static>,
        key: PrivatePkcs8KeyDer<'static>,
    },
}

/// A metrics server ready to serve: its TLS acceptor (with HTTPS) and filter are built, so a
/// bad certificate fails before anything runs.
pub(crate) struct Server {
    registry: Arc<Mutex<Registry>>,
    tls: Option<Tls>,
    filter: Option<Arc<AuthFilter>>,
    /// The self-signed certificate's DER, when one was made (read by the tests).
    #[cfg_attr(not(test), allow(dead_code))]
    self_signed: Option<CertificateDer<'static>>,
}

impl Server {
    /// A server of `registry` with `options`; `client` answers the filter's reviews.
    pub(crate) fn new(
        registry: Arc<Mutex<Registry>>,
        options: &Options,
        client: kube_client::Client,
    ) -> Result<Self, Error> {
        Self::with_reviewer(registry, options, Arc::new(client))
    }

    pub(crate) fn with_reviewer(
        registry: Arc<Mutex<Registry>>,
        options: &Options,
        reviewer: Arc<dyn Reviewer>,
    ) -> Result<Self, Error> {
        let filter = options
            .auth
            .clone()
            .map(|auth| Arc::new(AuthFilter::new(reviewer, auth)));
        if filter.is_some() && !options.secure_serving {
            tracing::warn!(
                "metrics: authentication is on without secure serving: bearer tokens travel in clear text"
            );
        }
        let mut self_signed = None;
        let tls = if options.secure_serving {
            Some(match certificate(options)? {
                Certificate::Watched(watcher) => {
                    Tls::watched(watcher, options.tls.cert_poll_interval)?
                }
                Certificate::SelfSigned { cert, key } => {
                    self_signed = Some(cert.clone());
                    Tls::fixed(cert, PrivateKeyDer::Pkcs8(key))?
                }
            })
        } else {
            None
        };
        Ok(Server {
            registry,
            tls,
            filter,
            self_signed,
        })
    }

    /// The self-signed certificate (DER) the server made, if it made one.
    #[cfg(test)]
    pub(crate) fn self_signed(&self) -> Option<&CertificateDer<'static>> {
        self.self_signed.as_ref()
    }

    /// Accepts connections on `listener` until `ctx` is cancelled, then lets each open
    /// connection finish its request.
    pub(crate) async fn serve(mut self, listener: TcpListener, ctx: CancellationToken) {
        let addr = listener.local_addr().ok();
        let tls = self.tls.take();
        let (secure, filtered) = (tls.is_some(), self.filter.is_some());
        tracing::info!(addr = ?addr, secure, filtered, "serving metrics");
        serving::serve("metrics", listener, tls, Arc::new(self), ctx).await;
    }

    /// Answers one request.
    async fn handle<B>(&self, request: http::Request<B>) -> Response<Full<Bytes>> {
        if request.uri().path() != METRICS_PATH {
            return text(StatusCode::NOT_FOUND, "404 page not found\n");
        }
        if let Some(filter) = &self.filter {
            let checked = filter
                .check(request.headers(), request.method(), METRICS_PATH)
                .await;
            if let Err(refusal) = checked {
                let (status, body) = refusal.answer();
                return text(status, body);
            }
        }
        if request.method() != Method::GET && request.method() != Method::HEAD {
            return text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
        }
        encode(&self.registry)
    }
}

impl serving::Service for Server {
    async fn call(&self, request: http::Request<Incoming>) -> Response<Full<Bytes>> {
        self.handle(request).await
    }
}

/// The registry in OpenMetrics text.
pub(crate) fn encode(registry: &Mutex<Registry>) -> Response<Full<Bytes>> {
    let mut body = String::new();
    match prometheus_client::encoding::text::encode(&mut body, &registry.lock()) {
        Ok(()) => {
            let mut response = Response::new(Full::new(Bytes::from(body)));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static(OPENMETRICS),
            );
            response
        }
        Err(e) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("encoding metrics: {e}\n"),
        ),
    }
}

/// A plain-text response, as Go's `http.Error` writes one.
fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::HeaderName::from_static("x-content-type-options"),
        header::HeaderValue::from_static("nosniff"),
    );
    response
}

/// The serving certificate `options` name; see the module docs.
fn certificate(options: &Options) -> Result<Certificate, Error> {
    let tls = &options.tls;
    let watched = |dir: &std::path::Path| tls.watcher(dir).map(Certificate::Watched);
    if let Some(dir) = &tls.cert_dir {
        return watched(dir);
    }
    let default_dir = std::env::temp_dir()
        .join("k8s-metrics-server")
        .join("serving-certs");
    if default_dir.join(&tls.cert_name).is_file() && default_dir.join(&tls.key_name).is_file() {
        return watched(&default_dir);
    }
    let made = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
        .map_err(|e| Error::Certificate(format!("generating a self-signed certificate: {e}")))?;
    tracing::info!("metrics: serving a self-signed certificate for localhost and 127.0.0.1");
    Ok(Certificate::SelfSigned {
        cert: made.cert.der().clone(),
        key: PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()),
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use futures::future::BoxFuture;
    use http_body_util::BodyExt;
    use hyper_util::rt::TokioIo;
    use k8s_openapi::api::authentication::v1::{TokenReviewStatus, UserInfo};
    use k8s_openapi::api::authorization::v1::{SubjectAccessReviewSpec, SubjectAccessReviewStatus};
    use rustls::pki_types::ServerName;

    use crate::metrics::filters::ReviewError;

    /// Authenticates `good` as `alice`, allowed; `denied` as `bob`, not allowed.
    struct Api;

    impl Reviewer for Api {
        fn token_review(
            &self,
            token: String,
        ) -> BoxFuture<'_, Result<TokenReviewStatus, ReviewError>> {
            let user = match token.as_str() {
                "good" => Some("alice"),
                "denied" => Some("bob"),
                _ => None,
            };
            Box::pin(async move {
                Ok(TokenReviewStatus {
                    authenticated: Some(user.is_some()),
                    user: user.map(|u| UserInfo {
                        username: Some(u.into()),
                        ..Default::default()
                    }),
                    ..Default::default()
                })
            })
        }

        fn access_review(
            &self,
            spec: SubjectAccessReviewSpec,
        ) -> BoxFuture<'_, Result<SubjectAccessReviewStatus, ReviewError>> {
            let allowed = spec.user.as_deref() == Some("alice");
            Box::pin(async move {
                Ok(SubjectAccessReviewStatus {
                    allowed,
                    ..Default::default()
                })
            })
        }
    }

    fn registry() -> Arc<Mutex<Registry>> {
        let mut registry = Registry::default();
        crate::metrics::Metrics::register(&mut registry);
        Arc::new(Mutex::new(registry))
    }

    async fn body(response: Response<Full<Bytes>>) -> (u16, String) {
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(bytes.to_vec()).unwrap())
    }

    fn request(method: Method, path: &str, token: Option<&str>) -> http::Request<()> {
        let mut builder = http::Request::builder().method(method).uri(path);
        if let Some(token) = token {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        builder.body(()).unwrap()
    }

    #[test]
    fn defaults_are_controller_runtimes_plain_http_without_a_filter() {
        let options = Options::default();
        assert!(!options.secure_serving && options.auth.is_none());
        assert_eq!(options.tls.cert_dir, None);
        assert_eq!(
            (
                options.tls.cert_name.as_str(),
                options.tls.key_name.as_str()
            ),
            ("tls.crt", "tls.key")
        );
        assert_eq!(options.tls.cert_poll_interval, Duration::from_secs(10));
        let filter = AuthFilterOptions::default();
        assert_eq!(
            (
                filter.authentication_cache_ttl,
                filter.allow_cache_ttl,
                filter.deny_cache_ttl,
                filter.review_timeout
            ),
            (
                Duration::from_secs(60),
                Duration::from_secs(300),
                Duration::from_secs(30),
                Duration::from_secs(10)
            )
        );
    }

    #[tokio::test]
    async fn the_filter_stands_before_the_metrics() {
        let options =
            Options::default().with_authentication_and_authorization(AuthFilterOptions::default());
        let server = Server::with_reviewer(registry(), &options, Arc::new(Api)).unwrap();
        let get = |token| server.handle(request(Method::GET, "/metrics", token));
        assert_eq!(body(get(None).await).await, (401, "Unauthorized\n".into()));
        assert_eq!(body(get(Some("bad")).await).await.0, 401);
        assert_eq!(
            body(get(Some("denied")).await).await,
            (403, "Authorization denied for user bob\n".into())
        );
        let (status, text) = body(get(Some("good")).await).await;
        assert_eq!(status, 200);
        assert!(
            text.contains("# TYPE workqueue_") && text.ends_with("# EOF\n"),
            "{text}"
        );
        // Other paths are not served, filtered or not.
        let other = server.handle(request(Method::GET, "/healthz", None)).await;
        assert_eq!(other.status(), 404);
    }

    #[tokio::test]
    async fn without_a_filter_metrics_are_served_to_anyone_with_get_or_head() {
        let server = Server::with_reviewer(registry(), &Options::default(), Arc::new(Api)).unwrap();
        let ok = server.handle(request(Method::GET, "/metrics", None)).await;
        assert_eq!(ok.status(), 200);
        assert_eq!(ok.headers()[header::CONTENT_TYPE], OPENMETRICS);
        let head = server.handle(request(Method::HEAD, "/metrics", None)).await;
        assert_eq!(head.status(), 200);
        let post = server.handle(request(Method::POST, "/metrics", None)).await;
        assert_eq!(post.status(), 405);
    }

    #[tokio::test]
    async fn a_cert_dir_without_the_files_is_an_error_naming_them() {
        let options = Options::default()
            .with_secure_serving(true)
            .with_tls(TlsOptions::default().with_cert_dir("/nonexistent/metrics-certs"));
        let err = Server::with_reviewer(registry(), &options, Arc::new(Api))
            .err()
            .expect("no certificate there");
        assert!(
            err.to_string()
                .contains("/nonexistent/metrics-certs/tls.crt"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn without_certificates_https_serves_a_self_signed_one() {
        let options = Options::default()
            .with_secure_serving(true)
            .with_authentication_and_authorization(AuthFilterOptions::default());
        let server = Server::with_reviewer(registry(), &options, Arc::new(Api)).unwrap();
        let cert = server
            .self_signed()
            .expect("a self-signed certificate")
            .clone();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let ctx = CancellationToken::new();
        let serving = tokio::spawn(server.serve(listener, ctx.clone()));

        // A client trusting that certificate alone, for the name `localhost`.
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let get = |token: Option<&'static str>| {
            let config = config.clone();
            async move {
                let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
                let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
                    .connect(ServerName::try_from("localhost").unwrap(), tcp)
                    .await
                    .expect("the self-signed certificate is served");
                let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
                    .await
                    .unwrap();
                tokio::spawn(conn);
                let mut request = http::Request::get("/metrics").header("host", "localhost");
                if let Some(token) = token {
                    request = request.header("authorization", format!("Bearer {token}"));
                }
                let response = send
                    .send_request(request.body(Full::new(Bytes::new())).unwrap())
                    .await
                    .unwrap();
                response.status().as_u16()
            }
        };
        assert_eq!(get(None).await, 401);
        assert_eq!(get(Some("denied")).await, 403);
        assert_eq!(get(Some("good")).await, 200);
        ctx.cancel();
        serving.await.unwrap();
    }
}
