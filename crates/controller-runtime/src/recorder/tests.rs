//! The recorder against the embedded API server, and its cache on the paused clock.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference, Pod};
use k8s_openapi::api::events::v1::Event;
use kube_client::Api;
use kube_client::api::{ListParams, ObjectMeta, PostParams};

use super::cache::{Cache, Key};
use super::*;

async fn client(server: &crt_apiserver::Server) -> kube_client::Client {
    let kubeconfig = kube_client::config::Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
    let config = kube_client::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    kube_client::Client::try_from(config).unwrap()
}

async fn configmap(client: &kube_client::Client, name: &str) -> ConfigMap {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cm)
        .await
        .unwrap()
}

async fn events(client: &kube_client::Client) -> Vec<Event> {
    let mut list = Api::<Event>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    list.sort_by_key(|e| e.event_time.clone());
    list
}

#[tokio::test]
async fn events_are_written_and_repetitions_fold_into_a_series() {
    let server = crt_apiserver::Server::start(crt_apiserver::Config::default())
        .await
        .unwrap();
    let client = client(&server).await;
    let cm = configmap(&client, "settings").await;
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "example.com/settings".into(),
            instance: "settings-0".into(),
        },
    );
    let mut pod = Pod::default();
    pod.metadata.namespace = Some("default".into());
    pod.metadata.name = Some("web-0".into());
    let record = EventRecord::warning("SyncFailed", "Reconcile")
        .note("missing key")
        .secondary(object_ref(&pod));
    recorder.publish_for(&record, &cm).await.unwrap();

    let list = events(&client).await;
    assert_eq!(list.len(), 1);
    let event = &list[0];
    assert!(
        event
            .metadata
            .name
            .as_deref()
            .unwrap()
            .starts_with("settings.")
    );
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(event.reason.as_deref(), Some("SyncFailed"));
    assert_eq!(event.action.as_deref(), Some("Reconcile"));
    assert_eq!(event.note.as_deref(), Some("missing key"));
    assert_eq!(
        event.reporting_controller.as_deref(),
        Some("example.com/settings")
    );
    assert_eq!(event.reporting_instance.as_deref(), Some("settings-0"));
    let regarding = event.regarding.as_ref().unwrap();
    assert_eq!(regarding.kind.as_deref(), Some("ConfigMap"));
    assert_eq!(regarding.name.as_deref(), Some("settings"));
    assert_eq!(regarding.uid, cm.metadata.uid);
    assert_eq!(
        event.related.as_ref().unwrap().name.as_deref(),
        Some("web-0")
    );
    assert!(event.event_time.is_some());
    assert!(event.series.is_none(), "a first event has no series");

    // The same event again: counted on the first one.
    for expected in [2, 3] {
        recorder.publish_for(&record, &cm).await.unwrap();
        let list = events(&client).await;
        assert_eq!(list.len(), 1, "folded into the first event");
        let series = list[0].series.as_ref().expect("a series");
        assert_eq!(series.count, expected);
        assert!(Some(&series.last_observed_time) > list[0].event_time.as_ref());
        assert_eq!(list[0].note.as_deref(), Some("missing key"));
    }

    // A different reason, or a different note, is a different event.
    recorder
        .publish_for(
            &EventRecord {
                reason: "Synced".into(),
                ..record.clone()
            },
            &cm,
        )
        .await
        .unwrap();
    recorder
        .publish_for(&record.clone().note("another key"), &cm)
        .await
        .unwrap();
    let list = events(&client).await;
    assert_eq!(list.len(), 3);
    assert_eq!(list[1].reason.as_deref(), Some("Synced"));
    assert!(list[1].series.is_none());
    assert_eq!(list[2].note.as_deref(), Some("another key"));

    // An event deleted meanwhile is written anew.
    let first = list[0].metadata.name.clone().unwrap();
    Api::<Event>::namespaced(client.clone(), "default")
        .delete(&first, &Default::default())
        .await
        .unwrap();
    recorder.publish_for(&record, &cm).await.unwrap();
    let list = events(&client).await;
    assert_eq!(list.len(), 3);
    let renewed = list
        .iter()
        .find(|e| {
            e.reason.as_deref() == Some("SyncFailed") && e.note.as_deref() == Some("missing key")
        })
        .unwrap();
    assert_ne!(renewed.metadata.name.as_deref(), Some(first.as_str()));
    assert!(renewed.series.is_none());
}

