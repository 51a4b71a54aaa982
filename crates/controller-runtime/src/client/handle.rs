//! The client's handles, [`Client`] and [`Objects`]: their methods are in `client.rs` (reads and
//! writes), `apply.rs` (server-side apply) and `subresource.rs`. A leaf of `client`, so that
//! each of those can name them without importing the others.

use std::sync::Arc;

use super::options::WriteDefaults;
use crate::cache::{Cache, CacheObject};

/// Reads from the cache, writes to the API server. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    pub(super) cache: Cache,
    pub(super) defaults: Arc<WriteDefaults>,
}

/// Reads and writes of one object type; see [`Client::objects`].
pub struct Objects<K: CacheObject> {
    pub(super) client: Client,
    pub(super) dt: K::DynamicType,
}
