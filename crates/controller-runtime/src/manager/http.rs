//! The manager's HTTP servers (metrics, health probes) as runnables of the
//! [`HttpServers`](super::RunnableGroup::HttpServers) group: the probe server here, plain
//! HTTP; the metrics server is [`crate::metrics::server`]'s (plain HTTP or HTTPS, filtered or
//! not), wrapped in a [`MetricsServer`] runnable.
//!
//! Each server is a listener bound by [`Manager::start`](super::Manager::start) (so a bad
//! address fails at once, and port 0 resolves before anything else starts) and a [`Handler`]
//! from the request's URI to a response, served by the [`serving`](crate::serving) accept loop
//! (plain HTTP/1.1: what Prometheus and the kubelet speak). On cancellation a server stops
//! accepting, lets each open connection finish its request, and returns.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{Method, Response, StatusCode, Uri, header};
use http_body_util::Full;
use hyper::body::Incoming;
use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::error::Error;
use super::runnable::{BoxError, Runnable, RunnableGroup};
use crate::serving;

/// Answers a GET for a path and query.
pub(crate) type Handler = Arc<dyn Fn(&Uri) -> Response<Full<Bytes>> + Send + Sync>;

/// A plain-text response.
pub(crate) fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
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

/// Binds `addr`.
pub(crate) async fn bind(addr: SocketAddr) -> Result<TcpListener, Error> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Bind { addr, source })
}

/// A bound server waiting to be run.
pub(crate) struct HttpServer {
    name: &'static str,
    listener: Mutex<Option<TcpListener>>,
    handler: Handler,
}

impl HttpServer {
    pub(crate) fn new(name: &'static str, listener: TcpListener, handler: Handler) -> Self {
        HttpServer {
            name,
            listener: Mutex::new(Some(listener)),
            handler,
        }
    }
}

impl Runnable for HttpServer {
    fn name(&self) -> String {
        format!("{} server", self.name)
    }

    fn group(&self) -> RunnableGroup {
        RunnableGroup::HttpServers
    }

    fn start(&self, ctx: CancellationToken) -> BoxFuture<'static, Result<(), BoxError>> {
        let listener = self.listener.lock().take();
        let handler = self.handler.clone();
        let name = self.name;
        Box::pin(async move {
            let listener = listener.ok_or("the server was started twice")?;
            let addr = listener.local_addr().ok();
            tracing::info!(server = name, addr = ?addr, "serving");
            serving::serve(name, listener, None, Arc::new(GetOnly(handler)), ctx).await;
            Ok(())
        })
    }
}

/// The metrics server, bound and set up, waiting to be run.
pub(crate) struct MetricsServer {
    server: Mutex<Option<(crate::metrics::server::Server, TcpListener)>>,
}

impl MetricsServer {
    pub(crate) fn new(server: crate::metrics::server::Server, listener: TcpListener) -> Self {
        MetricsServer {
            server: Mutex::new(Some((server, listener))),
        }
    }
}

impl Runnable for MetricsServer {
    fn name(&self) -> String {
        "metrics server".into()
    }

    fn group(&self) -> RunnableGroup {
        RunnableGroup::HttpServers
    }

    fn start(&self, ctx: CancellationToken) -> BoxFuture<'static, Result<(), BoxError>> {
        let server = self.server.lock().take();
        Box::pin(async move {
            let (server, listener) = server.ok_or("the server was started twice")?;
            server.serve(listener, ctx).await;
            Ok(())
        })
    }
}

/// A [`Handler`] answering `GET` and `HEAD`; other methods get 405.
struct GetOnly(Handler);

impl serving::Service for GetOnly {
    async fn call(&self, request: http::Request<Incoming>) -> Response<Full<Bytes>> {
        if request.method() == Method::GET || request.method() == Method::HEAD {
            (self.0)(request.uri())
        } else {
            text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n")
        }
    }
}
