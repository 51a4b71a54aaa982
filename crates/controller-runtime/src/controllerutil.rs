//! The reconciler's everyday helpers (Go's `pkg/controller/controllerutil`): write a child
//! object only when it differs from what it should be, make it owned by the object being
//! reconciled, and manage finalizers.
//!
//! | helper | what |
//! | --- | --- |
//! | [`create_or_update`] | read from the cache; create, or update when `mutate` changed something: [`OperationResult`] |
//! | [`create_or_patch`] | the same with merge patches of what changed, the status patched through its subresource |
//! | [`set_controller_reference`] | make an owner the object's controller (garbage collection, [`owns`](crate::builder::ControllerBuilder::owns) watches); refuses a second controller |
//! | [`set_owner_reference`], [`remove_owner_reference`], [`remove_controller_reference`] | plain owner references |
//! | [`has_controller_reference`], [`controller_of`], [`has_owner_reference`] | read them |
//! | [`add_finalizer`], [`remove_finalizer`], [`contains_finalizer`] | finalizers, in memory (whether they changed the object) |
//! | [`Expectations`] | kube-controller-manager's `ControllerExpectations`: creates and deletes of children a reconcile waits to see, so it never creates a child twice |
//!
//! A reconcile that keeps one ConfigMap per Deployment: the mutate function states what the
//! ConfigMap must hold, and a reconcile that finds it so writes nothing.
//!
//! ```no_run
//! use std::sync::Arc;
//! use controller_runtime::client::Client;
//! use controller_runtime::controllerutil::{self, OperationResult};
//! use controller_runtime::reconcile::{Action, ReconcileError};
//! use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
//! use kube_core::ObjectMeta;
//!
//! async fn reconcile(web: Arc<Deployment>, client: Client) -> Result<Action, ReconcileError> {
//!     // Name it; create_or_update reads the rest from the cache.
//!     let mut cm = ConfigMap {
//!         metadata: ObjectMeta {
//!             namespace: web.metadata.namespace.clone(),
//!             name: Some(format!("{}-config", web.metadata.name.as_deref().unwrap_or_default())),
//!             ..Default::default()
//!         },
//!         ..Default::default()
//!     };
//!     let replicas = web.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
//!     let result = controllerutil::create_or_update(&client.objects(), &mut cm, |cm| {
//!         // Set what this controller manages, nothing else.
//!         cm.data.get_or_insert_default().insert("replicas".into(), replicas.to_string());
//!         controllerutil::set_controller_reference(&*web, cm)?;
//!         Ok(())
//!     })
//!     .await?;
//!     if result != OperationResult::Unchanged {
//!         tracing::info!(configmap = ?cm.metadata.name, %result, "reconciled");
//!     }
//!     Ok(Action::done())
//! }
//! ```
//!
//! The reads go through the cache, as in Go, but they see this process's own writes: right
//! after a write, a cached read of that object waits (a bounded time) until the cache has it
//! (see [`ReadYourWrites`](crate::cache::ReadYourWrites)), so the next write does not fail
//! with a conflict from a stale read. Writes of others can still conflict
//! ([`Error::is_conflict`]); the controller retries the key and the retry, on a fresher
//! cache, goes through.

mod expectations;
mod finalizers;
mod mutate;
mod owner;
mod semantic;

pub use expectations::{Expectations, Observe};
pub use finalizers::{add_finalizer, contains_finalizer, remove_finalizer};
pub(crate) use finalizers::{add_to, remove_from};
pub use mutate::{Error, MutateError, OperationResult, create_or_patch, create_or_update};
pub use owner::{
    Owner, OwnerReferenceError, controller_of, has_controller_reference, has_owner_reference,
    remove_controller_reference, remove_owner_reference, set_controller_reference,
    set_owner_reference,
};
