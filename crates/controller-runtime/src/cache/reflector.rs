//! The reflector: one scope's list+watch loop (client-go's `Reflector`), its own component.
//!
//! It fills a store with a streaming list (a watch with `sendInitialEvents=true`, whose initial
//! events end with a bookmark) where the server offers one, else with paginated lists; then
//! watches from the list's resourceVersion with bookmarks and a random 5 to 10 minute timeout,
//! watching again from the last resourceVersion it saw whenever a watch ends. On 410 Gone it
//! lists again. Connection failures back off from 800 ms to 30 s; a refusal carrying a
//! `Retry-After` (a 429's `details.retryAfterSeconds`) waits at least that long.
//!
//! A streaming list whose initial-events-end bookmark does not come within
//! `ReflectorConfig::initial_events_timeout` is abandoned for a paginated list (logged once,
//! counted in `controller_runtime_informer_streaming_list_fallbacks_total`), and that reflector
//! lists from then on, as after a refusal: a real kube-apiserver (1.28 with etcd 3.4 and the
//! WatchList gate) withholds the bookmark of a quiet resource until some write to it moves its
//! watch cache, so a second streaming list of the same quiet resource would stall again.
//!
//! A reflector knows nothing of informers: it writes what it lists and watches through a
//! [`StoreWriter`] (a full list, an upsert, a delete), which the informer hands it for one
//! scope and which keeps the store and tells the handlers.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use kube_client::api::{ListParams, WatchParams};
use kube_client::core::WatchEvent;
use kube_core::Resource;
use tokio_util::sync::CancellationToken;

use parking_lot::Mutex;

use super::backoff::{Backoff, BackoffConfig, rand_unit, sleep_or_cancel};
use super::error::ListWatchError;
use super::list_watch::{ListWatch, WatchStream};
use super::raw::RawObject;
use super::store::Entry;
use crate::ObjectKey;

/// What a reflector lists and watches: typed objects, or [`RawObject`]s. It reads their
/// resourceVersion to know where to resume.
pub(super) trait Versioned: Clone + Send + Sync + 'static {
    /// The object's resourceVersion (a raw object hands it over).
    fn take_resource_version(&mut self) -> Option<String>;

    /// Makes the object hold nothing shared with other objects, before it is kept from a watch
    /// event: see [`RawObject::detach`]. Typed objects share nothing.
    fn detach(&mut self) {}
}

impl<K: Resource + Clone + Send + Sync + 'static> Versioned for K {
    fn take_resource_version(&mut self) -> Option<String> {
        self.meta().resource_version.clone()
    }
}

impl Versioned for RawObject {
    fn take_resource_version(&mut self) -> Option<String> {
        RawObject::take_resource_version(self)
    }

    fn detach(&mut self) {
        RawObject::detach(self)
    }
}

/// Where a reflector writes what it lists and watches as objects of type `T`, into a store of
/// `K` (client-go's reflector store). An informer hands one to each scope's reflector: it
/// converts objects into store entries (transformed, encoded for a compact store), keeps the
/// store, and tells the handlers.
pub(super) trait StoreWriter<K, T>: Sync {
    /// The entry stored for a listed or watched object.
    fn entry(&self, obj: T) -> Entry<K>;
    /// The entry of a deleted object: only its key and typed object are used.
    fn gone(&self, obj: T) -> Entry<K>;
    /// A complete list of the reflector's objects: replaces them in the store. The first one
    /// makes the reflector synced.
    fn replace(&self, entries: Vec<Entry<K>>);
    /// An object added or modified.
    fn upsert(&self, entry: Entry<K>);
    /// An object deleted.
    fn delete(&self, entry: Entry<K>);
    /// The store now holds everything the server had at `resource_version` for this
    /// reflector (after a list, a watch event or a bookmark).
    fn caught_up(&self, resource_version: &str) {
        let _ = resource_version;
    }
}

