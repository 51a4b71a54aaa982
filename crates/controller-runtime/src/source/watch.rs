//! [`EventWatch`]: a source bound to its handler and predicates, type-erased for the controller.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::EventDispatcher;
use super::interface::{Error, Source, Watch};
use crate::handler::{BoxEventHandler, EventHandler};
use crate::predicate::BoxPredicate;
use crate::workqueue::{Enqueue, QueueItem};

/// A [`Source`] with the handler and predicates it will be started with; see [`watch`].
pub struct EventWatch<K, T: QueueItem> {
    source: Arc<dyn Source<K, T>>,
    handler: BoxEventHandler<K, T>,
    predicates: Vec<BoxPredicate<K>>,
}

/// Binds a source to a handler and predicates, giving the [`Watch`] a controller starts.
pub fn watch<K, T, S, H>(
    source: S,
    handler: H,
    predicates: Vec<BoxPredicate<K>>,
) -> EventWatch<K, T>
where
    K: 'static,
    T: QueueItem,
    S: Source<K, T> + 'static,
    H: EventHandler<K, T> + 'static,
{
    EventWatch {
        source: Arc::new(source),
        handler: Arc::new(handler),
        predicates,
    }
}

impl<K: Send + Sync + 'static, T: QueueItem> Watch<T> for EventWatch<K, T> {
    fn start(
        &self,
        ctx: CancellationToken,
        queue: Arc<dyn Enqueue<T>>,
    ) -> BoxFuture<'_, Result<(), Error>> {
        let dispatcher = EventDispatcher::new(self.handler.clone(), queue, self.predicates.clone());
        self.source.start(ctx, dispatcher)
    }

    fn wait_for_sync(&self, ctx: CancellationToken) -> BoxFuture<'_, Result<(), Error>> {
        self.source.wait_for_sync(ctx)
    }

    fn describe(&self) -> String {
        self.source.describe()
    }

    fn last_error(&self) -> Option<String> {
        self.source.last_error()
    }
}
