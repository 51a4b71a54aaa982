//! A Channel source fed by an HTTP webhook: reconcile when something outside the cluster
//! changes.
//!
//! Not every reason to reconcile is a Kubernetes event. Here an outside system (think: a config
//! repository) calls a webhook, `POST /hook {"name": "app", "version": "v2"}`, when an app's
//! configuration changes. The webhook records the new version (standing in for the outside
//! system's state) and sends a `GenericEvent` naming the app's ConfigMap into a
//! [`Channel`](controller_runtime::source::Channel) source. The controller watches that channel
//! like any source: predicates, handler (`EnqueueRequestForObject`), queue, reconcile. The
//! reconciler writes the version into the ConfigMap.
//!
//! The example posts to its own webhook, then checks the ConfigMaps, and stops.
//!
//! ```sh
//! cargo run -p controller-runtime --example channel_webhook
//! ```

mod common;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use controller_runtime::Request;
use controller_runtime::builder::{ControllerBuilder, Input};
use controller_runtime::client::{self, Client};
use controller_runtime::event::GenericEvent;
use controller_runtime::handler::EnqueueRequestForObject;
use controller_runtime::manager::{BindAddress, Manager, ManagerOptions};
use controller_runtime::reconcile::{self, Action, ReconcileError};
use controller_runtime::source;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, StatusCode};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, Patch, PatchParams};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// What the outside system last said, per app: the webhook writes it, the reconciler reads it.
type Versions = Arc<Mutex<HashMap<String, String>>>;

/// The webhook: records the version, then sends an event for the app's ConfigMap.
async fn hook(
    request: hyper::Request<Incoming>,
    versions: Versions,
    events: mpsc::Sender<GenericEvent<ConfigMap>>,
) -> hyper::Response<Full<Bytes>> {
    let reply = |status: StatusCode, text: &str| {
        let mut response = hyper::Response::new(Full::new(Bytes::from(text.to_string())));
        *response.status_mut() = status;
        response
    };
    if request.method() != Method::POST || request.uri().path() != "/hook" {
        return reply(StatusCode::NOT_FOUND, "POST /hook only\n");
    }
    let Ok(body) = request.into_body().collect().await else {
        return reply(StatusCode::BAD_REQUEST, "unreadable body\n");
    };
    let parsed: Result<HashMap<String, String>, _> = serde_json::from_slice(&body.to_bytes());
    let (Some(name), Some(version)) = parsed.map_or((None, None), |mut m| {
        (m.remove("name"), m.remove("version"))
    }) else {
        return reply(
            StatusCode::BAD_REQUEST,
            "want {\"name\": .., \"version\": ..}\n",
        );
    };
    if let Ok(mut versions) = versions.lock() {
        versions.insert(name.clone(), version);
    }
    // The event only has to name the object: the handler turns it into a key.
    let mut stub = ConfigMap::default();
    stub.metadata.namespace = Some("default".into());
    stub.metadata.name = Some(name);
    match events
        .send(GenericEvent {
            object: Arc::new(stub),
        })
        .await
    {
        Ok(()) => reply(StatusCode::ACCEPTED, "queued\n"),
        Err(_) => reply(StatusCode::SERVICE_UNAVAILABLE, "controller stopped\n"),
    }
}

/// Serves the webhook on a free local port; answers its address.
async fn serve_webhook(
    versions: Versions,
    events: mpsc::Sender<GenericEvent<ConfigMap>>,
) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (versions, events) = (versions.clone(), events.clone());
            let service = hyper::service::service_fn(move |request| {
                let (versions, events) = (versions.clone(), events.clone());
                async move { Ok::<_, std::convert::Infallible>(hook(request, versions, events).await) }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service),
            );
        }
    });
    Ok(addr)
}

/// What the outside system does: an HTTP POST (plain HTTP/1.1 over a socket, to stay short).
async fn post(addr: SocketAddr, body: &str) -> std::io::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let request = format!(
        "POST /hook HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    Ok(response.lines().next().unwrap_or_default().to_string())
}

/// The reconciler: make the app's ConfigMap carry the version the outside system announced.
async fn reconcile(
    req: Request,
    client: Client,
    versions: Versions,
) -> Result<Action, ReconcileError> {
    let version = versions.lock().ok().and_then(|v| v.get(&req.name).cloned());
    let Some(version) = version else {
        return Ok(Action::done());
    };
    // Server-side apply: create or update in one call, owning only the field we set.
    let body = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": req.name, "namespace": req.namespace },
        "data": { "version": version },
    });
    let params = PatchParams::apply("channel-webhook-example");
    client
        .objects::<ConfigMap>()
        .patch(&req, &Patch::Apply(body), &params)
        .await
        .map_err(|e: client::Error| ReconcileError::new(e))?;
    println!("reconcile {req}: version {version}");
    Ok(Action::done())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (kube, server) = common::cluster().await?;
    let mgr = Manager::new(
        kube.clone(),
        ManagerOptions::default().with_metrics_bind_address(BindAddress::Disabled),
    )?;

    // 1. The channel, its sending half for the webhook, and the webhook server.
    let (events, channel) = source::channel::<ConfigMap>(64);
    let versions = Versions::default();
    let addr = serve_webhook(versions.clone(), events).await?;
    println!("webhook listening on http://{addr}/hook");

    // 2. A controller whose only watch is the channel (so it must be named).
    let (client, seen) = (mgr.client().clone(), versions.clone());
    ControllerBuilder::new(&mgr)
        .named("webhook-sync")
        .watches(Input::new().with_source(channel), EnqueueRequestForObject)
        .complete_reconciler(reconcile::from_fn(move |req: Request, _ctx| {
            reconcile(req, client.clone(), seen.clone())
        }))
        .await?;
    let stop = tokio_util::sync::CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });

    // 3. The outside system calls: two apps, then a new version of the first.
    for body in [
        r#"{"name": "app-a", "version": "v1"}"#,
        r#"{"name": "app-b", "version": "v1"}"#,
        r#"{"name": "app-a", "version": "v2"}"#,
        r#"{"version": "v3"}"#,
    ] {
        println!("POST /hook {body} -> {}", post(addr, body).await?);
    }

    // 4. Check what the controller did, then stop.
    let api: Api<ConfigMap> = Api::namespaced(kube, "default");
    let want = BTreeMap::from([("app-a", "v2"), ("app-b", "v1")]);
    common::wait_until(
        "both ConfigMaps up to date",
        Duration::from_secs(20),
        || async {
            let mut ok = true;
            for (name, version) in &want {
                let cm = api.get_opt(name).await.ok().flatten();
                let got = cm.and_then(|cm| cm.data?.get("version").cloned());
                ok &= got.as_deref() == Some(*version);
            }
            ok
        },
    )
    .await?;
    println!("app-a carries v2, app-b v1");
    stop.cancel();
    running.await??;
    if let Some(server) = server {
        server.stop().await;
    }
    Ok(())
}
