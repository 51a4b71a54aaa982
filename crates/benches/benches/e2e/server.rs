//! The server role: the embedded API server in its own process, seeded directly through its
//! `Storage` (fast: no HTTP), and the writer of the churn, also through its `Storage`, so that
//! writing costs neither the driver nor the contenders anything.
//!
//! Namespace `bench` holds N ConfigMaps `cm-NNNNNN` of about 1.5 KB of JSON each, with a
//! managedFields entry as a real API server records it. Namespace `owners` holds P parents
//! `p-NNNNNN` (label `role=parent`) with 10 children each, `p-NNNNNN-cK` (label `role=child`,
//! an ownerReference to the parent with `controller: true`).
//!
//! Before its kubeconfig it prints `FLOOR secs`: the CPU one thread takes to decode every
//! `bench` object's JSON once into a `ConfigMap` (the cold start's floor: what any cache that
//! hands typed objects to a reconciler must spend at least).
//!
//! Commands on stdin, one a line; answers on stdout:
//! - `churn bench U RATE`: U merge patches spread over the N objects (update j changes
//!   `cm-(j*7919 mod N)`), RATE a second (0: as fast as the server takes them), each writing
//!   its epoch-nanosecond stamp in the annotation `e2e/w`. Answers `FINAL secs rv0 rv1 ...`:
//!   the write time and every object's resourceVersion after the last write.
//! - `churn owners U RATE`: the same on children `c0`/`c1` of the parents; answers `FINAL
//!   secs s0 s1 ...`: per parent, the last stamp written to one of its children (0: none).
//! - `stop` (or end of input): stop.

use std::io::BufRead;
use std::time::{Duration, Instant};

use crt_apiserver::resource::ResourceInfo;
use crt_apiserver::storage::{PatchType, Storage, WriteOptions};
use serde_json::{Value, json};

use super::procfs::{epoch_nanos, thread_cpu_seconds};

/// Children per parent in namespace `owners`.
pub const CHILDREN: usize = 10;

/// Runs the server role until `stop`.
pub fn run(n: usize, parents: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async {
        let server = crt_apiserver::Server::start(Default::default())
            .await
            .expect("embedded API server");
        let storage = server.storage().clone();
        let configmaps = storage.resolve("", "v1", "configmaps").expect("configmaps");
        let (rvs, encoded) = seed_bench(&storage, &configmaps, n);
        seed_owners(&storage, &configmaps, parents);
        println!("FLOOR {}", floor(encoded));
        let mut state = State {
            storage,
            configmaps,
            rvs,
            stamps: vec![0; parents],
        };
        print!("{}", server.kubeconfig());
        println!("READY");
        let mut lines = std::io::stdin().lock().lines();
        while let Some(Ok(line)) = lines.next() {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["churn", target, u, rate] => {
                    let (u, rate) = (u.parse().unwrap_or(0), rate.parse().unwrap_or(0.0));
                    let answer = state.churn(target == &"owners", u, rate).await;
                    println!("{answer}");
                }
                _ => break,
            }
        }
        server.stop().await;
    });
}

struct State {
    storage: Storage,
    configmaps: ResourceInfo,
    /// Every `bench` object's resourceVersion, as the last write left it.
    rvs: Vec<u64>,
    /// Per parent, the last stamp written to one of its children.
    stamps: Vec<u64>,
}

impl State {
    async fn churn(&mut self, owners: bool, updates: usize, rate: f64) -> String {
        let objects = if owners {
            self.stamps.len()
        } else {
            self.rvs.len()
        };
        let start = Instant::now();
        let updates = if objects == 0 { 0 } else { updates };
        for j in 0..updates {
            if rate > 0.0 {
                let due = start + Duration::from_secs_f64(j as f64 / rate);
                if due > Instant::now() + Duration::from_millis(1) {
                    tokio::time::sleep_until(due.into()).await;
                }
            }
            let i = (j * 7919) % objects;
            let stamp = epoch_nanos();
            let patch = json!({"metadata": {"annotations": {"e2e/w": stamp.to_string()}}});
            let (ns, name) = if owners {
                ("owners", format!("p-{i:06}-c{}", j % 2))
            } else {
                ("bench", format!("cm-{i:06}"))
            };
            let written = self
                .storage
                .patch(
                    &self.configmaps,
                    Some(ns),
                    &name,
                    None,
                    PatchType::Merge,
                    patch.to_string().as_bytes(),
                    &WriteOptions::default(),
                )
                .expect("churn patch");
            if owners {
                self.stamps[i] = stamp;
            } else {
                self.rvs[i] = resource_version(&written);
            }
        }
        let secs = start.elapsed().as_secs_f64();
        let values = if owners { &self.stamps } else { &self.rvs };
        let mut answer = format!("FINAL {secs}");
        for v in values {
            answer.push(' ');
            answer.push_str(&v.to_string());
        }
        answer
    }
}

