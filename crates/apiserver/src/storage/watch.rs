//! Watches: the window of recent events to resume from, the fan-out to running watchers, and
//! the per-watch task that sends initial events, live events and bookmarks.
//!
//! Writers never wait: every commit hands its event to each interested watcher with
//! `try_send` on a bounded channel (`StorageConfig::watcher_buffer`); a watcher whose channel
//! is full is dropped, which ends its stream, as the real server closes a watcher that cannot
//! keep up. A small task per watch forwards its channel to the [`Watch`] the caller holds,
//! sending BOOKMARKs when asked.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::select::Selection;
use super::store::{State, res_key};
use super::{Watch, WatchEvent, WatchOptions};
use crate::error::ApiError;
use crate::resource::ResourceInfo;

/// What happened to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventKind {
    /// Created.
    Added,
    /// Changed.
    Modified,
    /// Removed.
    Deleted,
}

/// One committed change, as kept in the window.
#[derive(Debug)]
pub(crate) struct Event {
    /// The resourceVersion of the change.
    pub(crate) rv: u64,
    /// The storage key of the resource (`plural.group`).
    pub(crate) res: String,
    /// What happened.
    pub(crate) kind: EventKind,
    /// The object after the change (for a deletion: its last state, with the deletion's RV).
    pub(crate) object: Arc<Value>,
    /// The object before the change (modifications and deletions).
    pub(crate) previous: Option<Arc<Value>>,
}

/// The recent events, oldest first. Every event with `rv > start` is in the window.
#[derive(Debug)]
pub(crate) struct Window {
    events: VecDeque<Arc<Event>>,
    capacity: usize,
    start: u64,
}

impl Window {
    /// An empty window keeping at most `capacity` events.
    pub(crate) fn new(capacity: usize) -> Self {
        Window {
            events: VecDeque::new(),
            capacity: capacity.max(1),
            start: 0,
        }
    }

    /// Records an event, forgetting the oldest one when full.
    pub(crate) fn push(&mut self, event: Arc<Event>) {
        if self.events.len() >= self.capacity
            && let Some(old) = self.events.pop_front()
        {
            self.start = old.rv;
        }
        self.events.push_back(event);
    }

    /// The events after `rv` (exclusive), or `Err(start)` when some of them are forgotten.
    pub(crate) fn since(&self, rv: u64) -> Result<impl Iterator<Item = &Arc<Event>>, u64> {
        if rv < self.start {
            return Err(self.start);
        }
        let from = self.events.partition_point(|e| e.rv <= rv);
        Ok(self.events.range(from..))
    }

    /// Forgets every event up to `rv` (fault injection: compaction).
    pub(crate) fn compact(&mut self, rv: u64) {
        self.events.clear();
        self.start = self.start.max(rv);
    }

    /// The oldest resourceVersion one can resume from.
    pub(crate) fn start(&self) -> u64 {
        self.start
    }
}

/// A registered watcher.
pub(crate) struct Watcher {
    /// What it selects.
    pub(crate) selection: Selection,
    /// The `apiVersion` its objects are sent as.
    pub(crate) api_version: String,
    /// Its live channel.
    pub(crate) tx: mpsc::Sender<WatchEvent>,
}

/// The running watchers, per resource storage key.
#[derive(Default)]
pub(crate) struct Watchers {
    by_res: HashMap<String, Vec<Watcher>>,
}

impl Watchers {
    /// Registers a watcher.
    pub(crate) fn add(&mut self, res: &str, watcher: Watcher) {
        self.by_res
            .entry(res.to_string())
            .or_default()
            .push(watcher);
    }

    /// Hands an event to every interested watcher; drops those that are full or gone.
    pub(crate) fn dispatch(&mut self, event: &Event) {
        let Some(list) = self.by_res.get_mut(&event.res) else {
            return;
        };
        list.retain(|w| match convert(&w.selection, &w.api_version, event) {
            None => !w.tx.is_closed(),
            Some(ev) => w.tx.try_send(ev).is_ok(),
        });
    }

    /// Ends every watch.
    pub(crate) fn close_all(&mut self) {
        self.by_res.clear();
    }

    /// Ends every watch of one resource (its CRD was deleted).
    pub(crate) fn close_resource(&mut self, res: &str) {
        self.by_res.remove(res);
    }

    /// How many watchers run (for tests and metrics).
    pub(crate) fn count(&self) -> usize {
        self.by_res.values().map(Vec::len).sum()
    }
}

