//! Controllers: a workqueue, the watches that fill it and the workers that drain it into a
//! [`Reconciler`].
//!
//! ```text
//! watches (source -> predicates -> handler) --> queue --> N workers --> reconciler
//!                                                 ^                        |
//!                                                 +--- requeue / backoff --+
//! ```
//!
//! [`Controller::start`] starts every watch, waits (at most `cache_sync_timeout`) until the
//! syncing ones have delivered their initial state, then runs `max_concurrent_reconciles`
//! workers until its token is cancelled. The result of each reconcile decides what happens to
//! the key, as in controller-runtime (see [`crate::reconcile`]); a panicking reconcile is caught,
//! logged, counted and retried with backoff. One key is never reconciled by two workers at once.
//! Stopping is graceful: workers stop taking keys, running reconciles finish, the queue shuts
//! down, and `start` returns.
//!
//! Watches can be added at any time, before or after `start`, and removed again with the
//! [`WatchHandle`] adding returned ([`Controller::remove_watch`], which controller-runtime
//! lacks): each started watch runs under its own child of the controller's token, so removing
//! one stops that source alone.
//!
//! ```
//! use std::sync::Arc;
//! use controller_runtime::controller::{Controller, ControllerOptions};
//! use controller_runtime::event::GenericEvent;
//! use controller_runtime::handler::EnqueueRequestForObject;
//! use controller_runtime::reconcile::{self, Action, ReconcileError};
//! use controller_runtime::{source, Request};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use tokio_util::sync::CancellationToken;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let reconciler = reconcile::from_fn(|req: Request, _ctx| async move {
//!     println!("reconcile {req}");
//!     Ok(Action::done())
//! });
//! let controller = Controller::new("configmaps", reconciler, ControllerOptions::default()).unwrap();
//! let (tx, channel) = source::channel::<ConfigMap>(16);
//! controller.watch(channel, EnqueueRequestForObject, vec![]).await.unwrap();
//!
//! let ctx = CancellationToken::new();
//! let running = tokio::spawn({ let (c, ctx) = (controller.clone(), ctx.clone()); async move { c.start(ctx).await } });
//! let mut cm = ConfigMap::default();
//! cm.metadata.namespace = Some("default".into());
//! cm.metadata.name = Some("settings".into());
//! tx.send(GenericEvent { object: Arc::new(cm) }).await.unwrap();
//! // ... later:
//! ctx.cancel();
//! running.await.unwrap().unwrap();
//! # });
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::future::join_all;
use tokio::sync::Mutex;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::Request;
use crate::handler::EventHandler;
use crate::metrics::ControllerMetrics;
use crate::predicate::BoxPredicate;
use crate::reconcile::Reconciler;
use crate::source::{self, Source, Watch};
use crate::workqueue::{Enqueue, Queue, QueueConfig, QueueItem, QueueOrder, Workqueue};

mod debounce;
mod inner;
mod options;
mod worker;

pub use options::{ControllerOptions, NewQueueFn, NewRateLimiterFn};
pub use worker::{ReconcilePanic, ReconcileTimeout};

use inner::{Inner, Sources, State};

/// Why a controller could not be built or started.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The controller has no name.
    #[error("a controller needs a name")]
    MissingName,
    /// An option has a value the controller cannot run with.
    #[error("controller {controller}: invalid options: {reason}")]
    InvalidOptions {
        /// The controller.
        controller: String,
        /// What is wrong.
        reason: String,
    },
    /// `start` was called a second time.
    #[error("controller {0} was started more than once")]
    AlreadyStarted(String),
    /// A watch's source failed to start or sync.
    #[error("controller {controller}: {source}")]
    Source {
        /// The controller.
        controller: String,
        /// The source's error.
        #[source]
        source: source::Error,
    },
    /// The sources failed to start or sync during [`Controller::warm_up`], so the controller
    /// cannot start.
    #[error("controller {controller}: sources failed during warm-up: {reason}")]
    WarmUpFailed {
        /// The controller.
        controller: String,
        /// The warm-up error.
        reason: String,
    },
    /// A syncing source did not sync within `cache_sync_timeout`.
    #[error(
        "controller {controller}: timed out after {timeout:?} waiting for {source_name} to sync{}",
        .last_error.as_ref().map(|e| format!(": last error: {e}")).unwrap_or_default()
    )]
    SyncTimeout {
        /// The controller.
        controller: String,
        /// The source that did not sync (its description).
        source_name: String,
        /// The `cache_sync_timeout` that passed.
        timeout: Duration,
        /// Why it had not synced, when the source knew ([`Watch::last_error`]): for a
        /// [`Kind`](crate::source::Kind) source, its informer's last list or watch failure,
        /// e.g. `list failed (403): configmaps is forbidden: User "system:serviceaccount:ns:op"
        /// cannot list resource "configmaps" in API group "" at the cluster scope`.
        last_error: Option<String>,
    },
}

