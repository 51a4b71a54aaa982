//! controller-runtime's observability parity against the embedded API server: a running
//! manager's `/metrics` shows client-go's `rest_client_*`, the `process_*` families and the
//! cache's `controller_runtime_cache_resources`, `_objects` and `_bytes` gauges; the cache's typed and JSON transforms
//! and per-type sync period.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use controller_runtime::ObjectKey;
use controller_runtime::Request;
use controller_runtime::cache::{ByObject, Cache, CacheOptions, ResourceEventHandler};
use controller_runtime::controller::{Controller, ControllerOptions};
use controller_runtime::handler::EnqueueRequestForObject;
use controller_runtime::manager::{Manager, ManagerOptions};
use controller_runtime::reconcile::{self, Action};
use controller_runtime::source::Kind;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube_client::api::{Api, DeleteParams, ListParams, PostParams};
use kube_client::core::ObjectMeta;
use parking_lot::Mutex;
use support::server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

fn cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some([("key".to_string(), "value".to_string())].into()),
        ..Default::default()
    }
}

async fn create_cm(client: &kube_client::Client, name: &str) {
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cm(name))
        .await
        .unwrap();
}

/// Waits (at most 20 s, polling) until `cond` holds; panics with `what` otherwise.
async fn eventually(what: &str, mut cond: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !cond().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A plain HTTP/1.1 GET of `/metrics`: the body.
async fn scrape(addr: std::net::SocketAddr) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = "GET /metrics HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n";
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a full response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_string()
}

/// The sum of the samples of `name` whose labels contain every one of `labels` (`k="v"`);
/// `None` when there is none.
fn sample(body: &str, name: &str, labels: &[&str]) -> Option<f64> {
    let values: Vec<f64> = body
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (metric, rest) = match series.split_once('{') {
                Some((metric, rest)) => (metric, rest),
                None => (series, ""),
            };
            (metric == name && labels.iter().all(|want| rest.contains(want)))
                .then(|| value.parse().ok())?
        })
        .collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

