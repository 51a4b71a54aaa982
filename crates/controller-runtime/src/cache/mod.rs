//! The cache: informers that keep local copies of cluster objects in step with the API server,
//! and the stores they fill.
//!
//! - [`Store`]: every object held once (`Arc<K>`), shared by every reader, with a namespace index
//!   and user field indexes.
//! - [`Informer`]: list, then watch, relist on 410, reconnect with backoff; tells registered
//!   [`ResourceEventHandler`]s about every change.
//! - [`ListWatch`]: how an informer reaches the server ([`ApiListWatch`] for full objects,
//!   [`MetadataListWatch`] for metadata only).

mod backoff;
mod informer;
mod list_watch;
mod store;

pub use backoff::BackoffConfig;
pub use informer::{Informer, InformerConfig, Registration, ResourceEventHandler, TransformFn};
pub use list_watch::{ApiListWatch, ListWatch, MetadataListWatch, WatchStream};
pub use store::{IndexError, IndexFn, ObjectKey, Store};

#[cfg(test)]
mod informer_tests;
