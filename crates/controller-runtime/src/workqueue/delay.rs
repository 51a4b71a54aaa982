//! Pieces both queues share: the heap of delayed items and the loop `get` waits in.
//!
//! There is no timer task and no task per delayed item. Delayed items sit in a min-heap keyed by
//! their ready time; whoever looks at the queue (`get`, `len`) first moves the items that are due
//! into the ready queue. A `get` that finds nothing ready sleeps until the earliest ready time or
//! until it is notified, whichever comes first.
//!
//! Heap entries are never removed in place: when an item's ready time moves earlier, a second
//! entry is pushed, and the stale one is skipped when it surfaces (its time no longer matches the
//! item's).

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::{Pin, pin};
use std::time::Duration;

use tokio::sync::{Notify, futures::Notified};
use tokio::time::Instant;

/// The longest delay a queue honours: about 100 years. Longer delays (up to `Duration::MAX`)
/// are shortened to it instead of overflowing the clock.
pub(crate) const MAX_DELAY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The time an item added now with `delay` becomes ready.
pub(crate) fn ready_time(delay: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(delay.min(MAX_DELAY)).unwrap_or(now)
}

/// One delayed item in the heap.
pub(crate) struct Delayed<T> {
    pub(crate) at: Instant,
    seq: u64,
    pub(crate) item: T,
}

impl<T> PartialEq for Delayed<T> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}
impl<T> Eq for Delayed<T> {}
impl<T> PartialOrd for Delayed<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Delayed<T> {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest time first, and among equal
    /// times the earliest pushed.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .at
            .cmp(&self.at)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// A min-heap of delayed items with lazy deletion.
pub(crate) struct DelayHeap<T> {
    heap: BinaryHeap<Delayed<T>>,
    seq: u64,
}

impl<T> Default for DelayHeap<T> {
    fn default() -> Self {
        DelayHeap {
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }
}

impl<T> DelayHeap<T> {
    /// Pushes `item` for time `at`; returns whether it is now the earliest entry (so sleeping
    /// getters must wake up and shorten their sleep).
    pub(crate) fn push(&mut self, at: Instant, item: T) -> bool {
        let earliest = self.heap.peek().is_none_or(|d| at < d.at);
        self.seq += 1;
        self.heap.push(Delayed {
            at,
            seq: self.seq,
            item,
        });
        earliest
    }

    /// The earliest time in the heap (possibly of a stale entry: waking early is harmless).
    pub(crate) fn next_at(&self) -> Option<Instant> {
        self.heap.peek().map(|d| d.at)
    }

    /// Whether the heap holds no entry at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Pops the earliest entry if it is due at `now`.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<Delayed<T>> {
        if self.heap.peek().is_some_and(|d| d.at <= now) {
            self.heap.pop()
        } else {
            None
        }
    }

    /// Drops every entry.
    pub(crate) fn clear(&mut self) {
        self.heap.clear();
    }
}

/// What one attempt of a waiting loop found.
pub(crate) enum Attempt<R> {
    /// Finished with this result.
    Done(R),
    /// Nothing yet: sleep until notified or until this time (if any), then try again.
    Wait(Option<Instant>),
}

/// The attempt of `shut_down_with_drain`, for either queue: done when nothing is processing,
/// else wait for the next `done`. Call it with the queue's lock held.
pub(crate) fn until_drained(processing: usize, notified: Pin<&mut Notified<'_>>) -> Attempt<()> {
    if processing == 0 {
        return Attempt::Done(());
    }
    notified.enable();
    Attempt::Wait(None)
}

/// Runs `attempt` until it is [`Attempt::Done`], sleeping on `notify` in between.
///
/// `attempt` gets a fresh `Notified` and must [`Notified::enable`] it *while it still holds the
/// lock under which it found nothing*, before returning [`Attempt::Wait`]; so a notification
/// sent after that check is never lost.
pub(crate) async fn wait_loop<R>(
    notify: &Notify,
    mut attempt: impl FnMut(Pin<&mut Notified<'_>>) -> Attempt<R>,
) -> R {
    loop {
        let mut notified = pin!(notify.notified());
        match attempt(notified.as_mut()) {
            Attempt::Done(r) => return r,
            Attempt::Wait(None) => notified.await,
            Attempt::Wait(Some(at)) => {
                // Boxed: a `Sleep` is large, and held across this await it would make every
                // `get`'s future (boxed and moved on each call) as large, for the rare wait
                // on a timer.
                let sleep = Box::pin(tokio::time::sleep_until(at));
                let _ = futures::future::select(notified, sleep).await;
            }
        }
    }
}

/// Boxes a future the way [`futures::future::BoxFuture`] wants it.
pub(crate) fn boxed<'a, R>(
    f: impl Future<Output = R> + Send + 'a,
) -> futures::future::BoxFuture<'a, R> {
    Box::pin(f)
}
