//! A server with a data directory (`Config::data_dir`), restarted on it: the same objects, CRDs
//! and custom resources with their resourceVersions and uids; no bootstrap object created
//! twice; the `kubernetes` endpoints at the new address; the old kubeconfig and ServiceAccount
//! tokens still accepted; a watch from before the restart told to relist. And (ignored, run by
//! hand) the write cost with and without it.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crt_apiserver::{Config, Server};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Service};
use kube_client::Client;
use kube_client::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams, WatchEvent,
    WatchParams,
};
use serde_json::json;

use crate::common::client;

async fn start(dir: &Path) -> Server {
    Server::start(Config {
        data_dir: Some(dir.to_path_buf()),
        ..Config::default()
    })
    .await
    .expect("the server starts on its data directory")
}

fn gadgets() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Gadget"),
        "gadgets",
    )
}

/// Every object of `plural` (any group, v1 or the given version) by namespace/name: its
/// resourceVersion, uid, creationTimestamp and generation.
async fn objects(client: &Client, ar: &ApiResource) -> BTreeMap<String, String> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), ar);
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|o| {
            let m = &o.metadata;
            (
                format!(
                    "{}/{}",
                    m.namespace.clone().unwrap_or_default(),
                    m.name.clone().unwrap()
                ),
                format!(
                    "rv={} uid={} created={:?} generation={:?}",
                    m.resource_version.clone().unwrap(),
                    m.uid.clone().unwrap(),
                    m.creation_timestamp,
                    m.generation
                ),
            )
        })
        .collect()
}

fn builtin(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

#[tokio::test]
async fn a_restarted_server_serves_what_it_had_and_bootstraps_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let kinds = [
        builtin("", "v1", "Namespace", "namespaces"),
        builtin("", "v1", "ConfigMap", "configmaps"),
        builtin("", "v1", "Service", "services"),
        builtin("apps", "v1", "Deployment", "deployments"),
        builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
        ),
        builtin(
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "FlowSchema",
            "flowschemas",
        ),
        builtin("networking.k8s.io", "v1", "ServiceCIDR", "servicecidrs"),
        builtin(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
        ),
        gadgets(),
    ];
    let (before, old_rv, kubeconfig, old_port, sa_token) = {
        let server = start(dir.path()).await;
        let client = client(&server).await;
        let crds: Api<DynamicObject> = Api::all_with(client.clone(), &kinds[7]);
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.example.com"},
            "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"plural": "gadgets", "kind": "Gadget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}}],
            },
        });
        crds.create(
            &PostParams::default(),
            &serde_json::from_value(crd).unwrap(),
        )
        .await
        .unwrap();
        let gadgets: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), "default", &gadgets());
        for name in ["g1", "g2"] {
            let obj = json!({"apiVersion": "example.com/v1", "kind": "Gadget",
                "metadata": {"name": name}, "spec": {"size": 3}});
            gadgets
                .create(
                    &PostParams::default(),
                    &serde_json::from_value(obj).unwrap(),
                )
                .await
                .unwrap();
        }
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let cm =
            serde_json::from_value(json!({"metadata": {"name": "c"}, "data": {"k": "v"}})).unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
        let mut before = Vec::new();
        for ar in &kinds {
            before.push(objects(&client, ar).await);
        }
        let rv = cms
            .list(&ListParams::default())
            .await
            .unwrap()
            .metadata
            .resource_version
            .unwrap();
        let sa_token = server
            .service_account_token("default", "default", Duration::from_secs(3600))
            .unwrap();
        let kubeconfig = server.admin_certificate_kubeconfig().unwrap();
        let port = server.port();
        server.stop().await;
        (before, rv, kubeconfig, port, sa_token)
    };

    let server = start(dir.path()).await;
    // The kubeconfig of the first start (its CA, its client certificate) works with the second,
    // at its new port.
    let client = crate::common::client_from_kubeconfig(&kubeconfig.replace(
        &format!("127.0.0.1:{old_port}"),
        &format!("127.0.0.1:{}", server.port()),
    ))
    .await;
    for (ar, before) in kinds.iter().zip(&before) {
        let after = objects(&client, ar).await;
        if ar.kind == "Service" {
            // The kubernetes Service's target port follows the server's port: only the
            // resourceVersion moved.
            assert_eq!(
                after.keys().collect::<Vec<_>>(),
                before.keys().collect::<Vec<_>>()
            );
            let uid = |m: &BTreeMap<String, String>| {
                m["default/kubernetes"]
                    .split(' ')
                    .nth(1)
                    .unwrap()
                    .to_string()
            };
            assert_eq!(uid(&after), uid(before));
            continue;
        }
        assert_eq!(&after, before, "{} after the restart", ar.plural);
    }
    let eps: Api<Endpoints> = Api::namespaced(client.clone(), "default");
    let ep = eps.get("kubernetes").await.unwrap();
    let port = ep.subsets.unwrap()[0].ports.as_ref().unwrap()[0].port;
    assert_eq!(
        port,
        i32::from(server.port()),
        "the endpoints name the new port"
    );
    let svcs: Api<Service> = Api::namespaced(client.clone(), "default");
    let svc = svcs.get("kubernetes").await.unwrap();
    assert_eq!(
        svc.spec.unwrap().ports.unwrap()[0].target_port,
        Some(
            k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(i32::from(
                server.port()
            ))
        )
    );

    // So does a ServiceAccount token minted before: authenticated (403 without a role, not 401).
    let sa = crate::common::client_from_kubeconfig(&server.kubeconfig_for_token(&sa_token)).await;
    let err = Api::<ConfigMap>::namespaced(sa, "default")
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert_eq!(crate::common::code(&err), 403, "{err}");

    // A watch resumed from before the restart is told to relist, as after a compaction.
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut stream = cms
        .watch(&WatchParams::default(), &old_rv)
        .await
        .unwrap()
        .boxed();
    match stream.next().await {
        Some(Ok(WatchEvent::Error(e))) => {
            assert_eq!(e.code, 410);
            assert!(
                e.message.starts_with("too old resource version"),
                "{}",
                e.message
            );
        }
        other => panic!("expected 410 Gone, got {other:?}"),
    }
    // New objects continue above every restored resourceVersion.
    let cm = serde_json::from_value(json!({"metadata": {"name": "d"}})).unwrap();
    let d = cms.create(&PostParams::default(), &cm).await.unwrap();
    let rv: u64 = d.metadata.resource_version.unwrap().parse().unwrap();
    assert!(rv > old_rv.parse::<u64>().unwrap());
}

