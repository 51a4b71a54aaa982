//! The recorder's memory of recent Events: which Event an identical record folds into.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use parking_lot::Mutex;
use tokio::time::Instant;

use super::record::{EventRecord, EventType, Reporter};

/// What makes two Events identical (see the module docs): everything but times and counts,
/// with object references compared without their `resourceVersion`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Key {
    type_: EventType,
    reason: String,
    action: String,
    note: String,
    reporter: Reporter,
    regarding: RefKey,
    related: Option<RefKey>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct RefKey {
    api_version: Option<String>,
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    uid: Option<String>,
    field_path: Option<String>,
}

impl From<&ObjectReference> for RefKey {
    fn from(r: &ObjectReference) -> Self {
        RefKey {
            api_version: r.api_version.clone(),
            kind: r.kind.clone(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            uid: r.uid.clone(),
            field_path: r.field_path.clone(),
        }
    }
}

impl Key {
    pub(super) fn new(
        reporter: &Reporter,
        record: &EventRecord,
        note: &str,
        regarding: &ObjectReference,
    ) -> Self {
        Key {
            type_: record.type_,
            reason: record.reason.clone(),
            action: record.action.clone(),
            note: note.to_string(),
            reporter: reporter.clone(),
            regarding: regarding.into(),
            related: record.secondary.as_ref().map(RefKey::from),
        }
    }
}

/// An Event written, and how often it was seen.
#[derive(Debug)]
pub(super) struct Series {
    pub(super) namespace: String,
    pub(super) name: String,
    /// 1 for a new Event, then the Event's `series.count`.
    pub(super) count: i32,
    last_observed: Instant,
}

impl Series {
    pub(super) fn new(namespace: String, name: String) -> Self {
        Series {
            namespace,
            name,
            count: 1,
            last_observed: Instant::now(),
        }
    }

    pub(super) fn repeated(&mut self, count: i32) {
        self.count = count;
        self.last_observed = Instant::now();
    }
}

/// One key's Event. The async lock serialises the writes for one key, so concurrent
/// repetitions count one by one and never race a creation.
pub(super) type Slot = Arc<tokio::sync::Mutex<Option<Series>>>;

/// At most `capacity` slots; when full, the one observed longest ago goes.
pub(super) struct Cache {
    slots: Mutex<HashMap<Key, Slot>>,
    capacity: usize,
    window: Duration,
}

impl Cache {
    pub(super) fn new(capacity: usize, window: Duration) -> Self {
        Cache {
            slots: Mutex::new(HashMap::new()),
            capacity,
            window,
        }
    }

    /// Whether a repetition now still belongs to `series`.
    pub(super) fn in_window(&self, series: &Series) -> bool {
        series.last_observed.elapsed() < self.window
    }

    /// The slot for `key`, made (evicting another if full) when new.
    pub(super) fn slot(&self, key: Key) -> Slot {
        let mut slots = self.slots.lock();
        if let Some(slot) = slots.get(&key) {
            return slot.clone();
        }
        if slots.len() >= self.capacity {
            evict(&mut slots, self.window);
        }
        slots.entry(key).or_default().clone()
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.slots.lock().len()
    }
}

/// Drops every slot out of its window (and those whose creation failed), or else the one
/// observed longest ago. Slots being written (locked) stay.
fn evict(slots: &mut HashMap<Key, Slot>, window: Duration) {
    /// `None` when locked (being written), `Some(None)` when empty.
    fn observed(slot: &Slot) -> Option<Option<Instant>> {
        let series = slot.try_lock().ok()?;
        Some(series.as_ref().map(|s| s.last_observed))
    }
    let before = slots.len();
    slots.retain(|_, slot| match observed(slot) {
        None => true,
        Some(None) => false,
        Some(Some(at)) => at.elapsed() < window,
    });
    if slots.len() < before {
        return;
    }
    let oldest = slots
        .iter()
        .filter_map(|(key, slot)| Some((observed(slot)??, key)))
        .min_by_key(|(at, _)| *at)
        .map(|(_, key)| key.clone());
    if let Some(key) = oldest {
        slots.remove(&key);
    }
}
