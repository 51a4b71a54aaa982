//! The cache: a [`Cache`] of informers, one per object type, shared by every controller and
//! reader; informers that keep local copies of cluster objects in step with the API server,
//! and the stores they fill.
//!
//! - [`Store`]: every object held once (`Arc<K>`), shared by every reader, with a namespace index
//!   and user field indexes; or held compactly, as JSON, decoded on each typed
//!   read (the cache's default, [`Storage`]), with a bounded memo of recent reads
//!   ([`ReadMemo`]); informers hand handlers [`CachedObject`]s.
//! - [`Informer`]: one store and its registered [`ResourceEventHandler`]s, told about every
//!   change. One list+watch per [`InformerScope`]: every namespace at once, or each cached
//!   namespace on its own (see [`CacheOptions`]).
//! - The reflector (internal): one scope's loop, list, then watch, relist on 410, reconnect
//!   with backoff. It knows nothing of informers: it writes through a store writer (a full
//!   list, an upsert, a delete) that the informer hands it for its scope.
//! - [`ListWatch`]: how a reflector reaches the server ([`ApiListWatch`] through a kube-client
//!   `Client`, typed, dynamic or metadata-only, and its raw twin yielding [`RawObject`]s).
//!
//! - Read your own writes: a cached read of an object this process's client wrote waits (a
//!   bounded time) until the informer has stored that write, see [`ReadYourWrites`].
//!
//! Objects are filed and read by [`ObjectKey`](crate::ObjectKey), the crate's one key type
//! (a reconcile [`Request`](crate::Request) is one).
//!
//! The modules depend on each other one way only: `informer_cache` and `reader` on `informer`,
//! `informer` on `reflector`, `reflector` on `list_watch`, `store` and `backoff`, `list_watch`
//! on `raw` and `watch_lines`, `store` on `memo` and `storage`, `memo` on `storage`;
//! `consistency` (the table of writes not stored yet) on nothing, `informer_cache`, `reader`
//! and `informer` on it.

mod backoff;
mod consistency;
mod error;
mod informer;
mod informer_cache;
mod list_watch;
mod memo;
mod options;
mod raw;
mod reader;
mod reflector;
mod storage;
mod store;
mod watch_lines;

pub use backoff::BackoffConfig;
pub use consistency::ReadYourWrites;
pub use error::{Error, ListWatchError};
pub use informer::{
    Informer, InformerConfig, InformerScope, Registration, ResourceEventHandler, TransformFn,
};
pub use informer_cache::{Cache, CacheObject};
pub use list_watch::{ApiListWatch, ListWatch, WatchStream};
pub use options::{
    ALL_NAMESPACES, ByObject, CacheOptions, JsonTransform, MetaTransform, NamespaceConfig,
    Namespaces, namespaces, strip_managed_fields,
};
pub use raw::RawObject;
pub use reader::ListOptions;
pub use storage::{CachedObject, Codec, ReadMemo, Storage};
pub use store::{IndexError, IndexFn, Store};
/// The watch-line decoder, for the fuzz targets in crates/fuzz: not part of the API.
#[doc(hidden)]
pub use watch_lines::decode_chunks as fuzz_watch_lines;

#[cfg(test)]
mod informer_tests;