/// 8 clients each create `n` ConfigMaps one after the other: creates per second and the
/// latencies' median and 99th percentile.
async fn write_cost(server: &Server, n: usize) -> (f64, Duration, Duration) {
    let mut apis = Vec::new();
    for _ in 0..8 {
        let api: Api<ConfigMap> = Api::namespaced(client(server).await, "default");
        api.list(&ListParams::default().limit(1)).await.unwrap();
        apis.push(api);
    }
    let start = Instant::now();
    let tasks: Vec<_> = apis
        .into_iter()
        .enumerate()
        .map(|(c, api)| {
            tokio::spawn(async move {
                let mut took = Vec::with_capacity(n);
                for i in 0..n {
                    let cm = serde_json::from_value(json!({
                        "metadata": {"name": format!("c{c}-{i}"), "labels": {"app": "bench"}},
                        "data": {"key": "value"},
                    }))
                    .unwrap();
                    let t = Instant::now();
                    api.create(&PostParams::default(), &cm).await.unwrap();
                    took.push(t.elapsed());
                }
                took
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let elapsed = start.elapsed();
    all.sort();
    let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)];
    (
        all.len() as f64 / elapsed.as_secs_f64(),
        pct(0.5),
        pct(0.99),
    )
}

/// The write cost of a data directory: run with
/// `cargo test -p crt-apiserver --test kube_client -- --ignored --nocapture write_cost`
/// (`CRT_DURABLE_BENCH_DIR` names where the data directory goes; default: a temporary one).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a benchmark: prints figures, asserts nothing about speed"]
async fn write_cost_with_and_without_a_data_dir() {
    const N: usize = 500;
    let memory = Server::start(Config::default()).await.unwrap();
    let (ops, p50, p99) = write_cost(&memory, N).await;
    println!(
        "in memory: {ops:.0} creates/s, p50 {:.2} ms, p99 {:.2} ms (8 clients x {N})",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
    memory.stop().await;
    let base = std::env::var_os("CRT_DURABLE_BENCH_DIR").map(std::path::PathBuf::from);
    let dir = match &base {
        Some(b) => tempfile::tempdir_in(b).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let durable = start(dir.path()).await;
    let (ops, p50, p99) = write_cost(&durable, N).await;
    println!(
        "--data-dir {}: {ops:.0} creates/s, p50 {:.2} ms, p99 {:.2} ms (8 clients x {N})",
        dir.path().display(),
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
    durable.stop().await;
}
