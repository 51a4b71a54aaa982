//! The informer's store: every object held once, behind an [`Arc`], filed by namespace and
//! name, with user field indexes.
//!
//! Readers get `Arc<K>`s: a get or a list never deep-copies an object, unless the store is
//! compact ([`Storage::Compact`]: objects held as their encoding, decoded on each read, unless
//! the store's bounded memo of recent reads still has the object as that encoding decoded; see
//! [`ReadMemo`](super::ReadMemo)). Index
//! lookups return the objects whose index function produced the value, in one namespace or
//! across all of them.

use std::collections::{HashMap, HashSet};

use std::sync::Arc;

use kube_core::Resource;
use parking_lot::RwLock;

use super::memo::Memo;
use super::storage::{CachedObject, Codec, Encoded, Storage};
use crate::ObjectKey;

/// A function that extracts the values an object is indexed under (controller-runtime's
/// `IndexerFunc`). Return an empty vector to leave the object out of the index.
pub type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// The namespace every index entry is also filed under, so a lookup across all namespaces is one
/// map access (controller-runtime's `__all_namespaces`).
const ALL_NAMESPACES: &str = "\u{0}all";

/// Index entries are `(namespace or ALL_NAMESPACES, value)`.
type IndexKey = (Box<str>, Box<str>);

struct Index<K> {
    func: IndexFn<K>,
    entries: HashMap<IndexKey, HashSet<ObjectKey>>,
}

/// A hash map with foldhash's per-map random seed: several times faster than SipHash on the
/// short names and namespaces the store is keyed by.
type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The namespace key of cluster-scoped objects (a namespace is never empty).
const CLUSTER: &str = "";

/// One stored object: the shared typed object, or its encoding ([`Storage::Compact`]).
pub(crate) enum Slot<K> {
    Shared(Arc<K>),
    /// Reads take a reference out of the lock and decode outside it.
    Encoded(Arc<Encoded>),
}

impl<K: Resource> Slot<K> {
    /// The heap this slot is charged for: an encoded object's bytes; a shared
    /// object's inline size and metadata strings (a lower bound: its own maps and strings are
    /// not walked).
    fn size(&self) -> usize {
        match self {
            Slot::Shared(obj) => {
                std::mem::size_of::<K>()
                    + obj.meta().name.as_ref().map_or(0, String::len)
                    + obj.meta().namespace.as_ref().map_or(0, String::len)
            }
            Slot::Encoded(entry) => entry.size(),
        }
    }
}

/// An object on its way into the store: its key, how the store will hold it, and the typed
/// object when it has been decoded (a raw object from a compact informer's list or watch
/// has not).
pub(crate) struct Entry<K> {
    pub(crate) key: ObjectKey,
    pub(crate) slot: Slot<K>,
    pub(crate) typed: Option<Arc<K>>,
}

impl<K> Clone for Slot<K> {
    fn clone(&self) -> Self {
        match self {
            Slot::Shared(obj) => Slot::Shared(obj.clone()),
            Slot::Encoded(bytes) => Slot::Encoded(bytes.clone()),
        }
    }
}

struct Inner<K> {
    /// Objects by namespace ([`CLUSTER`] for cluster-scoped ones), then by name. Each
    /// namespace is held once, not once per object, and a namespace's objects are one map, so
    /// a namespaced list needs no separate index.
    objects: Map<Box<str>, Map<Box<str>, Slot<K>>>,
    len: usize,
    /// The sum of the slots' [`Slot::size`].
    bytes: usize,
    indexes: HashMap<String, Index<K>>,
}

/// A thread-safe, indexed object store.
pub struct Store<K> {
    inner: RwLock<Inner<K>>,
    /// Set for [`Storage::Compact`].
    codec: Option<Codec<K>>,
    /// Set for [`Storage::Compact`] with a [`ReadMemo`](super::ReadMemo) that keeps objects.
    memo: Option<Memo<K>>,
}

impl<K> Default for Store<K> {
    fn default() -> Self {
        Store::with_storage(Storage::Shared)
    }
}

impl<K> Store<K> {
    /// An empty store that holds its objects as `storage` says.
    pub fn with_storage(storage: Storage<K>) -> Self {
        Store {
            inner: RwLock::new(Inner {
                objects: Map::default(),
                len: 0,
                bytes: 0,
                indexes: HashMap::new(),
            }),
            codec: storage.codec().copied(),
            memo: storage
                .read_memo()
                .filter(|memo| memo.objects > 0)
                .map(Memo::new),
        }
    }

