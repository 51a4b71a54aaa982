//! The ready items of a queue, in hand-out order: a FIFO for [`QueueOrder::Fifo`], a max-heap
//! by priority then order for [`QueueOrder::Priority`].
//!
//! Entries carry the item's slot, so `get` finds its state without hashing. Heap entries are not
//! removed in place: when a ready item's priority rises, a second entry is pushed, and the stale
//! one is skipped when it surfaces (it no longer matches the item's priority and order). The
//! heap keeps its allocation when it runs empty, so a steady add/get/done cycle allocates
//! nothing here.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

/// How a work queue orders its ready items (and so how it treats delayed adds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum QueueOrder {
    /// client-go's queue: first in, first out; priorities are ignored; a delayed add is a
    /// separate add in the future, and one of an item already waiting for an earlier time is
    /// ignored.
    #[default]
    Fifo,
    /// controller-runtime's priority queue: highest priority first, then FIFO. An item is
    /// queued at most once; re-adds keep the highest priority and the earliest time.
    Priority,
}

/// A heap entry.
pub(crate) struct Entry<T> {
    priority: i32,
    seq: u64,
    slot: usize,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.priority == other.priority && self.seq == other.seq
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    /// The greatest entry goes first: the highest priority, then the lowest order number.
    fn cmp(&self, other: &Self) -> Ordering {
        self.priority
            .cmp(&other.priority)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// Ready items that are not processing.
pub(crate) enum Ready<T> {
    /// Oldest first; priorities are all 0, so no entry ever goes stale.
    Fifo(VecDeque<(T, usize)>),
    /// Highest priority first, then oldest.
    Priority {
        heap: BinaryHeap<Entry<T>>,
        /// Live entries (the heap may also hold stale ones).
        len: usize,
    },
}

impl<T> Ready<T> {
    #[inline]
    pub(crate) fn new(order: QueueOrder) -> Self {
        match order {
            QueueOrder::Fifo => Ready::Fifo(VecDeque::new()),
            QueueOrder::Priority => Ready::Priority {
                heap: BinaryHeap::new(),
                len: 0,
            },
        }
    }

    /// Queues `item` (in `slot`) at `priority` with order number `seq`.
    #[inline]
    pub(crate) fn push(&mut self, priority: i32, seq: u64, slot: usize, item: T) {
        match self {
            Ready::Fifo(q) => q.push_back((item, slot)),
            Ready::Priority { heap, len } => {
                heap.push(Entry {
                    priority,
                    seq,
                    slot,
                    item,
                });
                *len += 1;
            }
        }
    }

    /// Re-queues a ready item whose priority rose; its old entry goes stale. (A FIFO never
    /// sees one: its priorities are all 0.)
    #[inline]
    pub(crate) fn repush(&mut self, priority: i32, seq: u64, slot: usize, item: T) {
        if let Ready::Priority { heap, .. } = self {
            heap.push(Entry {
                priority,
                seq,
                slot,
                item,
            });
        }
    }

    /// Takes the first live entry; `live(slot, priority, seq)` tells stale heap entries apart.
    #[inline]
    pub(crate) fn pop(&mut self, live: impl Fn(usize, i32, u64) -> bool) -> Option<(T, usize)> {
        match self {
            Ready::Fifo(q) => q.pop_front(),
            Ready::Priority { heap, len } => loop {
                let e = heap.pop()?;
                if live(e.slot, e.priority, e.seq) {
                    *len -= 1;
                    return Some((e.item, e.slot));
                }
            },
        }
    }

    /// The number of live entries.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        match self {
            Ready::Fifo(q) => q.len(),
            Ready::Priority { len, .. } => *len,
        }
    }
}
