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
//! Why it is on by default, and keeps objects from their second read (measured with the e2e
//! and cache_sync benchmarks, 100,000 ConfigMaps of 1.5 KB with managedFields): a repeated
//! typed get takes 0.16-0.2 us instead of 2.5-4.7 us, and the cold start keeps the heap and
//! CPU it had without a memo (1,981 vs 1,980 B per object retained). Keeping objects from
//! their first read (2,048 of them) cost the cold start 151 B per object retained (1.5 KB at
//! 10,000 objects) and about 6% of its CPU in filing and evicting, for a reconciler that reads
//! each object once; it helps one that reads each object exactly twice far apart (the e2e
//! scenario 4: 201 to 176 allocations per reconcile at 2,048 objects, 129 at 4,096), which
//! [`ReadMemo::from_first_read`](super::ReadMemo::from_first_read) offers.
//!
//! An object is memoized on its second read (of the same encoding), not its first: a
//! direct-mapped table of the encodings read once remembers a miss, and only a miss it
//! remembers files the object. Objects read once per change (a cold start reads each object
//! once; a reconcile reads the object that changed) so cost neither memory nor the filing,
//! and the memo holds the objects that are read again, such as a parent whose children change.
//! A forgotten or mistaken remembrance (two encodings at one slot, an address reused) only
//! files an object a read later or earlier; which object a lookup serves never depends on it.
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
    /// The encodings missed once, by their identity, one per slot (direct-mapped); 0: none.
    seen: Box<[usize]>,
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
                seen: vec![0; seen_slots(bound)].into_boxed_slice(),
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

    /// Files `obj`, decoded from `encoded` after a miss, if `encoded` was missed before,
    /// evicting what the bound requires; else remembers the miss. An object larger than the
    /// whole bound is not filed.
    pub(crate) fn insert(&self, encoded: &Arc<Encoded>, obj: &Arc<K>) {
        let size = encoded.bytes.len();
        if self.bound.objects == 0 || size > self.bound.bytes {
            return;
        }
        let key = id(encoded);
        let mut inner = self.inner.lock();
        if !self.bound.first_read {
            let slot = seen_slot(key, inner.seen.len());
            if inner.seen[slot] != key {
                inner.seen[slot] = key;
                return;
            }
            inner.seen[slot] = 0;
        }
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

/// The slots of the table of encodings missed once: twice the objects kept, at least 64.
fn seen_slots(bound: ReadMemo) -> usize {
    if bound.objects == 0 {
        return 0;
    }
    bound
        .objects
        .saturating_mul(2)
        .clamp(64, 1 << 20)
        .next_power_of_two()
}

/// The slot of an encoding in the table of misses (`slots`, a power of two).
fn seen_slot(id: usize, slots: usize) -> usize {
    // Addresses are multiples of the allocation's alignment: mix the bits first.
    (id.wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as usize) >> 17) & (slots - 1)
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

    /// A miss, then another: the second files the object.
    fn file<K>(memo: &Memo<K>, encoded: &Arc<Encoded>, obj: K) {
        let obj = Arc::new(obj);
        memo.insert(encoded, &obj);
        memo.insert(encoded, &obj);
    }

    fn encoded(len: usize) -> Arc<Encoded> {
        Arc::new(Encoded {
            bytes: vec![b' '; len].into(),
        })
    }

    #[test]
    fn serves_only_the_encoding_it_was_decoded_from() {
        let memo = Memo::new(ReadMemo::new(8, 1 << 20));
        let (v1, v2) = (encoded(10), encoded(10));
        assert!(memo.get(&v1).is_none());
        file(&memo, &v1, "v1");
        assert_eq!(*memo.get(&v1).unwrap(), "v1");
        // The store now holds another encoding of the object: not served.
        assert!(memo.get(&v2).is_none());
        memo.invalidate(&v1);
        assert!(memo.get(&v1).is_none());
        file(&memo, &v2, "v2");
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
            file(&memo, e, i);
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
            file(&memo, e, i);
        }
        assert_eq!(memo.usage(), (2, 200));
        // Larger than the whole bound: not filed.
        file(&memo, &encoded(251), 7);
        assert_eq!(memo.usage(), (2, 200));
        memo.clear();
        assert_eq!(memo.usage(), (0, 0));
        // Disabled: nothing is filed.
        let memo = Memo::new(ReadMemo::disabled());
        file(&memo, &objects[0], 0);
        assert!(memo.get(&objects[0]).is_none());
    }

    #[test]
    fn only_a_second_miss_files_an_object() {
        let memo = Memo::new(ReadMemo::new(8, 1 << 20));
        let objects: Vec<_> = (0..100).map(|_| encoded(10)).collect();
        // Each read once, as a cold start reads: nothing is filed.
        for (i, e) in objects.iter().enumerate() {
            memo.insert(e, &Arc::new(i));
        }
        assert_eq!(memo.usage(), (0, 0));
        // Read again: filed now, served from then on.
        let e = encoded(10);
        memo.insert(&e, &Arc::new(1000));
        assert!(memo.get(&e).is_none());
        memo.insert(&e, &Arc::new(1000));
        assert_eq!(*memo.get(&e).unwrap(), 1000);
        assert_eq!(seen_slots(ReadMemo::default()), 4096);
        // Kept from the first read, if asked.
        let memo = Memo::new(ReadMemo::new(8, 1 << 20).from_first_read());
        memo.insert(&e, &Arc::new(1));
        assert_eq!(*memo.get(&e).unwrap(), 1);
        assert_eq!(seen_slots(ReadMemo::new(3, 100)), 64);
        assert_eq!(seen_slots(ReadMemo::disabled()), 0);
    }

    #[test]
    fn filing_and_dropping_the_same_object_does_not_grow_the_order() {
        let memo = Memo::new(ReadMemo::new(1000, 1 << 20));
        let e = encoded(1);
        for _ in 0..10_000 {
            file(&memo, &e, 1);
            memo.invalidate(&e);
        }
        assert!(memo.inner.lock().order.len() <= 2 + 64 + 1);
    }
}
