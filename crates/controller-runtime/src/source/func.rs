//! [`Func`]: a source that is a closure given the queue's enqueue-only handle.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::interface::{Error, Watch};
use crate::BoxError;
use crate::Request;
use crate::workqueue::{Enqueue, QueueItem};

type StartFn<T> = dyn Fn(CancellationToken, Arc<dyn Enqueue<T>>) -> BoxFuture<'static, Result<(), BoxError>>
    + Send
    + Sync;

/// A source made of a closure that is given the controller's queue (its enqueue-only side,
/// [`Enqueue`]) when the controller starts
/// (controller-runtime's `source.Func`). It produces no events, so it has no handler or
/// predicates: it adds items itself. The future it returns is awaited by the controller's start,
/// so it must return promptly; spawn a task (tied to the token) for ongoing work.
///
/// ```
/// use std::time::Duration;
/// use controller_runtime::source::Func;
/// use controller_runtime::Request;
///
/// // Reconcile one well-known object every minute.
/// let ticker = Func::new(|ctx, queue| async move {
///     tokio::spawn(async move {
///         let mut every = tokio::time::interval(Duration::from_secs(60));
///         loop {
///             tokio::select! {
///                 _ = ctx.cancelled() => break,
///                 _ = every.tick() => queue.add(Request::new("default", "cleanup")),
///             }
///         }
///     });
///     Ok(())
/// });
/// ```
pub struct Func<T: QueueItem = Request> {
    f: Arc<StartFn<T>>,
    name: String,
}

impl<T: QueueItem> Func<T> {
    /// A source running `f(ctx, queue)` at start.
    pub fn new<F, Fut>(f: F) -> Self
    where
        F: Fn(CancellationToken, Arc<dyn Enqueue<T>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        Func {
            f: Arc::new(move |ctx, queue| Box::pin(f(ctx, queue))),
            name: "func source".into(),
        }
    }

    /// Names the source in logs and errors.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

impl<T: QueueItem> Clone for Func<T> {
    fn clone(&self) -> Self {
        Func {
            f: self.f.clone(),
            name: self.name.clone(),
        }
    }
}

impl<T: QueueItem> fmt::Debug for Func<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Func").field("name", &self.name).finish()
    }
}

impl<T: QueueItem> Watch<T> for Func<T> {
    fn start(
        &self,
        ctx: CancellationToken,
        queue: Arc<dyn Enqueue<T>>,
    ) -> BoxFuture<'_, Result<(), Error>> {
        let fut = (self.f)(ctx, queue);
        Box::pin(async move {
            fut.await.map_err(|source| Error::Start {
                source_name: self.name.clone(),
                source,
            })
        })
    }

    fn wait_for_sync(&self, _ctx: CancellationToken) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async { Ok(()) })
    }

    fn describe(&self) -> String {
        self.name.clone()
    }
}