/// A controller: see the [module docs](self). Cheap to clone; clones are the same controller,
/// so one clone can run [`start`](Self::start) while another adds watches.
pub struct Controller<T: QueueItem = Request> {
    inner: Arc<Inner<T>>,
}

impl<T: QueueItem> Clone for Controller<T> {
    fn clone(&self) -> Self {
        Controller {
            inner: self.inner.clone(),
        }
    }
}

/// Identifies a watch added to a controller, to remove it with [`Controller::remove_watch`].
///
/// Handles are unique across all controllers of the process, so a handle given to another
/// controller removes nothing.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WatchHandle {
    id: u64,
    description: Arc<str>,
}

impl WatchHandle {
    fn new(description: String) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        WatchHandle {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            description: description.into(),
        }
    }

    /// The watched source's description (as in the controller's logs).
    pub fn describe(&self) -> &str {
        &self.description
    }
}

impl<T: QueueItem> fmt::Debug for Controller<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.inner.name)
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

impl<T: QueueItem + fmt::Debug> Controller<T> {
    /// A controller named `name` (unique per manager: it labels logs and metrics) calling
    /// `reconciler`. Its queue is created here, so handlers and tests can reach it at once.
    pub fn new(
        name: impl Into<String>,
        reconciler: impl Reconciler<T> + 'static,
        options: ControllerOptions<T>,
    ) -> Result<Self, Error> {
        let name = name.into();
        if name.is_empty() {
            return Err(Error::MissingName);
        }
        options.validate().map_err(|reason| Error::InvalidOptions {
            controller: name.clone(),
            reason,
        })?;
        let queue = new_queue(&name, &options);
        let window = options.debounce_window();
        let debounce =
            (!window.is_zero()).then(|| Arc::new(debounce::Debouncer::new(window, queue.clone())));
        let metrics = match &options.metrics {
            Some(m) => m.controller.for_controller(&name),
            None => ControllerMetrics::unregistered().for_controller(&name),
        };
        metrics.max_concurrent.set(options.workers() as i64);
        Ok(Controller {
            inner: Arc::new(Inner {
                name: name.into(),
                reconciler: Arc::new(reconciler),
                options,
                queue,
                debounce,
                metrics,
                state: Mutex::new(State {
                    started: false,
                    sources: Sources::NotStarted,
                    ctx: None,
                    pending: Vec::new(),
                    running: HashMap::new(),
                }),
            }),
        })
    }

    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Whether the controller must run only on the elected leader.
    pub fn need_leader_election(&self) -> bool {
        self.inner.options.needs_leader_election()
    }

    /// The controller's workqueue.
    pub fn queue(&self) -> &Arc<dyn Queue<T>> {
        &self.inner.queue
    }

    /// Watches `source`: its events go through `predicates` (all must pass), then `handler`,
    /// which fills the queue. Before [`start`](Self::start) (or [`warm_up`](Self::warm_up)) the
    /// watch is kept until then; after, the source is started at once (without waiting for it to
    /// sync). The handle removes the watch again: see [`remove_watch`](Self::remove_watch).
    pub async fn watch<K, S, H>(
        &self,
        source: S,
        handler: H,
        predicates: Vec<BoxPredicate<K>>,
    ) -> Result<WatchHandle, Error>
    where
        K: Send + Sync + 'static,
        S: Source<K, T> + 'static,
        H: EventHandler<K, T> + 'static,
    {
        self.add_watch(source::watch(source, handler, predicates))
            .await
    }

    /// Adds a ready-made [`Watch`] (a bound source, or a [`Func`](crate::source::Func)); see
    /// [`watch`](Self::watch).
    ///
    /// It takes the controller's lock, which [`start`](Self::start) holds while it starts and
    /// syncs the sources: do not call it from a source's `start` or `wait_for_sync`.
    pub async fn add_watch(&self, watch: impl Watch<T> + 'static) -> Result<WatchHandle, Error> {
        let handle = WatchHandle::new(watch.describe());
        let mut state = self.inner.state.lock().await;
        match (&state.ctx, &state.sources) {
            (Some(ctx), Sources::Started) => {
                tracing::info!(controller = %self.inner.name, source = %handle.describe(), "Starting EventSource");
                let token = ctx.child_token();
                watch
                    .start(token.clone(), self.inner.enqueue())
                    .await
                    .map_err(|source| {
                        token.cancel();
                        self.source_error(source)
                    })?;
                state.running.insert(handle.id, token);
            }
            _ => state.pending.push((handle.id, Arc::new(watch))),
        }
        Ok(handle)
    }

