//! Cooperative yielding for loops that can run for long without awaiting anything.
//!
//! Tokio does not preempt a task: one that keeps finding work ready (an informer with a chunk
//! of thousands of watch events received at once, a worker whose reconciles read only the
//! cache while its queue holds a backlog) holds its runtime thread until it runs out, and
//! every task queued behind it on that thread waits: other informers, other clusters'
//! reconciles, health probes, lease renewals, even the thread's turn to poll for I/O. Tokio's
//! own budget only counts operations on its resources, which such a loop does not touch. A
//! [`Slice`] makes the loop yield once it has held the thread for [`SLICE`] without giving it
//! up: each step of the loop runs through [`Slice::step`], which notes whether the step had to
//! wait (then the thread was given up, and the slice starts again) and otherwise yields once
//! the slice is used up. A loop fed at a moderate rate waits between steps and never yields
//! for nothing. A leaf module: it imports nothing of the crate.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;
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
    /// How many times it yielded.
    #[cfg(test)]
    yields: usize,
}

impl Slice {
    /// A slice of [`SLICE`] starting now.
    pub(crate) fn new() -> Self {
        Slice::of(SLICE)
    }

    /// A slice of `length` starting now.
    fn of(length: Duration) -> Self {
        Slice {
            since: Instant::now(),
            length,
            #[cfg(test)]
            yields: 0,
        }
    }

    /// A worker's slice: `length` if set; otherwise [`SLICE`] on a current-thread runtime,
    /// where nothing else runs while it does, [`WORKER_SLICE`] on a multi-threaded one.
    pub(crate) fn for_worker(length: Option<Duration>) -> Self {
        if let Some(length) = length {
            return Slice::of(length);
        }
        let multi = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        Slice::of(if multi { WORKER_SLICE } else { SLICE })
    }

    /// Runs one step of the loop: `step` to completion, then a yield to the runtime if the
    /// slice is used up. A step that waited (returned `Pending` once) gave the thread up, and
    /// starts the slice again.
    pub(crate) async fn step<F: Future>(&mut self, step: F) -> F::Output {
        let mut step = pin!(step);
        let mut waited = false;
        let out = std::future::poll_fn(|cx| match step.as_mut().poll(cx) {
            Poll::Pending => {
                waited = true;
                Poll::Pending
            }
            ready => ready,
        })
        .await;
        if waited {
            self.since = Instant::now();
        } else if self.since.elapsed() >= self.length {
            tokio::task::yield_now().await;
            self.since = Instant::now();
            #[cfg(test)]
            {
                self.yields += 1;
            }
        }
        out
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
    async fn a_busy_loop_lets_other_tasks_run() {
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
            slice.step(async { std::hint::spin_loop() }).await;
        }
        other.await.unwrap();
    }

    /// A loop whose steps wait (here for a timer) gives its thread up at each of them and
    /// never yields on top of that, however long it runs; a step that did not wait yields once
    /// the slice is used up.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_loop_that_waits_never_yields_for_nothing() {
        let mut slice = Slice::of(Duration::ZERO);
        for _ in 0..100 {
            slice
                .step(tokio::time::sleep(Duration::from_millis(1)))
                .await;
        }
        assert_eq!(slice.yields, 0);
        slice.step(async {}).await;
        assert_eq!(slice.yields, 1);
    }
}
