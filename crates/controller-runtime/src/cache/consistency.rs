//! Reads that see your own writes: after a [`Client`](crate::client::Client) writes an object,
//! a cached read of it in the same process returns that write or something newer, instead of
//! what the informer held before the write reached it (controller-runtime issue #3320, the
//! most reported surprise of both runtimes: duplicate creates, lost status, needless 409s).
//!
//! How: every successful write (create, update, patch, server-side apply, the `status`
//! subresource, delete) records the object's new `resourceVersion` (and uid) in a small table
//! shared by the client and the cache, keyed by `apiVersion/Kind` and [`ObjectKey`]. A cached
//! get of a recorded object waits until the informer's store holds that resourceVersion or a
//! newer one (for a delete: until the object is gone, or newer); a cached list waits so for
//! every recorded object it could return. The wait is bounded
//! ([`ReadYourWrites::with_timeout`], 5 s by default) and ends in
//! [`Error::ReadYourWritesTimeout`](super::Error::ReadYourWritesTimeout) rather than a stale
//! answer. An entry is dropped as soon as the informer stores the write (it checks the table
//! on every event it stores; one atomic load when the table is empty), or as soon as its watch
//! has passed the write's resourceVersion (watch events come in order, so the store then holds
//! the write or what followed it, e.g. the object deleted again), so the table holds only the
//! writes the informer has not seen yet.
//!
//! resourceVersions are compared as integers, as the informer receives them; Kubernetes calls
//! them opaque, but every API server (etcd's revisions, the embedded server's counter) makes
//! them increasing integers. A write whose resourceVersion does not parse, and a write the
//! informer would never hold (another namespace, a label selector it does not match, a
//! field selector the cache cannot evaluate), is not recorded: its reads do not wait.
//!
//! It is on by default: the cost on a cached get is one atomic load while nothing is pending
//! (BENCHMARKS.md, "read your own writes"). Turn it off, or change the bound, with
//! [`CacheOptions::with_read_your_writes`](super::CacheOptions::with_read_your_writes).
//!
//! Limits: only writes made through this process's [`Client`](crate::client::Client) on the
//! same [`Cache`](super::Cache) are known; when one kind is cached by two informers (typed and
//! metadata-only), the entry is dropped when the first of them stores the write.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use crate::ObjectKey;

/// The default of [`ReadYourWrites::with_timeout`].
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether cached reads wait to see this process's own writes, and for how long (see the
/// [`cache`](crate::cache) module docs). On by default, with a 5 s bound.
///
/// ```
/// use std::time::Duration;
/// use controller_runtime::cache::{CacheOptions, ReadYourWrites};
///
/// // The default: on, reads wait up to 5 s for the informer to see a write.
/// let options = CacheOptions::default();
/// // A longer bound for a slow API server.
/// let options = CacheOptions::default()
///     .with_read_your_writes(ReadYourWrites::default().with_timeout(Duration::from_secs(30)));
/// // Off: reads answer from the cache at once, as controller-runtime does.
/// let options = CacheOptions::default().with_read_your_writes(ReadYourWrites::disabled());
/// # let _ = options;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadYourWrites {
    pub(crate) enabled: bool,
    pub(crate) timeout: Duration,
}

