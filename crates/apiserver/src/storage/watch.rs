//! Starting a watch: the initial events (the current state, or the window after the requested
//! resourceVersion), the registration of the caller's channel with the fan-out
//! ([`super::events::Watchers`]) under the same lock, and the per-watch task that sends
//! bookmarks every `StorageConfig::bookmark_interval` (tokio's clock). A streaming list's
//! initial events end with a bookmark annotated `k8s.io/initial-events-end`, unless the fault
//! [`crate::Faults::withhold_initial_events_end`] is on: then it comes after the next write to
//! the resource, as a real kube-apiserver sends it for a quiet resource.

use std::sync::Weak;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::oneshot;

use super::convert::to_version_shared;
use super::events::{Watcher, bookmark, convert};
use super::options::{WatchEvent, WatchOptions};
use super::select::Selection;
use super::shared::{Receiver, Sink, channel};
use super::store::{State, res_key};
use crate::error::ApiError;
use crate::json::FieldOrder;
use crate::resource::ResourceInfo;

/// A watch that answers one ERROR event and ends (e.g. 410 Expired on a too old version).
fn error_watch(shared: bool, status: Value) -> Receiver {
    let (tx, rx) = channel(shared, 1, FieldOrder::Go);
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
        if opts.send_initial_events && !st.withhold_initial_events_end {
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
    // Events are written as upstream encodes the kind: Go structs, or sorted maps.
    let order = if res.custom {
        FieldOrder::Sorted
    } else {
        FieldOrder::Go
    };
    let (tx, rx) = channel(shared, capacity, order);
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
            pending_initial_end: (opts.send_initial_events && st.withhold_initial_events_end)
                .then(|| res.kind.clone()),
        },
    );
    Ok(rx)
}
