//! What a reconciler and its `main` need, in one import: `use controller_runtime::prelude::*;`.
//!
//! The Builders (of a controller and of a kind's webhooks) and the Manager that runs them, the
//! client a reconciler reads and writes with, the one key type ([`ObjectKey`], which a
//! reconcile's [`Request`] is), the context a reconcile is handed ([`ReconcileContext`]), a
//! reconcile's result types, controllerutil's helpers module, the predicate combinators
//! ([`PredicateExt`]: `a.or(b)`), and kube's
//! `Resource`/`ResourceExt` traits for
//! the objects' metadata (`obj.name_any()`, `obj.namespace()`).
//!
//! ```
//! use controller_runtime::prelude::*;
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! async fn reconcile(cm: Arc<ConfigMap>, ctx: ReconcileContext<Client>) -> Result<Action, ReconcileError> {
//!     let _client: &Client = &ctx; // the context derefs to the data given to `complete`
//!     println!("reconcile {}", cm.name_any());
//!     Ok(Action::done())
//! }
//! # drop(reconcile);
//! ```

// Other crates' items are shown as re-exports, linking to their own docs, not as ours.
#[doc(no_inline)]
pub use std::sync::Arc;

#[doc(no_inline)]
pub use kube_core::{Resource, ResourceExt};

#[doc(no_inline)]
pub use crate::CancellationToken;
pub use crate::ObjectKey;
pub use crate::builder::{ControllerBuilder, Input, WebhookBuilder};
pub use crate::client::Client;
pub use crate::controllerutil;
pub use crate::manager::{BindAddress, Manager, ManagerOptions, signal_handler};
pub use crate::predicate::PredicateExt;
pub use crate::reconcile::{Action, ReconcileContext, ReconcileError, Request, TerminalError};
