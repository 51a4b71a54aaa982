//! The read memo of a compact store: the typed objects that reads decoded recently, so that
//! reading an object again before it changes costs a hash lookup and an `Arc` clone instead of
//! a full decode.
//!
//! Each entry is filed under the identity of the stored encoding it was decoded from, and
//! holds that encoding (an `Arc` shared with the store, so it costs no bytes of its own while
//! the object is unchanged, and whose address cannot be reused while the entry holds it)
//! beside the decoded object. One encoding is one object of one type at one resourceVersion as
//! the store received it: a lookup finds an entry only for the encoding the store holds now, so
//! an object the watch changed (a new encoding, even at the same resourceVersion after a
//! relist) is never served stale, and a lookup needs no key to be built or hashed as a string.
//! The store also drops an object's entry when it replaces or removes the object, and the whole
//! memo on a relist, so that nothing outlives its object for long.
//!
//! The memo is bounded by a number of objects and by the bytes of their encodings (a decoded
//! object takes two to five times its JSON: a 1.5 KB ConfigMap with managedFields, about 7 KB);
//! past either bound it evicts with the CLOCK policy: entries read again since they were filed
//! get a second chance, the others go in the order they came. Reads hand out the memoized
//! `Arc<K>`, shared: objects are immutable behind it, and whoever wants to change one clones it
//! (as with shared storage).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::storage::{Encoded, ReadMemo};
type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// A bounded memo of decoded objects; see the module docs.
pub(crate) struct Memo<K> {
    bound: ReadMemo,
    /// The number of entries, read without the lock so that a store nobody reads skips it.
    len: AtomicUsize,
    inner: Mutex<Inner<K>>,
}

struct Inner<K> {
    entries: Map<usize, Memoized<K>>,
    /// Keys in filing order with the stamp they were filed with; a key whose entry was dropped
    /// or filed again since (another stamp) is skipped when it comes up.
    order: VecDeque<(usize, u64)>,
    /// The bytes of the memoized objects' encodings.
    bytes: usize,
    next_stamp: u64,
}

struct Memoized<K> {
    encoded: Arc<Encoded>,
    obj: Arc<K>,
    stamp: u64,
    /// Read since it was filed or last given its second chance.
    referenced: bool,
}

impl<K> Memo<K> {
    /// An empty memo within `bound`.
    pub(crate) fn new(bound: ReadMemo) -> Self {
        Memo {
            bound,
            len: AtomicUsize::new(0),
            inner: Mutex::new(Inner {
                entries: Map::default(),
                order: VecDeque::new(),
                bytes: 0,
                next_stamp: 0,
            }),
        }
    }

    /// The object memoized as decoded from `encoded`, the encoding the store holds now.
    pub(crate) fn get(&self, encoded: &Arc<Encoded>) -> Option<Arc<K>> {
        if self.len.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut inner = self.inner.lock();
        let entry = inner.entries.get_mut(&id(encoded))?;
        entry.referenced = true;
        Some(entry.obj.clone())
    }

    /// Files `obj`, decoded from `encoded`, evicting what the bound requires. An object larger
    /// than the whole bound is not filed.
    pub(crate) fn insert(&self, encoded: &Arc<Encoded>, obj: &Arc<K>) {
        let size = encoded.bytes.len();
        if self.bound.objects == 0 || size > self.bound.bytes {
            return;
        }
        let key = id(encoded);
        let mut inner = self.inner.lock();
        let stamp = inner.next_stamp;
        inner.next_stamp += 1;
        let old = inner.entries.insert(
            key,
            Memoized {
                encoded: encoded.clone(),
                obj: obj.clone(),
                stamp,
                referenced: false,
            },
        );
        if let Some(old) = old {
            inner.bytes -= old.encoded.bytes.len();
        }
        inner.bytes += size;
        inner.order.push_back((key, stamp));
        while inner.entries.len() > self.bound.objects || inner.bytes > self.bound.bytes {
            inner.evict_one();
        }
        // Keys dropped or filed again leave stale positions behind: sweep them out before they
        // outnumber the live ones.
        if inner.order.len() > 2 * inner.entries.len() + 64 {
            let Inner { entries, order, .. } = &mut *inner;
            order.retain(|(key, stamp)| entries.get(key).is_some_and(|e| e.stamp == *stamp));
        }
        self.len.store(inner.entries.len(), Ordering::Relaxed);
    }

    /// Drops the entry of `encoded`, which the store no longer holds (it replaced or removed
    /// the object).
    pub(crate) fn invalidate(&self, encoded: &Arc<Encoded>) {
        if self.len.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut inner = self.inner.lock();
        if let Some(old) = inner.entries.remove(&id(encoded)) {
            inner.bytes -= old.encoded.bytes.len();
        }
        self.len.store(inner.entries.len(), Ordering::Relaxed);
    }

