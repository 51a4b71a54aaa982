//! Watches: the window of recent events to resume from, the fan-out to running watchers, and
//! the per-watch task that sends initial events, live events and bookmarks.
//!
//! Writers never wait: every commit hands its event to each interested watcher with
//! `try_send` on the bounded channel the caller reads (`StorageConfig::watcher_buffer` beyond
//! the initial events); a watcher whose channel is full is dropped, which ends its stream, as
//! the real server closes a watcher that cannot keep up. A watch that allows bookmarks has a
//! small task that sends a BOOKMARK every `StorageConfig::bookmark_interval` (tokio's clock).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::convert::to_version_shared;
use super::select::Selection;
use super::shared::{Receiver, SharedEvent, Sink, channel};
use super::store::{State, res_key};
use super::{WatchEvent, WatchOptions};
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
    #[cfg(test)]
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
    /// Its channel (the caller holds the receiver).
    pub(crate) sink: Sink,
    /// Dropped with the watcher: stops its bookmark task (which holds a sender too).
    pub(crate) _stop_bookmarks: Option<oneshot::Sender<()>>,
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
        // Shared watchers of one transition and version get one shared event.
        let mut cache: Vec<(Transition, String, SharedEvent)> = Vec::new();
        list.retain(|w| {
            let Some(t) = transition(&w.selection, event) else {
                return !w.sink.is_closed();
            };
            match &w.sink {
                Sink::Owned(tx) => tx.try_send(build(t, event, &w.api_version)).is_ok(),
                Sink::Shared(tx) => {
                    let found = cache
                        .iter()
                        .find(|(ct, av, _)| *ct == t && *av == w.api_version)
                        .map(|(_, _, e)| e.clone());
                    let ev = found.unwrap_or_else(|| {
                        let e = SharedEvent::from(build(t, event, &w.api_version));
                        cache.push((t, w.api_version.clone(), e.clone()));
                        e
                    });
                    tx.try_send(ev).is_ok()
                }
            }
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

    /// Ends the watches of one version of a resource (no longer served).
    pub(crate) fn close_version(&mut self, res: &str, api_version: &str) {
        if let Some(list) = self.by_res.get_mut(res) {
            list.retain(|w| w.api_version != api_version);
        }
    }

    /// How many watchers run (for tests and metrics).
    pub(crate) fn count(&self) -> usize {
        self.by_res.values().map(Vec::len).sum()
    }
}

/// The object as a client of `api_version` sees it (see [`super::convert`]).
pub(crate) fn as_version(obj: &Value, api_version: &str) -> Value {
    super::convert::to_version(obj, api_version)
}

/// What a change is to one watcher.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transition {
    /// Created, or entered the selection.
    Added,
    /// Changed within the selection.
    Modified,
    /// Removed while selected.
    Deleted,
    /// Left the selection: DELETED with the previous state.
    Left,
}

/// The transition a watcher with `selection` sees for a change, as the real server computes
/// it: an object entering the selection is ADDED, one leaving it is DELETED.
fn transition(selection: &Selection, event: &Event) -> Option<Transition> {
    let now = selection.matches(&event.object);
    let before = || {
        event
            .previous
            .as_deref()
            .is_some_and(|p| selection.matches(p))
    };
    match event.kind {
        EventKind::Added => now.then_some(Transition::Added),
        EventKind::Deleted => now.then_some(Transition::Deleted),
        EventKind::Modified => match (before(), now) {
            (true, true) => Some(Transition::Modified),
            (false, true) => Some(Transition::Added),
            (true, false) => Some(Transition::Left),
            (false, false) => None,
        },
    }
}

/// The event of a transition, with the object as a client of `api_version` sees it.
fn build(t: Transition, event: &Event, api_version: &str) -> WatchEvent {
    match t {
        Transition::Added => WatchEvent::Added(as_version(&event.object, api_version)),
        Transition::Modified => WatchEvent::Modified(as_version(&event.object, api_version)),
        Transition::Deleted => WatchEvent::Deleted(as_version(&event.object, api_version)),
        Transition::Left => {
            // The previous state, with the change's resourceVersion.
            let prev = event.previous.as_deref().unwrap_or(&event.object);
            let mut obj = as_version(prev, api_version);
            super::meta::set_meta(
                &mut obj,
                "resourceVersion",
                Value::from(event.rv.to_string()),
            );
            WatchEvent::Deleted(obj)
        }
    }
}

