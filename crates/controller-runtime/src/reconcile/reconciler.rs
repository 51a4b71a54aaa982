//! Reconcilers and what they answer: [`Reconciler`], [`Action`], [`ReconcileError`] and
//! [`TerminalError`], [`ReconcileContext`], closures as reconcilers ([`from_fn`]). A leaf of
//! `reconcile`, which re-exports it.

use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::ObjectKey;

/// The key of one object to reconcile: an [`ObjectKey`] (namespace, `None` for cluster-scoped
/// objects, and name) under the name reconcilers know it by (controller-runtime's
/// `reconcile.Request`). It is the default item type of every workqueue.
///
/// `Request` is a type alias of [`ObjectKey`], not a wrapper: the key a handler enqueues is the
/// key a reconciler reads the cache and the client with, no conversion between them
/// (`Request::new`, `Request::cluster_scoped` and `Request::of` are [`ObjectKey`]'s).
///
/// A request carries no object: the reconciler reads the current state from the cache, so that
/// several events for one object collapse into one reconcile of its latest state.
pub type Request = ObjectKey;

/// What a successful reconcile asks the controller to do next (controller-runtime's `Result`):
/// nothing, or another reconcile after a delay, at the key's priority or the one
/// [`with_priority`](Action::with_priority) gives. A retry with backoff is an error (see the
/// [module docs](crate::reconcile)).
///
/// ```
/// use std::time::Duration;
/// use controller_runtime::reconcile::Action;
///
/// assert_eq!(Action::done().requeue_after_duration(), None);
/// assert_eq!(Action::requeue_after(Duration::from_secs(5)).requeue_after_duration(),
///            Some(Duration::from_secs(5)));
/// // A zero delay means "no delayed requeue", as in controller-runtime.
/// assert_eq!(Action::requeue_after(Duration::ZERO), Action::done());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Action {
    requeue_after: Duration,
    /// The priority of the requeue; `None` keeps the key's.
    priority: Option<i32>,
}

impl Action {
    /// Nothing more to do: the key's backoff is forgotten and it returns only with a new event.
    pub fn done() -> Self {
        Action::default()
    }

    /// Reconcile the key again after `delay` (the backoff is forgotten first). A zero delay is
    /// [`Action::done`].
    pub fn requeue_after(delay: Duration) -> Self {
        Action {
            requeue_after: delay,
            priority: None,
        }
    }

    /// The same action, with the priority the key is requeued at (controller-runtime's
    /// `Result.Priority`). Default: none, so a requeue keeps the priority the key was handed out
    /// with (a low-priority key from an initial list stays low).
    ///
    /// The priority matters only when the key is queued again, so it is read by a delayed
    /// requeue ([`Action::requeue_after`]); on [`Action::done`] nothing is queued and the
    /// priority has no effect, as upstream, where `Result{Priority: p}` without a requeue only
    /// forgets the key. A failed reconcile returns no `Action`, so its retry keeps the key's
    /// priority. Only a priority queue (`ControllerOptions::with_use_priority_queue`, the
    /// default) orders by it; a FIFO queue ignores it.
    ///
    /// controller-runtime: `reconcile.Result.Priority`; kube-rs: none (its scheduler has no
    /// priorities).
    ///
    /// ```
    /// use std::time::Duration;
    /// use controller_runtime::reconcile::Action;
    /// use controller_runtime::workqueue::LOW_PRIORITY;
    ///
    /// // Poll again in a minute, behind the real changes waiting then.
    /// let poll = Action::requeue_after(Duration::from_secs(60)).with_priority(LOW_PRIORITY);
    /// assert_eq!(poll.priority(), Some(LOW_PRIORITY));
    /// assert_eq!(poll.requeue_after_duration(), Some(Duration::from_secs(60)));
    ///
    /// // Without one, the requeue keeps the key's priority.
    /// assert_eq!(Action::requeue_after(Duration::from_secs(60)).priority(), None);
    ///
    /// // Nothing is requeued: the priority is kept on the value but changes nothing.
    /// let done = Action::done().with_priority(10);
    /// assert_eq!(done.requeue_after_duration(), None);
    /// assert_eq!(done.priority(), Some(10));
    /// ```
    pub fn with_priority(mut self, priority: i32) -> Self {
        self.priority = Some(priority);
        self
    }

