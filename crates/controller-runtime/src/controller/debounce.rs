//! Debounce ([`ControllerOptions::with_debounce`](super::ControllerOptions::with_debounce)): a
//! burst of triggers for one key becomes one reconcile, once the burst has settled (kube-rs'
//! `controller::Config::debounce`).
//!
//! The rule is kube-rs' scheduler's: a trigger asking for the key at `t` (now, or now plus the
//! add's delay) schedules it at `t + window`; a later trigger that would run no later than the
//! key's current deadline pushes the deadline back to its own `t + window`, so the key is
//! reconciled `window` after the last trigger of a burst. A trigger that would run later than
//! the current deadline changes nothing (the reconcile at the deadline reads the latest state).
//!
//! It is a layer in front of the controller's queue, built only on the [`Queue`] trait, so it
//! works the same over the FIFO queue, the priority queue and a user's `new_queue`:
//! - the watches' handlers enqueue through [`Debouncer`] ([`Enqueue`]): it records the key's
//!   deadline and adds the key to the queue with the delay left until then. Queues keep the
//!   earliest of an item's delayed adds, never a later one, so the queue may hand the key out
//!   before a pushed-back deadline;
//! - the worker asks [`Debouncer::remaining`] before reconciling a key: while the key's window is
//!   open it puts the key back with the delay left, at the priority it had, and does not
//!   reconcile it. So a key is never queued twice, and nothing reconciles it inside its window.
//!
//! The queue's own rules still hold: a key whose window closes while a worker reconciles it is
//! added then and reconciled once more after that reconcile (its follow-up reconcile). Adds
//! with `rate_limited` are not triggers but retries: they go to the queue unchanged. The
//! worker's own requeues go to the queue directly, so they are not delayed by the window; one
//! that falls inside an open window is folded into the window's end.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::workqueue::{AddOpts, Enqueue, Queue, QueueItem};

/// The longest delay the debouncer adds up: about 100 years, as the queues' (so a huge delay
/// does not overflow the clock).
const MAX_DELAY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The debounce layer over a controller's queue; see the [module docs](self).
pub(crate) struct Debouncer<T: QueueItem> {
    window: Duration,
    /// The keys whose window is open, and when it closes.
    deadlines: Mutex<HashMap<T, Instant>>,
    queue: Arc<dyn Queue<T>>,
}

impl<T: QueueItem> Debouncer<T> {
    /// A debouncer of `window` (not zero) in front of `queue`.
    pub(crate) fn new(window: Duration, queue: Arc<dyn Queue<T>>) -> Self {
        Debouncer {
            window,
            deadlines: Mutex::new(HashMap::new()),
            queue,
        }
    }

    /// How long `item`'s window stays open from now, `None` when it may be reconciled now (its
    /// window closed, which forgets it, or it has none).
    pub(crate) fn remaining(&self, item: &T) -> Option<Duration> {
        let mut deadlines = self.deadlines.lock();
        let deadline = *deadlines.get(item)?;
        let now = Instant::now();
        if deadline > now {
            return Some(deadline - now);
        }
        deadlines.remove(item);
        None
    }

    /// The number of keys whose window is open (tests).
    #[cfg(test)]
    fn open(&self) -> usize {
        self.deadlines.lock().len()
    }
}