/// The event a watcher with `selection` sees for a change, if any.
pub(crate) fn convert(
    selection: &Selection,
    api_version: &str,
    event: &Event,
) -> Option<WatchEvent> {
    transition(selection, event).map(|t| build(t, event, api_version))
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
fn error_watch(shared: bool, status: Value) -> Receiver {
    let (tx, rx) = channel(shared, 1);
    tx.try_send(WatchEvent::Error(status));
    rx
}

/// Sends a BOOKMARK every `every` until the watch ends. Each bookmark is sent under the store's
/// lock, so every event up to the store's resourceVersion is already in the channel before it:
/// a bookmark never claims a version whose events the watcher has not received.
async fn bookmarks(
    state: Weak<Mutex<State>>,
    tx: Sink,
    mut stop: oneshot::Receiver<()>,
    every: Duration,
    started: tokio::time::Instant,
    api_version: String,
    kind: String,
) {
    let mut ticker = tokio::time::interval_at(started + every, every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                let Some(state) = state.upgrade() else { return };
                let st = state.lock();
                // A full channel skips the bookmark: the next event closes the watcher anyway.
                tx.try_send(bookmark(&api_version, &kind, st.rv, false));
            }
            _ = &mut stop => return,
            _ = tx.closed() => return,
        }
    }
}

/// Starts a watch: under the lock, computes the initial events (current state, or the window
/// after the requested resourceVersion), queues them and registers the channel, so no event is
/// lost or doubled between the two. Writers then `try_send` straight into the caller's
/// channel; a task runs only for bookmarks.
pub(crate) fn start(
    st: &mut State,
    state: Weak<Mutex<State>>,
    res: &ResourceInfo,
    namespace: Option<&str>,
    opts: &WatchOptions,
    shared: bool,
) -> Result<Receiver, ApiError> {
    if opts.allow_bookmarks && tokio::runtime::Handle::try_current().is_err() {
        return Err(ApiError::internal("watch bookmarks need a tokio runtime"));
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
    // The current state is queued as the stored objects themselves (a shared watcher encodes
    // them without a copy); other initial events after them.
    let mut current = Vec::new();
    let mut initial = Vec::new();
    if opts.send_initial_events || rv.is_none() {
        if let Some(objs) = st.data.get(&rk) {
            for obj in objs.values().filter(|o| selection.matches(o)) {
                current.push(to_version_shared(obj, &api_version));
            }
        }
        if opts.send_initial_events {
            initial.push(bookmark(&api_version, &res.kind, st.rv, true));
        }
    } else {
        let from = rv.unwrap_or(0);
        match st.window.since(from) {
            Err(oldest) => {
                let err = ApiError::gone(format!("too old resource version: {from} ({oldest})"));
                return Ok(error_watch(shared, err.to_status()));
            }
            Ok(events) => {
                initial.extend(
                    events
                        .filter(|e| e.res == rk)
                        .filter_map(|e| convert(&selection, &api_version, e)),
                );
            }
        }
    }
    let capacity = st.config.watcher_buffer.max(1) + current.len() + initial.len();
    let (tx, rx) = channel(shared, capacity);
    for obj in current {
        // Cannot fail: the channel was sized for the initial events.
        tx.try_send_added(obj);
    }
    for ev in initial {
        // Cannot fail: the channel was sized for the initial events.
        tx.try_send(ev);
    }
    let stop = if opts.allow_bookmarks {
        let (stop_tx, stop_rx) = oneshot::channel();
        let task = bookmarks(
            state,
            tx.clone(),
            stop_rx,
            st.config.bookmark_interval,
            tokio::time::Instant::now(),
            api_version.clone(),
            res.kind.clone(),
        );
        tokio::spawn(task);
        Some(stop_tx)
    } else {
        None
    };
    st.watchers.add(
        &rk,
        Watcher {
            selection,
            api_version,
            sink: tx,
            _stop_bookmarks: stop,
        },
    );
    Ok(rx)
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