impl Default for ReadYourWrites {
    fn default() -> Self {
        ReadYourWrites {
            enabled: true,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl ReadYourWrites {
    /// Reads answer from the cache at once, whatever this process wrote (controller-runtime's
    /// behaviour).
    pub fn disabled() -> Self {
        ReadYourWrites {
            enabled: false,
            ..Self::default()
        }
    }

    /// Whether reads wait for this process's writes (default: true).
    pub fn with_enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// How long a cached read waits for the informer to store a write this process made
    /// before it fails with
    /// [`Error::ReadYourWritesTimeout`](super::Error::ReadYourWritesTimeout). Default: 5 s,
    /// far above an informer's usual lag (milliseconds), short enough that a reconcile stuck
    /// on a lost watch fails and is retried with backoff rather than holding a worker.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Whether reads wait for this process's writes.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// How long a read waits.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// A write the informer must see before a read of its object may answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Written {
    /// The object's resourceVersion after the write; `None` for a delete answered with a
    /// `Status`, which carries none.
    pub(crate) resource_version: Option<u64>,
    /// The object's uid.
    pub(crate) uid: Option<String>,
    /// A delete: the object must be gone (or be a newer one).
    pub(crate) gone: bool,
}

/// What an informer holds, or last did, for one key.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Seen<'a> {
    /// The store holds the object at this resourceVersion.
    Present {
        resource_version: Option<&'a str>,
        uid: Option<&'a str>,
    },
    /// The informer just removed the object, last seen at this resourceVersion.
    Deleted {
        resource_version: Option<&'a str>,
        uid: Option<&'a str>,
    },
    /// The store does not hold the object.
    Absent,
}

impl Written {
    /// A write that left the object at `resource_version`; `None` when that does not parse as
    /// an integer (nothing to compare: reads do not wait).
    pub(crate) fn object(resource_version: Option<&str>, uid: Option<&str>) -> Option<Self> {
        Some(Written {
            resource_version: Some(parse(resource_version)?),
            uid: uid.map(String::from),
            gone: false,
        })
    }

    /// A delete; `resource_version` is the answered object's (a deleted object, or one marked
    /// for deletion), `None` for a `Status` answer, when the uid alone tells the object.
    pub(crate) fn deleted(resource_version: Option<&str>, uid: Option<&str>) -> Option<Self> {
        let resource_version = parse(resource_version);
        if resource_version.is_none() && uid.is_none_or(str::is_empty) {
            return None;
        }
        Some(Written {
            resource_version,
            uid: uid.map(String::from),
            gone: true,
        })
    }

    /// Whether what an informer holds is this write or newer.
    pub(crate) fn seen_in(&self, seen: Seen<'_>) -> bool {
        let newer = |rv: Option<&str>| match (self.resource_version, parse(rv)) {
            (Some(written), Some(seen)) => Some(seen >= written),
            _ => None,
        };
        let other_uid = |uid: Option<&str>| match (self.uid.as_deref(), uid) {
            (Some(written), Some(seen)) => written != seen,
            _ => false,
        };
        match seen {
            Seen::Absent => self.gone,
            Seen::Present {
                resource_version,
                uid,
            } => newer(resource_version).unwrap_or_else(|| self.gone && other_uid(uid)),
            // Removed from the store: a delete is seen, and so is any write the removed object
            // had in its history (its last resourceVersion is at least the write's).
            Seen::Deleted {
                resource_version,
                uid,
            } => {
                if self.gone && !other_uid(uid) {
                    return true;
                }
                newer(resource_version).unwrap_or(self.gone)
            }
        }
    }
}

fn parse(resource_version: Option<&str>) -> Option<u64> {
    resource_version?.parse().ok()
}

/// The writes informers have not stored yet, by `apiVersion/Kind` then key. Shared by a cache
/// and every client on it.
#[derive(Default)]
pub(crate) struct WrittenVersions {
    /// Entries in `table`: reads and informers skip the lock while it is 0.
    len: AtomicUsize,
    table: Mutex<HashMap<String, HashMap<ObjectKey, Written>>>,
}

impl WrittenVersions {
    /// Whether nothing is pending (one atomic load).
    pub(crate) fn is_empty(&self) -> bool {
        self.len.load(Ordering::Acquire) == 0
    }

    /// The number of pending writes.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    /// Records `written` for `key` unless `unseen` (called under the table's lock, so an
    /// informer storing the write meanwhile either sees the entry or is seen by `unseen`)
    /// says no informer still has to store it.
    pub(crate) fn record(
        &self,
        gvk: &str,
        key: &ObjectKey,
        written: Written,
        unseen: impl FnOnce(&Written) -> bool,
    ) {
        let mut table = self.table.lock();
        let pending = unseen(&written);
        let kind = match table.get_mut(gvk) {
            Some(kind) => kind,
            None if !pending => return,
            None => table.entry(gvk.to_string()).or_default(),
        };
        let before = kind.len();
        if pending {
            kind.insert(key.clone(), written);
        } else {
            // An older write of the same object is superseded by this one, already seen.
            kind.remove(key);
        }
        let after = kind.len();
        if after == 0 {
            table.remove(gvk);
        }
        self.adjust(before, after);
    }

    /// The pending write of `key`, if any.
    pub(crate) fn get(&self, gvk: &str, key: &ObjectKey) -> Option<Written> {
        if self.is_empty() {
            return None;
        }
        self.table.lock().get(gvk)?.get(key).cloned()
    }

    /// The pending writes of a kind in `namespace` (every namespace: `None`).
    pub(crate) fn in_namespace(
        &self,
        gvk: &str,
        namespace: Option<&str>,
    ) -> Vec<(ObjectKey, Written)> {
        if self.is_empty() {
            return Vec::new();
        }
        let table = self.table.lock();
        let Some(kind) = table.get(gvk) else {
            return Vec::new();
        };
        kind.iter()
            .filter(|(key, _)| namespace.is_none_or(|ns| key.namespace.as_deref() == Some(ns)))
            .map(|(key, written)| (key.clone(), written.clone()))
            .collect()
    }

    /// Whether `written` is still the pending write of `key`.
    pub(crate) fn is_pending(&self, gvk: &str, key: &ObjectKey, written: &Written) -> bool {
        if self.is_empty() {
            return false;
        }
        self.table
            .lock()
            .get(gvk)
            .and_then(|kind| kind.get(key))
            .is_some_and(|w| w == written)
    }

    /// Drops the pending write of `key` if `seen` says the informer holds it now (`seen` is
    /// only called when there is one). Informers call this for every object they store or
    /// remove.
    pub(crate) fn settle(&self, gvk: &str, key: &ObjectKey, seen: impl FnOnce(&Written) -> bool) {
        if self.is_empty() {
            return;
        }
        let mut table = self.table.lock();
        let Some(kind) = table.get_mut(gvk) else {
            return;
        };
        if kind.get(key).is_some_and(seen) {
            kind.remove(key);
            if kind.is_empty() {
                table.remove(gvk);
            }
            self.len.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Drops every pending write of a kind that `seen` says the informer holds now (after a
    /// relist).
    pub(crate) fn settle_all(&self, gvk: &str, mut seen: impl FnMut(&ObjectKey, &Written) -> bool) {
        if self.is_empty() {
            return;
        }
        let mut table = self.table.lock();
        let Some(kind) = table.get_mut(gvk) else {
            return;
        };
        let before = kind.len();
        kind.retain(|key, written| !seen(key, written));
        let after = kind.len();
        if after == 0 {
            table.remove(gvk);
        }
        self.adjust(before, after);
    }

    fn adjust(&self, before: usize, after: usize) {
        if after > before {
            self.len.fetch_add(after - before, Ordering::AcqRel);
        } else if before > after {
            self.len.fetch_sub(before - after, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn present(rv: &str) -> Seen<'_> {
        Seen::Present {
            resource_version: Some(rv),
            uid: Some("u1"),
        }
    }

    #[test]
    fn a_write_is_seen_at_its_resource_version_or_newer() {
        let w = Written::object(Some("10"), Some("u1")).unwrap();
        assert!(!w.seen_in(Seen::Absent));
        assert!(!w.seen_in(present("9")));
        assert!(w.seen_in(present("10")));
        assert!(w.seen_in(present("11")));
        // Removed later: the write was part of the removed object's history.
        let deleted = |rv| Seen::Deleted {
            resource_version: Some(rv),
            uid: Some("u0"),
        };
        assert!(w.seen_in(deleted("12")));
        // The delete of an older object of the same name is not.
        assert!(!w.seen_in(deleted("8")));
        assert_eq!(Written::object(Some("not-a-number"), None), None);
    }

    #[test]
    fn a_delete_is_seen_when_the_object_is_gone_or_newer() {
        let marked = Written::deleted(Some("20"), Some("u1")).unwrap();
        assert!(marked.seen_in(Seen::Absent));
        assert!(!marked.seen_in(present("19")));
        assert!(marked.seen_in(present("20")));
        // A Status answer: only the uid.
        let status = Written::deleted(None, Some("u1")).unwrap();
        assert!(!status.seen_in(present("19")));
        assert!(status.seen_in(Seen::Present {
            resource_version: Some("30"),
            uid: Some("u2"),
        }));
        assert!(status.seen_in(Seen::Deleted {
            resource_version: Some("19"),
            uid: Some("u1"),
        }));
        assert_eq!(Written::deleted(None, None), None);
    }

    #[test]
    fn the_table_keeps_only_unseen_writes() {
        let table = WrittenVersions::default();
        let key = ObjectKey::new("ns", "a");
        let w = Written::object(Some("5"), None).unwrap();
        // Already stored by the informer: not recorded.
        table.record("v1/ConfigMap", &key, w.clone(), |_| false);
        assert!(table.is_empty());
        table.record("v1/ConfigMap", &key, w.clone(), |_| true);
        assert_eq!(table.len(), 1);
        assert_eq!(table.get("v1/ConfigMap", &key), Some(w.clone()));
        assert!(table.get("v1/Secret", &key).is_none());
        assert_eq!(table.in_namespace("v1/ConfigMap", Some("ns")).len(), 1);
        assert!(table.in_namespace("v1/ConfigMap", Some("other")).is_empty());
        // An event for another key settles nothing; one for the key that sees it does.
        table.settle("v1/ConfigMap", &ObjectKey::new("ns", "b"), |_| true);
        assert_eq!(table.len(), 1);
        table.settle("v1/ConfigMap", &key, |w| w.seen_in(present("4")));
        assert!(table.is_pending("v1/ConfigMap", &key, &w));
        table.settle("v1/ConfigMap", &key, |w| w.seen_in(present("5")));
        assert!(table.is_empty());
        assert!(!table.is_pending("v1/ConfigMap", &key, &w));
        // A newer write that is already seen drops the older pending one.
        table.record("v1/ConfigMap", &key, w.clone(), |_| true);
        table.record(
            "v1/ConfigMap",
            &key,
            Written::object(Some("6"), None).unwrap(),
            |_| false,
        );
        assert!(table.is_empty());
    }
}
