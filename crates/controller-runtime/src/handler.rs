//! Event handlers: turn events into [`Request`](crate::Request)s (or other queue items) on the
//! workqueue.
//!
//! An [`EventHandler`] has one method, [`handle`](EventHandler::handle), given the
//! [`Event`](crate::event::Event) that passed the watch's predicates and an enqueue-only handle on the controller's
//! queue ([`Enqueue`](crate::workqueue::Enqueue)): a handler can add work, not take it or shut the queue down.
//!
//! | handler | enqueues |
//! | --- | --- |
//! | [`EnqueueRequestForObject`] | the object the event is about (a controller's `for` type) |
//! | [`EnqueueRequestForOwner`] | the owner(s) of the object, by owner group and kind (`owns`) |
//! | [`EnqueueRequestsFromMapFunc`] | whatever a function maps the object to |
//! | [`Funcs`] | whatever your closures add |
//!
//! ## Priorities
//! With a priority queue (the controllers' default), handlers put work that is probably not
//! urgent behind real changes, as controller-runtime's do: creates from an informer's initial
//! list (`is_in_initial_list`) and updates whose old and new resourceVersion are equal (resync
//! replays) go in at [`LOW_PRIORITY`](crate::workqueue::LOW_PRIORITY); everything else at the
//! default priority. The rule lives in one place (`priority.rs`); every built-in handler
//! applies it, as does [`LowPriorityWhenUnchanged`], which gives the handler it wraps a queue
//! whose plain `add` goes in at that priority (a queue without priorities treats it as a plain
//! add). Wrap a handler of your own in it to get the same behaviour.
//!
//! ```
//! use std::sync::Arc;
//! use controller_runtime::event::{CreateEvent, Event};
//! use controller_runtime::handler::{EnqueueRequestForObject, EventHandler};
//! use controller_runtime::workqueue::Enqueue;
//! use controller_runtime::Request;
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! fn on_create(queue: &dyn Enqueue<Request>) {
//!     let mut cm = ConfigMap::default();
//!     cm.metadata.namespace = Some("default".into());
//!     cm.metadata.name = Some("settings".into());
//!     let event = Event::Create(CreateEvent { object: Arc::new(cm), is_in_initial_list: false });
//!     EnqueueRequestForObject.handle(&event, queue); // adds Request{default/settings}
//! }
//! ```

mod enqueue;
mod event_handler;
mod funcs;
mod mapped;
mod owner;
mod priority;

pub use enqueue::EnqueueRequestForObject;
pub use event_handler::{BoxEventHandler, EventHandler};
pub use funcs::Funcs;
pub use mapped::EnqueueRequestsFromMapFunc;
pub use owner::{EnqueueRequestForOwner, OwnerScope};
pub use priority::LowPriorityWhenUnchanged;
