//! Operations: the annotations an operator's users set on one object to steer its reconciles,
//! and how the controller stops on SIGTERM.
//!
//! Every operator ends up hand-rolling the same two knobs: "leave this object alone while I fix
//! it by hand" and "reconcile this object now, although nothing in it changed". A controller
//! built with
//! [`ControllerOptions::with_operations_annotations`](crate::controller::ControllerOptions::with_operations_annotations)
//! honours them on its `for` type:
//!
//! | annotation | value | the controller |
//! | --- | --- | --- |
//! | [`PAUSED`] `reconcile.crt.dev/paused` | `"true"` | does not call the reconcile function for the object; counts it in `controller_runtime_reconcile_paused_objects{controller}` |
//! | [`REQUESTED_AT`] `reconcile.crt.dev/requested-at` | any token (a timestamp, say) | reconciles the object at once, even when its generation did not change; after a successful reconcile writes the token to [`HANDLED_AT`] |
//! | [`HANDLED_AT`] `reconcile.crt.dev/handled-at` | the last token handled | (written by the controller) |
//!
//! The same knobs elsewhere: Cluster API's `cluster.x-k8s.io/paused`, Argo CD's
//! `argocd.argoproj.io/refresh`, and Flux's `reconcile.fluxcd.io/requestedAt`, whose
//! controllers record the token they handled as `status.lastHandledReconcileAt`. Here the
//! token is recorded as an annotation, so it works for every kind, with or without a status:
//!
//! ```text
//! kubectl annotate foo my-foo reconcile.crt.dev/paused=true        # hands off
//! kubectl annotate foo my-foo reconcile.crt.dev/paused-             # resume (reconciles at once)
//! kubectl annotate --overwrite foo my-foo reconcile.crt.dev/requested-at="$(date +%s)"
//! kubectl get foo my-foo -o jsonpath='{.metadata.annotations.reconcile\.crt\.dev/handled-at}'
//! ```
//!
//! A change of either annotation goes through the controller's event filters and its `for`
//! watch's predicates, whatever they are: a controller filtering on
//! [`GenerationChanged`](crate::predicate::GenerationChanged) still hears a requested
//! reconcile, and an object taken out of pause is reconciled at once ([`OperationRequested`]
//! is the predicate that lets them through). A paused object's other events are still
//! received and dropped at the reconcile, so the gauge knows it is paused; an object deleted
//! while paused leaves the gauge. A failed reconcile does not record the token: the request
//! stays open, and the controller retries with its usual backoff.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use controller_runtime::builder::{ControllerBuilder, Input};
//! # use controller_runtime::controller::ControllerOptions;
//! # use controller_runtime::predicate::GenerationChanged;
//! # use controller_runtime::reconcile::Action;
//! # use k8s_openapi::api::apps::v1::Deployment;
//! # async fn f(mgr: controller_runtime::manager::Manager) -> Result<(), Box<dyn std::error::Error>> {
//! ControllerBuilder::new(&mgr)
//!     .for_(Input::<Deployment>::new())
//!     .with_event_filter(GenerationChanged)
//!     .with_options(ControllerOptions::default().with_operations_annotations(true))
//!     .complete(Arc::new(()), |deploy, _ctx| async move {
//!         println!("reconcile {:?}", deploy.metadata.name); // never a paused one
//!         Ok(Action::done())
//!     })
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! # Graceful drain on SIGTERM
//!
//! Kubernetes stops a pod with SIGTERM, then SIGKILL after the pod's
//! `terminationGracePeriodSeconds` (30 s by default). [`signal_handler`] turns the first
//! SIGTERM (or SIGINT) into the cancellation of the token given to
//! [`Manager::start`](crate::manager::Manager::start); a second signal exits at once. The
//! manager then stops its runnables group by group, the last started first: controllers stop
//! taking keys from their queues, and the reconciles running finish (none is cut in the
//! middle) within
//! [`graceful_shutdown_timeout`](crate::manager::ManagerOptions::with_graceful_shutdown_timeout)
//! (30 s by default; keep it below the pod's grace period), then the caches stop. With
//! [`with_release_on_cancel`](crate::leaderelection::LeaderElectionConfig::with_release_on_cancel)
//! the leader then gives its lease up, so the next leader takes over at its next try instead
//! of after the lease expires. What has not returned by then is abandoned
//! ([`Error::ShutdownTimeout`](crate::manager::Error::ShutdownTimeout)). A key left in a queue
//! is not lost: the next process lists every object when its cache starts and reconciles it.
//!
//! [`signal_handler`]: crate::manager::signal_handler

use std::collections::HashSet;