/// The object as a watcher of `api_version` sees it.
pub(crate) fn as_version(obj: &Value, api_version: &str) -> Value {
    let mut v = obj.clone();
    if v.get("apiVersion").and_then(Value::as_str) != Some(api_version)
        && let Some(m) = v.as_object_mut()
    {
        m.insert("apiVersion".into(), Value::from(api_version));
    }
    v
}

/// The event a watcher with `selection` sees for a change, with the real transitions: an
/// object entering the selection is ADDED, one leaving it is DELETED (its previous state with
/// the change's resourceVersion).
pub(crate) fn convert(
    selection: &Selection,
    api_version: &str,
    event: &Event,
) -> Option<WatchEvent> {
    let now = selection.matches(&event.object);
    let before = event
        .previous
        .as_deref()
        .is_some_and(|p| selection.matches(p));
    match event.kind {
        EventKind::Added => now.then(|| WatchEvent::Added(as_version(&event.object, api_version))),
        EventKind::Deleted => {
            now.then(|| WatchEvent::Deleted(as_version(&event.object, api_version)))
        }
        EventKind::Modified => match (before, now) {
            (true, true) => Some(WatchEvent::Modified(as_version(&event.object, api_version))),
            (false, true) => Some(WatchEvent::Added(as_version(&event.object, api_version))),
            (true, false) => {
                let prev = event.previous.as_deref().expect("before implies previous");
                let mut obj = as_version(prev, api_version);
                super::meta::set_meta(
                    &mut obj,
                    "resourceVersion",
                    Value::from(event.rv.to_string()),
                );
                Some(WatchEvent::Deleted(obj))
            }
            (false, false) => None,
        },
    }
}

