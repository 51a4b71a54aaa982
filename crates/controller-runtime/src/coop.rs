//! Cooperative yielding for loops that can run for long without awaiting anything.
//!
//! Tokio does not preempt a task: one that keeps finding work ready (an informer with a chunk
//! of thousands of watch events received at once, a worker whose reconciles read only the
//! cache while its queue holds a backlog) holds its runtime thread until it runs out, and
//! every task queued behind it on that thread waits: other informers, other clusters'
//! reconciles, health probes, lease renewals, even the thread's turn to poll for I/O. Tokio's
//! own budget only counts operations on its resources, which such a loop does not touch. A
//! [`Slice`] makes the loop yield once it has held the thread for [`SLICE`] since it last did.
//! A leaf module: it imports nothing of the crate.

use std::time::{Duration, Instant};

/// How long a loop runs before it lets the other tasks of its thread have a turn. A yield
/// costs about a microsecond, so this spends under 1% of a busy thread on yielding, and bounds
/// what a busy informer or worker adds to another task's wait at a fifth of a millisecond.
pub(crate) const SLICE: Duration = Duration::from_micros(200);

/// How long a worker runs before it yields on a multi-threaded runtime, where the other
/// threads take the tasks queued behind it (a yield there lets an idle thread steal the worker
/// itself, which costs it its warm caches: yielding every [`SLICE`] made a cold start of
/// 100,000 objects take a quarter more CPU).
pub(crate) const WORKER_SLICE: Duration = Duration::from_millis(5);

/// The time a loop has held its thread since it last yielded.
pub(crate) struct Slice {
    since: Instant,
    length: Duration,
}

impl Slice {
    /// A slice of [`SLICE`] starting now.
    pub(crate) fn new() -> Self {
        Slice {
            since: Instant::now(),
            length: SLICE,
        }
    }

    /// A worker's slice: [`SLICE`] on a current-thread runtime, where nothing else runs while
    /// it does, [`WORKER_SLICE`] on a multi-threaded one.
    pub(crate) fn for_worker() -> Self {
        let multi = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        Slice {
            since: Instant::now(),
            length: if multi { WORKER_SLICE } else { SLICE },
        }
    }

    /// Yields to the runtime if the slice's length has passed since it started or last yielded.
    /// (Time spent waiting in between counts too: a loop that awaits often yields at most once
    /// per slice more than it had to.)
    pub(crate) async fn tick(&mut self) {
        if self.since.elapsed() >= self.length {
            tokio::task::yield_now().await;
            self.since = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    /// A loop that never awaits anything else, ticking its slice, lets another task of its
    /// single-threaded runtime run; without the ticks the other task would wait until the loop
    /// ends.
    #[tokio::test(flavor = "current_thread")]
    async fn a_busy_loop_that_ticks_lets_other_tasks_run() {
        let ran = Arc::new(AtomicBool::new(false));
        let other = tokio::spawn({
            let ran = ran.clone();
            async move { ran.store(true, Ordering::Release) }
        });
        let mut slice = Slice::new();
        let started = Instant::now();
        while !ran.load(Ordering::Acquire) {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "the other task never ran"
            );
            std::hint::spin_loop();
            slice.tick().await;
        }
        other.await.unwrap();
    }
}