const CONFIGMAPS: &[&str] = &[r#"group="""#, r#"version="v1""#, r#"kind="ConfigMap""#];

async fn configmaps_in_api(client: &kube_client::Client) -> f64 {
    Api::<ConfigMap>::all(client.clone())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .len() as f64
}

#[tokio::test]
async fn metrics_show_rest_client_process_and_cache_families() {
    let (_server, client) = server().await;
    for name in ["parity-0", "parity-1", "parity-2"] {
        create_cm(&client, name).await;
    }
    let options =
        ManagerOptions::default().with_metrics_bind_address("127.0.0.1:0".parse().unwrap());
    let mgr = Manager::new(client.clone(), options).unwrap();
    let reconciled = Arc::new(AtomicUsize::new(0));
    let reconciler = reconcile::from_fn({
        let reconciled = reconciled.clone();
        move |_req: Request, _ctx| {
            let reconciled = reconciled.clone();
            async move {
                reconciled.fetch_add(1, Ordering::SeqCst);
                Ok(Action::done())
            }
        }
    });
    let controller = Controller::new(
        "configmaps",
        reconciler,
        ControllerOptions::default().with_metrics(mgr.metrics().clone()),
    )
    .unwrap();
    controller
        .watch(
            Kind::<ConfigMap>::new(mgr.cache().clone()),
            EnqueueRequestForObject,
            vec![],
        )
        .await
        .unwrap();
    mgr.add(controller).unwrap();
    let ctx = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, ctx) = (mgr.clone(), ctx.clone());
        async move { mgr.start(ctx).await }
    });
    eventually("a reconcile", async || {
        reconciled.load(Ordering::SeqCst) > 0
    })
    .await;
    let addr = mgr.metrics_addr().expect("bound once started");

    // The cache holds every ConfigMap the API server lists.
    let expected = configmaps_in_api(&client).await;
    assert!(expected >= 3.0);
    eventually("the gauge counts every ConfigMap", async || {
        sample(
            &scrape(addr).await,
            "controller_runtime_cache_resources",
            CONFIGMAPS,
        ) == Some(expected)
    })
    .await;
    // Its objects and bytes, per kind: the default compact store holds each object's JSON
    // (a few hundred bytes for these) and metadata.
    let body = scrape(addr).await;
    assert_eq!(
        sample(&body, "controller_runtime_cache_objects", CONFIGMAPS),
        Some(expected)
    );
    let bytes_before = sample(&body, "controller_runtime_cache_bytes", CONFIGMAPS).unwrap();
    assert!(bytes_before >= expected * 200.0, "{bytes_before} bytes");

    let body = scrape(addr).await;
    // The lists and watches of the cache went through the manager's client.
    let gets = sample(
        &body,
        "rest_client_requests_total",
        &[r#"code="200""#, r#"method="GET""#],
    );
    assert!(gets.is_some_and(|n| n > 0.0), "{body}");
    let timed = sample(
        &body,
        "rest_client_request_duration_seconds_count",
        &[r#"verb="GET""#],
    );
    assert!(timed.is_some_and(|n| n > 0.0), "{body}");
    assert!(body.contains("# TYPE rest_client_request_duration_seconds histogram"));

    // The process, as Prometheus' process collector shows it.
    let process = |name| sample(&body, name, &[]).unwrap_or_else(|| panic!("no {name}"));
    let resident = process("process_resident_memory_bytes");
    assert!(resident > 0.0);
    assert!(process("process_virtual_memory_bytes") >= resident);
    let open = process("process_open_fds");
    assert!(open > 0.0);
    assert!(process("process_max_fds") >= open);
    assert!(process("process_cpu_seconds_total") >= 0.0);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let started = process("process_start_time_seconds");
    assert!(
        started <= now + 1.0 && now - started < 3600.0,
        "started {started}, now {now}"
    );

    // One more ConfigMap: +1; one deleted: -1.
    create_cm(&client, "parity-3").await;
    eventually("the gauge counts the new ConfigMap", async || {
        sample(
            &scrape(addr).await,
            "controller_runtime_cache_resources",
            CONFIGMAPS,
        ) == Some(expected + 1.0)
    })
    .await;
    let bytes_grown = sample(
        &scrape(addr).await,
        "controller_runtime_cache_bytes",
        CONFIGMAPS,
    )
    .unwrap();
    assert!(
        bytes_grown > bytes_before + 200.0,
        "{bytes_before} -> {bytes_grown}"
    );
    // Deleted through the manager's client, whose requests are counted.
    Api::<ConfigMap>::namespaced(mgr.client().kube_client().clone(), "default")
        .delete("parity-0", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the gauge forgets the deleted ConfigMap", async || {
        sample(
            &scrape(addr).await,
            "controller_runtime_cache_resources",
            CONFIGMAPS,
        ) == Some(expected)
    })
    .await;
    let body = scrape(addr).await;
    assert_eq!(
        sample(&body, "controller_runtime_cache_objects", CONFIGMAPS),
        Some(expected)
    );
    let bytes_after = sample(&body, "controller_runtime_cache_bytes", CONFIGMAPS).unwrap();
    assert!(bytes_after < bytes_grown, "{bytes_grown} -> {bytes_after}");
    // Writes are counted with their method.
    let body = scrape(addr).await;
    let deletes = sample(
        &body,
        "rest_client_requests_total",
        &[r#"code="200""#, r#"method="DELETE""#],
    );
    assert_eq!(deletes, Some(1.0), "{body}");

    ctx.cancel();
    running.await.unwrap().unwrap();
}

/// Counts what an informer's handlers are told.
#[derive(Default)]
struct Seen<K> {
    added: Mutex<Vec<Arc<K>>>,
    resyncs: AtomicUsize,
}

impl<K: Send + Sync> ResourceEventHandler<K> for Seen<K> {
    fn on_add(&self, obj: &Arc<K>, _is_in_initial_list: bool) {
        self.added.lock().push(obj.clone());
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if Arc::ptr_eq(old, new) {
            self.resyncs.fetch_add(1, Ordering::SeqCst);
        }
    }
    fn on_delete(&self, _obj: &Arc<K>, _delete_state_unknown: bool) {}
}

#[tokio::test]
async fn typed_transform_clears_what_the_cache_holds_and_handlers_see() {
    let (_server, client) = server().await;
    create_cm(&client, "with-data").await;
    let options = CacheOptions::default().by_object::<ConfigMap>(
        &(),
        ByObject::default().with_typed_transform(|cm: &mut ConfigMap| cm.data = None),
    );
    let cache = Cache::new(client.clone(), options);
    let informer = cache.get_informer::<ConfigMap>().await.unwrap();
    let seen = Arc::new(Seen::<ConfigMap>::default());
    informer.add_event_handler(seen.clone());
    let ctx = CancellationToken::new();
    cache.start(ctx.clone());
    assert!(cache.wait_for_cache_sync(&ctx).await);

    let key = ObjectKey::new("default", "with-data");
    let cached = cache.get::<ConfigMap>(&key).await.unwrap();
    assert_eq!(cached.data, None, "the cache holds the transformed object");
    let live = Api::<ConfigMap>::namespaced(client.clone(), "default")
        .get("with-data")
        .await
        .unwrap();
    assert_eq!(
        live.data.unwrap()["key"],
        "value",
        "the API's keeps its data"
    );
    let added = seen.added.lock().clone();
    assert!(
        added
            .iter()
            .any(|cm| cm.metadata.name.as_deref() == Some("with-data")),
        "the handler was told"
    );
    assert!(added.iter().all(|cm| cm.data.is_none()), "{added:?}");

    // Objects that come by watch are transformed too.
    create_cm(&client, "later").await;
    let key = ObjectKey::new("default", "later");
    eventually("the watch brings the new ConfigMap", async || {
        informer.store().get(&key).is_some()
    })
    .await;
    assert_eq!(informer.store().get(&key).unwrap().data, None);
    ctx.cancel();
    cache.stopped().await;
}

#[tokio::test]
async fn default_json_transform_applies_to_types_without_their_own() {
    let (_server, client) = server().await;
    create_cm(&client, "with-data").await;
    Api::<Secret>::namespaced(client.clone(), "default")
        .create(
            &PostParams::default(),
            &Secret {
                metadata: ObjectMeta {
                    name: Some("token".into()),
                    ..Default::default()
                },
                data: Some([("key".to_string(), ByteString(b"value".to_vec()))].into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    // Every type loses its `data`; Secrets instead get a label from their typed transform.
    let options = CacheOptions::default()
        .with_default_json_transform(Arc::new(|obj| {
            if let Some(obj) = obj.as_object_mut() {
                obj.remove("data");
            }
        }))
        .by_object::<Secret>(
            &(),
            ByObject::default().with_typed_transform(|secret: &mut Secret| {
                secret
                    .metadata
                    .labels
                    .get_or_insert_default()
                    .insert("transformed".into(), "typed".into());
            }),
        );
    let cache = Cache::new(client.clone(), options);
    let ctx = CancellationToken::new();
    cache.start(ctx.clone());
    let cm = cache
        .get::<ConfigMap>(&ObjectKey::new("default", "with-data"))
        .await
        .unwrap();
    assert_eq!(cm.data, None);
    assert_eq!(cm.metadata.name.as_deref(), Some("with-data"));
    let secret = cache
        .get::<Secret>(&ObjectKey::new("default", "token"))
        .await
        .unwrap();
    assert!(
        secret.data.is_some(),
        "the typed transform replaces the default"
    );
    assert_eq!(
        secret.metadata.labels.as_ref().unwrap()["transformed"],
        "typed"
    );
    ctx.cancel();
    cache.stopped().await;
}

#[tokio::test]
async fn sync_period_per_type_resyncs_only_that_type() {
    let (_server, client) = server().await;
    create_cm(&client, "resynced").await;
    Api::<Secret>::namespaced(client.clone(), "default")
        .create(
            &PostParams::default(),
            &Secret {
                metadata: ObjectMeta {
                    name: Some("quiet".into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();
    // No resync by default; ConfigMaps every 200 ms.
    let options = CacheOptions::default()
        .with_sync_period(None)
        .by_object::<ConfigMap>(
            &(),
            ByObject::default().with_sync_period(Duration::from_millis(200)),
        );
    let cache = Cache::new(client.clone(), options);
    let configmaps = Arc::new(Seen::<ConfigMap>::default());
    let secrets = Arc::new(Seen::<Secret>::default());
    (cache.get_informer::<ConfigMap>().await.unwrap()).add_event_handler(configmaps.clone());
    (cache.get_informer::<Secret>().await.unwrap()).add_event_handler(secrets.clone());
    let ctx = CancellationToken::new();
    cache.start(ctx.clone());
    assert!(cache.wait_for_cache_sync(&ctx).await);
    eventually("ConfigMaps resync twice", async || {
        configmaps.resyncs.load(Ordering::SeqCst) >= 2 * configmaps.added.lock().len()
    })
    .await;
    // Secrets have no resync period: in the time ConfigMaps resynced twice, none.
    assert!(!secrets.added.lock().is_empty());
    assert_eq!(secrets.resyncs.load(Ordering::SeqCst), 0);
    ctx.cancel();
    cache.stopped().await;
}
