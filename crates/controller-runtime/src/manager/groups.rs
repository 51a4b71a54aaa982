//! Runnable groups: each [`RunnableGroup`] is a [`Group`] that queues its runnables until the
//! manager starts it, runs the ones added later at once, and stops them all together.
//!
//! A group's life is `Pending -> Running -> Stopped`. Runnables added while pending wait for
//! [`Group::start`]; added while running, they start at once; added once stopped, they are
//! refused ([`Error::Stopping`]). A runnable's error (or panic) before its group is stopped is
//! sent to the manager, which then stops everything; after, it is only logged.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::error::Error;
use super::runnable::{BoxError, Runnable, RunnableGroup};

/// Waits until a runnable is ready (the cache: synced); `false` when it never will be.
pub(crate) type ReadyCheck = Box<dyn FnOnce(CancellationToken) -> BoxFuture<'static, bool> + Send>;

/// A runnable and its optional ready check, waiting for its group to start.
struct Pending {
    runnable: Arc<dyn Runnable>,
    ready: Option<ReadyCheck>,
}

enum State {
    /// Not started: runnables wait here. `warming` once the warm-up phase began.
    Pending {
        queue: Vec<Pending>,
        warming: bool,
    },
    Running,
    Stopped,
}

/// One group of runnables, started and stopped together.
pub(crate) struct Group {
    kind: RunnableGroup,
    state: Mutex<State>,
    /// Cancelled when the group stops; every runnable of the group runs under it.
    ctx: CancellationToken,
    tasks: TaskTracker,
    failures: mpsc::UnboundedSender<Error>,
}

impl Group {
    fn new(kind: RunnableGroup, failures: mpsc::UnboundedSender<Error>) -> Self {
        Group {
            kind,
            state: Mutex::new(State::Pending {
                queue: Vec::new(),
                warming: false,
            }),
            ctx: CancellationToken::new(),
            tasks: TaskTracker::new(),
            failures,
        }
    }

    /// Queues `runnable` (pending group), starts it (running group), or refuses it (stopped).
    /// A ready check only delays [`start`](Self::start); a late runnable's is not awaited.
    pub(crate) fn add(
        &self,
        runnable: Arc<dyn Runnable>,
        ready: Option<ReadyCheck>,
    ) -> Result<(), Error> {
        // The runnable's own code (`start`, `warm_up`) runs outside the lock: it may add more.
        let warm_up = {
            let mut state = self.state.lock();
            match &mut *state {
                State::Pending { queue, warming } => {
                    queue.push(Pending {
                        runnable: runnable.clone(),
                        ready,
                    });
                    *warming
                }
                State::Running => {
                    drop(state);
                    self.spawn(runnable);
                    return Ok(());
                }
                State::Stopped => return Err(Error::Stopping),
            }
        };
        if warm_up {
            self.spawn_warm_up(&runnable);
        }
        Ok(())
    }

    /// Starts the queued runnables and waits for their ready checks. Fails with
    /// [`Error::CacheSync`] when a check gives up while the group is not being stopped.
    pub(crate) async fn start(&self) -> Result<(), Error> {
        let queue = {
            let mut state = self.state.lock();
            let State::Pending { queue, .. } = &mut *state else {
                return Ok(());
            };
            let queue = std::mem::take(queue);
            *state = State::Running;
            queue
        };
        tracing::debug!(group = ?self.kind, count = queue.len(), "starting runnables");
        let checks: Vec<ReadyCheck> = queue
            .into_iter()
            .filter_map(|p| {
                self.spawn(p.runnable);
                p.ready
            })
            .collect();
        for check in checks {
            if !check(self.ctx.clone()).await && !self.ctx.is_cancelled() {
                return Err(Error::CacheSync);
            }
        }
        Ok(())
    }

    /// Calls `warm_up` on every queued runnable, and on each one added from now until the
    /// group starts. Warm-ups run under the group's token and count as its tasks.
    pub(crate) fn warm_up(&self) {
        let runnables: Vec<Arc<dyn Runnable>> = {
            let mut state = self.state.lock();
            match &mut *state {
                State::Pending { queue, warming } if !*warming => {
                    *warming = true;
                    queue.iter().map(|p| p.runnable.clone()).collect()
                }
                _ => return,
            }
        };
        for runnable in &runnables {
            self.spawn_warm_up(runnable);
        }
    }