    /// Whether objects are held encoded ([`Storage::Compact`]).
    pub fn is_compact(&self) -> bool {
        self.codec.is_some()
    }
}

/// Errors of [`Store::add_index`].
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IndexError {
    /// An index of that name exists already.
    #[error("an index named {0:?} exists already")]
    Duplicate(String),
}

impl<K: Resource> Store<K> {
    /// An empty store of shared objects.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a field index and indexes the objects already stored.
    pub fn add_index(&self, name: impl Into<String>, func: IndexFn<K>) -> Result<(), IndexError> {
        let name = name.into();
        let mut inner = self.inner.write();
        if inner.indexes.contains_key(&name) {
            return Err(IndexError::Duplicate(name));
        }
        let mut index = Index {
            func,
            entries: HashMap::new(),
        };
        for (ns, names) in &inner.objects {
            for (name, slot) in names {
                if let Some(obj) = self.decode(slot) {
                    index_insert(&mut index, &key_of(ns, name), &obj);
                }
            }
        }
        inner.indexes.insert(name, index);
        Ok(())
    }

    /// Whether an index of that name exists.
    pub fn has_index(&self, name: &str) -> bool {
        self.inner.read().indexes.contains_key(name)
    }

    /// Inserts or replaces an object; returns the object it replaced (decoded, in a compact
    /// store: [`Store::put`] skips that).
    pub fn insert(&self, obj: Arc<K>) -> Option<Arc<K>> {
        let old = self.put_entry(self.entry(obj));
        old.and_then(|old| self.decode(&old))
    }

    /// Inserts or replaces an object; returns whether it replaced one.
    pub fn put(&self, obj: Arc<K>) -> bool {
        self.put_entry(self.entry(obj)).is_some()
    }

    /// Files an entry; returns the slot it replaced.
    pub(crate) fn put_entry(&self, entry: Entry<K>) -> Option<Slot<K>> {
        let old = self.inner.write().insert(entry, self);
        self.forget(old.as_ref());
        old
    }

    /// Drops the memoized read of a slot the store no longer holds.
    fn forget(&self, slot: Option<&Slot<K>>) {
        if let (Some(memo), Some(Slot::Encoded(entry))) = (&self.memo, slot) {
            memo.invalidate(entry);
        }
    }

    /// The entry of a typed object: encoded if the store is compact.
    pub(crate) fn entry(&self, obj: Arc<K>) -> Entry<K> {
        Entry {
            key: ObjectKey::of(obj.as_ref()),
            slot: self.slot(obj.clone()),
            typed: Some(obj),
        }
    }

    /// Removes an object by key; returns it.
    pub fn remove(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let old = self.inner.write().remove(key, self);
        self.forget(old.as_ref());
        old.and_then(|old| self.decode(&old))
    }

    /// Removes an object by key; returns whether there was one.
    pub fn discard(&self, key: &ObjectKey) -> bool {
        let old = self.inner.write().remove(key, self);
        self.forget(old.as_ref());
        old.is_some()
    }

    /// Replaces the whole content (a relist) and returns what was there before.
    pub fn replace(&self, objects: impl IntoIterator<Item = Arc<K>>) -> HashMap<ObjectKey, Arc<K>> {
        let entries: Vec<Entry<K>> = objects.into_iter().map(|o| self.entry(o)).collect();
        self.decode_all(self.replace_entries(entries))
    }

    /// As [`Store::replace`], with entries, returning the old content undecoded.
    pub(crate) fn replace_entries(&self, entries: Vec<Entry<K>>) -> HashMap<ObjectKey, Slot<K>> {
        let mut inner = self.inner.write();
        let old = std::mem::take(&mut inner.objects);
        inner.len = 0;
        inner.bytes = 0;
        for index in inner.indexes.values_mut() {
            index.entries.clear();
        }
        for entry in entries {
            inner.insert(entry, self);
        }
        drop(inner);
        if let Some(memo) = &self.memo {
            memo.clear();
        }
        old.into_iter()
            .flat_map(|(ns, names)| {
                names
                    .into_iter()
                    .map(move |(name, slot)| (key_of(&ns, &name), slot))
            })
            .collect()
    }