use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_client::api::{Patch, PatchParams};
use parking_lot::Mutex;
use prometheus_client::metrics::gauge::Gauge;

use crate::ObjectKey;
use crate::cache::CacheObject;
use crate::client::{self, Objects};
use crate::event::{Event, Object};
use crate::predicate::Predicate;
use crate::reconcile::{Action, ReconcileContext, ReconcileError, ReconcileResult, Reconciler};

/// Pauses reconciling the object while its value is `"true"`.
pub const PAUSED: &str = "reconcile.crt.dev/paused";

/// Requests a reconcile: a new value (any token) reconciles the object once more.
pub const REQUESTED_AT: &str = "reconcile.crt.dev/requested-at";

/// The last [`REQUESTED_AT`] token a successful reconcile handled; written by the controller.
pub const HANDLED_AT: &str = "reconcile.crt.dev/handled-at";

fn annotation<'a>(meta: &'a ObjectMeta, name: &str) -> Option<&'a str> {
    meta.annotations.as_ref()?.get(name).map(String::as_str)
}

/// Whether the object is paused: its [`PAUSED`] annotation is `"true"`.
pub fn is_paused(meta: &ObjectMeta) -> bool {
    annotation(meta, PAUSED) == Some("true")
}

/// The token of a reconcile request not handled yet: [`REQUESTED_AT`] when it differs from
/// [`HANDLED_AT`].
pub fn pending_request(meta: &ObjectMeta) -> Option<&str> {
    let requested = annotation(meta, REQUESTED_AT)?;
    (annotation(meta, HANDLED_AT) != Some(requested)).then_some(requested)
}

/// Passes updates whose [`PAUSED`] or [`REQUESTED_AT`] annotation changed, and nothing else.
/// With operations annotations on, the builder lets what it passes through the `for` watch
/// whatever the other predicates say.
///
/// ```
/// use std::sync::Arc;
/// use controller_runtime::event::{Event, UpdateEvent};
/// use controller_runtime::operations::{OperationRequested, REQUESTED_AT};
/// use controller_runtime::predicate::Predicate;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let old = ConfigMap::default();
/// let mut new = old.clone();
/// new.metadata.annotations = Some([(REQUESTED_AT.to_string(), "1".to_string())].into());
/// let ev = Event::Update(UpdateEvent { old: Arc::new(old.clone()), new: Arc::new(new) });
/// assert!(OperationRequested.filter(&ev));
/// let same = Event::Update(UpdateEvent { old: Arc::new(old.clone()), new: Arc::new(old) });
/// assert!(!OperationRequested.filter(&same));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct OperationRequested;

impl<K: ?Sized + Object> Predicate<K> for OperationRequested {
    fn filter(&self, event: &Event<K>) -> bool {
        match event {
            Event::Update(e) => {
                let (old, new) = (e.old.metadata(), e.new.metadata());
                annotation(old, PAUSED) != annotation(new, PAUSED)
                    || annotation(old, REQUESTED_AT) != annotation(new, REQUESTED_AT)
            }
            _ => false,
        }
    }
    fn filter_metadata(&self, event: &Event<dyn Object>) -> Option<bool> {
        Some(Predicate::<dyn Object>::filter(self, event))
    }
}

/// Reads the `for` object's metadata and records a handled token: what the operations
/// reconciler needs of the `for` type, type-erased.
pub(crate) trait Target: Send + Sync {
    /// The object's metadata; `None` when it is gone.
    fn metadata(&self, key: &ObjectKey)
    -> BoxFuture<'_, Result<Option<ObjectMeta>, client::Error>>;
    /// Writes `token` to the object's [`HANDLED_AT`] annotation.
    fn record_handled<'a>(
        &'a self,
        key: &'a ObjectKey,
        token: &'a str,
    ) -> BoxFuture<'a, Result<(), client::Error>>;
}

impl<K: CacheObject> Target for Objects<K> {
    fn metadata(
        &self,
        key: &ObjectKey,
    ) -> BoxFuture<'_, Result<Option<ObjectMeta>, client::Error>> {
        let key = key.clone();
        Box::pin(async move {
            match self.get(&key).await {
                Ok(obj) => Ok(Some(obj.meta().clone())),
                Err(e) if e.is_not_found() => Ok(None),
                Err(e) => Err(e),
            }
        })
    }
    fn record_handled<'a>(
        &'a self,
        key: &'a ObjectKey,
        token: &'a str,
    ) -> BoxFuture<'a, Result<(), client::Error>> {
        Box::pin(async move {
            let patch = serde_json::json!({"metadata": {"annotations": {HANDLED_AT: token}}});
            self.patch(key, &Patch::Merge(&patch), &PatchParams::default())
                .await
                .map(drop)
        })
    }
}

