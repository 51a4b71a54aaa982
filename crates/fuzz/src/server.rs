//! An in-process API server for the targets that go through HTTP: the handler of
//! `crt-apiserver` called directly (no socket, TLS or client), as its benchmark calls it.
//!
//! One server per thread, built on first use with a few objects to read and patch. The targets
//! only read (`GET`) or write with `dryRun=All`, so the server's state stays what it was built
//! with however many inputs run.

use std::sync::Arc;

use bytes::Bytes;
use crt_apiserver::Faults;
use crt_apiserver::auth::authn::Authenticator;
use crt_apiserver::auth::authz::Authorizer;
use crt_apiserver::http::{AppState, handle};
use crt_apiserver::storage::{Storage, StorageConfig};
use futures::FutureExt;
use http_body_util::{BodyExt, Full};

/// The bearer token of the server's `system:masters` user.
const TOKEN: &str = "fuzz";

/// The objects every server holds, created at start (`default` namespace).
const SEED: &[(&str, &str)] = &[
    (
        "/api/v1/namespaces/default/pods",
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"app":"a","tier":"web"}},
            "spec":{"nodeName":"n1","containers":[{"name":"app","image":"nginx:1","ports":[{"containerPort":80}],
            "env":[{"name":"A","value":"1"}]},{"name":"log","image":"busybox"}]}}"#,
    ),
    (
        "/apis/apps/v1/namespaces/default/deployments",
        r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","labels":{"app":"a"}},
            "spec":{"replicas":2,"selector":{"matchLabels":{"app":"a"}},"template":{"metadata":{"labels":{"app":"a"}},
            "spec":{"containers":[{"name":"app","image":"nginx:1"}]}}}}"#,
    ),
    (
        "/api/v1/namespaces/default/configmaps",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":{"app":"b"}},"data":{"k":"v"}}"#,
    ),
    (
        "/api/v1/namespaces/default/events",
        r#"{"apiVersion":"v1","kind":"Event","metadata":{"name":"e"},"reason":"Started","type":"Normal",
            "involvedObject":{"kind":"Pod","name":"p","namespace":"default"},"source":{"component":"kubelet"}}"#,
    ),
];

/// The paths of the seeded objects a write target addresses (index by an input byte).
pub const OBJECTS: &[&str] = &[
    "/api/v1/namespaces/default/pods/p",
    "/apis/apps/v1/namespaces/default/deployments/d",
    "/api/v1/namespaces/default/configmaps/c",
];

/// A response as a target sees it.
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The body received without waiting (a watch's stream stays open: what it sent so far).
    pub body: Vec<u8>,
}

fn new_state() -> Arc<AppState> {
    let storage = Storage::new(StorageConfig::default());
    let state = Arc::new(AppState {
        faults: Faults::new(storage.clone()),
        authn: Authenticator::new(TOKEN.into()),
        authz: Authorizer::new(storage.clone()),
        storage,
        max_body_bytes: 3 << 20,
        server_address: "127.0.0.1:0".into(),
        apf: Default::default(),
    });
    for (path, body) in SEED {
        let answer = send_to(&state, "POST", path, &[], body.as_bytes().to_vec());
        assert_eq!(
            answer.status,
            201,
            "seeding {path}: {}",
            String::from_utf8_lossy(&answer.body)
        );
    }
    state
}

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    static STATE: Arc<AppState> = new_state();
}

/// Sends one request (`uri` as given: path and query) with the server's bearer token and the
/// `headers`, and answers its status and what its body holds without waiting. `None` when
/// `uri` or a header is not something an HTTP client could send at all.
pub fn send(method: &str, uri: &[u8], headers: &[(&str, &[u8])], body: Vec<u8>) -> Option<Answer> {
    let uri = http::Uri::try_from(uri).ok()?;
    let mut req = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("authorization", format!("Bearer {TOKEN}"));
    for (name, value) in headers {
        let value = http::HeaderValue::from_bytes(value).ok()?;
        req = req.header(*name, value);
    }
    let req = req.body(Full::new(Bytes::from(body))).ok()?;
    STATE.with(|state| Some(run(state, req)))
}

fn send_to(
    state: &Arc<AppState>,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Answer {
    let mut req = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/json");
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let req = req
        .body(Full::new(Bytes::from(body)))
        .expect("a valid request");
    run(state, req)
}

fn run(state: &Arc<AppState>, req: http::Request<Full<Bytes>>) -> Answer {
    RUNTIME.with(|rt| {
        rt.block_on(async {
            let resp = handle(state.clone(), req).await;
            let status = resp.status().as_u16();
            let mut body = Vec::new();
            let mut stream = resp.into_body();
            // A watch never ends: take the frames that are ready (letting the tasks that
            // produce them run a few turns), then drop the stream.
            let mut idle = 0;
            while idle < 4 {
                match stream.frame().now_or_never() {
                    None => {
                        idle += 1;
                        tokio::task::yield_now().await;
                    }
                    Some(Some(Ok(frame))) => {
                        idle = 0;
                        if let Ok(data) = frame.into_data() {
                            body.extend_from_slice(&data);
                        }
                    }
                    Some(Some(Err(_)) | None) => break,
                }
            }
            Answer { status, body }
        })
    })
}

/// Percent-encodes `s` for a query value.
pub fn encode_query_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