    /// The delay of a delayed requeue, if one was asked for (never zero).
    pub fn requeue_after_duration(&self) -> Option<Duration> {
        (!self.requeue_after.is_zero()).then_some(self.requeue_after)
    }

    /// The priority a requeue asked for with [`Action::with_priority`], if any; `None` means
    /// the key's own priority.
    pub fn priority(&self) -> Option<i32> {
        self.priority
    }
}

use crate::BoxError;

/// An error that tells the controller not to retry: the reconcile failed in a way that trying
/// again cannot fix (controller-runtime's `reconcile.TerminalError`).
///
/// The controller counts it in `controller_runtime_terminal_reconcile_errors_total` and does not
/// requeue the key. It is found anywhere in an error's source chain, so wrapping it in another
/// error keeps it terminal.
#[derive(Debug)]
pub struct TerminalError(BoxError);

impl TerminalError {
    /// Marks `err` as terminal.
    pub fn new(err: impl Into<BoxError>) -> Self {
        TerminalError(err.into())
    }

    /// A terminal error with a message.
    pub fn msg(message: impl fmt::Display) -> Self {
        TerminalError(message.to_string().into())
    }
}

impl fmt::Display for TerminalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The cause is the source (see `source()`), so it is not repeated here.
        f.write_str("terminal error")
    }
}

impl StdError for TerminalError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.0)
    }
}

/// The error a [`Reconciler`] returns: any error (`?` converts every `std::error::Error`), retried
/// with backoff unless it is, or wraps, a [`TerminalError`].
///
/// Like `anyhow::Error`, it deliberately does not implement `std::error::Error` itself, so that
/// the blanket `From` conversion works; [`ReconcileError::source_error`] gives the wrapped error.
pub struct ReconcileError {
    inner: BoxError,
    terminal: bool,
}

impl ReconcileError {
    /// Wraps an error; it is terminal if it is (or wraps) a [`TerminalError`].
    pub fn new(err: impl Into<BoxError>) -> Self {
        let inner = err.into();
        let terminal = chain_has_terminal(&*inner);
        ReconcileError { inner, terminal }
    }

    /// An error with only a message (retried).
    pub fn msg(message: impl fmt::Display) -> Self {
        ReconcileError::new(message.to_string())
    }

    /// Marks `err` terminal: the controller will not retry.
    pub fn terminal(err: impl Into<BoxError>) -> Self {
        ReconcileError {
            inner: Box::new(TerminalError::new(err)),
            terminal: true,
        }
    }

    /// Whether the controller must not retry this error.
    pub fn is_terminal(&self) -> bool {
        self.terminal
    }

    /// The wrapped error.
    pub fn source_error(&self) -> &(dyn StdError + Send + Sync + 'static) {
        &*self.inner
    }
}

fn chain_has_terminal(err: &(dyn StdError + 'static)) -> bool {
    let mut cur = Some(err);
    while let Some(e) = cur {
        if e.is::<TerminalError>() {
            return true;
        }
        cur = e.source();
    }
    false
}

impl<E: StdError + Send + Sync + 'static> From<E> for ReconcileError {
    fn from(err: E) -> Self {
        ReconcileError::new(err)
    }
}

impl fmt::Display for ReconcileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)?;
        // Show the chain, so one log line says everything ("a: b: c").
        let mut cur = self.inner.source();
        while let Some(e) = cur {
            write!(f, ": {e}")?;
            cur = e.source();
        }
        Ok(())
    }
}

impl fmt::Debug for ReconcileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReconcileError")
            .field("inner", &self.inner)
            .field("terminal", &self.terminal)
            .finish()
    }
}

/// What a reconcile returns.
pub type ReconcileResult = Result<Action, ReconcileError>;