/// How a reflector lists and watches.
#[derive(Clone, Debug)]
pub(super) struct ReflectorConfig {
    /// The namespace listed and watched (for logs: the list-watch is already scoped to it).
    pub(super) namespace: Option<String>,
    /// Only objects matching this label selector.
    pub(super) label_selector: Option<String>,
    /// Only objects matching this field selector.
    pub(super) field_selector: Option<String>,
    /// Objects per list page.
    pub(super) page_size: u32,
    /// Watches time out after a random duration between this and twice this.
    pub(super) min_watch_timeout: Duration,
    /// Try a streaming list before paginated lists.
    pub(super) streaming_list: bool,
    /// How long a streaming list may wait for its initial-events-end bookmark before it is
    /// abandoned for a paginated list.
    pub(super) initial_events_timeout: Duration,
    /// Reconnect backoff.
    pub(super) backoff: BackoffConfig,
}

/// One scope's list+watch loop: its settings, and what it learnt of the server across runs.
pub(super) struct Reflector {
    config: ReflectorConfig,
    /// Set once the server refused a streaming list, or let one wait longer than
    /// `initial_events_timeout` for its initial-events-end bookmark: paginated lists from then on.
    streaming_refused: AtomicBool,
    /// The last list or watch failure, until a list or watch succeeds again.
    last_error: Mutex<Option<ListWatchError>>,
}

/// Why one watch ended.
enum WatchEnd {
    Cancelled,
    /// The server closed it (timeout, or the server's own reasons): watch again.
    Closed,
    /// 410 Gone: list again.
    Gone,
    /// A connection or decoding failure, or a refusal: back off, then watch again.
    Failed(ListWatchError),
    /// The server does not do streaming lists: list instead from now on.
    StreamingRefused(String),
    /// The initial-events-end bookmark did not come in time: list instead from now on.
    InitialEventsLate,
}

impl Reflector {
    /// A reflector that has not run yet.
    pub(super) fn new(config: ReflectorConfig) -> Self {
        Reflector {
            config,
            streaming_refused: AtomicBool::new(false),
            last_error: Mutex::new(None),
        }
    }

    /// The last list or watch failure, until a list or watch succeeds again.
    pub(super) fn last_error(&self) -> Option<ListWatchError> {
        self.last_error.lock().clone()
    }

    /// Records a failure. It is logged as a warning when it differs from the last one, so a
    /// reflector retrying the same refusal every backoff logs it once, not once per retry.
    fn failed(&self, error: ListWatchError) {
        let error = error.in_namespace(self.config.namespace.clone());
        let mut last = self.last_error.lock();
        if last.as_ref() != Some(&error) {
            tracing::warn!(error = %error, "informer {} failed", error.verb);
        } else {
            tracing::debug!(error = %error, "informer {} failed again", error.verb);
        }
        *last = Some(error);
    }

    /// A list or watch succeeded: the last failure is over.
    fn succeeded(&self) {
        if let Some(was) = self.last_error.lock().take() {
            tracing::info!(namespace = ?self.config.namespace, after = %was, "informer {} works again", was.verb);
        }
    }

