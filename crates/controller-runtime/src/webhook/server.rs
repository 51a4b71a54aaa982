//! [`Server`]: the webhook server (controller-runtime's `webhook.Server`). HTTPS (rustls, HTTP/2
//! and HTTP/1.1 by ALPN) on [`Options::with_port`] (9443), with the certificate and key of
//! [`Options::with_tls`] read by a [`CertWatcher`](crate::serving::CertWatcher) and read again
//! when they change; connections are served by the [`crate::serving`] accept loop.
//!
//! Each registered path answers `POST` with a JSON body: an admission [`Webhook`] or, at
//! `/convert`, the registered [conversions](super::conversion). Other methods get 405, other
//! content types 400, unknown paths 404. Every request to a registered path is counted in the
//! [`WebhookMetrics`]. Paths can be registered before or after the server starts.
//!
//! A [`Manager`](crate::manager::Manager) runs its server (see
//! [`Manager::webhook_server`](crate::manager::Manager::webhook_server)); a server can also run
//! on its own through [`Server::start`].

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use http::{Method, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use parking_lot::RwLock;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::admission::Webhook;
use super::config::{self, ClientConfig};
use super::conversion::{self, CONVERT_PATH, Conversion, Hub};
use super::error::Error;
use super::metrics::WebhookMetrics;
use crate::serving::{self, Tls, TlsOptions};

/// controller-runtime's limit on a request body: 7 MiB.
pub const MAX_REQUEST_SIZE: usize = 7 * 1024 * 1024;

/// How a [`Server`] listens and where it reads its certificate (controller-runtime's
/// `webhook.Options`). Every field has controller-runtime's default.
///
/// ```
/// use std::time::Duration;
/// use controller_runtime::serving::TlsOptions;
/// use controller_runtime::webhook::Options;
///
/// // A test server: any free port, certificates checked every 50 ms.
/// let tls = TlsOptions::default().with_cert_poll_interval(Duration::from_millis(50));
/// let test = Options::default().with_port(0).with_tls(tls);
/// # let _ = test;
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// The address to listen on (default `0.0.0.0`: every interface).
    pub(crate) host: IpAddr,
    /// The port (default 9443); 0 picks a free port (see [`Server::addr`]).
    pub(crate) port: u16,
    /// Where the certificate and key are read (default: `tls.crt` and `tls.key` of
    /// `<temp dir>/k8s-webhook-server/serving-certs`, checked every 10 s).
    pub(crate) tls: TlsOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            host: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            port: 9443,
            tls: TlsOptions::default(),
        }
    }
}

impl Options {
    /// The address to listen on (default `0.0.0.0`: every interface).
    pub fn with_host(self, host: IpAddr) -> Self {
        Options { host, ..self }
    }

    /// The port (default 9443); 0 picks a free port (see [`Server::addr`]).
    pub fn with_port(self, port: u16) -> Self {
        Options { port, ..self }
    }

    /// Where the certificate and key are read: [`TlsOptions`] (default: `tls.crt` and
    /// `tls.key` of `<temp dir>/k8s-webhook-server/serving-certs`, checked for a change every
    /// 10 s). controller-runtime: `CertDir`, `CertName`, `KeyName`.
    pub fn with_tls(self, tls: TlsOptions) -> Self {
        Options { tls, ..self }
    }

    /// The certificate directory: the one set, else the default.
    pub(crate) fn cert_dir(&self) -> PathBuf {
        match &self.tls.cert_dir {
            Some(dir) => dir.clone(),
            None => std::env::temp_dir()
                .join("k8s-webhook-server")
                .join("serving-certs"),
        }
    }
}

/// Where a server is in its life.
#[derive(Clone, Debug)]
enum State {
    Pending,
    Listening(SocketAddr),
    Failed(String),
    Stopped,
}

/// See the [module docs](self). Cheap to clone; clones are the same server.
///
/// ```no_run
/// use controller_runtime::webhook::{Options, Server, WebhookMetrics};
/// use controller_runtime::webhook::admission::{Request, Response, Webhook};
/// use controller_runtime::CancellationToken;
///
/// # async fn f() -> Result<(), controller_runtime::webhook::Error> {
/// let server = Server::new(Options::default(), WebhookMetrics::unregistered());
/// server.register(Webhook::new("/audit", |req: Request| async move { Response::from(&req) }))?;
/// server.start(CancellationToken::new()).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

struct Inner {
    options: Options,
    metrics: WebhookMetrics,
    routes: RwLock<BTreeMap<String, Webhook>>,
    conversions: RwLock<conversion::Registry>,
    state: watch::Sender<State>,
    started: AtomicBool,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("options", &self.inner.options)
            .field("paths", &self.paths())
            .finish_non_exhaustive()
    }
}