    /// Removes a watch added with [`watch`](Self::watch) or [`add_watch`](Self::add_watch),
    /// before or after the controller started: a pending watch is dropped, a started one has
    /// its source stopped (its token is cancelled; the source's tasks end shortly after). Keys
    /// the watch already queued stay queued. Returns `false` when the watch is not in this
    /// controller (already removed, or added to another one).
    ///
    /// Like `add_watch`, it waits while [`start`](Self::start) starts and syncs the sources.
    ///
    /// ```
    /// use controller_runtime::controller::{Controller, ControllerOptions};
    /// use controller_runtime::handler::EnqueueRequestForObject;
    /// use controller_runtime::reconcile::{self, Action};
    /// use controller_runtime::{source, Request};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let reconciler = reconcile::from_fn(|_: Request, _ctx| async { Ok(Action::done()) });
    /// let controller = Controller::new("configmaps", reconciler, ControllerOptions::default()).unwrap();
    /// let (_tx, channel) = source::channel::<ConfigMap>(16);
    /// let handle = controller.watch(channel, EnqueueRequestForObject, vec![]).await.unwrap();
    /// assert!(controller.remove_watch(&handle).await);
    /// assert!(!controller.remove_watch(&handle).await, "removed once");
    /// # });
    /// ```
    pub async fn remove_watch(&self, handle: &WatchHandle) -> bool {
        let mut state = self.inner.state.lock().await;
        if let Some(token) = state.running.remove(&handle.id) {
            tracing::info!(controller = %self.inner.name, source = %handle.describe(), "Stopping EventSource");
            token.cancel();
            return true;
        }
        let before = state.pending.len();
        state.pending.retain(|(id, _)| *id != handle.id);
        state.pending.len() != before
    }

    fn source_error(&self, source: source::Error) -> Error {
        Error::Source {
            controller: self.inner.name.to_string(),
            source,
        }
    }

    /// Runs the controller until `ctx` is cancelled: starts every watch, waits for the syncing
    /// ones (at most `cache_sync_timeout`; the error names the source), then runs the workers.
    /// On cancellation, workers stop taking keys, running reconciles finish, the queue shuts
    /// down, and `start` returns `Ok(())`. A controller starts once.
    pub async fn start(&self, ctx: CancellationToken) -> Result<(), Error> {
        let inner = &self.inner;
        let mut state = inner.state.lock().await;
        if state.started {
            return Err(Error::AlreadyStarted(inner.name.to_string()));
        }
        state.started = true;

        match self.start_sources_locked(&mut state, &ctx).await {
            Ok(true) => {}
            Ok(false) => {
                // Cancelled while starting: not an error.
                inner.queue.shut_down();
                return Ok(());
            }
            Err(e) => {
                inner.queue.shut_down();
                return Err(e);
            }
        }

        let workers = inner.options.workers();
        tracing::info!(controller = %inner.name, worker_count = workers, "Starting workers");
        let stop = ctx.child_token();
        let mut set = JoinSet::new();
        for _ in 0..workers {
            set.spawn(worker::run(inner.clone(), stop.clone()));
        }
        // Late watches may be added from here on.
        drop(state);

        let panic = tokio::select! {
            _ = ctx.cancelled() => None,
            // Only a panic (recover_panic off) ends a worker before cancellation.
            Some(Err(e)) = set.join_next() => e.try_into_panic().ok(),
        };
        tracing::info!(controller = %inner.name, "Shutdown signal received, waiting for all workers to finish");
        stop.cancel();
        inner.queue.shut_down();
        let mut panic = panic;
        while let Some(res) = set.join_next().await {
            if let Err(e) = res
                && panic.is_none()
            {
                panic = e.try_into_panic().ok();
            }
        }
        tracing::info!(controller = %inner.name, "All workers finished");
        if let Some(payload) = panic {
            std::panic::resume_unwind(payload);
        }
        Ok(())
    }

