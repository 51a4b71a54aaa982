//! Serving HTTP and HTTPS: what the metrics, webhook and health probe servers share.
//!
//! - [`TlsOptions`]: where a server reads its certificate and key (a directory, the file names,
//!   how often to look for a rotation), given to the
//!   [metrics server](crate::metrics::server::Options::with_tls) and the
//!   [webhook server](crate::webhook::Options::with_tls).
//! - [`CertWatcher`] ([`certwatcher`]): the serving certificate, reloaded when its files
//!   change.
//! - One accept loop (crate-private) for every server: it accepts until cancelled, runs each
//!   connection as a task (with TLS: the handshake within 10 s, then HTTP/2 or HTTP/1.1 by
//!   ALPN; without: HTTP/1.1, what Prometheus and the kubelet speak), and on cancellation stops
//!   accepting, lets each open connection finish its request, and returns. A failed accept
//!   (too many open files, say) is logged and retried 50 ms later; the other connections go
//!   on.

pub mod certwatcher;
mod error;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Response;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use certwatcher::CertWatcher;
pub use error::Error;

/// How long a client has to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a server reads its serving certificate and key (controller-runtime's `CertDir`,
/// `CertName`, `KeyName` of `webhook.Options` and `metricsserver.Options`). The files are read
/// by a [`CertWatcher`] and read again when they change.
///
/// ```
/// use std::time::Duration;
/// use controller_runtime::serving::TlsOptions;
/// use controller_runtime::webhook::Options;
///
/// let tls = TlsOptions::default()
///     .with_cert_dir("/var/run/webhook-certs")
///     .with_cert_poll_interval(Duration::from_secs(60));
/// let options = Options::default().with_tls(tls);
/// # let _ = options;
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TlsOptions {
    pub(crate) cert_dir: Option<PathBuf>,
    pub(crate) cert_name: String,
    pub(crate) key_name: String,
    pub(crate) cert_poll_interval: Duration,
}

impl Default for TlsOptions {
    fn default() -> Self {
        TlsOptions {
            cert_dir: None,
            cert_name: "tls.crt".into(),
            key_name: "tls.key".into(),
            cert_poll_interval: Duration::from_secs(10),
        }
    }
}

impl TlsOptions {
    /// The directory of the certificate and key. Default: the server's own (the webhook
    /// server's `<temp dir>/k8s-webhook-server/serving-certs`; the metrics server's
    /// `<temp dir>/k8s-metrics-server/serving-certs` when it holds both files, else a
    /// self-signed certificate made at start).
    pub fn with_cert_dir(self, cert_dir: impl Into<PathBuf>) -> Self {
        TlsOptions {
            cert_dir: Some(cert_dir.into()),
            ..self
        }
    }

    /// The certificate's file name in the certificate directory (default `tls.crt`).
    pub fn with_cert_name(self, cert_name: impl Into<String>) -> Self {
        TlsOptions {
            cert_name: cert_name.into(),
            ..self
        }
    }

    /// The key's file name in the certificate directory (default `tls.key`).
    pub fn with_key_name(self, key_name: impl Into<String>) -> Self {
        TlsOptions {
            key_name: key_name.into(),
            ..self
        }
    }

    /// How often the certificate files are checked for a change (default 10 s).
    pub fn with_cert_poll_interval(self, interval: Duration) -> Self {
        TlsOptions {
            cert_poll_interval: interval,
            ..self
        }
    }

    /// A watcher of the certificate and key in `dir`.
    pub(crate) fn watcher(&self, dir: &Path) -> Result<Arc<CertWatcher>, Error> {
        CertWatcher::new(dir.join(&self.cert_name), dir.join(&self.key_name)).map(Arc::new)
    }
}

/// A server's TLS: the acceptor, and the watcher to poll for rotations, if any.
pub(crate) struct Tls {
    acceptor: TlsAcceptor,
    watcher: Option<(Arc<CertWatcher>, Duration)>,
}