    /// Replaces the objects whose keys satisfy `part` (one scope's relist in a multi-namespace
    /// informer), keeping the others; returns the replaced ones.
    pub fn replace_where(
        &self,
        part: impl Fn(&ObjectKey) -> bool,
        objects: impl IntoIterator<Item = Arc<K>>,
    ) -> HashMap<ObjectKey, Arc<K>> {
        let entries: Vec<Entry<K>> = objects.into_iter().map(|o| self.entry(o)).collect();
        self.decode_all(self.replace_entries_where(part, entries))
    }

    /// As [`Store::replace_where`], with entries, returning the old content undecoded.
    pub(crate) fn replace_entries_where(
        &self,
        part: impl Fn(&ObjectKey) -> bool,
        entries: Vec<Entry<K>>,
    ) -> HashMap<ObjectKey, Slot<K>> {
        let mut inner = self.inner.write();
        let keys: Vec<ObjectKey> = inner.keys().filter(|k| part(k)).collect();
        let old: HashMap<ObjectKey, Slot<K>> = keys
            .into_iter()
            .filter_map(|key| inner.remove(&key, self).map(|slot| (key, slot)))
            .collect();
        for entry in entries {
            inner.insert(entry, self);
        }
        drop(inner);
        old.values().for_each(|slot| self.forget(Some(slot)));
        old
    }