    /// Starts the sources before the controller starts, when `enable_warm_up` is set (else does
    /// nothing): the Manager calls it before leader election, so that a new leader has its
    /// caches synced and its queue filled and reconciles at once. Waits for the syncing sources
    /// like `start`. The sources then run until `ctx` is cancelled; [`start`](Self::start)
    /// later only runs the workers. Calling it again, or after `start`, does nothing.
    pub async fn warm_up(&self, ctx: CancellationToken) -> Result<(), Error> {
        if !self.inner.options.warms_up() {
            return Ok(());
        }
        let mut state = self.inner.state.lock().await;
        if !matches!(state.sources, Sources::NotStarted) {
            return Ok(());
        }
        let started = self.start_sources_locked(&mut state, &ctx).await?;
        if started {
            // Nothing else shuts the queue down if the controller never starts.
            let queue = self.inner.queue.clone();
            tokio::spawn(async move {
                ctx.cancelled().await;
                queue.shut_down();
            });
        }
        Ok(())
    }

    /// Starts the pending watches once, with `ctx`, and waits for them to sync. `Ok(false)`
    /// when `ctx` was cancelled meanwhile.
    async fn start_sources_locked(
        &self,
        state: &mut State<T>,
        ctx: &CancellationToken,
    ) -> Result<bool, Error> {
        match &state.sources {
            Sources::Started => return Ok(true),
            Sources::Failed(reason) => {
                return Err(Error::WarmUpFailed {
                    controller: self.inner.name.to_string(),
                    reason: reason.clone(),
                });
            }
            Sources::NotStarted => {}
        }
        state.ctx = Some(ctx.clone());
        let watches: Vec<_> = std::mem::take(&mut state.pending)
            .into_iter()
            .map(|(id, watch)| {
                let token = ctx.child_token();
                state.running.insert(id, token.clone());
                (token, watch)
            })
            .collect();
        let result = self.start_watches(&watches, ctx).await;
        state.sources = match &result {
            Ok(true) => Sources::Started,
            Ok(false) => Sources::Failed("cancelled while starting".into()),
            Err(e) => Sources::Failed(e.to_string()),
        };
        result
    }

    /// Starts the watches, each with its own token (a child of `ctx`), and waits for them to
    /// sync. `Ok(false)` when `ctx` was cancelled meanwhile.
    async fn start_watches(
        &self,
        watches: &[(CancellationToken, Arc<dyn Watch<T>>)],
        ctx: &CancellationToken,
    ) -> Result<bool, Error> {
        let inner = &self.inner;
        let timeout = inner.options.sync_timeout();
        let one = |(token, w): &(CancellationToken, Arc<dyn Watch<T>>)| {
            let w = w.clone();
            let queue = inner.enqueue();
            let ctx = token.clone();
            async move {
                let name = w.describe();
                tracing::info!(controller = %inner.name, source = %name, "Starting EventSource");
                let started = async {
                    w.start(ctx.clone(), queue).await?;
                    w.wait_for_sync(ctx.clone()).await
                };
                match tokio::time::timeout(timeout, started).await {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(e)) => Err(self.source_error(e)),
                    Err(_) => Err(Error::SyncTimeout {
                        controller: inner.name.to_string(),
                        source_name: name,
                        timeout,
                        last_error: w.last_error(),
                    }),
                }
            }
        };
        let all = join_all(watches.iter().map(one));
        tokio::select! {
            results = all => {
                // Cancelled meanwhile: the sources answer `Cancelled` (their tokens are
                // children of `ctx`), and both branches may be ready at once. Stopping is not
                // an error, whichever branch the select took.
                if ctx.is_cancelled() {
                    return Ok(false);
                }
                results.into_iter().collect::<Result<Vec<()>, Error>>()?;
                tracing::info!(controller = %inner.name, "Starting Controller");
                Ok(true)
            }
            _ = ctx.cancelled() => Ok(false),
        }
    }
}

impl<T: QueueItem> Inner<T> {
    /// What the watches enqueue through: the debounce layer, or the queue itself.
    fn enqueue(&self) -> Arc<dyn Enqueue<T>> {
        match &self.debounce {
            Some(debounce) => debounce.clone(),
            None => self.queue.clone(),
        }
    }
}

/// The controller's queue: the one `new_queue` builds, else the priority queue or the plain
/// rate-limiting queue.
fn new_queue<T: QueueItem>(name: &str, options: &ControllerOptions<T>) -> Arc<dyn Queue<T>> {
    let rate_limiter = options.make_rate_limiter();
    if let Some(build) = &options.new_queue {
        return build(name, rate_limiter);
    }
    let mut config = QueueConfig::default()
        .name(name)
        .rate_limiter(rate_limiter)
        .order(if options.priority_queue() {
            QueueOrder::Priority
        } else {
            QueueOrder::Fifo
        });
    config.metrics = options.metrics.as_ref().map(|m| m.workqueue.clone());
    Workqueue::new(config)
}
