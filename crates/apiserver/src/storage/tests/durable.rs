//! Durable stores (`Storage::open`): what is written comes back after a restart, exactly; a
//! torn last record is dropped; unreadable snapshots fall back or fail clearly; one store per
//! directory.

use std::path::{Path, PathBuf};

use super::crd::{crd_body, widget};
use super::*;

fn open(dir: &Path) -> Storage {
    Storage::open(StorageConfig::default(), dir).expect("the data directory opens")
}

/// Every file of `dir` whose name starts with `prefix`, sorted.
fn files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    out.sort();
    out
}

/// Writes objects of several kinds: namespaces, ConfigMaps (one updated, one deleted), a
/// Deployment updated to generation 2, a CRD and two of its custom objects (one with status).
fn write_some(s: &Storage) {
    let nss = res(s, "", "namespaces");
    s.create(&nss, None, json!({"metadata": {"name": "team"}}), &w())
        .unwrap();
    create_cm(s, "a");
    create_cm(s, "gone");
    let cms = res(s, "", "configmaps");
    let managed = WriteOptions {
        field_manager: Some("tester".into()),
        ..w()
    };
    s.update(
        &cms,
        Some("default"),
        "a",
        None,
        cm("a", json!({"a": "2"})),
        &managed,
    )
    .unwrap();
    s.delete(&cms, Some("default"), "gone", &DeleteOptions::default())
        .unwrap();
    let deps = res(s, "apps", "deployments");
    s.create(&deps, Some("team"), deployment("web", 1), &managed)
        .unwrap();
    s.update(
        &deps,
        Some("team"),
        "web",
        None,
        deployment("web", 3),
        &managed,
    )
    .unwrap();
    let crds = res(s, "apiextensions.k8s.io", "customresourcedefinitions");
    s.create(&crds, None, crd_body(), &w()).unwrap();
    let widgets = s.resolve("example.com", "v1", "widgets").unwrap();
    for name in ["w1", "w2"] {
        s.create(&widgets, Some("default"), widget(name), &managed)
            .unwrap();
    }
    let mut w1 = s.get(&widgets, Some("default"), "w1", None).unwrap();
    w1["status"] = json!({"replicas": 1});
    s.update(&widgets, Some("default"), "w1", Some("status"), w1, &w())
        .unwrap();
}

#[test]
fn a_restarted_store_has_every_object_exactly_and_continues_above() {
    let dir = tempfile::tempdir().unwrap();
    let (rv, before) = {
        let s = open(dir.path());
        write_some(&s);
        s.dump()
    };
    let s = open(dir.path());
    let (rv_after, after) = s.dump();
    assert_eq!(after, before, "objects, resourceVersions, uids, timestamps");
    assert!(rv_after > rv, "{rv_after} continues above {rv}");
    let deps = res(&s, "apps", "deployments");
    let web = s.get(&deps, Some("team"), "web", None).unwrap();
    assert_eq!(web["metadata"]["generation"], 2);
    assert_eq!(web["metadata"]["managedFields"][0]["manager"], "tester");
    // The CRD serves its resource again, with its schema and subresources.
    let widgets = s
        .resolve("example.com", "v1", "widgets")
        .expect("the CRD's resource is served after the restart");
    assert!(widgets.status_subresource);
    let w1 = s.get(&widgets, Some("default"), "w1", None).unwrap();
    assert_eq!(w1["status"]["replicas"], 1);
    let created = s
        .create(&widgets, Some("default"), widget("w3"), &w())
        .unwrap();
    assert!(rv_of(&created) > rv_after);
    // No system namespace was created twice.
    let nss = res(&s, "", "namespaces");
    let list = s.list(&nss, None, &ListOptions::default()).unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 5);
    // A watch from before the restart is told to relist.
    let cms = res(&s, "", "configmaps");
    let opts = WatchOptions {
        resource_version: Some(rv.to_string()),
        ..Default::default()
    };
    let mut watch = s.watch(&cms, None, &opts).unwrap();
    match watch.events.try_recv() {
        Ok(WatchEvent::Error(status)) => {
            assert_eq!(status["code"], 410, "{status}");
            assert!(
                status["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("too old resource version"),
                "{status}"
            );
        }
        other => panic!("expected 410 Gone, got {other:?}"),
    }
    // And a third start restores the writes of the second.
    let (rv2, second) = s.dump();
    drop(s);
    let s = open(dir.path());
    assert_eq!(s.dump().1, second);
    assert!(s.resource_version() > rv2);
}

#[test]
fn a_torn_last_record_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let s = open(dir.path());
        create_cm(&s, "kept");
        s.dump()
    };
    let seg = files(dir.path(), "wal-").pop().unwrap();
    {
        // A crash in the middle of appending a record: its length, checksum and half of it.
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&seg).unwrap();
        f.write_all(&200u32.to_le_bytes()).unwrap();
        f.write_all(&[1, 2, 3, 4]).unwrap();
        f.write_all(b"{\"rv\":99,\"r\":\"configmaps\"").unwrap();
    }
    let s = open(dir.path());
    assert_eq!(s.dump().1, before.1);
    // The tail is cut off: the next start reads a clean log.
    create_cm(&s, "after");
    drop(s);
    let s = open(dir.path());
    let cms = res(&s, "", "configmaps");
    assert!(s.get(&cms, Some("default"), "kept", None).is_ok());
    assert!(s.get(&cms, Some("default"), "after", None).is_ok());
}