/// The paused objects of one controller, and their gauge.
#[derive(Debug, Default)]
struct Paused {
    keys: Mutex<HashSet<ObjectKey>>,
    gauge: Gauge,
}

impl Paused {
    fn set(&self, key: &ObjectKey, paused: bool) {
        let mut keys = self.keys.lock();
        let changed = if paused {
            keys.insert(key.clone())
        } else {
            keys.remove(key)
        };
        if changed {
            self.gauge.set(keys.len() as i64);
        }
    }
}

/// A reconciler honouring the operations annotations of the `for` object, around the
/// controller's own.
pub(crate) struct OperationsReconciler<R> {
    inner: R,
    target: Box<dyn Target>,
    paused: Paused,
}

impl<R> OperationsReconciler<R> {
    /// Wraps `inner`; `gauge` is the controller's paused-objects series.
    pub(crate) fn new(inner: R, target: Box<dyn Target>, gauge: Gauge) -> Self {
        gauge.set(0);
        OperationsReconciler {
            inner,
            target,
            paused: Paused {
                keys: Mutex::default(),
                gauge,
            },
        }
    }
}

impl<R: Reconciler> Reconciler for OperationsReconciler<R> {
    fn reconcile(
        &self,
        req: crate::Request,
        ctx: ReconcileContext,
    ) -> BoxFuture<'_, ReconcileResult> {
        Box::pin(async move {
            let meta = self
                .target
                .metadata(&req)
                .await
                .map_err(ReconcileError::new)?;
            let Some(meta) = meta else {
                self.paused.set(&req, false);
                return self.inner.reconcile(req, ctx).await;
            };
            if is_paused(&meta) {
                tracing::debug!(key = %req, "paused: not reconciled");
                self.paused.set(&req, true);
                return Ok(Action::done());
            }
            self.paused.set(&req, false);
            let token = pending_request(&meta).map(str::to_string);
            let action = self.inner.reconcile(req.clone(), ctx).await?;
            if let Some(token) = token {
                match self.target.record_handled(&req, &token).await {
                    Ok(()) => {}
                    // Deleted by the reconcile: nothing to record.
                    Err(e) if e.is_not_found() => {}
                    Err(e) => return Err(ReconcileError::new(e)),
                }
            }
            Ok(action)
        })
    }
}

/// The `for` watch's predicates with operations annotations on: an [`OperationRequested`]
/// update passes, anything else as `rest` (all of them) says.
pub(crate) struct Bypass<K: ?Sized>(pub(crate) Vec<crate::predicate::BoxPredicate<K>>);

impl<K: ?Sized + Object> Predicate<K> for Bypass<K> {
    fn filter(&self, event: &Event<K>) -> bool {
        OperationRequested.filter(event) || self.0.iter().all(|p| p.filter(event))
    }
    fn filter_metadata(&self, event: &Event<dyn Object>) -> Option<bool> {
        if OperationRequested.filter(event) {
            return Some(true);
        }
        let mut all = true;
        for p in &self.0 {
            match p.filter_metadata(event) {
                Some(true) => {}
                Some(false) => all = false,
                None => return None,
            }
        }
        Some(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(annotations: &[(&str, &str)]) -> ObjectMeta {
        ObjectMeta {
            annotations: Some(
                annotations
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn paused_only_when_true_and_requests_pending_until_handled() {
        assert!(is_paused(&meta(&[(PAUSED, "true")])));
        assert!(!is_paused(&meta(&[(PAUSED, "false")])));
        assert!(!is_paused(&ObjectMeta::default()));
        assert_eq!(pending_request(&meta(&[(REQUESTED_AT, "1")])), Some("1"));
        assert_eq!(
            pending_request(&meta(&[(REQUESTED_AT, "2"), (HANDLED_AT, "1")])),
            Some("2")
        );
        assert_eq!(
            pending_request(&meta(&[(REQUESTED_AT, "2"), (HANDLED_AT, "2")])),
            None
        );
        assert_eq!(pending_request(&meta(&[(HANDLED_AT, "2")])), None);
    }

    #[test]
    fn the_gauge_counts_each_paused_key_once() {
        let paused = Paused::default();
        let (a, b) = (ObjectKey::new("ns", "a"), ObjectKey::new("ns", "b"));
        paused.set(&a, true);
        paused.set(&a, true);
        paused.set(&b, true);
        assert_eq!(paused.gauge.get(), 2);
        paused.set(&a, false);
        paused.set(&a, false);
        assert_eq!(paused.gauge.get(), 1);
    }
}
