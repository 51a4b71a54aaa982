//! Expectations: how many creates and deletes of its children a reconcile is still waiting to
//! see, per owner (kube-controller-manager's `ControllerExpectations`, which keeps a
//! ReplicaSet from creating its pods twice).
//!
//! A reconcile that counts its children in the cache and creates the missing ones races its
//! own informer: if it runs again before the informer has delivered the children it just
//! created, it counts too few and creates them again. Expectations close that race without
//! waiting. Before creating `n` children, the reconcile records that it expects `n` creations
//! ([`Expectations::expect_creations`]); the watch on the children observes each creation as
//! the informer delivers it ([`Expectations::observe`] wraps the watch's handler); and a
//! reconcile that finds the owner's expectations not [`satisfied`](Expectations::satisfied)
//! does not count the cache at all: it returns, and runs again when the last expected child
//! arrives (the observing handler counts the child, then enqueues its owner).
//!
//! ```no_run
//! use controller_runtime::prelude::*;
//! use controller_runtime::cache::ListOptions;
//! use controller_runtime::controllerutil::{Expectations, set_controller_reference};
//! use controller_runtime::handler::EnqueueRequestForOwner;
//! use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
//! use kube_core::ObjectMeta;
//!
//! struct Ctx {
//!     client: Client,
//!     expectations: Expectations,
//! }
//!
//! async fn reconcile(web: Arc<Deployment>, ctx: ReconcileContext<Ctx>) -> Result<Action, ReconcileError> {
//!     let owner = ObjectKey::of(&*web);
//!     if !ctx.expectations.satisfied(&owner) {
//!         // The last reconcile's creates are not in the cache yet: counting it now would
//!         // create them again. The observing handler enqueues `owner` when they are.
//!         return Ok(Action::done());
//!     }
//!     let configmaps = ctx.client.objects::<ConfigMap>();
//!     let ns = web.namespace().unwrap_or_default();
//!     let children = ListOptions::default()
//!         .in_namespace(&ns)
//!         .labels(&format!("app={}", owner.name))
//!         .map_err(ReconcileError::new)?;
//!     let have = configmaps.list(&children).await.map_err(ReconcileError::new)?.len();
//!     let missing = 3usize.saturating_sub(have);
//!     ctx.expectations.expect_creations(&owner, missing);
//!     for _ in 0..missing {
//!         let mut cm = ConfigMap {
//!             metadata: ObjectMeta {
//!                 namespace: Some(ns.clone()),
//!                 generate_name: Some(format!("{}-", owner.name)),
//!                 labels: Some([("app".to_string(), owner.name.clone())].into()),
//!                 ..Default::default()
//!             },
//!             ..Default::default()
//!         };
//!         set_controller_reference(&*web, &mut cm).map_err(ReconcileError::new)?;
//!         if let Err(e) = configmaps.create(&cm).await {
//!             // No event will come for a create that failed.
//!             ctx.expectations.creation_observed(&owner);
//!             return Err(ReconcileError::new(e));
//!         }
//!     }
//!     Ok(Action::done())
//! }
//!
//! # async fn f(mgr: &Manager) -> Result<(), Box<dyn std::error::Error>> {
//! let expectations = Expectations::new();
//! ControllerBuilder::new(mgr)
//!     .for_(Input::<Deployment>::new())
//!     // Instead of `.owns(..)`: the same owner handler, with each create and delete of a
//!     // child counted before its owner is enqueued.
//!     .watches(
//!         Input::<ConfigMap>::new(),
//!         expectations.observe(EnqueueRequestForOwner::of::<Deployment>()),
//!     )
//!     .complete(Arc::new(Ctx { client: mgr.client().clone(), expectations }), reconcile)
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! Expectations expire ([`Expectations::with_timeout`], 5 minutes as in Kubernetes): an
//! event that never comes (a watch that lost it, a child deleted by someone else before the
//! informer saw it) delays the owner's work by that long, never forever.
//!
//! With [read-your-writes](crate::cache::ReadYourWrites) on (the default), a cached list made
//! after this process's creates already waits for them; expectations let the reconcile return
//! at once instead of holding a worker while the informer catches up, and keep counting right
//! when reads do not wait (read-your-writes off, its bound passed, or children written by
//! another client).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::ObjectKey;
use crate::event::{Event, Object};
use crate::handler::EventHandler;
use crate::workqueue::{AddOpts, Enqueue};

/// The default of [`Expectations::with_timeout`] (Kubernetes' `ExpectationsTimeout`).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// What one owner still waits for.
#[derive(Clone, Copy, Debug)]
struct Expected {
    creations: i64,
    deletions: i64,
    /// When the expectations were last set (they expire after the timeout).
    set_at: Instant,
}