    /// Lists and watches through `list_watch`, writing what it sees through `writer`, until
    /// `ctx` is cancelled.
    pub(super) async fn run<K, T, W>(
        &self,
        list_watch: &dyn ListWatch<T>,
        writer: &W,
        ctx: &CancellationToken,
    ) where
        T: Versioned,
        W: StoreWriter<K, T>,
    {
        let config = &self.config;
        let mut backoff = Backoff::new(config.backoff.clone());
        let mut resource_version: Option<String> = None;
        loop {
            let streaming = resource_version.is_none()
                && config.streaming_list
                && !self.streaming_refused.load(Ordering::Acquire);
            if resource_version.is_none() && !streaming {
                let listed = tokio::select! {
                    _ = ctx.cancelled() => return,
                    listed = self.list_all(list_watch, writer) => listed,
                };
                match listed {
                    Ok(rv) => {
                        self.succeeded();
                        writer.caught_up(&rv);
                        resource_version = Some(rv);
                    }
                    Err(e) => {
                        let e = ListWatchError::from_client("list", &e);
                        let delay = retry_delay(&mut backoff, &e);
                        self.failed(e);
                        if !sleep_or_cancel(ctx, delay).await {
                            return;
                        }
                    }
                }
                continue;
            }
            // A streaming list is a watch from "now" whose first events are the current state.
            let params = WatchParams {
                label_selector: config.label_selector.clone(),
                field_selector: config.field_selector.clone(),
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
                    self.succeeded();
                    let deadline = tokio::time::Instant::now() + config.initial_events_timeout;
                    consume(
                        writer,
                        stream,
                        ctx,
                        &mut resource_version,
                        initial,
                        deadline,
                    )
                    .await
                }
                Err(kube_client::Error::Api(status))
                    if streaming && refuses_streaming(status.code) =>
                {
                    WatchEnd::StreamingRefused(status.message)
                }
                Err(e) if is_gone(&e) => WatchEnd::Gone,
                Err(e) => WatchEnd::Failed(ListWatchError::from_client("watch", &e)),
            };
            match end {
                WatchEnd::Cancelled => return,
                WatchEnd::Closed => {}
                WatchEnd::Gone => {
                    tracing::debug!(namespace = ?config.namespace, "watch history too old (410): listing again");
                    resource_version = None;
                }
                WatchEnd::StreamingRefused(why) => {
                    tracing::info!(%why, "the server refuses streaming lists; listing instead");
                    self.streaming_refused.store(true, Ordering::Release);
                }
                WatchEnd::InitialEventsLate => {
                    tracing::warn!(
                        namespace = ?config.namespace,
                        timeout = ?config.initial_events_timeout,
                        "a streaming list got no initial-events-end bookmark in time; \
                         falling back to paginated lists for this informer"
                    );
                    crate::metrics::STREAMING_LIST_FALLBACKS.inc();
                    self.streaming_refused.store(true, Ordering::Release);
                    // Whatever the abandoned watch saw is not a complete list.
                    resource_version = None;
                }
                WatchEnd::Failed(e) => {
                    let delay = retry_delay(&mut backoff, &e);
                    self.failed(e);
                    if !sleep_or_cancel(ctx, delay).await {
                        return;
                    }
                }
            }
        }
    }

    /// Lists every page and writes the whole list. Returns the list's resourceVersion.
    async fn list_all<K, T, W>(
        &self,
        list_watch: &dyn ListWatch<T>,
        writer: &W,
    ) -> Result<String, kube_client::Error>
    where
        T: Versioned,
        W: StoreWriter<K, T>,
    {
        let config = &self.config;
        let mut objects = Vec::new();
        let mut continue_token: Option<String> = None;
        let resource_version = loop {
            let mut params = ListParams::default().limit(config.page_size);
            params.label_selector = config.label_selector.clone();
            params.field_selector = config.field_selector.clone();
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
            objects.extend(page.items.into_iter().map(|o| writer.entry(o)));
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => continue_token = Some(token),
                None => break page.metadata.resource_version.unwrap_or_default(),
            }
        };
        writer.replace(objects);
        Ok(resource_version)
    }
}