    /// The object stored under `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let slot = self.inner.read().get(key).cloned()?;
        self.read(&slot)
    }

    /// Every object, or every object of one namespace.
    pub fn list(&self, namespace: Option<&str>) -> Vec<Arc<K>> {
        let slots: Vec<Slot<K>> = {
            let inner = self.inner.read();
            match namespace {
                None => {
                    let mut all = Vec::with_capacity(inner.len);
                    for names in inner.objects.values() {
                        all.extend(names.values().cloned());
                    }
                    all
                }
                Some(ns) => inner
                    .objects
                    .get(ns)
                    .map(|names| names.values().cloned().collect())
                    .unwrap_or_default(),
            }
        };
        self.decode_many(slots)
    }

    /// The objects whose index `index` holds `value`, in `namespace` or in all namespaces.
    /// `None` when there is no such index.
    pub fn by_index(
        &self,
        index: &str,
        namespace: Option<&str>,
        value: &str,
    ) -> Option<Vec<Arc<K>>> {
        let slots: Vec<Slot<K>> = {
            let inner = self.inner.read();
            let idx = inner.indexes.get(index)?;
            let ns = namespace.unwrap_or(ALL_NAMESPACES);
            idx.entries
                .get(&(Box::from(ns), Box::from(value)))
                .map(|keys| keys.iter().filter_map(|k| inner.get(k).cloned()).collect())
                .unwrap_or_default()
        };
        Some(self.decode_many(slots))
    }

    /// The number of objects stored.
    pub fn len(&self) -> usize {
        self.inner.read().len
    }

    /// The heap the stored objects take, about: a compact store's encodings (allocator
    /// rounding aside); for shared objects only their inline size (a lower bound). What the
    /// `controller_runtime_cache_bytes` gauge reports.
    pub fn size_bytes(&self) -> usize {
        self.inner.read().bytes
    }

    /// The object stored under `key`, as held: typed, or encoded with its metadata.
    pub(crate) fn get_cached(&self, key: &ObjectKey) -> Option<CachedObject<K>> {
        let slot = self.inner.read().get(key).cloned()?;
        Some(self.cached(key, &slot))
    }

    /// Every stored object, as held.
    pub(crate) fn list_cached(&self) -> Vec<CachedObject<K>> {
        let inner = self.inner.read();
        let mut all = Vec::with_capacity(inner.len);
        for (ns, names) in &inner.objects {
            all.extend(
                names
                    .iter()
                    .map(|(name, slot)| self.cached(&key_of(ns, name), slot)),
            );
        }
        all
    }

    /// An entry as handed to handlers: its slot, with its typed object when at hand.
    pub(crate) fn cached_entry(&self, entry: &Entry<K>) -> CachedObject<K> {
        match &entry.slot {
            Slot::Encoded(stored) => CachedObject::encoded(
                stored.clone(),
                entry.key.clone(),
                self.codec,
                entry.typed.clone(),
            ),
            Slot::Shared(obj) => CachedObject::typed(obj.clone()),
        }
    }

    /// A slot as handed to handlers: nothing is decoded.
    pub(crate) fn cached(&self, key: &ObjectKey, slot: &Slot<K>) -> CachedObject<K> {
        match slot {
            Slot::Shared(obj) => CachedObject::typed(obj.clone()),
            Slot::Encoded(entry) => {
                CachedObject::encoded(entry.clone(), key.clone(), self.codec, None)
            }
        }
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys of every object.
    pub fn keys(&self) -> Vec<ObjectKey> {
        self.inner.read().keys().collect()
    }

    /// How `obj` is held: encoded in a compact store (typed if it cannot be encoded).
    pub(crate) fn slot(&self, obj: Arc<K>) -> Slot<K> {
        let Some(codec) = &self.codec else {
            return Slot::Shared(obj);
        };
        match codec.encode(&obj) {
            Ok(bytes) => Slot::Encoded(Arc::new(Encoded {
                bytes: bytes.into(),
            })),
            Err(error) => {
                tracing::warn!(%error, object = %ObjectKey::of(obj.as_ref()), "cannot encode an object for a compact store; keeping it typed");
                Slot::Shared(obj)
            }
        }
    }

    /// The object a slot holds, for a read: from the memo when it has this encoding decoded,
    /// else decoded and memoized.
    fn read(&self, slot: &Slot<K>) -> Option<Arc<K>> {
        let (Some(memo), Slot::Encoded(entry)) = (&self.memo, slot) else {
            return self.decode(slot);
        };
        if let Some(obj) = memo.get(entry) {
            return Some(obj);
        }
        let obj = self.decode(slot)?;
        memo.insert(entry, &obj);
        Some(obj)
    }

    /// The number of objects memoized and the bytes of their encodings.
    #[cfg(test)]
    pub(crate) fn memo_usage(&self) -> (usize, usize) {
        self.memo.as_ref().map_or((0, 0), Memo::usage)
    }

    /// The object a slot holds; `None` (logged) if its encoding does not decode, which only a
    /// type whose serialisation does not read back can cause.
    pub(crate) fn decode(&self, slot: &Slot<K>) -> Option<Arc<K>> {
        match (slot, &self.codec) {
            (Slot::Shared(obj), _) => Some(obj.clone()),
            (Slot::Encoded(entry), Some(codec)) => match codec.decode(&entry.bytes) {
                Ok(obj) => Some(Arc::new(obj)),
                Err(error) => {
                    tracing::error!(%error, "a compact store's object does not decode; skipped");
                    None
                }
            },
            (Slot::Encoded(_), None) => None,
        }
    }

    fn decode_many(&self, slots: Vec<Slot<K>>) -> Vec<Arc<K>> {
        if self.codec.is_none() {
            return slots
                .into_iter()
                .filter_map(|s| match s {
                    Slot::Shared(obj) => Some(obj),
                    Slot::Encoded(_) => None,
                })
                .collect();
        }
        slots.iter().filter_map(|s| self.read(s)).collect()
    }

    fn decode_all(&self, slots: HashMap<ObjectKey, Slot<K>>) -> HashMap<ObjectKey, Arc<K>> {
        slots
            .into_iter()
            .filter_map(|(key, slot)| Some((key, self.decode(&slot)?)))
            .collect()
    }
}

/// The key of the object stored under namespace `ns` and `name`.
fn key_of(ns: &str, name: &str) -> ObjectKey {
    ObjectKey {
        namespace: (ns != CLUSTER).then(|| ns.to_owned()),
        name: name.to_owned(),
    }
}

impl<K: Resource> Inner<K> {
    fn get(&self, key: &ObjectKey) -> Option<&Slot<K>> {
        self.objects
            .get(key.namespace.as_deref().unwrap_or(CLUSTER))?
            .get(key.name.as_str())
    }