fn resource_version(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

fn create_namespace(storage: &Storage, name: &str) {
    let namespaces = storage.resolve("", "v1", "namespaces").expect("namespaces");
    storage
        .create(
            &namespaces,
            None,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
            &WriteOptions::default(),
        )
        .expect("namespace");
}

/// The `bench` namespace's N ConfigMaps; their resourceVersions.
/// Seeds namespace `bench`; answers the objects' resourceVersions and JSON encodings.
fn seed_bench(storage: &Storage, configmaps: &ResourceInfo, n: usize) -> (Vec<u64>, Vec<Vec<u8>>) {
    create_namespace(storage, "bench");
    (0..n)
        .map(|i| {
            let mut cm = configmap(&format!("cm-{i:06}"), "bench", i, "bench");
            cm["metadata"]["managedFields"] = managed_fields_entry(&cm);
            let created = storage
                .create_shared(configmaps, Some("bench"), cm, &WriteOptions::default())
                .expect("seed");
            let json = serde_json::to_vec(&*created).expect("encode");
            (resource_version(&created), json)
        })
        .unzip()
}

/// The CPU seconds this thread takes to decode each of `encoded` once into a `ConfigMap`
/// (each dropped before the next, as a no-op reconcile drops its object), the least of three
/// passes (a floor: what the decoding itself costs, without what else the machine did); wall
/// seconds where the kernel has no schedstat.
fn floor(encoded: Vec<Vec<u8>>) -> f64 {
    use k8s_openapi::api::core::v1::ConfigMap;
    let pass = || {
        let (cpu, wall) = (thread_cpu_seconds(), Instant::now());
        for json in &encoded {
            let cm: ConfigMap = serde_json::from_slice(json).expect("a ConfigMap");
            std::hint::black_box(cm);
        }
        match (cpu, thread_cpu_seconds()) {
            (Some(before), Some(after)) => after - before,
            _ => wall.elapsed().as_secs_f64(),
        }
    };
    (0..3).map(|_| pass()).fold(f64::INFINITY, f64::min)
}

/// The `owners` namespace's parents and children.
fn seed_owners(storage: &Storage, configmaps: &ResourceInfo, parents: usize) {
    create_namespace(storage, "owners");
    for p in 0..parents {
        let name = format!("p-{p:06}");
        let parent = storage
            .create_shared(
                configmaps,
                Some("owners"),
                configmap(&name, "owners", p, "parent"),
                &WriteOptions::default(),
            )
            .expect("parent");
        let uid = parent["metadata"]["uid"].clone();
        for c in 0..CHILDREN {
            let mut child = configmap(&format!("{name}-c{c}"), "owners", p, "child");
            child["metadata"]["ownerReferences"] = json!([{
                "apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid,
                "controller": true, "blockOwnerDeletion": true,
            }]);
            storage
                .create_shared(configmaps, Some("owners"), child, &WriteOptions::default())
                .expect("child");
        }
    }
}

/// A ConfigMap of about 1.1 KB of JSON (1.5 KB with its managedFields entry).
fn configmap(name: &str, namespace: &str, i: usize, role: &str) -> Value {
    let data: serde_json::Map<String, Value> = (0..8)
        .map(|k| {
            (
                format!("key-{k}"),
                Value::String(format!("{i:08}-{}", "v".repeat(90))),
            )
        })
        .collect();
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"app": "bench", "role": role, "shard": format!("{}", i % 16)},
                     "annotations": {"bench.example.com/owner": "e2e-benchmark"}},
        "data": data,
    })
}

/// The managedFields a real API server records for `cm` created by `kubectl create`: one entry
/// naming every field set, in the `FieldsV1` format (as `benches/cache_sync.rs` seeds them).
fn managed_fields_entry(cm: &Value) -> Value {
    let set = |map: &Value| -> Value {
        let mut fields: serde_json::Map<String, Value> = map
            .as_object()
            .map(|m| m.keys().map(|k| (format!("f:{k}"), json!({}))).collect())
            .unwrap_or_default();
        fields.insert(".".into(), json!({}));
        fields.into()
    };
    json!([{
        "manager": "kubectl-create",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-11-22T04:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:data": set(&cm["data"]),
            "f:metadata": {"f:annotations": set(&cm["metadata"]["annotations"]),
                           "f:labels": set(&cm["metadata"]["labels"])}
        }
    }])
}