impl<T: QueueItem> Enqueue<T> for Debouncer<T> {
    fn add_with_opts(&self, opts: AddOpts, item: T) {
        if opts.rate_limited {
            return self.queue.add_with_opts(opts, item);
        }
        let now = Instant::now();
        let at = |delay: Duration| now.checked_add(delay.min(MAX_DELAY)).unwrap_or(now);
        let delay = opts.after.unwrap_or_default();
        let asked = at(delay);
        let settled = at(delay.saturating_add(self.window));
        let deadline = {
            let mut deadlines = self.deadlines.lock();
            match deadlines.entry(item.clone()) {
                // the key runs before this trigger would: that reconcile reads the latest state
                Entry::Occupied(e) if *e.get() < asked => *e.get(),
                // it would run before or at the deadline: the deadline moves to a window after it
                Entry::Occupied(mut e) => {
                    e.insert(settled);
                    settled
                }
                Entry::Vacant(v) => *v.insert(settled),
            }
        };
        let mut opts = opts;
        opts.after = Some(deadline - now);
        self.queue.add_with_opts(opts, item);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::time::Instant;

    use super::Debouncer;
    use crate::Request;
    use crate::workqueue::{
        AddOpts, Enqueue, LOW_PRIORITY, Queue, QueueConfig, QueueOrder, Workqueue,
    };

    const D: Duration = Duration::from_secs(10);

    fn queue(order: QueueOrder) -> Arc<dyn Queue<Request>> {
        Workqueue::new(QueueConfig::default().order(order))
    }

    /// What a worker does: takes a key, puts it back while its window is open, else returns it.
    async fn next(q: &Arc<dyn Queue<Request>>, d: &Debouncer<Request>) -> (Request, i32) {
        loop {
            let (item, priority) = q.get_with_priority().await.unwrap();
            match d.remaining(&item) {
                Some(wait) => {
                    q.add_with_opts(
                        AddOpts::default().after(wait).priority(priority),
                        item.clone(),
                    );
                    q.done(&item);
                }
                None => return (item, priority),
            }
        }
    }

    /// Triggers at 0, 0.5 d and 0.9 d: one reconcile, at 1.9 d, on both queue kinds.
    #[tokio::test(start_paused = true)]
    async fn a_burst_is_reconciled_once_a_window_after_its_last_trigger() {
        for order in [QueueOrder::Fifo, QueueOrder::Priority] {
            let q = queue(order);
            let d = Debouncer::new(D, q.clone());
            let start = Instant::now();
            let a = Request::new("ns", "a");
            d.add(a.clone());
            tokio::time::sleep(D / 2).await;
            d.add(a.clone());
            tokio::time::sleep(D * 4 / 10).await;
            d.add(a.clone());
            let (item, _) = next(&q, &d).await;
            assert_eq!(item, a);
            assert_eq!(Instant::now() - start, D * 19 / 10, "{order:?}");
            q.done(&item);
            assert_eq!(d.open(), 0, "the window is forgotten once it closed");
            // Nothing else comes: the burst was one reconcile.
            let more = tokio::time::timeout(D * 5, q.get()).await;
            assert!(more.is_err(), "{order:?}: a second reconcile {more:?}");
        }
    }

    /// A trigger while the key is being reconciled: one follow-up reconcile, a window later.
    #[tokio::test(start_paused = true)]
    async fn a_trigger_during_processing_gets_its_follow_up() {
        for order in [QueueOrder::Fifo, QueueOrder::Priority] {
            let q = queue(order);
            let d = Debouncer::new(D, q.clone());
            let a = Request::new("ns", "a");
            d.add(a.clone());
            let (item, _) = next(&q, &d).await;
            let processing = Instant::now();
            d.add(a.clone());
            tokio::time::sleep(D * 2).await;
            q.done(&item);
            // Its window closed during processing: queued again at done, at once.
            let (again, _) = next(&q, &d).await;
            assert_eq!(again, a);
            assert_eq!(Instant::now() - processing, D * 2, "{order:?}");
            q.done(&again);
            assert!(tokio::time::timeout(D * 5, q.get()).await.is_err());
        }
    }

    /// Keys are debounced apart, and a trigger's priority is kept.
    #[tokio::test(start_paused = true)]
    async fn keys_have_their_own_windows_and_keep_their_priority() {
        let q = queue(QueueOrder::Priority);
        let d = Debouncer::new(D, q.clone());
        let start = Instant::now();
        d.add_with_opts(
            AddOpts::default().priority(LOW_PRIORITY),
            Request::new("ns", "low"),
        );
        tokio::time::sleep(D / 2).await;
        d.add_with_opts(AddOpts::default().priority(5), Request::new("ns", "high"));
        let (first, p) = next(&q, &d).await;
        assert_eq!((first.name.as_str(), p), ("low", LOW_PRIORITY));
        assert_eq!(Instant::now() - start, D);
        q.done(&first);
        let (second, p) = next(&q, &d).await;
        assert_eq!((second.name.as_str(), p), ("high", 5));
        assert_eq!(Instant::now() - start, D * 3 / 2);
        q.done(&second);
    }

    /// A delayed trigger is debounced from its own time; one asking for later than the open
    /// window changes nothing.
    #[tokio::test(start_paused = true)]
    async fn delayed_triggers_count_from_their_time() {
        let q = queue(QueueOrder::Fifo);
        let d = Debouncer::new(D, q.clone());
        let start = Instant::now();
        let a = Request::new("ns", "a");
        d.add_after(a.clone(), D);
        d.add_after(a.clone(), D * 5);
        let (item, _) = next(&q, &d).await;
        assert_eq!(item, a);
        assert_eq!(Instant::now() - start, D * 2);
        q.done(&item);
        assert!(tokio::time::timeout(D * 10, q.get()).await.is_err());
    }
}