    fn keys(&self) -> impl Iterator<Item = ObjectKey> + '_ {
        self.objects
            .iter()
            .flat_map(|(ns, names)| names.keys().map(move |name| key_of(ns, name)))
    }

    /// Files an entry; returns the slot it replaced. `store` decodes objects when indexes
    /// need them and they are not at hand typed.
    fn insert(&mut self, entry: Entry<K>, store: &Store<K>) -> Option<Slot<K>> {
        let Entry { key, slot, typed } = entry;
        if !self.indexes.is_empty() {
            self.unindex(&key, store);
            if let Some(obj) = typed.or_else(|| store.decode(&slot)) {
                for index in self.indexes.values_mut() {
                    index_insert(index, &key, &obj);
                }
            }
        }
        let ns = key.namespace.as_deref().unwrap_or(CLUSTER);
        let names = match self.objects.get_mut(ns) {
            Some(names) => names,
            None => self.objects.entry(ns.into()).or_default(),
        };
        self.bytes += slot.size();
        let old = names.insert(key.name.into_boxed_str(), slot);
        match &old {
            None => self.len += 1,
            Some(old) => self.bytes -= old.size(),
        }
        old
    }

    fn remove(&mut self, key: &ObjectKey, store: &Store<K>) -> Option<Slot<K>> {
        let ns = key.namespace.as_deref().unwrap_or(CLUSTER);
        let names = self.objects.get_mut(ns)?;
        let old = names.remove(key.name.as_str())?;
        if names.is_empty() {
            self.objects.remove(ns);
        }
        self.len -= 1;
        self.bytes -= old.size();
        if !self.indexes.is_empty()
            && let Some(old) = store.decode(&old)
        {
            for index in self.indexes.values_mut() {
                index_remove(index, key, &old);
            }
        }
        Some(old)
    }

    /// Removes the index entries of the object stored under `key`, if any.
    fn unindex(&mut self, key: &ObjectKey, store: &Store<K>) {
        let Some(old) = self.get(key).and_then(|slot| store.decode(slot)) else {
            return;
        };
        for index in self.indexes.values_mut() {
            index_remove(index, key, &old);
        }
    }
}

fn index_keys<K>(index: &Index<K>, key: &ObjectKey, obj: &K) -> Vec<IndexKey> {
    let mut out = Vec::new();
    for value in (index.func)(obj) {
        let value: Box<str> = value.into();
        if let Some(ns) = &key.namespace {
            out.push((Box::from(ns.as_str()), value.clone()));
        }
        out.push((Box::from(ALL_NAMESPACES), value));
    }
    out
}

fn index_insert<K>(index: &mut Index<K>, key: &ObjectKey, obj: &K) {
    for ik in index_keys(index, key, obj) {
        index.entries.entry(ik).or_default().insert(key.clone());
    }
}

