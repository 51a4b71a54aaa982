//! The loop every simulated controller runs: watches turn events into keys, a set of pending
//! keys dedups them, and each key is reconciled against the store's current state (level
//! triggered, so a key reconciled twice does nothing the second time). A reconcile can ask to
//! be called again after a delay, on tokio's clock. A watch the store closes (a slow watcher)
//! starts again with the current state, so nothing is missed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use crt_apiserver::resource::ResourceInfo;
use crt_apiserver::storage::{Storage, WatchEvent, WatchOptions};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// A key: namespace (`""` for cluster-scoped objects) and name.
pub(crate) type Key = (String, String);

/// The key of an object.
pub(crate) fn key_of(obj: &Value) -> Key {
    (
        crate::obj::namespace(obj).to_string(),
        crate::obj::name(obj).to_string(),
    )
}

/// What an event's object maps to: the keys to reconcile.
pub(crate) type Mapper = Arc<dyn Fn(&Value) -> Vec<Key> + Send + Sync>;

/// A watched resource and how its objects map to keys.
pub(crate) struct Watched {
    pub(crate) res: ResourceInfo,
    pub(crate) map: Mapper,
}

impl Watched {
    /// Every object of `res` is its own key.
    pub(crate) fn itself(res: &ResourceInfo) -> Watched {
        Watched {
            res: res.clone(),
            map: Arc::new(|o| vec![key_of(o)]),
        }
    }

    /// Objects of `res` map to keys by `map`.
    pub(crate) fn mapped(
        res: &ResourceInfo,
        map: impl Fn(&Value) -> Vec<Key> + Send + Sync + 'static,
    ) -> Watched {
        Watched {
            res: res.clone(),
            map: Arc::new(map),
        }
    }

    /// Objects of `res` map to their controller's key when it is of `kind`.
    pub(crate) fn owned(res: &ResourceInfo, kind: &'static str) -> Watched {
        Watched::mapped(res, move |o| match crate::obj::controller_of(o) {
            Some((k, name, _)) if k == kind => {
                vec![(crate::obj::namespace(o).to_string(), name.to_string())]
            }
            _ => Vec::new(),
        })
    }
}

/// A controller's reconcile.
pub(crate) trait Reconcile: Send + 'static {
    /// Called before each batch of keys (a controller may snapshot what the batch shares).
    fn begin(&mut self) {}

    /// Makes the store agree with the controller for `key`; `Some(delay)` asks for another
    /// call after `delay` (a timer, or a retry after a conflict).
    fn reconcile(&mut self, key: &Key) -> Option<Duration>;
}

/// Starts the watches and the loop of `controller` on the current tokio runtime; the tasks
/// end when aborted.
pub(crate) fn spawn(
    storage: &Storage,
    watches: Vec<Watched>,
    mut controller: impl Reconcile,
) -> Vec<JoinHandle<()>> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Key>();
    let mut tasks: Vec<JoinHandle<()>> = watches
        .into_iter()
        .map(|w| tokio::spawn(forward(storage.clone(), w, tx.clone())))
        .collect();
    drop(tx);
    tasks.push(tokio::spawn(async move {
        let mut pending: BTreeSet<Key> = BTreeSet::new();
        let mut timers: BTreeMap<Key, Instant> = BTreeMap::new();
        loop {
            let next = timers.values().min().copied();
            tokio::select! {
                key = rx.recv() => match key {
                    Some(key) => { pending.insert(key); }
                    None => return,
                },
                _ = sleep_until(next), if next.is_some() => {}
            }
            while let Ok(key) = rx.try_recv() {
                pending.insert(key);
            }
            let now = Instant::now();
            let due: Vec<Key> = timers
                .iter()
                .filter(|(_, at)| **at <= now)
                .map(|(k, _)| k.clone())
                .collect();
            for key in due {
                timers.remove(&key);
                pending.insert(key);
            }
            if pending.is_empty() {
                continue;
            }
            controller.begin();
            for key in std::mem::take(&mut pending) {
                timers.remove(&key);
                if let Some(delay) = controller.reconcile(&key) {
                    timers.insert(key, now + delay);
                }
            }
            // Lets the watches deliver what the batch wrote before the next one.
            tokio::task::yield_now().await;
        }
    }));
    tasks
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Watches `w.res` (from the current state, again whenever the store ends the watch) and
/// sends each event's keys.
async fn forward(storage: Storage, w: Watched, tx: mpsc::UnboundedSender<Key>) {
    loop {
        let mut watch = match storage.watch(&w.res, None, &WatchOptions::default()) {
            Ok(watch) => watch,
            Err(e) => {
                tracing::warn!("watching {}: {e}", w.res.plural);
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        while let Some(event) = watch.events.recv().await {
            let obj = match &event {
                WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => o,
                WatchEvent::Bookmark(_) | WatchEvent::Error(_) => continue,
            };
            for key in (w.map)(obj) {
                if tx.send(key).is_err() {
                    return;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