    /// Refuses new runnables and cancels the running ones, without waiting.
    pub(crate) fn cancel(&self) {
        *self.state.lock() = State::Stopped;
        self.ctx.cancel();
    }

    /// Cancels the group and waits until every runnable (and warm-up) of it has returned.
    pub(crate) async fn stop(&self) {
        self.cancel();
        self.tasks.close();
        self.tasks.wait().await;
        tracing::debug!(group = ?self.kind, "runnables stopped");
    }

    fn spawn(&self, runnable: Arc<dyn Runnable>) {
        let ctx = self.ctx.clone();
        let fut = std::panic::catch_unwind(AssertUnwindSafe(|| runnable.start(ctx)));
        self.track(runnable.name(), fut);
    }

    fn spawn_warm_up(&self, runnable: &Arc<dyn Runnable>) {
        let ctx = self.ctx.clone();
        let fut = std::panic::catch_unwind(AssertUnwindSafe(|| runnable.warm_up(ctx)));
        self.track(format!("{} (warm-up)", runnable.name()), fut);
    }

    /// Runs `fut` (or reports the panic that made it); its error or panic stops the manager
    /// unless the group is stopping.
    fn track(
        &self,
        name: String,
        fut: std::thread::Result<BoxFuture<'static, Result<(), BoxError>>>,
    ) {
        let ctx = self.ctx.clone();
        let failures = self.failures.clone();
        self.tasks.spawn(async move {
            let result = match fut {
                Ok(fut) => AssertUnwindSafe(fut).catch_unwind().await,
                Err(panic) => Err(panic),
            };
            let source = match result {
                Ok(Ok(())) => return,
                Ok(Err(e)) => e,
                Err(panic) => panic_message(&panic).into(),
            };
            if ctx.is_cancelled() {
                tracing::warn!(runnable = %name, error = %source, "runnable failed while stopping");
            } else {
                tracing::error!(runnable = %name, error = %source, "runnable failed");
                let _ = failures.send(Error::Runnable { name, source });
            }
        });
    }
}

/// A panic payload as text.
fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown payload".into());
    format!("panicked: {text}")
}

/// The five groups of a manager.
pub(crate) struct Groups {
    groups: [Group; 5],
}

impl Groups {
    /// Start order; stop in reverse.
    pub(crate) const ORDER: [RunnableGroup; 5] = [
        RunnableGroup::HttpServers,
        RunnableGroup::Webhooks,
        RunnableGroup::Caches,
        RunnableGroup::Others,
        RunnableGroup::LeaderElection,
    ];

    pub(crate) fn new(failures: mpsc::UnboundedSender<Error>) -> Self {
        Groups {
            groups: Self::ORDER.map(|kind| Group::new(kind, failures.clone())),
        }
    }

    /// The group of `kind`.
    pub(crate) fn get(&self, kind: RunnableGroup) -> &Group {
        let index = match kind {
            RunnableGroup::HttpServers => 0,
            RunnableGroup::Webhooks => 1,
            RunnableGroup::Caches => 2,
            RunnableGroup::Others => 3,
            RunnableGroup::LeaderElection => 4,
        };
        &self.groups[index]
    }

    /// Adds `runnable` to the group it asks for.
    pub(crate) fn add(
        &self,
        runnable: Arc<dyn Runnable>,
        ready: Option<ReadyCheck>,
    ) -> Result<(), Error> {
        self.get(runnable.group()).add(runnable, ready)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manager::runnable::from_fn;

    fn group() -> (Group, mpsc::UnboundedReceiver<Error>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Group::new(RunnableGroup::Others, tx), rx)
    }

