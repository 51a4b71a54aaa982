//! One scope's list+watch loop (client-go's reflector): fills the informer's store with a
//! streaming list (a watch with `sendInitialEvents=true`, whose initial events end with a
//! bookmark) where the server offers one, else with paginated lists; then watches from the
//! list's resourceVersion with bookmarks and a random 5 to 10 minute timeout, watching again
//! from the last resourceVersion it saw whenever a watch ends. On 410 Gone it lists again.
//! Connection failures back off from 800 ms to 30 s.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use kube_client::api::{ListParams, WatchParams};
use kube_client::core::WatchEvent;
use kube_core::Resource;
use tokio_util::sync::CancellationToken;

use super::backoff::Backoff;
use super::informer::{Informer, Wire};
use super::list_watch::{ListWatch, WatchStream};
use super::store::Entry;
use crate::ObjectKey;

/// Why one watch ended.
enum WatchEnd {
    Cancelled,
    /// The server closed it (timeout, or the server's own reasons): watch again.
    Closed,
    /// 410 Gone: list again.
    Gone,
    /// A connection or decoding failure: back off, then watch again.
    Failed(String),
    /// The server does not do streaming lists: list instead from now on.
    StreamingRefused(String),
}

impl<K> Informer<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    /// Runs scope `scope`'s list+watch loop until `ctx` is cancelled: with raw objects for
    /// a compact store without a transform, else with typed ones.
    pub(super) async fn run_scope(&self, scope: usize, ctx: &CancellationToken) {
        let this = &self.shared.scopes[scope];
        match &this.raw {
            Some(raw) => self.run_scope_with(scope, raw.as_ref(), ctx).await,
            None => {
                self.run_scope_with(scope, this.list_watch.as_ref(), ctx)
                    .await
            }
        }
    }

    async fn run_scope_with<T: Wire<K>>(
        &self,
        scope: usize,
        list_watch: &dyn ListWatch<T>,
        ctx: &CancellationToken,
    ) {
        let config = &self.shared.config;
        let this = &self.shared.scopes[scope];
        let mut backoff = Backoff::new(config.backoff.clone());
        let mut resource_version: Option<String> = None;
        loop {
            let streaming = resource_version.is_none()
                && config.streaming_list
                && !this.streaming_refused.load(Ordering::Acquire);
            if resource_version.is_none() && !streaming {
                let listed = tokio::select! {
                    _ = ctx.cancelled() => return,
                    listed = self.list_all(scope, list_watch) => listed,
                };
                match listed {
                    Ok(rv) => resource_version = Some(rv),
                    Err(e) => {
                        tracing::warn!(error = %e, namespace = ?this.namespace, "informer list failed");
                        if !sleep_or_cancel(ctx, backoff.next_delay()).await {
                            return;
                        }
                    }
                }
                continue;
            }
            // A streaming list is a watch from "now" whose first events are the current state.
            let params = WatchParams {
                label_selector: this.label_selector.clone(),
                field_selector: this.field_selector.clone(),
                timeout: Some(watch_timeout(config.min_watch_timeout)),
                bookmarks: true,
                send_initial_events: streaming,
            };
            let rv = resource_version.clone().unwrap_or_default();
            let started = tokio::select! {
                _ = ctx.cancelled() => return,
                started = list_watch.watch(params, rv) => started,
            };
            let initial = streaming.then(InitialEvents::default);
            let end = match started {
                Ok(stream) => {
                    self.consume(scope, stream, ctx, &mut resource_version, initial)
                        .await
                }
                Err(kube_client::Error::Api(status))
                    if streaming && refuses_streaming(status.code) =>
                {
                    WatchEnd::StreamingRefused(status.message)
                }
                Err(e) if is_gone(&e) => WatchEnd::Gone,
                Err(e) => WatchEnd::Failed(e.to_string()),
            };
            match end {
                WatchEnd::Cancelled => return,
                WatchEnd::Closed => {}
                WatchEnd::Gone => {
                    tracing::debug!(namespace = ?this.namespace, "watch history too old (410): listing again");
                    resource_version = None;
                }
                WatchEnd::StreamingRefused(why) => {
                    tracing::info!(%why, "the server refuses streaming lists; listing instead");
                    this.streaming_refused.store(true, Ordering::Release);
                }
                WatchEnd::Failed(e) => {
                    tracing::warn!(error = %e, namespace = ?this.namespace, "informer watch failed");
                    if !sleep_or_cancel(ctx, backoff.next_delay()).await {
                        return;
                    }
                }
            }
        }
    }

    /// Lists every page of scope `scope`, replaces its part of the store and tells the
    /// handlers. Returns the list's resourceVersion.
    async fn list_all<T: Wire<K>>(
        &self,
        scope: usize,
        list_watch: &dyn ListWatch<T>,
    ) -> Result<String, kube_client::Error> {
        let config = &self.shared.config;
        let this = &self.shared.scopes[scope];
        let mut objects = Vec::new();
        let mut continue_token: Option<String> = None;
        let resource_version = loop {
            let mut params = ListParams::default().limit(config.page_size);
            params.label_selector = this.label_selector.clone();
            params.field_selector = this.field_selector.clone();
            params.continue_token = continue_token.take();
            let page = match list_watch.list(params).await {
                Ok(page) => page,
                // The continue token expired between pages: start over.
                Err(e) if is_gone(&e) && !objects.is_empty() => {
                    objects.clear();
                    continue;
                }
                Err(e) => return Err(e),
            };
            objects.extend(page.items.into_iter().map(|o| o.entry(self, scope)));
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => continue_token = Some(token),
                None => break page.metadata.resource_version.unwrap_or_default(),
            }
        };
        self.replace(scope, objects);
        Ok(resource_version)
    }

    /// Applies a watch's events until it ends. With `initial` (a streaming list), the events up
    /// to the initial-events-end bookmark are the current state: they are gathered and stored
    /// as one list, then the same stream goes on as the watch.
    async fn consume<T: Wire<K>>(
        &self,
        scope: usize,
        mut stream: WatchStream<T>,
        ctx: &CancellationToken,
        resource_version: &mut Option<String>,
        mut initial: Option<InitialEvents<K>>,
    ) -> WatchEnd {
        loop {
            let event = tokio::select! {
                _ = ctx.cancelled() => return WatchEnd::Cancelled,
                event = stream.next() => event,
            };
            let event = match event {
                None if initial.is_some() => {
                    return WatchEnd::Failed(
                        "the watch ended before the initial events did".into(),
                    );
                }
                None => return WatchEnd::Closed,
                Some(Err(e)) if is_gone(&e) => return WatchEnd::Gone,
                Some(Err(e)) => return WatchEnd::Failed(e.to_string()),
                Some(Ok(event)) => event,
            };
            match event {
                WatchEvent::Added(mut obj) | WatchEvent::Modified(mut obj) => {
                    advance(resource_version, obj.take_resource_version());
                    let entry = obj.entry(self, scope);
                    match &mut initial {
                        Some(buffer) => buffer.upsert(entry),
                        None => self.upsert(entry),
                    }
                }
                WatchEvent::Deleted(mut obj) => {
                    advance(resource_version, obj.take_resource_version());
                    let entry = obj.gone(self, scope);
                    match &mut initial {
                        Some(buffer) => buffer.remove(&entry.key),
                        None => self.delete(entry),
                    }
                }
                WatchEvent::Bookmark(bookmark) => {
                    let end = bookmark
                        .metadata
                        .annotations
                        .get(INITIAL_EVENTS_END)
                        .is_some_and(|v| v == "true");
                    *resource_version = Some(bookmark.metadata.resource_version);
                    if end && let Some(buffer) = initial.take() {
                        self.replace(scope, buffer.into_entries());
                    }
                }
                WatchEvent::Error(status) if status.code == 410 => return WatchEnd::Gone,
                WatchEvent::Error(status)
                    if initial.is_some() && refuses_streaming(status.code) =>
                {
                    return WatchEnd::StreamingRefused(status.message.clone());
                }
                WatchEvent::Error(status) => return WatchEnd::Failed(status.message.clone()),
            }
        }
    }
}

