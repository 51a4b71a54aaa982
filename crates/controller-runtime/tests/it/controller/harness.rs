//! The test harness: a controller fed by a channel, with a reconciler that reports each call,
//! and test sources.

// The imports every test module shares; each module glob-imports this one.
#![allow(unused_imports)]

pub(crate) use std::sync::Arc;
pub(crate) use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
pub(crate) use std::time::Duration;

pub(crate) use controller_runtime::Request;
pub(crate) use controller_runtime::controller::{Controller, ControllerOptions, Error};
pub(crate) use controller_runtime::event::{CreateEvent, Event, GenericEvent};
pub(crate) use controller_runtime::handler::EnqueueRequestForObject;
pub(crate) use controller_runtime::metrics::Metrics;
pub(crate) use controller_runtime::predicate;
pub(crate) use controller_runtime::reconcile::{self, Action, ReconcileError, TerminalError};
pub(crate) use controller_runtime::source::{self, EventDispatcher, Func, Source};
pub(crate) use futures::future::BoxFuture;
pub(crate) use k8s_openapi::api::core::v1::ConfigMap;
pub(crate) use prometheus_client::registry::Registry;
pub(crate) use tokio::sync::mpsc;
pub(crate) use tokio::task::JoinHandle;
pub(crate) use tokio::time::Instant;
pub(crate) use tokio_util::sync::CancellationToken;

pub(crate) fn cm(ns: &str, name: &str) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some(ns.into());
    cm.metadata.name = Some(name.into());
    Arc::new(cm)
}

/// One reconcile call, as the reconciler saw it.
#[derive(Debug)]
pub(crate) struct Call {
    pub(crate) req: Request,
    pub(crate) at: Instant,
}

/// A running controller fed by a channel, with its metrics registry.
pub(crate) struct Running {
    pub(crate) controller: Controller,
    pub(crate) events: mpsc::Sender<GenericEvent<ConfigMap>>,
    pub(crate) calls: mpsc::UnboundedReceiver<Call>,
    pub(crate) ctx: CancellationToken,
    pub(crate) handle: JoinHandle<Result<(), Error>>,
    pub(crate) registry: Registry,
}

impl Running {
    /// Starts a controller whose reconciler reports each call, then runs `behave(request, n)`
    /// (`n` counts calls from 0).
    pub(crate) async fn start<F>(options: ControllerOptions<Request>, behave: F) -> Running
    where
        F: Fn(Request, usize) -> BoxFuture<'static, Result<Action, ReconcileError>>
            + Send
            + Sync
            + 'static,
    {
        let mut registry = Registry::default();
        let options = options.with_metrics(Metrics::register(&mut registry));
        let (call_tx, calls) = mpsc::unbounded_channel();
        let count = Arc::new(AtomicUsize::new(0));
        let behave = Arc::new(behave);
        let reconciler = reconcile::from_fn(move |req: Request, _ctx| {
            let n = count.fetch_add(1, Ordering::SeqCst);
            let _ = call_tx.send(Call {
                req: req.clone(),
                at: Instant::now(),
            });
            behave(req, n)
        });
        let controller = Controller::new("test", reconciler, options).unwrap();
        let (events, channel) = source::channel::<ConfigMap>(16);
        // Only ConfigMaps whose name does not start with "skip" get through.
        let not_skipped: predicate::BoxPredicate<ConfigMap> =
            Arc::new(|e: &controller_runtime::event::Event<ConfigMap>| {
                !e.object()
                    .metadata
                    .name
                    .as_deref()
                    .unwrap_or_default()
                    .starts_with("skip")
            });
        controller
            .watch(channel, EnqueueRequestForObject, vec![not_skipped])
            .await
            .unwrap();
        let ctx = CancellationToken::new();
        let handle = tokio::spawn({
            let (c, ctx) = (controller.clone(), ctx.clone());
            async move { c.start(ctx).await }
        });
        Running {
            controller,
            events,
            calls,
            ctx,
            handle,
            registry,
        }
    }

    pub(crate) async fn send(&self, ns: &str, name: &str) {
        self.events
            .send(GenericEvent {
                object: cm(ns, name),
            })
            .await
            .unwrap();
    }

    /// The next reconcile call, waiting at most an hour of (virtual) time.
    pub(crate) async fn next_call(&mut self) -> Call {
        tokio::time::timeout(Duration::from_secs(3600), self.calls.recv())
            .await
            .expect("no reconcile within an hour")
            .expect("reconciler gone")
    }

    /// Asserts that no reconcile happens within `d` (virtual time).
    pub(crate) async fn no_call_within(&mut self, d: Duration) {
        if let Ok(Some(call)) = tokio::time::timeout(d, self.calls.recv()).await {
            panic!("unexpected reconcile {call:?}");
        }
    }

    pub(crate) fn metrics(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry).unwrap();
        text
    }

    /// Asserts that the exposition has `line`.
    pub(crate) fn assert_metric(&self, line: &str) {
        let text = self.metrics();
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in:\n{text}"
        );
    }

    pub(crate) async fn stop(self) -> Registry {
        self.ctx.cancel();
        self.handle.await.unwrap().unwrap();
        self.registry
    }
}

pub(crate) fn ok() -> BoxFuture<'static, Result<Action, ReconcileError>> {
    Box::pin(async { Ok(Action::done()) })
}

pub(crate) fn both_queues() -> [ControllerOptions<Request>; 2] {
    [
        ControllerOptions::default().with_use_priority_queue(false),
        ControllerOptions::default().with_use_priority_queue(true),
    ]
}

/// A syncing source that syncs after `sync_after`, or never.
pub(crate) struct SlowSync {
    pub(crate) sync_after: Option<Duration>,
}

impl Source<ConfigMap> for SlowSync {
    fn start(
        &self,
        _ctx: CancellationToken,
        dispatcher: EventDispatcher<ConfigMap>,
    ) -> BoxFuture<'_, Result<(), source::Error>> {
        // The initial list, delivered at once.
        dispatcher.dispatch(&Event::Create(CreateEvent {
            object: cm("ns", "listed"),
            is_in_initial_list: true,
        }));
        Box::pin(async { Ok(()) })
    }

    fn wait_for_sync(&self, ctx: CancellationToken) -> BoxFuture<'_, Result<(), source::Error>> {
        let after = self.sync_after;
        Box::pin(async move {
            match after {
                Some(d) => tokio::time::sleep(d).await,
                None => ctx.cancelled().await,
            }
            Ok(())
        })
    }

    fn describe(&self) -> String {
        "slow source".into()
    }
}

/// A source whose initial list is `names`, delivered as initial-list creates.
pub(crate) struct InitialList {
    pub(crate) names: Vec<&'static str>,
}

impl Source<ConfigMap> for InitialList {
    fn start(
        &self,
        _ctx: CancellationToken,
        dispatcher: EventDispatcher<ConfigMap>,
    ) -> BoxFuture<'_, Result<(), source::Error>> {
        for name in &self.names {
            dispatcher.dispatch(&Event::Create(CreateEvent {
                object: cm("ns", name),
                is_in_initial_list: true,
            }));
        }
        Box::pin(async { Ok(()) })
    }

    fn describe(&self) -> String {
        "initial list".into()
    }
}