    #[tokio::test]
    async fn queued_until_start_then_at_once_then_refused() {
        let (g, _rx) = group();
        let (tx, mut started) = mpsc::unbounded_channel();
        let runnable = |n: &'static str| {
            let tx = tx.clone();
            Arc::new(from_fn(n, RunnableGroup::Others, move |ctx| {
                let _ = tx.send(n);
                async move {
                    ctx.cancelled().await;
                    Ok(())
                }
            })) as Arc<dyn Runnable>
        };
        g.add(runnable("early"), None).unwrap();
        tokio::task::yield_now().await;
        assert!(started.try_recv().is_err(), "nothing runs before start");
        g.start().await.unwrap();
        assert_eq!(started.recv().await, Some("early"));
        g.add(runnable("late"), None).unwrap();
        assert_eq!(started.recv().await, Some("late"));
        g.stop().await;
        assert!(matches!(
            g.add(runnable("after"), None),
            Err(Error::Stopping)
        ));
    }

    #[tokio::test]
    async fn errors_and_panics_are_reported_until_stopped() {
        let (g, mut rx) = group();
        let failing = from_fn("bad", RunnableGroup::Others, |_| async {
            Err::<(), BoxError>("boom".into())
        });
        g.add(Arc::new(failing), None).unwrap();
        g.start().await.unwrap();
        match rx.recv().await {
            Some(Error::Runnable { name, source }) => {
                assert_eq!(name, "bad");
                assert_eq!(source.to_string(), "boom");
            }
            other => panic!("unexpected {other:?}"),
        }
        let panicking = from_fn("panics", RunnableGroup::Others, |_| async {
            panic!("oh no");
        });
        g.add(Arc::new(panicking), None).unwrap();
        match rx.recv().await {
            Some(Error::Runnable { name, source }) => {
                assert_eq!(name, "panics");
                assert_eq!(source.to_string(), "panicked: oh no");
            }
            other => panic!("unexpected {other:?}"),
        }
        // A panic before the future exists (in `start` itself) is reported the same way.
        let eager = from_fn(
            "eager",
            RunnableGroup::Others,
            |_| -> futures::future::Ready<Result<(), BoxError>> {
                panic!("at once");
            },
        );
        g.add(Arc::new(eager), None).unwrap();
        match rx.recv().await {
            Some(Error::Runnable { name, source }) => {
                assert_eq!(name, "eager");
                assert_eq!(source.to_string(), "panicked: at once");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[tokio::test]
    async fn warm_up_covers_runnables_added_before_the_group_starts() {
        struct Warming(&'static str, mpsc::UnboundedSender<String>);
        impl Runnable for Warming {
            fn name(&self) -> String {
                self.0.into()
            }
            fn start(&self, _ctx: CancellationToken) -> BoxFuture<'static, Result<(), BoxError>> {
                let _ = self.1.send(format!("start {}", self.0));
                Box::pin(async { Ok(()) })
            }
            fn warm_up(&self, _ctx: CancellationToken) -> BoxFuture<'static, Result<(), BoxError>> {
                let _ = self.1.send(format!("warm-up {}", self.0));
                Box::pin(async { Ok(()) })
            }
        }
        let (g, _rx) = group();
        let (tx, mut log) = mpsc::unbounded_channel();
        g.add(Arc::new(Warming("early", tx.clone())), None).unwrap();
        g.warm_up();
        g.warm_up(); // once only
        g.add(Arc::new(Warming("late", tx.clone())), None).unwrap();
        g.start().await.unwrap();
        g.add(Arc::new(Warming("running", tx.clone())), None)
            .unwrap();
        drop(tx);
        g.stop().await;
        let mut seen = Vec::new();
        while let Some(line) = log.recv().await {
            seen.push(line);
        }
        assert_eq!(
            seen,
            [
                "warm-up early",
                "warm-up late",
                "start early",
                "start late",
                "start running"
            ]
        );
    }

    #[tokio::test]
    async fn a_failed_ready_check_is_a_sync_error_unless_stopping() {
        let (g, _rx) = group();
        let idle = || {
            Arc::new(from_fn("idle", RunnableGroup::Others, |ctx| async move {
                ctx.cancelled().await;
                Ok(())
            })) as Arc<dyn Runnable>
        };
        let never: ReadyCheck = Box::new(|_| Box::pin(async { false }));
        g.add(idle(), Some(never)).unwrap();
        assert!(matches!(g.start().await, Err(Error::CacheSync)));

        let (g, _rx) = group();
        let cancelled: ReadyCheck = Box::new(|ctx| {
            Box::pin(async move {
                ctx.cancelled().await;
                false
            })
        });
        g.add(idle(), Some(cancelled)).unwrap();
        let (start, ()) = tokio::join!(g.start(), async { g.cancel() });
        assert!(start.is_ok());
    }
}
