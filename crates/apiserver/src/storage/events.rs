//! Committed events: what every write records ([`Event`]), the window of recent events that
//! watches resume from ([`Window`]), and the fan-out to running watchers ([`Watchers`]), which
//! turns a change into what each watcher sees (an object entering a watcher's selection is
//! ADDED to it, one leaving it DELETED).
//!
//! Writers never wait: every commit hands its event to each interested watcher with
//! `try_send` on the bounded channel the caller reads (`StorageConfig::watcher_buffer` beyond
//! the initial events); a watcher whose channel is full is dropped, which ends its stream, as
//! the real server closes a watcher that cannot keep up.
//!
//! The store ([`super::store`]) commits through this module; starting a watch
//! ([`super::watch`]) reads the window and registers a [`Watcher`] here.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::convert::to_version;
use super::options::WatchEvent;
use super::select::Selection;
use super::shared::{SharedEvent, Sink};

/// A BOOKMARK object (here, below `watch`, which sends them too: the fan-out sends the
/// withheld initial-events-end ones).
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

    /// Forgets every event up to `rv` (compaction): resuming from `rv` or later still works.
    pub(crate) fn compact(&mut self, rv: u64) {
        let upto = self.events.partition_point(|e| e.rv <= rv);
        self.events.drain(..upto);
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
    /// A streaming list whose initial-events-end bookmark is withheld (fault injection): the
    /// kind its bookmark names. It is sent after the next write to the resource, or when the
    /// fault is cleared.
    pub(crate) pending_initial_end: Option<String>,
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
        list.retain_mut(|w| {
            // A write to the resource moves the watch cache: a withheld initial-events-end
            // bookmark comes after it, as on the real server.
            let end = w
                .pending_initial_end
                .take()
                .map(|kind| bookmark(&w.api_version, &kind, event.rv, true));
            let Some(t) = transition(&w.selection, event) else {
                return match end {
                    Some(end) => w.sink.try_send(end),
                    None => !w.sink.is_closed(),
                };
            };
            let sent = match &w.sink {
                Sink::Owned(tx) => tx.try_send(build(t, event, &w.api_version)).is_ok(),
                Sink::Shared(tx, order) => {
                    let found = cache
                        .iter()
                        .find(|(ct, av, _)| *ct == t && *av == w.api_version)
                        .map(|(_, _, e)| e.clone());
                    let ev = found.unwrap_or_else(|| {
                        let e = SharedEvent::ordered(build(t, event, &w.api_version), *order);
                        cache.push((t, w.api_version.clone(), e.clone()));
                        e
                    });
                    tx.try_send(ev).is_ok()
                }
            };
            sent && end.is_none_or(|end| w.sink.try_send(end))
        });
    }

    /// Sends every withheld initial-events-end bookmark, at `rv` (the fault is cleared).
    pub(crate) fn release_initial_ends(&mut self, rv: u64) {
        for list in self.by_res.values_mut() {
            list.retain_mut(|w| match w.pending_initial_end.take() {
                Some(kind) => w.sink.try_send(bookmark(&w.api_version, &kind, rv, true)),
                None => true,
            });
        }
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
        Transition::Added => WatchEvent::Added(to_version(&event.object, api_version)),
        Transition::Modified => WatchEvent::Modified(to_version(&event.object, api_version)),
        Transition::Deleted => WatchEvent::Deleted(to_version(&event.object, api_version)),
        Transition::Left => {
            // The previous state, with the change's resourceVersion.
            let prev = event.previous.as_deref().unwrap_or(&event.object);
            let mut obj = to_version(prev, api_version);
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

#[cfg(test)]
mod tests {
    use serde_json::json;

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