/// What answers a path.
enum Target {
    Admission(Webhook),
    Conversion(conversion::Registry),
}

impl Server {
    /// A server with `options`, counting requests in `metrics` (a manager passes its registry's;
    /// [`WebhookMetrics::unregistered`] counts without exposing). Nothing is read or bound
    /// until [`start`](Self::start).
    pub fn new(options: Options, metrics: WebhookMetrics) -> Self {
        Server {
            inner: Arc::new(Inner {
                options,
                metrics,
                routes: RwLock::default(),
                conversions: RwLock::default(),
                state: watch::Sender::new(State::Pending),
                started: AtomicBool::new(false),
            }),
        }
    }

    /// The server's options.
    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    /// The metric families the server counts in.
    pub fn metrics(&self) -> &WebhookMetrics {
        &self.inner.metrics
    }

    /// Serves `webhook` at its path. Fails for a path already registered, for `/convert`, and
    /// for a path that does not start with `/`.
    pub fn register(&self, webhook: Webhook) -> Result<(), Error> {
        let path = webhook.path().to_string();
        if !path.starts_with('/') || path == CONVERT_PATH {
            return Err(Error::InvalidPath(path));
        }
        let mut routes = self.inner.routes.write();
        if routes.contains_key(&path) {
            return Err(Error::DuplicatePath(path));
        }
        tracing::info!(path = %path, "registering webhook");
        routes.insert(path, webhook);
        Ok(())
    }

    /// Serves `conversion` at `/convert`, beside the other registered kinds. Fails for a kind
    /// already registered.
    pub fn register_conversion<H: Hub>(&self, conversion: Conversion<H>) -> Result<(), Error> {
        if self.inner.conversions.write().add(Arc::new(conversion)) {
            tracing::info!(kind = %H::kind(&()), group = %H::group(&()), "registering conversion");
            Ok(())
        } else {
            Err(Error::DuplicateConversion {
                group: H::group(&()).into(),
                kind: H::kind(&()).into(),
            })
        }
    }

    /// The registered paths, sorted (`/convert` once a conversion is registered).
    pub fn paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = self.inner.routes.read().keys().cloned().collect();
        if !self.inner.conversions.read().is_empty() {
            paths.push(CONVERT_PATH.into());
            paths.sort();
        }
        paths
    }

    /// The registered admission webhooks, by path.
    pub fn webhooks(&self) -> Vec<Webhook> {
        self.inner.routes.read().values().cloned().collect()
    }

    /// The `MutatingWebhookConfiguration` of the registered defaulters
    /// ([`config::mutating_webhook_configuration`]).
    pub fn mutating_webhook_configuration(
        &self,
        name: &str,
        client: &ClientConfig,
    ) -> k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration {
        config::mutating_webhook_configuration(name, &self.webhooks(), client)
    }

    /// The `ValidatingWebhookConfiguration` of the registered validators
    /// ([`config::validating_webhook_configuration`]).
    pub fn validating_webhook_configuration(
        &self,
        name: &str,
        client: &ClientConfig,
    ) -> k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration {
        config::validating_webhook_configuration(name, &self.webhooks(), client)
    }

    /// The `spec.conversion` of the CRD of `kind` in `group`, when a conversion is registered
    /// for it ([`config::crd_conversion`]).
    pub fn crd_conversion(
        &self,
        group: &str,
        kind: &str,
        client: &ClientConfig,
    ) -> Option<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceConversion>
    {
        self.inner
            .conversions
            .read()
            .get(group, kind)
            .map(|_| config::crd_conversion(client))
    }

    /// The address the server listens on, once started.
    pub fn addr(&self) -> Option<SocketAddr> {
        match &*self.inner.state.borrow() {
            State::Listening(addr) => Some(*addr),
            _ => None,
        }
    }

    /// A readiness check (controller-runtime's `StartedChecker`): passes while the server
    /// listens. Register it with `mgr.add_readyz_check("webhook", server.started_checker())`.
    pub fn started_checker(&self) -> Arc<dyn Fn() -> Result<(), String> + Send + Sync> {
        let state = self.inner.state.subscribe();
        Arc::new(move || match &*state.borrow() {
            State::Listening(_) => Ok(()),
            State::Pending => Err("the webhook server has not started yet".into()),
            State::Failed(e) => Err(format!("the webhook server failed: {e}")),
            State::Stopped => Err("the webhook server has stopped".into()),
        })
    }

    /// Waits until the server listens (its address) or failed to start (why).
    pub async fn listening(&self) -> Result<SocketAddr, String> {
        let mut state = self.inner.state.subscribe();
        let state = state
            .wait_for(|s| !matches!(s, State::Pending))
            .await
            .map_err(|e| e.to_string())?;
        match &*state {
            State::Listening(addr) => Ok(*addr),
            State::Failed(e) => Err(e.clone()),
            State::Pending | State::Stopped => Err("the webhook server has stopped".into()),
        }
    }

    /// Reads the certificate, binds, and serves until `ctx` is cancelled; then lets open
    /// connections finish their requests. Fails at once when the certificate cannot be read
    /// or the address bound; a server starts once.
    pub async fn start(&self, ctx: CancellationToken) -> Result<(), Error> {
        if self.inner.started.swap(true, Ordering::AcqRel) {
            return Err(Error::AlreadyStarted);
        }
        let result = self.run(ctx).await;
        let state = match &result {
            Ok(()) => State::Stopped,
            Err(e) => State::Failed(e.to_string()),
        };
        self.inner.state.send_replace(state);
        result
    }

    async fn run(&self, ctx: CancellationToken) -> Result<(), Error> {
        let options = &self.inner.options;
        let cert_dir = options.cert_dir();
        let watcher = options.tls.watcher(&cert_dir)?;
        let tls = Tls::watched(watcher, options.tls.cert_poll_interval)?;

        let addr = SocketAddr::new(options.host, options.port);
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        let local = listener.local_addr().unwrap_or(addr);
        tracing::info!(addr = %local, cert_dir = %cert_dir.display(), "serving webhooks");
        self.inner.state.send_replace(State::Listening(local));
        serving::serve("webhook", listener, Some(tls), self.inner.clone(), ctx).await;
        Ok(())
    }
}