/// Applies a watch's events until it ends. With `initial` (a streaming list), the events up to
/// the initial-events-end bookmark are the current state: they are gathered and written as one
/// list, then the same stream goes on as the watch. Without that bookmark by `deadline`, the
/// watch is abandoned ([`WatchEnd::InitialEventsLate`]).
async fn consume<K, T, W>(
    writer: &W,
    mut stream: WatchStream<T>,
    ctx: &CancellationToken,
    resource_version: &mut Option<String>,
    mut initial: Option<InitialEvents<K>>,
    deadline: tokio::time::Instant,
) -> WatchEnd
where
    T: Versioned,
    W: StoreWriter<K, T>,
{
    let late = tokio::time::sleep_until(deadline);
    tokio::pin!(late);
    // A received chunk can hold thousands of events that decode without waiting for anything:
    // the informer yields now and then rather than hold its thread for the whole chunk (see
    // `coop`).
    let mut slice = crate::coop::Slice::new();
    loop {
        let waiting_for_initial = initial.is_some();
        let next = slice
            .step(async {
                tokio::select! {
                    _ = ctx.cancelled() => Next::Cancelled,
                    _ = &mut late, if waiting_for_initial => Next::Late,
                    event = stream.next() => Next::Event(event),
                }
            })
            .await;
        let event = match next {
            Next::Cancelled => return WatchEnd::Cancelled,
            Next::Late => return WatchEnd::InitialEventsLate,
            Next::Event(event) => event,
        };
        let event = match event {
            None if initial.is_some() => {
                return WatchEnd::Failed(ListWatchError::new(
                    "watch",
                    None,
                    "the watch ended before the initial events did",
                ));
            }
            None => return WatchEnd::Closed,
            Some(Err(e)) if is_gone(&e) => return WatchEnd::Gone,
            Some(Err(e)) => return WatchEnd::Failed(ListWatchError::from_client("watch", &e)),
            Some(Ok(event)) => event,
        };
        match event {
            WatchEvent::Added(mut obj) | WatchEvent::Modified(mut obj) => {
                advance(resource_version, obj.take_resource_version());
                match &mut initial {
                    Some(buffer) => buffer.upsert(writer.entry(obj)),
                    None => {
                        obj.detach();
                        writer.upsert(writer.entry(obj));
                        if let Some(rv) = resource_version.as_deref() {
                            writer.caught_up(rv);
                        }
                    }
                }
            }
            WatchEvent::Deleted(mut obj) => {
                advance(resource_version, obj.take_resource_version());
                let entry = writer.gone(obj);
                match &mut initial {
                    Some(buffer) => buffer.remove(&entry.key),
                    None => {
                        writer.delete(entry);
                        if let Some(rv) = resource_version.as_deref() {
                            writer.caught_up(rv);
                        }
                    }
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
                    writer.replace(buffer.into_entries());
                }
                if initial.is_none()
                    && let Some(rv) = resource_version.as_deref()
                {
                    writer.caught_up(rv);
                }
            }
            WatchEvent::Error(status) if status.code == 410 => return WatchEnd::Gone,
            WatchEvent::Error(status) if initial.is_some() && refuses_streaming(status.code) => {
                return WatchEnd::StreamingRefused(status.message.clone());
            }
            WatchEvent::Error(status) => {
                return WatchEnd::Failed(ListWatchError::new(
                    "watch",
                    Some(status.code),
                    status.message.clone(),
                ));
            }
        }
    }
}