/// Per owner, the creates and deletes of its children a reconcile made and the informer has
/// not delivered yet; see the [`controllerutil`](crate::controllerutil) docs. Cheap to clone: clones share the counts.
#[derive(Clone, Debug)]
pub struct Expectations {
    owners: Arc<Mutex<HashMap<ObjectKey, Expected>>>,
    timeout: Duration,
}

impl Default for Expectations {
    fn default() -> Self {
        Expectations::new()
    }
}

impl Expectations {
    /// No expectations; they expire after 5 minutes.
    pub fn new() -> Self {
        Expectations {
            owners: Arc::default(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Expectations set longer ago than `timeout` count as satisfied (default: 5 minutes,
    /// Kubernetes' `ExpectationsTimeout`), so a lost event delays an owner's work by at most
    /// that long.
    ///
    /// ```
    /// use std::time::Duration;
    /// use controller_runtime::controllerutil::Expectations;
    ///
    /// let expectations = Expectations::new().with_timeout(Duration::from_secs(60));
    /// # let _ = expectations;
    /// ```
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Records that `owner`'s reconcile is about to create `n` children: until the informer
    /// has delivered `n` creations ([`creation_observed`](Self::creation_observed)), the
    /// owner is not [`satisfied`](Self::satisfied). Replaces what was expected before.
    pub fn expect_creations(&self, owner: &ObjectKey, n: usize) {
        self.set(owner, n, 0);
    }

    /// Records that `owner`'s reconcile is about to delete `n` children (see
    /// [`expect_creations`](Self::expect_creations)).
    pub fn expect_deletions(&self, owner: &ObjectKey, n: usize) {
        self.set(owner, 0, n);
    }

    /// Records both at once, `creations` creates and `deletions` deletes.
    pub fn expect(&self, owner: &ObjectKey, creations: usize, deletions: usize) {
        self.set(owner, creations, deletions);
    }

    fn set(&self, owner: &ObjectKey, creations: usize, deletions: usize) {
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.owners.lock().insert(
            owner.clone(),
            Expected {
                creations: count(creations),
                deletions: count(deletions),
                set_at: Instant::now(),
            },
        );
    }

    /// One expected creation happened: the informer delivered a new child of `owner`, or a
    /// create the reconcile expected failed (no event will come for it).
    pub fn creation_observed(&self, owner: &ObjectKey) {
        self.lower(owner, 1, 0);
    }

    /// One expected deletion happened (or failed; see
    /// [`creation_observed`](Self::creation_observed)).
    pub fn deletion_observed(&self, owner: &ObjectKey) {
        self.lower(owner, 0, 1);
    }

    fn lower(&self, owner: &ObjectKey, creations: i64, deletions: i64) {
        if let Some(expected) = self.owners.lock().get_mut(owner) {
            expected.creations -= creations;
            expected.deletions -= deletions;
        }
    }

    /// Whether `owner`'s reconcile may trust the cache's view of its children: every create and
    /// delete it expected has been observed, or the expectations expired, or none were set.
    /// Satisfied expectations are forgotten.
    pub fn satisfied(&self, owner: &ObjectKey) -> bool {
        let mut owners = self.owners.lock();
        let Some(expected) = owners.get(owner) else {
            return true;
        };
        let done = expected.creations <= 0 && expected.deletions <= 0;
        if done || expected.set_at.elapsed() > self.timeout {
            owners.remove(owner);
            return true;
        }
        false
    }

    /// The creations and deletions `owner` still waits for (`None`: none set).
    pub fn pending(&self, owner: &ObjectKey) -> Option<(usize, usize)> {
        let count = |n: i64| usize::try_from(n).unwrap_or(0);
        self.owners
            .lock()
            .get(owner)
            .map(|e| (count(e.creations), count(e.deletions)))
    }

    /// Forgets `owner`'s expectations (the owner was deleted).
    pub fn forget(&self, owner: &ObjectKey) {
        self.owners.lock().remove(owner);
    }

    /// Wraps the handler of a watch on children (typically
    /// [`EnqueueRequestForOwner`](crate::handler::EnqueueRequestForOwner)): each owner it
    /// enqueues for a created child (not one of the informer's initial list) has a creation
    /// observed, each owner of a deleted child a deletion, before it is enqueued, so the
    /// reconcile the event causes finds the expectations up to date.
    pub fn observe<H>(&self, handler: H) -> Observe<H> {
        Observe {
            expectations: self.clone(),
            handler,
        }
    }
}

/// A child watch's handler that counts creations and deletions for
/// [`Expectations`]; see [`Expectations::observe`].
#[derive(Clone, Debug)]
pub struct Observe<H> {
    expectations: Expectations,
    handler: H,
}

/// Which observation an enqueued owner gets.
#[derive(Clone, Copy)]
enum Observed {
    Creation,
    Deletion,
}

/// The queue as the wrapped handler sees it: each owner it adds is observed first.
struct Observing<'a> {
    expectations: &'a Expectations,
    observed: Observed,
    queue: &'a dyn Enqueue<ObjectKey>,
}

impl Enqueue<ObjectKey> for Observing<'_> {
    fn add_with_opts(&self, opts: AddOpts, owner: ObjectKey) {
        match self.observed {
            Observed::Creation => self.expectations.creation_observed(&owner),
            Observed::Deletion => self.expectations.deletion_observed(&owner),
        }
        self.queue.add_with_opts(opts, owner);
    }
}

impl<K, H: EventHandler<K>> EventHandler<K> for Observe<H> {
    fn handle(&self, event: &Event<K>, queue: &dyn Enqueue<ObjectKey>) {
        let observed = match event {
            Event::Create(e) if !e.is_in_initial_list => Observed::Creation,
            Event::Delete(_) => Observed::Deletion,
            _ => return self.handler.handle(event, queue),
        };
        let observing = Observing {
            expectations: &self.expectations,
            observed,
            queue,
        };
        self.handler.handle(event, &observing);
    }
    fn handle_metadata(&self, event: &Event<dyn Object>, queue: &dyn Enqueue<ObjectKey>) -> bool {
        let observed = match event {
            Event::Create(e) if !e.is_in_initial_list => Observed::Creation,
            Event::Delete(_) => Observed::Deletion,
            _ => return self.handler.handle_metadata(event, queue),
        };
        let observing = Observing {
            expectations: &self.expectations,
            observed,
            queue,
        };
        self.handler.handle_metadata(event, &observing)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use kube_core::ObjectMeta;

    use super::*;
    use crate::event::{CreateEvent, DeleteEvent};
    use crate::handler::EnqueueRequestForOwner;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<ObjectKey>>);

    impl Enqueue<ObjectKey> for Recorder {
        fn add_with_opts(&self, _: AddOpts, item: ObjectKey) {
            self.0.lock().push(item);
        }
    }

    fn child_of(owner: &str) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                name: Some(format!("{owner}-x")),
                owner_references: Some(vec![OwnerReference {
                    api_version: "apps/v1".into(),
                    kind: "Deployment".into(),
                    name: owner.into(),
                    uid: "u".into(),
                    controller: Some(true),
                    ..Default::default()
                }]),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    #[test]
    fn satisfied_once_every_expected_event_is_observed() {
        let e = Expectations::new();
        let owner = ObjectKey::new("ns", "web");
        assert!(e.satisfied(&owner), "nothing expected");
        e.expect(&owner, 2, 1);
        assert_eq!(e.pending(&owner), Some((2, 1)));
        e.creation_observed(&owner);
        e.deletion_observed(&owner);
        assert!(!e.satisfied(&owner));
        e.creation_observed(&owner);
        assert!(e.satisfied(&owner));
        assert_eq!(
            e.pending(&owner),
            None,
            "satisfied expectations are forgotten"
        );
        // Observations without expectations change nothing.
        e.creation_observed(&owner);
        assert!(e.satisfied(&owner));
        e.expect_deletions(&owner, 1);
        e.forget(&owner);
        assert!(e.satisfied(&owner));
    }

    #[tokio::test(start_paused = true)]
    async fn expectations_expire() {
        let e = Expectations::new().with_timeout(Duration::from_secs(60));
        let owner = ObjectKey::new("ns", "web");
        e.expect_creations(&owner, 1);
        tokio::time::advance(Duration::from_secs(59)).await;
        assert!(!e.satisfied(&owner));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(e.satisfied(&owner));
    }

    #[test]
    fn the_handler_observes_creates_and_deletes_before_enqueueing() {
        let e = Expectations::new();
        let web = ObjectKey::new("ns", "web");
        let handler = e.observe(EnqueueRequestForOwner::new(
            "apps",
            "Deployment",
            crate::handler::OwnerScope::Namespaced,
        ));
        let queue = Recorder::default();
        e.expect(&web, 1, 1);
        // The initial list is not a creation the reconcile made.
        let listed = CreateEvent {
            object: child_of("web"),
            is_in_initial_list: true,
        };
        handler.handle(&Event::Create(listed), &queue);
        assert_eq!(e.pending(&web), Some((1, 1)));
        let created = CreateEvent {
            object: child_of("web"),
            is_in_initial_list: false,
        };
        handler.handle(&Event::Create(created), &queue);
        assert_eq!(e.pending(&web), Some((0, 1)));
        let deleted = DeleteEvent {
            object: child_of("web"),
            delete_state_unknown: false,
        };
        handler.handle(&Event::Delete(deleted), &queue);
        assert!(e.satisfied(&web));
        assert_eq!(
            queue.0.lock().len(),
            3,
            "every event still enqueues the owner"
        );
    }
}
