//! What a source is ([`Source`], [`Watch`]) and why one fails ([`Error`]). A leaf of
//! `source`, which re-exports it.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::dispatch::EventDispatcher;
use crate::workqueue::{Enqueue, QueueItem};
use crate::{BoxError, Request};

/// Why a source could not start or sync.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The source failed to start.
    #[error("source {source_name} failed to start")]
    Start {
        /// The source (its [`Watch::describe`] text).
        source_name: String,
        /// Why.
        #[source]
        source: BoxError,
    },
    /// The source started but could not sync its cache.
    #[error("source {source_name} failed to sync")]
    Sync {
        /// The source.
        source_name: String,
        /// Why.
        #[source]
        source: BoxError,
    },
    /// Waiting for the source to sync was cancelled (the controller is stopping).
    #[error("stopped before source {source_name} synced")]
    Cancelled {
        /// The source.
        source_name: String,
    },
}

/// Produces events about objects of type `K` for one watch (controller-runtime's `Source` with
/// its handler, queue and predicates given at start).
///
/// `start` must not block: it spawns what it needs (tied to `ctx`) and returns. A source may
/// be started several times, with different dispatchers (several watches, several
/// controllers); each start is a separate destination.
///
/// A controller starts and syncs its sources while holding its own lock, so neither `start`
/// nor `wait_for_sync` may call back into the same controller (`watch`, `add_watch`, `start`):
/// that call would wait for the lock forever. Add watches from outside the source.
pub trait Source<K, T: QueueItem = Request>: Send + Sync {
    /// Starts delivering events to `dispatcher` until `ctx` is cancelled.
    fn start(
        &self,
        ctx: CancellationToken,
        dispatcher: EventDispatcher<K, T>,
    ) -> BoxFuture<'_, Result<(), Error>>;

    /// Waits until the source has delivered its initial state (a syncing source: the informer
    /// synced and the handler registration saw the initial list). The controller bounds the
    /// wait by its `cache_sync_timeout`. The default returns at once: not a syncing source.
    fn wait_for_sync(&self, _ctx: CancellationToken) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async { Ok(()) })
    }

    /// A short description for logs and errors, e.g. `kind source: ConfigMap`.
    fn describe(&self) -> String;

    /// Why the source has not synced, when it knows: for [`Kind`](crate::source::Kind), its informer's last list or
    /// watch failure (the API server's 403 naming a missing permission, say). The controller
    /// puts it in its [`SyncTimeout`](crate::controller::Error::SyncTimeout) error. The
    /// default knows nothing.
    fn last_error(&self) -> Option<String> {
        None
    }
}

impl<K, T: QueueItem, S: Source<K, T> + ?Sized> Source<K, T> for Arc<S> {
    fn start(
        &self,
        ctx: CancellationToken,
        dispatcher: EventDispatcher<K, T>,
    ) -> BoxFuture<'_, Result<(), Error>> {
        (**self).start(ctx, dispatcher)
    }
    fn wait_for_sync(&self, ctx: CancellationToken) -> BoxFuture<'_, Result<(), Error>> {
        (**self).wait_for_sync(ctx)
    }
    fn describe(&self) -> String {
        (**self).describe()
    }
    fn last_error(&self) -> Option<String> {
        (**self).last_error()
    }
}

/// What a controller starts: a source bound to its handler and predicates (or a source that
/// needs none). Object-safe, and independent of the object type, so one controller holds
/// watches on many types.
pub trait Watch<T: QueueItem = Request>: Send + Sync {
    /// Starts the source, feeding `queue`, until `ctx` is cancelled. Returns once started.
    fn start(
        &self,
        ctx: CancellationToken,
        queue: Arc<dyn Enqueue<T>>,
    ) -> BoxFuture<'_, Result<(), Error>>;

    /// Waits until the source synced; at once for sources that do not sync.
    fn wait_for_sync(&self, ctx: CancellationToken) -> BoxFuture<'_, Result<(), Error>>;

    /// A short description for logs and errors.
    fn describe(&self) -> String;

    /// Why the source has not synced, when it knows (see [`Source::last_error`]). The default
    /// knows nothing.
    fn last_error(&self) -> Option<String> {
        None
    }
}

/// The last path segment of a type name (`ConfigMap` for `k8s_openapi::...::ConfigMap`), for
/// descriptions.
pub(crate) fn short_type_name<K>() -> &'static str {
    let full = std::any::type_name::<K>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base)
}