/// What ends a wait of [`consume`]'s.
enum Next<E> {
    Cancelled,
    Late,
    Event(E),
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

/// How long to wait after `e`: the backoff's next delay, or the server's `Retry-After` when
/// that is longer (client-go's reflector also waits for a 429's Retry-After).
fn retry_delay(backoff: &mut Backoff, e: &ListWatchError) -> Duration {
    let delay = backoff.next_delay();
    e.retry_after.map_or(delay, |asked| delay.max(asked))
}

/// Whether a kube-client error is a 410 Gone (expired resourceVersion or continue token).
fn is_gone(e: &kube_client::Error) -> bool {
    matches!(e, kube_client::Error::Api(status) if status.code == 410)
}

/// A watch's timeout in seconds: a random duration between `min` and twice `min`, so that
/// watches opened together do not all end together.
fn watch_timeout(min: Duration) -> u32 {
    (min.as_secs_f64() * (1.0 + rand_unit())) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::store::Slot;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn entry(name: &str, tag: &str) -> Entry<ConfigMap> {
        Entry {
            key: ObjectKey::new("ns", name),
            slot: Slot::Encoded(std::sync::Arc::new(crate::cache::storage::Encoded {
                bytes: bytes::Bytes::copy_from_slice(tag.as_bytes()),
            })),
            typed: None,
        }
    }

    fn order(events: InitialEvents<ConfigMap>) -> Vec<String> {
        events
            .into_entries()
            .into_iter()
            .map(|e| match e.slot {
                Slot::Encoded(tag) => {
                    format!("{} {}", e.key.name, String::from_utf8_lossy(&tag.bytes))
                }
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

    /// Records what a reflector writes, one line per call.
    #[derive(Default)]
    struct Writes(parking_lot::Mutex<Vec<String>>, tokio::sync::Notify);

    impl StoreWriter<ConfigMap, ConfigMap> for Writes {
        fn entry(&self, obj: ConfigMap) -> Entry<ConfigMap> {
            let obj = std::sync::Arc::new(obj);
            Entry {
                key: ObjectKey::of(obj.as_ref()),
                slot: Slot::Shared(obj.clone()),
                typed: Some(obj),
            }
        }
        fn gone(&self, obj: ConfigMap) -> Entry<ConfigMap> {
            self.entry(obj)
        }
        fn replace(&self, entries: Vec<Entry<ConfigMap>>) {
            let names: Vec<String> = entries.into_iter().map(|e| e.key.name).collect();
            self.write(format!("replace {}", names.join(" ")));
        }
        fn upsert(&self, entry: Entry<ConfigMap>) {
            self.write(format!("upsert {}", entry.key.name));
        }
        fn delete(&self, entry: Entry<ConfigMap>) {
            self.write(format!("delete {}", entry.key.name));
        }
    }

    impl Writes {
        fn write(&self, line: String) {
            self.0.lock().push(line);
            self.1.notify_one();
        }
    }

    /// Lists `a` and `b` at resourceVersion 5, then watches: `c` added, `a` deleted.
    struct Scripted(parking_lot::Mutex<Vec<String>>);

    impl ListWatch<ConfigMap> for Scripted {
        fn list(
            &self,
            _: ListParams,
        ) -> futures::future::BoxFuture<
            'static,
            Result<kube_client::core::ObjectList<ConfigMap>, kube_client::Error>,
        > {
            self.0.lock().push("list".into());
            let list = serde_json::from_value(serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMapList",
                "metadata": {"resourceVersion": "5"},
                "items": [cm("a", "4"), cm("b", "5")],
            }));
            Box::pin(async move { Ok(list.unwrap()) })
        }

        fn watch(
            &self,
            _: WatchParams,
            resource_version: String,
        ) -> futures::future::BoxFuture<'static, Result<WatchStream<ConfigMap>, kube_client::Error>>
        {
            self.0.lock().push(format!("watch from {resource_version}"));
            let events = [
                WatchEvent::Added(cm("c", "6")),
                WatchEvent::Deleted(cm("a", "7")),
            ];
            let stream = futures::stream::iter(events.map(Ok)).chain(futures::stream::pending());
            Box::pin(async move { Ok(stream.boxed()) })
        }
    }

    fn cm(name: &str, rv: &str) -> ConfigMap {
        ConfigMap {
            metadata: kube_core::ObjectMeta {
                namespace: Some("ns".into()),
                name: Some(name.into()),
                resource_version: Some(rv.into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_reflector_writes_its_list_and_watch_through_its_store_writer() {
        let reflector = Reflector::new(ReflectorConfig {
            namespace: Some("ns".into()),
            label_selector: None,
            field_selector: None,
            page_size: 500,
            min_watch_timeout: Duration::from_secs(300),
            streaming_list: false,
            initial_events_timeout: Duration::from_secs(10),
            backoff: BackoffConfig::default(),
        });
        let (list_watch, writes) = (Scripted(Default::default()), Writes::default());
        let ctx = CancellationToken::new();
        let stop_after_three_writes = async {
            while writes.0.lock().len() < 3 {
                writes.1.notified().await;
            }
            ctx.cancel();
        };
        tokio::join!(
            reflector.run(&list_watch, &writes, &ctx),
            stop_after_three_writes
        );
        assert_eq!(*list_watch.0.lock(), ["list", "watch from 5"]);
        assert_eq!(*writes.0.lock(), ["replace a b", "upsert c", "delete a"]);
    }

    /// A server that never ends a streaming list's initial events (a quiet resource on a real
    /// kube-apiserver): the streaming watch sends `a` and then nothing; lists answer `a` and `b`
    /// at resourceVersion 5 (the Scripted list); plain watches never end.
    struct Quiet(parking_lot::Mutex<Vec<String>>);

    impl ListWatch<ConfigMap> for Quiet {
        fn list(
            &self,
            params: ListParams,
        ) -> futures::future::BoxFuture<
            'static,
            Result<kube_client::core::ObjectList<ConfigMap>, kube_client::Error>,
        > {
            self.0.lock().push("list".into());
            Scripted(Default::default()).list(params)
        }

        fn watch(
            &self,
            params: WatchParams,
            resource_version: String,
        ) -> futures::future::BoxFuture<'static, Result<WatchStream<ConfigMap>, kube_client::Error>>
        {
            let streaming = params.send_initial_events;
            self.0.lock().push(if streaming {
                "streaming list".to_string()
            } else {
                format!("watch from {resource_version}")
            });
            let events: Vec<_> = if streaming {
                vec![Ok(WatchEvent::Added(cm("a", "4")))]
            } else {
                vec![]
            };
            let stream = futures::stream::iter(events).chain(futures::stream::pending());
            Box::pin(async move { Ok(stream.boxed()) })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_streaming_list_without_its_bookmark_in_time_falls_back_to_lists_for_good() {
        let logs = Logs::default();
        let _guard = logs.capture();
        let reflector = Reflector::new(ReflectorConfig {
            namespace: Some("ns".into()),
            label_selector: None,
            field_selector: None,
            page_size: 500,
            min_watch_timeout: Duration::from_secs(300),
            streaming_list: true,
            initial_events_timeout: Duration::from_secs(3),
            backoff: BackoffConfig::default(),
        });
        let (list_watch, writes) = (Quiet(Default::default()), Writes::default());
        let fallbacks = crate::metrics::STREAMING_LIST_FALLBACKS.get();
        let ctx = CancellationToken::new();
        let start = tokio::time::Instant::now();
        let stop_after_the_list = async {
            while writes.0.lock().is_empty() {
                writes.1.notified().await;
            }
            // Let it go on to its watch, then stop.
            tokio::time::sleep(Duration::from_secs(1)).await;
            ctx.cancel();
        };
        let (_, listed_at) = tokio::join!(reflector.run(&list_watch, &writes, &ctx), async {
            stop_after_the_list.await;
            tokio::time::Instant::now()
        });
        // Nothing of the abandoned streaming list was written; the list was, at the bound.
        assert_eq!(*writes.0.lock(), ["replace a b"]);
        assert_eq!(listed_at - start, Duration::from_secs(3 + 1));
        assert_eq!(
            *list_watch.0.lock(),
            ["streaming list", "list", "watch from 5"]
        );
        assert!(crate::metrics::STREAMING_LIST_FALLBACKS.get() > fallbacks);
        let text = logs.text();
        assert_eq!(
            text.matches("no initial-events-end bookmark in time")
                .count(),
            1,
            "{text}"
        );
        assert!(text.contains("WARN"), "{text}");

        // A relist (after a 410, say) lists again rather than streaming: the flag stays.
        let ctx = CancellationToken::new();
        list_watch.0.lock().clear();
        writes.0.lock().clear();
        let stop_after_the_list = async {
            while writes.0.lock().is_empty() {
                writes.1.notified().await;
            }
            ctx.cancel();
        };
        tokio::join!(
            reflector.run(&list_watch, &writes, &ctx),
            stop_after_the_list
        );
        assert_eq!(list_watch.0.lock()[0], "list");
    }

    /// The API server's refusal of a ServiceAccount's list, as kube-apiserver words it.
    const FORBIDDEN: &str = "configmaps is forbidden: User \"system:serviceaccount:ns:op\" cannot list resource \"configmaps\" in API group \"\" at the cluster scope";

    /// Refuses the first `refusals` lists with 403, then lists nothing; watches never end.
    struct Refusing {
        refusals: usize,
        lists: std::sync::atomic::AtomicUsize,
        /// Cancelled when the lists reach this count.
        stop_at: (usize, CancellationToken),
    }

    impl ListWatch<ConfigMap> for Refusing {
        fn list(
            &self,
            _: ListParams,
        ) -> futures::future::BoxFuture<
            'static,
            Result<kube_client::core::ObjectList<ConfigMap>, kube_client::Error>,
        > {
            let n = self.lists.fetch_add(1, Ordering::SeqCst) + 1;
            if n == self.stop_at.0 {
                self.stop_at.1.cancel();
            }
            let refused = n <= self.refusals;
            Box::pin(async move {
                if refused {
                    return Err(kube_client::Error::Api(
                        kube_core::Status::failure(FORBIDDEN, "Forbidden")
                            .with_code(403)
                            .boxed(),
                    ));
                }
                Ok(serde_json::from_value(serde_json::json!({
                    "apiVersion": "v1", "kind": "ConfigMapList",
                    "metadata": {"resourceVersion": "5"}, "items": [],
                }))
                .unwrap())
            })
        }

        fn watch(
            &self,
            _: WatchParams,
            _: String,
        ) -> futures::future::BoxFuture<'static, Result<WatchStream<ConfigMap>, kube_client::Error>>
        {
            Box::pin(async { Ok(futures::stream::pending().boxed()) })
        }
    }

    /// Throttles the first `throttled` lists with 429 and a Retry-After of 5 s, then lists
    /// nothing; records when each list came. Watches never end.
    struct Throttling {
        throttled: usize,
        lists: parking_lot::Mutex<Vec<tokio::time::Instant>>,
    }

    impl ListWatch<ConfigMap> for Throttling {
        fn list(
            &self,
            _: ListParams,
        ) -> futures::future::BoxFuture<
            'static,
            Result<kube_client::core::ObjectList<ConfigMap>, kube_client::Error>,
        > {
            let mut lists = self.lists.lock();
            lists.push(tokio::time::Instant::now());
            let throttled = lists.len() <= self.throttled;
            Box::pin(async move {
                if throttled {
                    let mut status =
                        kube_core::Status::failure("slow down", "TooManyRequests").with_code(429);
                    status.details = Some(kube_core::response::StatusDetails {
                        retry_after_seconds: 5,
                        ..serde_json::from_value(serde_json::json!({})).unwrap()
                    });
                    return Err(kube_client::Error::Api(status.boxed()));
                }
                Ok(serde_json::from_value(serde_json::json!({
                    "apiVersion": "v1", "kind": "ConfigMapList",
                    "metadata": {"resourceVersion": "5"}, "items": [],
                }))
                .unwrap())
            })
        }

        fn watch(
            &self,
            _: WatchParams,
            _: String,
        ) -> futures::future::BoxFuture<'static, Result<WatchStream<ConfigMap>, kube_client::Error>>
        {
            Box::pin(async { Ok(futures::stream::pending().boxed()) })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_throttled_list_waits_for_the_servers_retry_after_not_just_the_backoff() {
        let reflector = Reflector::new(ReflectorConfig {
            namespace: None,
            label_selector: None,
            field_selector: None,
            page_size: 500,
            min_watch_timeout: Duration::from_secs(300),
            streaming_list: false,
            initial_events_timeout: Duration::from_secs(10),
            backoff: BackoffConfig::default(),
        });
        let throttling = Throttling {
            throttled: 2,
            lists: Default::default(),
        };
        let writes = Writes::default();
        let ctx = CancellationToken::new();
        let stop_after_the_list = async {
            while writes.0.lock().is_empty() {
                writes.1.notified().await;
            }
            ctx.cancel();
        };
        tokio::join!(
            reflector.run(&throttling, &writes, &ctx),
            stop_after_the_list
        );
        let lists = throttling.lists.lock();
        assert_eq!(lists.len(), 3, "two throttled lists, then one that works");
        // The backoff alone would retry after 0.8 s and 1.6 s; the server asked for 5 s.
        for pair in lists.windows(2) {
            let waited = pair[1] - pair[0];
            assert!(waited >= Duration::from_secs(5), "retried after {waited:?}");
            assert!(waited < Duration::from_secs(6), "retried after {waited:?}");
        }
    }

    #[test]
    fn a_429s_retry_after_is_kept_in_the_error() {
        let mut status = kube_core::Status::failure("slow down", "TooManyRequests").with_code(429);
        status.details = Some(kube_core::response::StatusDetails {
            retry_after_seconds: 3,
            ..serde_json::from_value(serde_json::json!({})).unwrap()
        });
        let e = ListWatchError::from_client("list", &kube_client::Error::Api(status.boxed()));
        assert_eq!(e.retry_after, Some(Duration::from_secs(3)));
        let plain = kube_core::Status::failure("boom", "InternalError").with_code(500);
        let e = ListWatchError::from_client("list", &kube_client::Error::Api(plain.boxed()));
        assert_eq!(e.retry_after, None);
    }

    /// Log lines written while the guard lives (this thread only).
    #[derive(Clone, Default)]
    struct Logs(std::sync::Arc<parking_lot::Mutex<Vec<u8>>>);

    impl std::io::Write for Logs {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Logs {
        fn capture(&self) -> tracing::subscriber::DefaultGuard {
            let logs = self.clone();
            let subscriber = tracing_subscriber::fmt()
                .with_max_level(tracing::Level::INFO)
                .with_ansi(false)
                .with_writer(move || logs.clone())
                .finish();
            tracing::subscriber::set_default(subscriber)
        }

        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock()).into_owned()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_list_is_kept_as_the_last_error_and_logged_once_not_per_retry() {
        let logs = Logs::default();
        let _guard = logs.capture();
        let reflector = Reflector::new(ReflectorConfig {
            namespace: None,
            label_selector: None,
            field_selector: None,
            page_size: 500,
            min_watch_timeout: Duration::from_secs(300),
            streaming_list: false,
            initial_events_timeout: Duration::from_secs(10),
            backoff: BackoffConfig::default(),
        });
        // Six refusals (six retries with backoff), stopped at the sixth.
        let ctx = CancellationToken::new();
        let refusing = Refusing {
            refusals: 7,
            lists: Default::default(),
            stop_at: (6, ctx.clone()),
        };
        let writes = Writes::default();
        reflector.run(&refusing, &writes, &ctx).await;
        assert_eq!(refusing.lists.load(Ordering::SeqCst), 6);
        assert!(writes.0.lock().is_empty());
        let error = reflector.last_error().expect("the refusal is kept");
        assert_eq!(
            (error.verb, error.code, error.message.as_str()),
            ("list", Some(403), FORBIDDEN)
        );
        assert!(error.is_forbidden());
        assert_eq!(error.to_string(), format!("list failed (403): {FORBIDDEN}"));
        let text = logs.text();
        assert_eq!(text.matches("cannot list resource").count(), 1, "{text}");
        assert!(text.contains("WARN"), "{text}");

        // The next list succeeds: the error is over, and said to be.
        let ctx = CancellationToken::new();
        refusing.stop_at.1.cancel();
        let refusing = Refusing {
            refusals: 0,
            lists: Default::default(),
            stop_at: (usize::MAX, ctx.clone()),
        };
        let stop_after_the_list = async {
            while writes.0.lock().is_empty() {
                writes.1.notified().await;
            }
            ctx.cancel();
        };
        tokio::join!(reflector.run(&refusing, &writes, &ctx), stop_after_the_list);
        assert_eq!(reflector.last_error(), None);
        assert!(
            logs.text().contains("informer list works again"),
            "{}",
            logs.text()
        );
    }
}