impl Tls {
    /// TLS with the certificate `watcher` serves, polled every `poll_interval` while serving.
    pub(crate) fn watched(
        watcher: Arc<CertWatcher>,
        poll_interval: Duration,
    ) -> Result<Self, Error> {
        let config = config_builder()?.with_cert_resolver(watcher.clone());
        Ok(Tls {
            acceptor: acceptor(config),
            watcher: Some((watcher, poll_interval)),
        })
    }

    /// TLS with one fixed certificate.
    pub(crate) fn fixed(
        cert: CertificateDer<'static>,
        key: PrivateKeyDer<'static>,
    ) -> Result<Self, Error> {
        let config = config_builder()?
            .with_single_cert(vec![cert], key)
            .map_err(|e| Error::Tls(e.to_string()))?;
        Ok(Tls {
            acceptor: acceptor(config),
            watcher: None,
        })
    }
}

/// rustls (ring), its safe default protocol versions, no client certificates.
fn config_builder()
-> Result<rustls::ConfigBuilder<rustls::ServerConfig, rustls::server::WantsServerCert>, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_no_client_auth())
}

/// HTTP/2 and HTTP/1.1, by ALPN.
fn acceptor(mut config: rustls::ServerConfig) -> TlsAcceptor {
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    TlsAcceptor::from(Arc::new(config))
}

/// Answers one request.
pub(crate) trait Service: Send + Sync + 'static {
    /// The response to `request`.
    fn call(
        &self,
        request: http::Request<Incoming>,
    ) -> impl Future<Output = Response<Full<Bytes>>> + Send;
}

/// Accepts connections on `listener` until `ctx` is cancelled, serving each with `service`
/// (over `tls` when given), then waits for the open ones to finish their requests. `name`
/// labels the logs.
pub(crate) async fn serve<S: Service>(
    name: &'static str,
    listener: TcpListener,
    tls: Option<Tls>,
    service: Arc<S>,
    ctx: CancellationToken,
) {
    let tasks = TaskTracker::new();
    let acceptor = tls.map(|tls| {
        if let Some((watcher, interval)) = tls.watcher {
            let ctx = ctx.clone();
            tasks.spawn(async move { watcher.watch(ctx, interval).await });
        }
        tls.acceptor
    });
    loop {
        let (stream, peer) = tokio::select! {
            _ = ctx.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // E.g. too many open files: keep serving the others.
                    tracing::warn!(server = name, error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        tasks.spawn(connection(
            name,
            stream,
            peer,
            acceptor.clone(),
            service.clone(),
            ctx.clone(),
        ));
    }
    drop(listener);
    tasks.close();
    tasks.wait().await;
    tracing::info!(server = name, "stopped");
}

/// One connection: the TLS handshake if any, then HTTP until closed or cancelled; on
/// cancellation, the request in flight is finished and the connection closed.
async fn connection<S: Service>(
    name: &'static str,
    stream: TcpStream,
    peer: std::net::SocketAddr,
    acceptor: Option<TlsAcceptor>,
    service: Arc<S>,
    ctx: CancellationToken,
) {
    let service = service_fn(move |request: http::Request<Incoming>| {
        let service = service.clone();
        async move { Ok::<_, std::convert::Infallible>(service.call(request).await) }
    });
    let result = match acceptor {
        Some(acceptor) => {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    tracing::debug!(server = name, %peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(server = name, %peer, "TLS handshake timed out");
                    return;
                }
            };
            let builder = auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection(TokioIo::new(tls), service);
            tokio::pin!(conn);
            tokio::select! {
                result = conn.as_mut() => result,
                _ = ctx.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            }
        }
        None => {
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            tokio::select! {
                result = conn.as_mut() => result,
                _ = ctx.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            }
            .map_err(Into::into)
        }
    };
    if let Err(e) = result {
        tracing::debug!(server = name, %peer, error = %e, "connection ended with an error");
    }
}
