//! Reconcile: the [`Request`] a controller hands its workers with a [`ReconcileContext`], the
//! [`Reconciler`] trait and the result types ([`Action`], [`ReconcileError`],
//! [`TerminalError`]), and [`for_object`], a reconciler that reads the request's object from
//! the cache and hands it over typed.
//!
//! A reconciler is called with the key of one object and drives the world towards the state that
//! object asks for. Its result tells the controller what to do with the key next:
//!
//! | reconciler returns | the controller |
//! | --- | --- |
//! | `Ok(Action::done())` | forgets the key's backoff; the key comes back only with a new event |
//! | `Ok(Action::requeue_after(d))`, `d > 0` | forgets the backoff, adds the key again after `d` |
//! | `Ok(Action::requeue_after(d).with_priority(p))` | the same, at priority `p` instead of the key's |
//! | `Err(e)` | adds the key again after its rate-limited backoff (5 ms, 10 ms, 20 ms, ...), at its priority |
//! | `Err(e)` with `e` a [`TerminalError`] | records the error and does **not** retry |
//!
//! There is no "requeue with backoff but no error" (Go's deprecated `Result.Requeue`): a
//! reconcile that must try again soon without a fixed delay returns an error, so the retry is
//! rate-limited and counted; one that waits for time to pass returns `requeue_after`.
//!
//! ```
//! use std::time::Duration;
//! use controller_runtime::reconcile::{self, Action, Reconciler, ReconcileError, TerminalError};
//! use controller_runtime::Request;
//!
//! let reconciler = reconcile::from_fn(|req: Request, _ctx| async move {
//!     if req.name.is_empty() {
//!         // Retrying cannot fix a bad request: say so.
//!         return Err(TerminalError::msg("empty name").into());
//!     }
//!     Ok(Action::requeue_after(Duration::from_secs(60)))
//! });
//! # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! let ctx = reconcile::ReconcileContext::new("test");
//! let action = rt.block_on(reconciler.reconcile(Request::new("default", "cm"), ctx.clone())).unwrap();
//! assert_eq!(action.requeue_after_duration(), Some(Duration::from_secs(60)));
//! let err = rt.block_on(reconciler.reconcile(Request::new("default", ""), ctx)).unwrap_err();
//! assert!(err.is_terminal());
//! ```

mod reconciler;
mod typed;

pub use typed::{ObjectReconciler, for_object};

pub use reconciler::{
    Action, FnReconciler, ReconcileContext, ReconcileError, ReconcileResult, Reconciler, Request,
    TerminalError, from_fn,
};
