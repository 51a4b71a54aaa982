//! Watch behaviour over the real HTTP path: periodic bookmarks, `timeoutSeconds`, and the
//! "close every watch" fault, each seen through kube-client's watch stream.

use std::time::Duration;

use crt_apiserver::storage::StorageConfig;
use crt_apiserver::{Config, Server};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube_client::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

use crate::common::client;

/// A generous bound for anything that should happen "soon": tests never depend on speed.
const PATIENCE: Duration = Duration::from_secs(10);

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": name }, "data": { "k": "v" },
    }))
    .unwrap()
}

/// The resourceVersion a list of `api` reports (where a watch starts "now").
async fn list_rv(api: &Api<ConfigMap>) -> String {
    api.list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
}

fn rv_num(rv: &str) -> u64 {
    rv.parse().expect("resourceVersions are decimal")
}

#[tokio::test]
async fn bookmarks_arrive_over_http_at_the_current_resource_version() {
    // The bookmark task runs on tokio's clock, but so does every HTTP and TLS timer here: a
    // short real interval is simpler than a paused clock, and only a generous timeout bounds it.
    let server = Server::start(Config {
        storage: StorageConfig {
            bookmark_interval: Duration::from_millis(150),
            ..StorageConfig::default()
        },
        ..Config::default()
    })
    .await
    .unwrap();
    let client = client(&server).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let rv0 = list_rv(&cms).await;
    // kube-client 5 asks for bookmarks by default (`allowWatchBookmarks=true`).
    let params = WatchParams::default().timeout(30);
    assert!(params.bookmarks);
    let mut stream = cms.watch(&params, &rv0).await.unwrap().boxed();

    let created = cms.create(&PostParams::default(), &cm("b1")).await.unwrap();
    let created_rv = rv_num(created.metadata.resource_version.as_deref().unwrap());
    // A write to another resource moves the store's (global) resourceVersion on too.
    let secrets: Api<Secret> = Api::namespaced(client, "default");
    let secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": { "name": "s1" },
    }))
    .unwrap();
    let written = secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let last_write = rv_num(written.metadata.resource_version.as_deref().unwrap());
    assert!(last_write > created_rv);

    let mut last_seen = rv_num(&rv0);
    let mut added = false;
    let bookmark_rv = tokio::time::timeout(PATIENCE, async {
        loop {
            let event = stream
                .try_next()
                .await
                .unwrap()
                .expect("the watch stays open");
            match event {
                WatchEvent::Added(o) => {
                    assert_eq!(o.metadata.name.as_deref(), Some("b1"));
                    last_seen = rv_num(o.metadata.resource_version.as_deref().unwrap());
                    added = true;
                }
                WatchEvent::Bookmark(b) => {
                    assert_eq!(
                        (b.types.api_version.as_str(), b.types.kind.as_str()),
                        ("v1", "ConfigMap")
                    );
                    let rv = rv_num(&b.metadata.resource_version);
                    // A bookmark never claims a version older than an event already sent.
                    assert!(
                        rv >= last_seen,
                        "bookmark {rv} older than event {last_seen}"
                    );
                    last_seen = rv;
                    if rv >= last_write {
                        return rv;
                    }
                }
                other => panic!("unexpected event {other:?}"),
            }
        }
    })
    .await
    .expect("a bookmark at the last write's resourceVersion arrives");
    assert!(
        added,
        "the ADDED event came before the bookmark covering it"
    );
    assert_eq!(
        bookmark_rv,
        server.storage().resource_version(),
        "the bookmark carries the store's current resourceVersion"
    );
}

#[tokio::test]
async fn timeout_seconds_ends_the_watch_by_itself() {
    let server = crate::common::server().await;
    let cms: Api<ConfigMap> = Api::namespaced(client(&server).await, "default");
    let rv = list_rv(&cms).await;
    let started = tokio::time::Instant::now();
    let mut stream = cms
        .watch(&WatchParams::default().timeout(1), &rv)
        .await
        .unwrap()
        .boxed();
    let mut bookmarks = 0;
    let end = tokio::time::timeout(PATIENCE, async {
        loop {
            match stream.try_next().await {
                // Bookmarks are allowed by kube-client's defaults; none is due within 1 s with
                // the default interval, but tolerate them rather than assume the interval.
                Ok(Some(WatchEvent::Bookmark(_))) => bookmarks += 1,
                other => return other,
            }
        }
    })
    .await
    .expect("timeoutSeconds=1 ends the watch well within 10 s");
    let elapsed = started.elapsed();
    assert!(end.is_ok_and(|e| e.is_none()), "the stream ends cleanly");
    assert!(
        elapsed >= Duration::from_millis(950),
        "the watch ended after {elapsed:?}, before its timeoutSeconds (bookmarks: {bookmarks})"
    );
}

#[tokio::test]
async fn close_watches_fault_ends_kube_client_watches() {
    let server = crate::common::server().await;
    let cms: Api<ConfigMap> = Api::namespaced(client(&server).await, "default");
    let rv = list_rv(&cms).await;
    let mut stream = cms
        .watch(&WatchParams::default().timeout(60), &rv)
        .await
        .unwrap()
        .boxed();
    // The watch is established once it delivers an event.
    cms.create(&PostParams::default(), &cm("c1")).await.unwrap();
    let first = tokio::time::timeout(PATIENCE, stream.try_next())
        .await
        .expect("an event in time")
        .unwrap();
    assert!(matches!(first, Some(WatchEvent::Added(_))), "{first:?}");
    assert_eq!(server.storage().watch_count(), 1);

    server.faults().close_watches();
    let end = tokio::time::timeout(PATIENCE, async {
        loop {
            match stream.try_next().await {
                Ok(Some(WatchEvent::Bookmark(_))) => continue,
                other => return other,
            }
        }
    })
    .await
    .expect("the closed watch ends well within 10 s");
    // The server ends the response cleanly, as the real server does when it stops a watch:
    // kube-client's stream yields None and the client re-watches.
    assert!(end.is_ok_and(|e| e.is_none()), "the stream ends cleanly");
    assert_eq!(server.storage().watch_count(), 0);

    // Re-watching from the last seen version works and misses nothing written meanwhile.
    let Some(WatchEvent::Added(seen)) = first else {
        unreachable!()
    };
    cms.create(&PostParams::default(), &cm("c2")).await.unwrap();
    let resumed = cms
        .watch(
            &WatchParams::default().timeout(60),
            seen.metadata.resource_version.as_deref().unwrap(),
        )
        .await
        .unwrap()
        .boxed();
    let next = tokio::time::timeout(PATIENCE, resumed.into_future())
        .await
        .expect("an event in time")
        .0
        .unwrap()
        .unwrap();
    match next {
        WatchEvent::Added(o) => assert_eq!(o.metadata.name.as_deref(), Some("c2")),
        other => panic!("expected c2 ADDED, got {other:?}"),
    }
}
