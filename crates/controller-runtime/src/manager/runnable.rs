//! [`Runnable`]: what a [`Manager`](super::Manager) runs, and the runnables the runtime
//! provides: every [`Controller`] is one, and so is the manager's [`Cache`].

use std::fmt;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::cache::Cache;
use crate::controller::Controller;
use crate::webhook::Server as WebhookServer;
use crate::workqueue::QueueItem;

pub(crate) use crate::BoxError;

/// Which group a runnable starts in; see the [manager docs](super).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RunnableGroup {
    /// HTTP servers (metrics, probes): first to start, last to stop.
    HttpServers,
    /// Webhook servers.
    Webhooks,
    /// Caches; the manager waits for them to sync before the next group.
    Caches,
    /// Everything else that does not need leader election.
    Others,
    /// Runnables that need leader election: started on the leader only.
    LeaderElection,
}

/// Something a manager runs until its token is cancelled.
pub trait Runnable: Send + Sync + 'static {
    /// A name for logs and errors.
    fn name(&self) -> String;
    /// Runs until `ctx` is cancelled; an `Err` stops the manager.
    fn start(&self, ctx: CancellationToken) -> BoxFuture<'static, Result<(), BoxError>>;
    /// The group it starts in (default: [`RunnableGroup::LeaderElection`], as controller-runtime
    /// treats a runnable that does not say).
    fn group(&self) -> RunnableGroup {
        RunnableGroup::LeaderElection
    }
    /// Work started before leader election (controllers' warm-up); default none.
    fn warm_up(&self, _ctx: CancellationToken) -> BoxFuture<'static, Result<(), BoxError>> {
        Box::pin(async { Ok(()) })
    }
}

/// A runnable from a name, a group and a function.
pub fn from_fn<F, Fut>(name: impl Into<String>, group: RunnableGroup, f: F) -> impl Runnable
where
    F: Fn(CancellationToken) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), BoxError>> + Send + 'static,
{
    struct FnRunnable<F> {
        name: String,
        group: RunnableGroup,
        f: F,
    }
    impl<F, Fut> Runnable for FnRunnable<F>
    where
        F: Fn(CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        fn name(&self) -> String {
            self.name.clone()
        }
        fn start(&self, ctx: CancellationToken) -> BoxFuture<'static, Result<(), BoxError>> {
            Box::pin((self.f)(ctx))
        }
        fn group(&self) -> RunnableGroup {
            self.group
        }
    }
    FnRunnable {
        name: name.into(),
        group,
        f,
    }
}

/// A controller runs in [`RunnableGroup::LeaderElection`] unless its options say it needs no
/// leader election ([`RunnableGroup::Others`]); its warm-up starts its sources before the
/// manager campaigns for leadership (when `enable_warm_up` is set).
impl<T: QueueItem + fmt::Debug> Runnable for Controller<T> {
    fn name(&self) -> String {
        Controller::name(self).to_string()
    }

    fn start(&self, ctx: CancellationToken) -> BoxFuture<'static, Result<(), BoxError>> {
        let controller = self.clone();
        Box::pin(async move { Ok(controller.start(ctx).await?) })
    }

    fn group(&self) -> RunnableGroup {
        if self.need_leader_election() {
            RunnableGroup::LeaderElection
        } else {
            RunnableGroup::Others
        }
    }

    fn warm_up(&self, ctx: CancellationToken) -> BoxFuture<'static, Result<(), BoxError>> {
        let controller = self.clone();
        Box::pin(async move { Ok(controller.warm_up(ctx).await?) })
    }
}

/// The manager's cache as a runnable in [`RunnableGroup::Caches`]: starts every informer, runs
/// until cancelled, then waits for the informers' tasks to end. The manager waits for
/// [`Cache::wait_for_cache_sync`] before it starts the next group.
pub(crate) struct CacheRunnable(pub(crate) Cache);

impl Runnable for CacheRunnable {
    fn name(&self) -> String {
        "cache".into()
    }

    fn start(&self, ctx: CancellationToken) -> BoxFuture<'static, Result<(), BoxError>> {
        let cache = self.0.clone();
        Box::pin(async move {
            cache.start(ctx.clone());
            ctx.cancelled().await;
            cache.stopped().await;
            Ok(())
        })
    }

    fn group(&self) -> RunnableGroup {
        RunnableGroup::Caches
    }
}

/// The manager's webhook server as a runnable in [`RunnableGroup::Webhooks`]; the manager waits
/// until it listens before it starts the caches.
pub(crate) struct WebhookServerRunnable(pub(crate) WebhookServer);

impl Runnable for WebhookServerRunnable {
    fn name(&self) -> String {
        "webhook server".into()
    }

    fn start(&self, ctx: CancellationToken) -> BoxFuture<'static, Result<(), BoxError>> {
        let server = self.0.clone();
        Box::pin(async move { Ok(server.start(ctx).await?) })
    }

    fn group(&self) -> RunnableGroup {
        RunnableGroup::Webhooks
    }
}