#[test]
fn a_last_record_with_a_bad_checksum_is_dropped_and_the_rest_kept() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path());
        create_cm(&s, "first");
        create_cm(&s, "last");
    }
    let seg = files(dir.path(), "wal-").pop().unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    let n = bytes.len();
    bytes[n - 2] ^= 0xff;
    std::fs::write(&seg, bytes).unwrap();
    let s = open(dir.path());
    let cms = res(&s, "", "configmaps");
    assert!(s.get(&cms, Some("default"), "first", None).is_ok());
    assert_eq!(
        s.get(&cms, Some("default"), "last", None).unwrap_err().code,
        404
    );
}

#[test]
fn a_corrupt_record_before_the_end_of_the_log_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path());
        create_cm(&s, "a");
    }
    // A second segment (the restart's) follows the first.
    drop(open(dir.path()));
    let first = files(dir.path(), "wal-").remove(0);
    let mut bytes = std::fs::read(&first).unwrap();
    bytes[20] ^= 0xff;
    std::fs::write(&first, bytes).unwrap();
    let err = Storage::open(StorageConfig::default(), dir.path()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("unreadable record at byte"), "{msg}");
    assert!(msg.contains(&first.display().to_string()), "{msg}");
}

#[test]
fn snapshots_replace_old_segments_and_a_corrupt_one_falls_back() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let s = open(dir.path());
        for round in 0..3 {
            create_cm(&s, &format!("cm-{round}"));
            s.snapshot_now();
        }
        create_cm(&s, "after-snapshots");
        s.dump()
    };
    // Two snapshots are kept; the log before the older one is gone.
    let snaps = files(dir.path(), "snapshot-");
    assert_eq!(snaps.len(), 2, "{snaps:?}");
    let s = open(dir.path());
    assert_eq!(s.dump().1, before.1, "from the newest snapshot and the log");
    drop(s);
    // A torn newest snapshot: the older one and the log after it give the same state.
    let newest = snaps.last().unwrap();
    let len = std::fs::metadata(newest).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(newest)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let s = open(dir.path());
    assert_eq!(s.dump().1, before.1, "from the older snapshot and the log");
    drop(s);
    // Both unreadable, and the log no longer reaches back: a clear error, no panic.
    std::fs::write(&snaps[0], b"not a snapshot").unwrap();
    let err = Storage::open(StorageConfig::default(), dir.path()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("data directory "), "{msg}");
    assert!(msg.contains("unreadable snapshots"), "{msg}");
}

#[test]
fn one_store_at_a_time_uses_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    let err = Storage::open(StorageConfig::default(), dir.path()).unwrap_err();
    assert!(
        err.to_string().contains("in use by another server"),
        "{err}"
    );
    drop(s);
    drop(open(dir.path()));
}

#[tokio::test]
async fn a_durable_write_is_synced_before_synced_answers() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    assert!(s.is_durable());
    create_cm(&s, "a");
    s.synced().await.unwrap();
    // On disk now: a copy of the directory (as a crash would leave it) restores it.
    let copy = tempfile::tempdir().unwrap();
    for f in files(dir.path(), "wal-") {
        std::fs::copy(&f, copy.path().join(f.file_name().unwrap())).unwrap();
    }
    let restored = open(copy.path());
    let cms = res(&restored, "", "configmaps");
    assert!(restored.get(&cms, Some("default"), "a", None).is_ok());
    assert!(
        store().synced().await.is_ok(),
        "an in-memory store never waits"
    );
}

/// 8 writers each create `n` ConfigMaps on the store and wait until each is durable, as the
/// HTTP layer does: creates per second and the latencies' median and 99th percentile.
async fn store_write_cost(s: &Storage, n: usize) -> (f64, f64, f64) {
    let start = std::time::Instant::now();
    let tasks: Vec<_> = (0..8)
        .map(|c| {
            let s = s.clone();
            tokio::spawn(async move {
                let cms = res(&s, "", "configmaps");
                let mut took = Vec::with_capacity(n);
                for i in 0..n {
                    let t = std::time::Instant::now();
                    s.create(
                        &cms,
                        Some("default"),
                        cm(&format!("c{c}-{i}"), json!({"k": "v"})),
                        &w(),
                    )
                    .unwrap();
                    s.synced().await.unwrap();
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
    let secs = start.elapsed().as_secs_f64();
    all.sort();
    let ms = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)].as_secs_f64() * 1e3;
    (all.len() as f64 / secs, ms(0.5), ms(0.99))
}

/// The store's own write cost of a data directory (no HTTP, TLS or client): run with
/// `cargo test -p crt-apiserver --lib -- --ignored --nocapture store_write_cost`
/// (`CRT_DURABLE_BENCH_DIR` names where the data directory goes; default: a temporary one).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a benchmark: prints figures, asserts nothing about speed"]
async fn store_write_cost_with_and_without_a_log() {
    const N: usize = 2_000;
    let (ops, p50, p99) = store_write_cost(&store(), N).await;
    println!(
        "store in memory: {ops:.0} creates/s, p50 {p50:.3} ms, p99 {p99:.3} ms (8 writers x {N})"
    );
    let dir = match std::env::var_os("CRT_DURABLE_BENCH_DIR") {
        Some(b) => tempfile::tempdir_in(b).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let (ops, p50, p99) = store_write_cost(&open(dir.path()), N).await;
    println!(
        "store with a data directory ({}): {ops:.0} creates/s, p50 {p50:.3} ms, p99 {p99:.3} ms (8 writers x {N})",
        dir.path().display()
    );
}
