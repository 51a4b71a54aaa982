//! The handle on the store: [`Storage`], what callers hold. Its methods are the storage API:
//! the synchronous verbs in `storage.rs`, the async writes through admission webhooks in
//! `hooked.rs`. A leaf over `store` and `durable`, so that both can name it without importing
//! each other.

use std::sync::Arc;

use parking_lot::Mutex;

use super::durable::Sync;
use super::store::State;

/// The object store. Cheap to clone; clones share the same data.
#[derive(Clone)]
pub struct Storage {
    pub(super) state: Arc<Mutex<State>>,
    /// Where requests wait for their writes to reach the disk, when the store is durable.
    pub(super) sync: Option<Sync>,
}