#[tokio::test]
async fn a_repetition_after_the_series_window_starts_a_new_event() {
    let server = crt_apiserver::Server::start(crt_apiserver::Config::default())
        .await
        .unwrap();
    let client = client(&server).await;
    let cm = configmap(&client, "settings").await;
    let recorder = Recorder::new(client.clone(), "ctl").with_cache(16, Duration::ZERO);
    let record = EventRecord::normal("Synced", "Reconcile");
    recorder.publish_for(&record, &cm).await.unwrap();
    recorder.publish_for(&record, &cm).await.unwrap();
    let list = events(&client).await;
    assert_eq!(list.len(), 2);
    assert!(list.iter().all(|e| e.series.is_none()));
}

#[tokio::test]
async fn concurrent_repetitions_count_one_by_one_on_one_event() {
    let server = crt_apiserver::Server::start(crt_apiserver::Config::default())
        .await
        .unwrap();
    let client = client(&server).await;
    let cm = configmap(&client, "busy").await;
    let recorder = Recorder::new(client.clone(), "ctl");
    let record = EventRecord::warning("Failed", "Reconcile").note("boom");
    let publishes = (0..10).map(|_| {
        let (recorder, record, cm) = (recorder.clone(), record.clone(), cm.clone());
        tokio::spawn(async move { recorder.publish_for(&record, &cm).await })
    });
    for done in futures::future::join_all(publishes).await {
        done.unwrap().unwrap();
    }
    let list = events(&client).await;
    assert_eq!(list.len(), 1, "one event");
    assert_eq!(list[0].series.as_ref().unwrap().count, 10);
}

#[test]
fn bad_records_are_errors_before_any_request() {
    let regarding = ObjectReference {
        name: Some("x".into()),
        ..Default::default()
    };
    let bad = [
        (EventRecord::normal("", "Reconcile"), regarding.clone()),
        (EventRecord::normal("Synced", ""), regarding.clone()),
        (
            EventRecord::normal("R".repeat(129), "Reconcile"),
            regarding.clone(),
        ),
        (
            EventRecord::normal("Synced", "Reconcile"),
            ObjectReference::default(),
        ),
    ];
    for (record, regarding) in bad {
        let err = validate(&record, &regarding).unwrap_err();
        assert!(matches!(err, Error::InvalidEvent(_)), "{err}");
    }
    // A long note is cut at a character boundary, not refused.
    let long = EventRecord::normal("Synced", "Reconcile").note("é".repeat(600));
    let note = validate(&long, &regarding).unwrap();
    assert_eq!(note.len(), MAX_NOTE_BYTES);
    assert!(note.chars().all(|c| c == 'é'));
}

fn key(n: usize) -> Key {
    let regarding = ObjectReference {
        name: Some(format!("obj-{n}")),
        ..Default::default()
    };
    let record = EventRecord::normal("Synced", "Reconcile");
    let reporter = Reporter {
        controller: "c".into(),
        instance: "i".into(),
    };
    Key::new(&reporter, &record, "", &regarding)
}

/// Fills the slot for `key(n)` as if its Event had been written now.
async fn written(cache: &Cache, n: usize) {
    let slot = cache.slot(key(n));
    *slot.lock().await = Some(cache::Series::new("ns".into(), format!("e{n}")));
}

#[tokio::test(start_paused = true)]
async fn the_cache_is_bounded_and_forgets_the_oldest_first() {
    let cache = Cache::new(3, DEFAULT_SERIES_WINDOW);
    for n in 0..3 {
        written(&cache, n).await;
        tokio::time::advance(Duration::from_secs(1)).await;
    }
    // obj-0 repeats, so obj-1 is now the one observed longest ago.
    cache
        .slot(key(0))
        .lock()
        .await
        .as_mut()
        .unwrap()
        .repeated(2);
    written(&cache, 3).await;
    assert_eq!(cache.len(), 3);
    assert!(cache.slot(key(0)).lock().await.is_some(), "kept");
    assert!(cache.slot(key(2)).lock().await.is_some(), "kept");
    assert!(cache.slot(key(3)).lock().await.is_some(), "kept");
    assert_eq!(cache.len(), 3);

    // obj-1 was forgotten: asking for it evicts obj-2 (now the oldest) for an empty slot.
    let failed = cache.slot(key(1));
    assert!(failed.lock().await.is_none());
    // That slot stays empty (say its Event could not be written): it is the first to go.
    written(&cache, 4).await;
    assert_eq!(cache.len(), 3);
    assert!(cache.slot(key(0)).lock().await.is_some(), "kept");
    assert!(cache.slot(key(3)).lock().await.is_some(), "kept");
    assert!(cache.slot(key(4)).lock().await.is_some(), "kept");

    // Once out of the window, every stale slot goes at the next insertion.
    tokio::time::advance(DEFAULT_SERIES_WINDOW).await;
    written(&cache, 9).await;
    assert_eq!(cache.len(), 1);
}
