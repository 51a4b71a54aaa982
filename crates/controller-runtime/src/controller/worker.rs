//! The workers: take a key, reconcile it, act on the result.

use std::any::Any;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::FutureExt;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::inner::Inner;
use crate::reconcile::{ReconcileContext, ReconcileError, ReconcileResult};
use crate::workqueue::{AddOpts, QueueItem};

/// The error a panicking reconcile becomes (with `recover_panic`): retried with backoff.
#[derive(Debug, thiserror::Error)]
#[error("panic: {message} [recovered]")]
pub struct ReconcilePanic {
    /// The panic's message, when it was a string.
    pub message: String,
}

/// The error a reconcile that exceeded `reconciliation_timeout` becomes: retried with backoff.
#[derive(Debug, thiserror::Error)]
#[error("reconcile timed out after {0:?}")]
pub struct ReconcileTimeout(pub Duration);

static NEXT_RECONCILE_ID: AtomicU64 = AtomicU64::new(1);

/// Marks the key done (and the worker idle) however processing ends, panics included.
struct Processing<'a, T: QueueItem> {
    inner: &'a Inner<T>,
    item: T,
}

impl<T: QueueItem> Drop for Processing<'_, T> {
    fn drop(&mut self) {
        self.inner.metrics.active_workers.dec();
        self.inner.queue.done(&self.item);
    }
}

/// One worker: takes keys until `stop` is cancelled or the queue is shut down and empty.
pub(super) async fn run<T: QueueItem + fmt::Debug>(inner: Arc<Inner<T>>, stop: CancellationToken) {
    // Reconciles that only read the cache finish without awaiting anything, and a backlog (an
    // initial list, a flooding cluster) hands the next key at once: the worker yields now and
    // then rather than hold its thread for the whole backlog (see `coop`).
    let mut slice = crate::coop::Slice::for_worker(inner.options.worker_slice());
    loop {
        let next = slice
            .step(async {
                tokio::select! {
                    biased;
                    _ = stop.cancelled() => None,
                    next = inner.queue.get_with_priority() => next,
                }
            })
            .await;
        let Some((item, priority)) = next else { return };
        if let Some(wait) = inner.debounce.as_ref().and_then(|d| d.remaining(&item)) {
            // Its debounce window is still open: back to the queue until it closes, unreconciled.
            let opts = AddOpts::default().after(wait).priority(priority);
            inner.queue.add_with_opts(opts, item.clone());
            inner.queue.done(&item);
            continue;
        }
        inner.metrics.active_workers.inc();
        let guard = Processing {
            inner: &inner,
            item: item.clone(),
        };
        slice
            .step(reconcile_handler(&inner, item, priority, &stop))
            .await;
        drop(guard);
    }
}

/// Reconciles one key and acts on the result as controller-runtime's `reconcileHandler`.
/// Requeues keep the key's priority (a low-priority key stays low when it is retried), unless
/// the result asks for another ([`Action::with_priority`](crate::reconcile::Action::with_priority));
/// an error's retry always keeps it.
async fn reconcile_handler<T: QueueItem + fmt::Debug>(
    inner: &Inner<T>,
    item: T,
    priority: i32,
    stopping: &CancellationToken,
) {
    let started = tokio::time::Instant::now();
    // A number per reconcile, so the log lines of one reconcile can be told apart from the next
    // of the same key (controller-runtime's reconcileID).
    let reconcile_id = NEXT_RECONCILE_ID.fetch_add(1, Ordering::Relaxed);
    let span = tracing::info_span!(
        "reconcile",
        controller = %inner.name,
        request = ?item,
        reconcile_id,
    );
    let context = ReconcileContext::running(inner.name.clone(), reconcile_id, stopping.clone());
    let result = reconcile(inner, item.clone(), context)
        .instrument(span.clone())
        .await;
    let _enter = span.enter();
    let m = &inner.metrics;
    let queue = &inner.queue;
    match result {
        Err(err) => {
            if err.is_terminal() {
                m.terminal_errors.inc();
            } else {
                queue.add_with_opts(AddOpts::default().rate_limited().priority(priority), item);
            }
            m.errors.inc();
            m.error.inc();
            tracing::error!(error = %err, terminal = err.is_terminal(), "Reconciler error");
        }
        Ok(action) => {
            if let Some(after) = action.requeue_after_duration() {
                // The result's priority, when it set one, replaces the key's (controller-runtime's
                // `Result.Priority`).
                let priority = action.priority().unwrap_or(priority);
                tracing::debug!(?after, priority, "Reconcile done, requeueing after");
                queue.forget(&item);
                queue.add_with_opts(AddOpts::default().after(after).priority(priority), item);
                m.requeue_after.inc();
            } else {
                tracing::debug!("Reconcile successful");
                queue.forget(&item);
                m.success.inc();
            }
        }
    }
    m.time.observe(started.elapsed().as_secs_f64());
}

/// Runs the reconciler with the timeout and panic recovery the options ask for.
async fn reconcile<T: QueueItem>(
    inner: &Inner<T>,
    item: T,
    context: ReconcileContext,
) -> ReconcileResult {
    let timeout = inner.options.reconciliation_timeout;
    // The call itself runs inside the future, so a panic while building the future is caught too.
    let run = async move {
        let fut = inner.reconciler.reconcile(item, context);
        match timeout {
            Some(limit) => tokio::time::timeout(limit, fut).await.unwrap_or_else(|_| {
                inner.metrics.timeouts.inc();
                Err(ReconcileError::new(ReconcileTimeout(limit)))
            }),
            None => fut.await,
        }
    };
    match AssertUnwindSafe(run).catch_unwind().await {
        Ok(result) => result,
        Err(payload) => {
            inner.metrics.panics.inc();
            let message = panic_message(&*payload);
            if !inner.options.recovers_panic() {
                tracing::error!(panic = %message, "Observed a panic in reconciler");
                std::panic::resume_unwind(payload);
            }
            tracing::error!(panic = %message, "Observed a panic in reconciler, recovered");
            Err(ReconcileError::new(ReconcilePanic { message }))
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}