/// A BOOKMARK object.
pub(crate) fn bookmark(
    api_version: &str,
    kind: &str,
    rv: u64,
    initial_events_end: bool,
) -> WatchEvent {
    let mut metadata = json!({ "resourceVersion": rv.to_string() });
    if initial_events_end {
        metadata["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
    }
    WatchEvent::Bookmark(json!({ "apiVersion": api_version, "kind": kind, "metadata": metadata }))
}

/// A watch that answers one ERROR event and ends (e.g. 410 Expired on a too old version).
pub(crate) fn error_watch(status: Value) -> Watch {
    let (tx, rx) = mpsc::channel(1);
    let _ = tx.try_send(WatchEvent::Error(status));
    Watch { events: rx }
}

/// How the forwarding task of one watch behaves.
pub(crate) struct Forward {
    /// Events to send first (initial state or replayed window).
    pub(crate) initial: Vec<WatchEvent>,
    /// The live channel the store writes to.
    pub(crate) live: mpsc::Receiver<WatchEvent>,
    /// Bookmarks: `(interval, apiVersion, kind)`.
    pub(crate) bookmarks: Option<(Duration, String, String)>,
    /// The last resourceVersion whose events have all been handed to watchers.
    pub(crate) published: Arc<AtomicU64>,
    /// The resourceVersion the initial state was taken at: bookmarks never go below it.
    pub(crate) start_rv: u64,
}

/// Size of the channel between the forwarding task and the caller: small, so that a slow
/// caller shows up as a full live channel (and gets closed) rather than as memory.
const OUT_BUFFER: usize = 64;

impl Forward {
    /// Spawns the forwarding task on the current tokio runtime and answers the [`Watch`].
    pub(crate) fn spawn(self) -> Watch {
        let (out, rx) = mpsc::channel(OUT_BUFFER);
        // The bookmark clock starts now, not when the task first runs.
        let started = tokio::time::Instant::now();
        tokio::spawn(self.run(out, started));
        Watch { events: rx }
    }

    async fn run(mut self, out: mpsc::Sender<WatchEvent>, started: tokio::time::Instant) {
        let mut last_rv = self.start_rv;
        for ev in std::mem::take(&mut self.initial) {
            if out.send(ev).await.is_err() {
                return;
            }
        }
        let mut ticker = self.bookmarks.as_ref().map(|(every, _, _)| {
            let mut t = tokio::time::interval_at(started + *every, *every);
            t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            t
        });
        loop {
            let tick = async {
                match ticker.as_mut() {
                    Some(t) => {
                        t.tick().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                ev = self.live.recv() => match ev {
                    Some(ev) => {
                        last_rv = last_rv.max(event_rv(&ev));
                        if out.send(ev).await.is_err() {
                            return;
                        }
                    }
                    None => return,
                },
                _ = tick => {
                    // Every event up to `published` is in the live channel already: drain it,
                    // then the bookmark may claim `published`.
                    let published = self.published.load(Ordering::Acquire);
                    while let Ok(ev) = self.live.try_recv() {
                        last_rv = last_rv.max(event_rv(&ev));
                        if out.send(ev).await.is_err() {
                            return;
                        }
                    }
                    last_rv = last_rv.max(published);
                    let (_, api_version, kind) = self.bookmarks.as_ref().expect("ticking implies bookmarks");
                    if out.send(bookmark(api_version, kind, last_rv, false)).await.is_err() {
                        return;
                    }
                }
                _ = out.closed() => return,
            }
        }
    }
}

fn event_rv(ev: &WatchEvent) -> u64 {
    let obj = match ev {
        WatchEvent::Added(o)
        | WatchEvent::Modified(o)
        | WatchEvent::Deleted(o)
        | WatchEvent::Bookmark(o) => o,
        WatchEvent::Error(_) => return 0,
    };
    super::meta::resource_version(obj).parse().unwrap_or(0)
}

/// Starts a watch: under the lock, computes the initial events (current state, or the window
/// after the requested resourceVersion) and registers the live channel, so no event is lost
/// or doubled between the two.
pub(crate) fn start(
    st: &mut State,
    res: &ResourceInfo,
    namespace: Option<&str>,
    opts: &WatchOptions,
) -> Result<Watch, ApiError> {
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(ApiError::internal("watch needs a tokio runtime"));
    }
    let selection = Selection::parse(
        res,
        namespace,
        opts.label_selector.as_deref(),
        opts.field_selector.as_deref(),
    )?;
    let api_version = res.api_version();
    let rk = res_key(res);
    let rv = match opts
        .resource_version
        .as_deref()
        .filter(|r| !r.is_empty() && *r != "0")
    {
        None => None,
        Some(r) => Some(
            r.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {r:?}")))?,
        ),
    };
    let mut initial = Vec::new();
    let start_rv;
    if opts.send_initial_events || rv.is_none() {
        start_rv = st.rv;
        if let Some(objs) = st.data.get(&rk) {
            for obj in objs.values().filter(|o| selection.matches(o)) {
                initial.push(WatchEvent::Added(as_version(obj, &api_version)));
            }
        }
        if opts.send_initial_events {
            initial.push(bookmark(&api_version, &res.kind, start_rv, true));
        }
    } else {
        let from = rv.unwrap_or(0);
        match st.window.since(from) {
            Err(oldest) => {
                let err = ApiError::gone(format!("too old resource version: {from} ({oldest})"));
                return Ok(error_watch(err.to_status()));
            }
            Ok(events) => {
                initial.extend(
                    events
                        .filter(|e| e.res == rk)
                        .filter_map(|e| convert(&selection, &api_version, e)),
                );
            }
        }
        start_rv = from.max(st.window.start());
    }
    let (tx, live) = mpsc::channel(st.config.watcher_buffer.max(1));
    st.watchers.add(
        &rk,
        Watcher {
            selection,
            api_version: api_version.clone(),
            tx,
        },
    );
    let bookmarks = opts
        .allow_bookmarks
        .then(|| (st.config.bookmark_interval, api_version, res.kind.clone()));
    Ok(Forward {
        initial,
        live,
        bookmarks,
        published: st.published.clone(),
        start_rv,
    }
    .spawn())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(rv: u64) -> Arc<Event> {
        Arc::new(Event {
            rv,
            res: "configmaps".into(),
            kind: EventKind::Added,
            object: Arc::new(json!({})),
            previous: None,
        })
    }

    #[test]
    fn window_keeps_the_most_recent() {
        let mut w = Window::new(3);
        for rv in 1..=5 {
            w.push(ev(rv));
        }
        assert_eq!(w.start(), 2);
        assert!(w.since(1).is_err());
        let rvs: Vec<u64> = w.since(2).unwrap().map(|e| e.rv).collect();
        assert_eq!(rvs, vec![3, 4, 5]);
        let rvs: Vec<u64> = w.since(4).unwrap().map(|e| e.rv).collect();
        assert_eq!(rvs, vec![5]);
        w.compact(5);
        assert_eq!(w.since(4).err(), Some(5));
        assert_eq!(w.since(5).unwrap().count(), 0);
    }
}