fn index_remove<K>(index: &mut Index<K>, key: &ObjectKey, obj: &K) {
    for ik in index_keys(index, key, obj) {
        if let Some(keys) = index.entries.get_mut(&ik) {
            keys.remove(key);
            if keys.is_empty() {
                index.entries.remove(&ik);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::ReadMemo;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube_core::ObjectMeta;

    fn cm(ns: &str, name: &str, owner: &str) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some(name.into()),
                labels: Some([("owner".to_string(), owner.to_string())].into()),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    /// A shared store and compact ones with and without a read memo: every behaviour but
    /// sharing is the same in all.
    fn stores() -> [Store<ConfigMap>; 3] {
        [
            Store::new(),
            Store::with_storage(Storage::compact()),
            Store::with_storage(Storage::compact().with_read_memo(ReadMemo::disabled())),
        ]
    }

    fn owner_index() -> IndexFn<ConfigMap> {
        Arc::new(|cm: &ConfigMap| {
            cm.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("owner").cloned())
                .into_iter()
                .collect()
        })
    }

    fn names(objs: Vec<Arc<ConfigMap>>) -> Vec<String> {
        let mut keys: Vec<String> = objs
            .iter()
            .map(|o| ObjectKey::of(o.as_ref()).to_string())
            .collect();
        keys.sort();
        keys
    }

    #[test]
    fn get_list_and_namespace_index() {
        for store in stores() {
            store.insert(cm("a", "one", "x"));
            store.insert(cm("a", "two", "y"));
            store.insert(cm("b", "one", "x"));
            assert_eq!(store.len(), 3);
            assert!(store.get(&ObjectKey::new("b", "one")).is_some());
            assert!(store.get(&ObjectKey::new("b", "two")).is_none());
            assert_eq!(names(store.list(Some("a"))), ["a/one", "a/two"]);
            assert_eq!(names(store.list(None)).len(), 3);
            assert!(store.list(Some("c")).is_empty());
        }
    }

    #[test]
    fn reads_share_the_stored_allocation() {
        let store = Store::new();
        let obj = cm("a", "one", "x");
        store.insert(obj.clone());
        let read = store.get(&ObjectKey::new("a", "one")).unwrap();
        assert!(Arc::ptr_eq(&obj, &read));
        assert!(Arc::ptr_eq(&obj, &store.list(None)[0]));
    }

    #[test]
    fn a_compact_store_holds_the_encoding_and_decodes_each_read() {
        let store = Store::with_storage(Storage::compact().with_read_memo(ReadMemo::disabled()));
        assert!(store.is_compact());
        let obj = cm("a", "one", "x");
        assert!(!store.put(obj.clone()));
        let key = ObjectKey::new("a", "one");
        let (first, second) = (store.get(&key).unwrap(), store.get(&key).unwrap());
        assert_eq!(*first, *obj);
        assert!(!Arc::ptr_eq(&first, &obj) && !Arc::ptr_eq(&first, &second));
        match store.inner.read().get(&key) {
            Some(Slot::Encoded(entry)) => {
                assert_eq!(
                    serde_json::from_slice::<ConfigMap>(&entry.bytes).unwrap(),
                    *obj
                );
            }
            _ => panic!("a compact store holds encoded objects"),
        }
        // An update returns the replaced object, decoded; put only says there was one.
        assert_eq!(store.insert(cm("a", "one", "y")).unwrap(), obj);
        assert!(store.put(cm("a", "one", "z")));
        assert!(store.discard(&key));
        assert!(!store.discard(&key));
        assert!(store.remove(&key).is_none());
    }

    #[test]
    fn memoized_reads_are_equal_shared_and_never_stale() {
        let store = Store::with_storage(Storage::compact());
        let plain = Store::with_storage(Storage::compact().with_read_memo(ReadMemo::disabled()));
        for s in [&store, &plain] {
            s.put(cm("a", "one", "x"));
            s.put(cm("a", "two", "x"));
        }
        let key = ObjectKey::new("a", "one");
        // The first read is not memoized (most objects are read once); the second is.
        assert_eq!(store.get(&key).unwrap(), plain.get(&key).unwrap());
        assert_eq!(store.memo_usage().0, 0);
        let first = store.get(&key).unwrap();
        assert_eq!(first, plain.get(&key).unwrap());
        // Read again, alone or in a list: the same object, not decoded again.
        assert!(Arc::ptr_eq(&first, &store.get(&key).unwrap()));
        let listed = store.list(Some("a"));
        assert!(listed.iter().any(|o| Arc::ptr_eq(o, &first)));
        assert_eq!(names(listed), names(plain.list(Some("a"))));
        // The list's second read of "two" filed it.
        assert_eq!(names(store.list(Some("a"))), names(plain.list(Some("a"))));
        assert_eq!(store.memo_usage().0, 2);
        // Updated: the next read has the new object, and the old one left the memo.
        store.put(cm("a", "one", "y"));
        assert_eq!(store.memo_usage().0, 1);
        let after = store.get(&key).unwrap();
        assert_eq!(*after, *cm("a", "one", "y"));
        let again = store.get(&key).unwrap();
        assert_eq!(after, again);
        assert!(Arc::ptr_eq(&again, &store.get(&key).unwrap()));
        assert_eq!(store.memo_usage().0, 2);
        // An update through the informer's entry path too (a raw object's encoding).
        let raw = Entry {
            key: key.clone(),
            slot: Slot::Encoded(Arc::new(Encoded {
                bytes: serde_json::to_vec(&*cm("a", "one", "z")).unwrap().into(),
            })),
            typed: None,
        };
        store.put_entry(raw);
        for _ in 0..3 {
            assert_eq!(*store.get(&key).unwrap(), *cm("a", "one", "z"));
        }
        // Removed: gone from reads and from the memo.
        assert!(store.discard(&key));
        assert!(store.get(&key).is_none());
        assert_eq!(store.memo_usage().0, 1);
        // A relist empties it.
        store.replace([cm("a", "three", "x")]);
        assert_eq!(store.memo_usage(), (0, 0));
        assert_eq!(names(store.list(None)), ["a/three"]);
        assert_eq!(plain.memo_usage(), (0, 0));
    }

    #[test]
    fn the_memo_holds_its_bound_over_many_reads() {
        let store =
            Store::with_storage(Storage::compact().with_read_memo(ReadMemo::new(3, 1 << 20)));
        for i in 0..20 {
            store.put(cm("a", &format!("o{i}"), "x"));
        }
        for round in 0..4 {
            for i in 0..20 {
                let key = ObjectKey::new("a", format!("o{i}"));
                assert_eq!(*store.get(&key).unwrap(), *cm("a", &format!("o{i}"), "x"));
                let (count, _) = store.memo_usage();
                assert!(count <= 3, "round {round}: {count}");
            }
        }
        assert_eq!(store.list(None).len(), 20);
        assert!(store.memo_usage().0 <= 3);
        // A byte bound of two objects' JSON holds two.
        let size = serde_json::to_vec(&*cm("a", "o0", "x")).unwrap().len();
        let store = Store::with_storage(
            Storage::compact().with_read_memo(ReadMemo::new(100, 2 * size + 1)),
        );
        for i in 0..5 {
            store.put(cm("a", &format!("o{i}"), "x"));
            store.get(&ObjectKey::new("a", format!("o{i}")));
            store.get(&ObjectKey::new("a", format!("o{i}")));
        }
        assert_eq!(store.memo_usage(), (2, 2 * size));
    }

    #[test]
    fn field_index_follows_inserts_updates_and_removes() {
        for store in stores() {
            store.insert(cm("a", "pre", "x"));
            store.add_index("owner", owner_index()).unwrap();
            assert_eq!(
                store.add_index("owner", owner_index()),
                Err(IndexError::Duplicate("owner".into()))
            );
            store.insert(cm("a", "one", "x"));
            store.insert(cm("b", "one", "x"));
            store.insert(cm("a", "two", "y"));
            assert_eq!(
                names(store.by_index("owner", None, "x").unwrap()),
                ["a/one", "a/pre", "b/one"]
            );
            assert_eq!(
                names(store.by_index("owner", Some("a"), "x").unwrap()),
                ["a/one", "a/pre"]
            );
            // An update that changes the indexed value moves the object.
            store.insert(cm("a", "one", "y"));
            assert_eq!(
                names(store.by_index("owner", Some("a"), "x").unwrap()),
                ["a/pre"]
            );
            assert_eq!(
                names(store.by_index("owner", Some("a"), "y").unwrap()),
                ["a/one", "a/two"]
            );
            store.remove(&ObjectKey::new("a", "two"));
            assert_eq!(
                names(store.by_index("owner", None, "y").unwrap()),
                ["a/one"]
            );
            assert!(store.by_index("missing", None, "y").is_none());
        }
    }

    #[test]
    fn replace_returns_the_old_content_and_reindexes() {
        for store in stores() {
            store.add_index("owner", owner_index()).unwrap();
            store.insert(cm("a", "one", "x"));
            store.insert(cm("a", "two", "x"));
            let old = store.replace([cm("a", "two", "y"), cm("c", "three", "y")]);
            assert_eq!(old.len(), 2);
            assert!(store.get(&ObjectKey::new("a", "one")).is_none());
            assert!(store.by_index("owner", None, "x").unwrap().is_empty());
            assert_eq!(
                names(store.by_index("owner", None, "y").unwrap()),
                ["a/two", "c/three"]
            );
            assert!(store.list(Some("a")).len() == 1);
        }
    }

    #[test]
    fn cluster_scoped_objects_counts_and_partial_replace() {
        for store in stores() {
            let node = |name: &str| {
                Arc::new(ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(name.into()),
                        ..Default::default()
                    },
                    ..Default::default()
                })
            };
            store.insert(node("n1"));
            store.insert(cm("a", "n1", "x"));
            assert!(store.insert(cm("a", "n1", "y")).is_some(), "a replace");
            assert_eq!(store.len(), 2);
            assert!(store.get(&ObjectKey::cluster_scoped("n1")).is_some());
            assert_eq!(names(store.list(None)), ["a/n1", "n1"]);
            store.insert(cm("b", "two", "x"));
            // Replace namespace a alone: b and the cluster-scoped object stay.
            let old = store.replace_where(
                |k| k.namespace.as_deref() == Some("a"),
                [cm("a", "three", "x")],
            );
            assert_eq!(
                old.keys().map(|k| k.to_string()).collect::<Vec<_>>(),
                ["a/n1"]
            );
            assert_eq!(names(store.list(None)), ["a/three", "b/two", "n1"]);
            assert_eq!(store.len(), 3);
            assert!(store.remove(&ObjectKey::new("a", "three")).is_some());
            assert!(store.list(Some("a")).is_empty());
            assert_eq!(store.len(), 2);
        }
    }
}