impl serving::Service for Inner {
    async fn call(&self, request: http::Request<Incoming>) -> Response<Full<Bytes>> {
        handle(self, request).await
    }
}

fn respond(status: StatusCode, content_type: &'static str, body: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    response
}

fn text(status: StatusCode, message: String) -> (StatusCode, Bytes) {
    (status, Bytes::from(message + "\n"))
}

/// Answers one request.
async fn handle(inner: &Inner, request: http::Request<Incoming>) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_string();
    let target = if path == CONVERT_PATH {
        let conversions = inner.conversions.read();
        (!conversions.is_empty()).then(|| Target::Conversion(conversions.clone()))
    } else {
        inner
            .routes
            .read()
            .get(&path)
            .cloned()
            .map(Target::Admission)
    };
    let Some(target) = target else {
        return respond(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            Bytes::from_static(b"404 page not found\n"),
        );
    };
    let in_flight = inner.metrics.start(&path);
    let (status, body) = answer(target, request).await;
    in_flight.finish(status.as_u16());
    let content_type = if body.first() == Some(&b'{') {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    respond(status, content_type, body)
}

async fn answer(target: Target, request: http::Request<Incoming>) -> (StatusCode, Bytes) {
    if request.method() != Method::POST {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("method {} not allowed: use POST", request.method()),
        );
    }
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media_type = content_type.split(';').next().unwrap_or("").trim();
    if media_type != "application/json" {
        return text(
            StatusCode::BAD_REQUEST,
            format!("contentType={content_type}, expected application/json"),
        );
    }
    let body = match Limited::new(request.into_body(), MAX_REQUEST_SIZE)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(e) => {
            return text(
                StatusCode::BAD_REQUEST,
                format!("reading the request body: {e}"),
            );
        }
    };
    if body.is_empty() {
        return text(StatusCode::BAD_REQUEST, "request body is empty".into());
    }
    match target {
        Target::Admission(webhook) => webhook.serve(body).await,
        Target::Conversion(conversions) => conversions.serve(&body),
    }
}

#[cfg(test)]
mod options_tests {
    use std::time::Duration;

    use super::Options;

    #[test]
    fn defaults_are_controller_runtimes() {
        let options = Options::default();
        assert_eq!(options.host.to_string(), "0.0.0.0");
        assert_eq!(options.port, 9443);
        assert!(
            options
                .cert_dir()
                .ends_with("k8s-webhook-server/serving-certs")
        );
        assert_eq!(
            (
                options.tls.cert_name.as_str(),
                options.tls.key_name.as_str()
            ),
            ("tls.crt", "tls.key")
        );
        assert_eq!(options.tls.cert_poll_interval, Duration::from_secs(10));
        assert_eq!(Options::default().with_port(0).port, 0);
    }
}