/// A streaming list's initial events, in arrival order; a later event for a key replaces the
/// earlier one in place. The index finds an entry by its key without holding a second copy
/// of every key.
struct InitialEvents<K> {
    entries: Vec<Option<Entry<K>>>,
    /// Positions in `entries` of the live ones, hashed by their keys.
    positions: hashbrown::HashTable<usize>,
    hasher: foldhash::fast::RandomState,
}

impl<K> Default for InitialEvents<K> {
    fn default() -> Self {
        InitialEvents {
            entries: Vec::new(),
            positions: hashbrown::HashTable::new(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }
}

impl<K> InitialEvents<K> {
    fn upsert(&mut self, entry: Entry<K>) {
        let hash = self.hasher.hash_one(&entry.key);
        let entries = &mut self.entries;
        let (hasher, at) = (&self.hasher, entries.len());
        match self.positions.entry(
            hash,
            |&i| entries[i].as_ref().is_some_and(|e| e.key == entry.key),
            |&i| entries[i].as_ref().map_or(0, |e| hasher.hash_one(&e.key)),
        ) {
            hashbrown::hash_table::Entry::Occupied(found) => entries[*found.get()] = Some(entry),
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert(at);
                entries.push(Some(entry));
            }
        }
    }

    fn remove(&mut self, key: &ObjectKey) {
        let hash = self.hasher.hash_one(key);
        let entries = &mut self.entries;
        if let Ok(found) = self.positions.find_entry(hash, |&i| {
            entries[i].as_ref().is_some_and(|e| &e.key == key)
        }) {
            let (at, _) = found.remove();
            entries[at] = None;
        }
    }

    fn into_entries(self) -> Vec<Entry<K>> {
        self.entries.into_iter().flatten().collect()
    }
}

/// The annotation on the bookmark that ends a streaming list's initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// Whether a watch with `sendInitialEvents` failed because the server does not support it
/// (400 BadRequest, 403, or 422 Invalid "... forbidden ... unless the WatchList feature gate is
/// enabled").
fn refuses_streaming(code: u16) -> bool {
    matches!(code, 400 | 403 | 422)
}

/// Moves the resume point to an event's object's resourceVersion.
fn advance(resource_version: &mut Option<String>, rv: Option<String>) {
    if rv.is_some() {
        *resource_version = rv;
    }
}

/// Whether a kube-client error is a 410 Gone (expired resourceVersion or continue token).
fn is_gone(e: &kube_client::Error) -> bool {
    matches!(e, kube_client::Error::Api(status) if status.code == 410)
}

/// `period` times a random factor in [0.9, 1.1).
pub(super) fn jitter(period: Duration) -> Duration {
    period.mul_f64(0.9 + 0.2 * rand_unit())
}

fn watch_timeout(min: Duration) -> u32 {
    (min.as_secs_f64() * (1.0 + rand_unit())) as u32
}

/// A number in [0, 1) without a dependency on a random number crate: the low bits of a hash
/// of the current time and a counter are random enough for jitter.
fn rand_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Sleeps for `d`; false when `ctx` was cancelled first.
pub(super) async fn sleep_or_cancel(ctx: &CancellationToken, d: Duration) -> bool {
    tokio::select! {
        _ = ctx.cancelled() => false,
        _ = tokio::time::sleep(d) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::store::Slot;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn entry(name: &str, tag: &str) -> Entry<ConfigMap> {
        Entry {
            key: ObjectKey::new("ns", name),
            slot: Slot::Encoded(tag.as_bytes().into()),
            typed: None,
        }
    }

    fn order(events: InitialEvents<ConfigMap>) -> Vec<String> {
        events
            .into_entries()
            .into_iter()
            .map(|e| match e.slot {
                Slot::Encoded(tag) => format!("{} {}", e.key.name, String::from_utf8_lossy(&tag)),
                Slot::Shared(_) => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn initial_events_keep_arrival_order_replace_in_place_and_forget_removed_keys() {
        let mut events = InitialEvents::default();
        for name in ["a", "b", "c"] {
            events.upsert(entry(name, "1"));
        }
        events.remove(&ObjectKey::new("ns", "b"));
        events.remove(&ObjectKey::new("ns", "missing"));
        events.upsert(entry("a", "2"));
        events.upsert(entry("b", "3"));
        events.upsert(entry("b", "4"));
        assert_eq!(order(events), ["a 2", "c 1", "b 4"]);
        // Many keys: every one found again (the table grows and rehashes).
        let mut events = InitialEvents::default();
        for i in 0..1000 {
            events.upsert(entry(&format!("o{i}"), "1"));
        }
        for i in (0..1000).step_by(2) {
            events.upsert(entry(&format!("o{i}"), "2"));
        }
        let all = order(events);
        assert_eq!(all.len(), 1000);
        assert_eq!(all[0], "o0 2");
        assert_eq!(all[1], "o1 1");
    }
}