/// Drives the world towards the state one object asks for.
///
/// The method returns a boxed future so that the trait stays object-safe (controllers hold
/// `Arc<dyn Reconciler<T>>`); implement it with `Box::pin(async move { ... })`, or use
/// [`from_fn`] for a closure. The controller guarantees that one key is never reconciled by two
/// workers at once. Cancellation: when the controller stops, running reconciles are awaited;
/// a future that is dropped (a timed-out reconcile) must leave nothing half done that a later
/// reconcile cannot repair.
///
/// ```
/// use controller_runtime::reconcile::{Action, ReconcileContext, ReconcileResult, Reconciler};
/// use controller_runtime::Request;
/// use futures::future::BoxFuture;
///
/// struct Logger;
/// impl Reconciler for Logger {
///     fn reconcile(&self, req: Request, ctx: ReconcileContext) -> BoxFuture<'_, ReconcileResult> {
///         Box::pin(async move {
///             println!("{} reconciling {req}", ctx.controller());
///             Ok(Action::done())
///         })
///     }
/// }
/// ```
pub trait Reconciler<T = Request>: Send + Sync {
    /// Reconciles the object `req` names; `ctx` tells which controller runs the reconcile, its
    /// id, and when the controller is stopping.
    fn reconcile(&self, req: T, ctx: ReconcileContext) -> BoxFuture<'_, ReconcileResult>;
}

impl<T, R: Reconciler<T> + ?Sized> Reconciler<T> for Arc<R> {
    fn reconcile(&self, req: T, ctx: ReconcileContext) -> BoxFuture<'_, ReconcileResult> {
        (**self).reconcile(req, ctx)
    }
}

impl<T, R: Reconciler<T> + ?Sized> Reconciler<T> for Box<R> {
    fn reconcile(&self, req: T, ctx: ReconcileContext) -> BoxFuture<'_, ReconcileResult> {
        (**self).reconcile(req, ctx)
    }
}

/// What the runtime hands every reconcile beside its request (Go's `ctx context.Context`): the
/// controller's name, this reconcile's id, the stop signal, and the data `C` a typed reconcile
/// function was registered with (`()` for a request-level [`Reconciler`]).
///
/// It derefs to `C`, so a typed reconcile reads `ctx.client` as it would through an `Arc<C>`;
/// [`data`](Self::data) gives the `Arc<C>` itself (to move into a spawned task, say). A unit
/// test that calls a reconciler directly makes one with [`ReconcileContext::new`].
///
/// ```
/// use std::time::Duration;
/// use controller_runtime::reconcile::{self, Action, ReconcileContext, Reconciler};
/// use controller_runtime::Request;
///
/// let r = reconcile::from_fn(|req: Request, ctx: ReconcileContext| async move {
///     tokio::select! {
///         // The controller is stopping: come back later rather than hold the shutdown.
///         _ = ctx.stopping().cancelled() => return Ok(Action::requeue_after(Duration::from_secs(1))),
///         _ = tokio::time::sleep(Duration::from_millis(10)) => {}
///     }
///     println!("{} reconciled {req} (reconcile {})", ctx.controller(), ctx.reconcile_id());
///     Ok(Action::done())
/// });
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let ctx = ReconcileContext::new("test");
/// ctx.stopping().cancel();
/// let action = r.reconcile(Request::new("default", "a"), ctx).await.unwrap();
/// assert_eq!(action, Action::requeue_after(Duration::from_secs(1)));
/// # });
/// ```
pub struct ReconcileContext<C = ()> {
    data: Arc<C>,
    controller: Arc<str>,
    reconcile_id: u64,
    stopping: CancellationToken,
}

/// The data of a request-level context: shared, so that a reconcile does not allocate it.
static NO_DATA: LazyLock<Arc<()>> = LazyLock::new(|| Arc::new(()));

impl ReconcileContext {
    /// A context for a reconcile run outside a controller, as a unit test calling a reconciler
    /// directly needs: reconcile id 0, a stop signal that only [`stopping`](Self::stopping)`
    /// ().cancel()` fires, no data (add some with [`with_data`](Self::with_data)).
    pub fn new(controller: impl Into<Arc<str>>) -> Self {
        ReconcileContext::running(controller.into(), 0, CancellationToken::new())
    }

    /// The context of one reconcile run by a controller.
    pub(crate) fn running(
        controller: Arc<str>,
        reconcile_id: u64,
        stopping: CancellationToken,
    ) -> Self {
        ReconcileContext {
            data: NO_DATA.clone(),
            controller,
            reconcile_id,
            stopping,
        }
    }
}