    /// Drops every entry (a relist replaced the store's content).
    pub(crate) fn clear(&self) {
        if self.len.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut inner = self.inner.lock();
        inner.entries.clear();
        inner.order.clear();
        inner.bytes = 0;
        self.len.store(0, Ordering::Relaxed);
    }

    /// The number of objects and the bytes of their encodings memoized.
    #[cfg(test)]
    pub(crate) fn usage(&self) -> (usize, usize) {
        let inner = self.inner.lock();
        (inner.entries.len(), inner.bytes)
    }
}

/// An encoding's identity: its address, which no other encoding has while an entry holds it.
fn id(encoded: &Arc<Encoded>) -> usize {
    Arc::as_ptr(encoded) as usize
}

impl<K> Inner<K> {
    /// Evicts one entry: the first in filing order not read since it was filed (CLOCK), giving
    /// the read ones a second chance at the back.
    fn evict_one(&mut self) {
        while let Some((key, stamp)) = self.order.pop_front() {
            let Some(entry) = self.entries.get_mut(&key) else {
                continue;
            };
            if entry.stamp != stamp {
                continue;
            }
            if entry.referenced {
                entry.referenced = false;
                self.order.push_back((key, stamp));
                continue;
            }
            let gone = self.entries.remove(&key).expect("present");
            self.bytes -= gone.encoded.bytes.len();
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(len: usize) -> Arc<Encoded> {
        Arc::new(Encoded {
            bytes: vec![b' '; len].into_boxed_slice(),
        })
    }

    #[test]
    fn serves_only_the_encoding_it_was_decoded_from() {
        let memo = Memo::new(ReadMemo::new(8, 1 << 20));
        let (v1, v2) = (encoded(10), encoded(10));
        assert!(memo.get(&v1).is_none());
        memo.insert(&v1, &Arc::new("v1"));
        assert_eq!(*memo.get(&v1).unwrap(), "v1");
        // The store now holds another encoding of the object: not served.
        assert!(memo.get(&v2).is_none());
        memo.invalidate(&v1);
        assert!(memo.get(&v1).is_none());
        memo.insert(&v2, &Arc::new("v2"));
        assert_eq!(*memo.get(&v2).unwrap(), "v2");
        assert_eq!(memo.usage(), (1, 10));
        memo.invalidate(&v2);
        assert!(memo.get(&v2).is_none());
        assert_eq!(memo.usage(), (0, 0));
    }

    #[test]
    fn holds_its_bounds_and_keeps_what_is_read_again() {
        let memo = Memo::new(ReadMemo::new(4, 1 << 20));
        let objects: Vec<_> = (0..100).map(|_| encoded(100)).collect();
        for (i, e) in objects.iter().enumerate() {
            memo.insert(e, &Arc::new(i));
            // Object 0 is read after every insert: it is never the one evicted.
            if i > 0 {
                assert!(memo.get(&objects[0]).is_some(), "after {i}");
            }
            let (count, bytes) = memo.usage();
            assert!(count <= 4 && bytes <= 400, "{count} {bytes}");
        }
        assert_eq!(*memo.get(&objects[99]).unwrap(), 99);
        assert!(memo.get(&objects[50]).is_none());
        assert!(memo.inner.lock().order.len() <= 2 * 4 + 64);

        // The byte bound: 250 bytes hold two objects of 100.
        let memo = Memo::new(ReadMemo::new(100, 250));
        for (i, e) in objects.iter().enumerate().take(10) {
            memo.insert(e, &Arc::new(i));
        }
        assert_eq!(memo.usage(), (2, 200));
        // Larger than the whole bound: not filed.
        memo.insert(&encoded(251), &Arc::new(7));
        assert_eq!(memo.usage(), (2, 200));
        memo.clear();
        assert_eq!(memo.usage(), (0, 0));
        // Disabled: nothing is filed.
        let memo = Memo::new(ReadMemo::disabled());
        memo.insert(&objects[0], &Arc::new(0));
        assert!(memo.get(&objects[0]).is_none());
    }

    #[test]
    fn filing_and_dropping_the_same_object_does_not_grow_the_order() {
        let memo = Memo::new(ReadMemo::new(1000, 1 << 20));
        let e = encoded(1);
        for _ in 0..10_000 {
            memo.insert(&e, &Arc::new(1));
            memo.invalidate(&e);
        }
        assert!(memo.inner.lock().order.len() <= 2 + 64 + 1);
    }
}
