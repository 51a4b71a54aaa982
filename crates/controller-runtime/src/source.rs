//! Sources: where a controller's events come from.
//!
//! Two traits split the job:
//!
//! - [`Source<K, T>`] produces events about objects of type `K`. It is started with an
//!   [`EventDispatcher`]: the watch's handler, the controller's queue and the watch's predicates
//!   bundled together. For every event the source calls the dispatcher, which asks the predicates
//!   and, if all agree, calls the handler, which puts items on the queue. A source that must fill a
//!   cache first (a *syncing source*, such as the Kind source) also implements
//!   [`Source::wait_for_sync`]; the default says "synced" at once.
//! - [`Watch<T>`] is what a controller holds and starts: a source with its handler and
//!   predicates already bound ([`EventWatch`], made by [`watch`]), so that one controller can
//!   hold watches on many object types. A source that needs no handler, such as [`Func`],
//!   implements `Watch` directly.
//!
//! | source | events |
//! | --- | --- |
//! | [`Channel`] | [`GenericEvent`](crate::event::GenericEvent)s your code sends (webhooks, timers, other systems) |
//! | [`Func`] | none: a closure given the queue adds items itself |
//! | [`Kind`] | creates, updates and deletes from the cache's shared informer for a type; syncing |
//! | [`Informer`] | the same from an informer you hold; not syncing |
//!
//! ```
//! use std::sync::Arc;
//! use controller_runtime::event::GenericEvent;
//! use controller_runtime::handler::EnqueueRequestForObject;
//! use controller_runtime::source::{self, Watch};
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! // Events from outside the cluster: send GenericEvents, get reconciles.
//! let (tx, channel) = source::channel::<ConfigMap>(16);
//! let watch = source::watch(channel, EnqueueRequestForObject, vec![]);
//! // controller.add_watch(watch) ... then tx.send(GenericEvent { object }).await
//! # drop((tx, watch));
//! ```

mod channel;
mod dispatch;
mod func;
mod informer;
mod interface;
mod watch;

pub use channel::{Channel, channel};
pub use dispatch::{CachedEvent, EventDispatcher};
pub use func::Func;
pub use informer::{Informer, Kind};
pub use watch::{EventWatch, watch};

pub use interface::{Error, Source, Watch};