impl<C> ReconcileContext<C> {
    /// The name of the controller running the reconcile.
    pub fn controller(&self) -> &str {
        &self.controller
    }

    /// A number unique to this reconcile in the process (controller-runtime's reconcileID), as
    /// logged in the `reconcile` span.
    pub fn reconcile_id(&self) -> u64 {
        self.reconcile_id
    }

    /// Cancelled when the controller is asked to stop. A running reconcile is awaited on stop;
    /// a long one may watch this token to finish early (a Manager abandons reconciles that
    /// ignore it after its graceful shutdown timeout).
    pub fn stopping(&self) -> &CancellationToken {
        &self.stopping
    }

    /// The data the reconcile function was registered with.
    pub fn data(&self) -> &Arc<C> {
        &self.data
    }

    /// The same context carrying `data` instead.
    pub fn with_data<D>(self, data: Arc<D>) -> ReconcileContext<D> {
        ReconcileContext {
            data,
            controller: self.controller,
            reconcile_id: self.reconcile_id,
            stopping: self.stopping,
        }
    }
}

impl<C> std::ops::Deref for ReconcileContext<C> {
    type Target = C;
    fn deref(&self) -> &C {
        &self.data
    }
}

impl<C> Clone for ReconcileContext<C> {
    fn clone(&self) -> Self {
        ReconcileContext {
            data: self.data.clone(),
            controller: self.controller.clone(),
            reconcile_id: self.reconcile_id,
            stopping: self.stopping.clone(),
        }
    }
}

impl<C> fmt::Debug for ReconcileContext<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReconcileContext")
            .field("controller", &self.controller)
            .field("reconcile_id", &self.reconcile_id)
            .field("stopping", &self.stopping.is_cancelled())
            .finish_non_exhaustive()
    }
}

/// A [`Reconciler`] made from an async closure; see [`from_fn`].
pub struct FnReconciler<F>(F);

/// Makes a [`Reconciler`] from a closure returning a future (`|req, ctx| async move { ... }`),
/// called with the request and the reconcile's [`ReconcileContext`].
///
/// The future returns a [`ReconcileResult`], so `Ok(Action::done())` needs no annotation and
/// `?` converts any error.
pub fn from_fn<T, F, Fut>(f: F) -> FnReconciler<F>
where
    F: Fn(T, ReconcileContext) -> Fut + Send + Sync,
    Fut: Future<Output = ReconcileResult> + Send + 'static,
{
    FnReconciler(f)
}

impl<T, F, Fut> Reconciler<T> for FnReconciler<F>
where
    F: Fn(T, ReconcileContext) -> Fut + Send + Sync,
    Fut: Future<Output = ReconcileResult> + Send + 'static,
{
    fn reconcile(&self, req: T, ctx: ReconcileContext) -> BoxFuture<'_, ReconcileResult> {
        Box::pin((self.0)(req, ctx))
    }
}

impl<F> fmt::Debug for FnReconciler<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnReconciler")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Wrapper(TerminalError);
    impl fmt::Display for Wrapper {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("wrapper")
        }
    }
    impl StdError for Wrapper {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn terminal_is_found_in_the_chain() {
        assert!(ReconcileError::from(TerminalError::msg("x")).is_terminal());
        assert!(ReconcileError::from(Wrapper(TerminalError::msg("x"))).is_terminal());
        assert!(ReconcileError::terminal("boom").is_terminal());
        let io = std::io::Error::other("disk");
        assert!(!ReconcileError::from(io).is_terminal());
        assert!(!ReconcileError::msg("plain").is_terminal());
    }

    #[test]
    fn display_shows_the_chain() {
        let e = ReconcileError::from(Wrapper(TerminalError::msg("root cause")));
        assert_eq!(e.to_string(), "wrapper: terminal error: root cause");
        assert_eq!(Request::new("ns", "a").to_string(), "ns/a");
        assert_eq!(Request::cluster_scoped("n").to_string(), "n");
    }

    #[test]
    fn actions() {
        assert_eq!(Action::done().requeue_after_duration(), None);
        assert_eq!(
            Action::requeue_after(Duration::from_millis(1)).requeue_after_duration(),
            Some(Duration::from_millis(1))
        );
    }
}
