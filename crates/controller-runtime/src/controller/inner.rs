//! The state a controller shares with its workers. A leaf of `controller`: `controller.rs` (the
//! controller's methods) and `worker.rs` (the reconcile loop) both read it.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::debounce;
use super::options::ControllerOptions;
use crate::metrics::ControllerSeries;
use crate::reconcile::Reconciler;
use crate::source::Watch;
use crate::workqueue::{Queue, QueueItem};

/// A controller: what its clones share, and what its workers read.
pub(crate) struct Inner<T: QueueItem> {
    pub(super) name: Arc<str>,
    pub(super) reconciler: Arc<dyn Reconciler<T>>,
    pub(super) options: ControllerOptions<T>,
    /// Workers learn each key's priority from it and requeue the key at that priority, as
    /// controller-runtime does, whatever queue it is (built in or from `new_queue`).
    pub(super) queue: Arc<dyn Queue<T>>,
    /// The debounce layer in front of `queue` the watches enqueue through, when
    /// `ControllerOptions::with_debounce` set a window; workers ask it before reconciling.
    pub(super) debounce: Option<Arc<debounce::Debouncer<T>>>,
    pub(super) metrics: ControllerSeries,
    pub(super) state: Mutex<State<T>>,
}

/// What `start`, `warm_up` and the watch methods change, under the lock.
pub(super) struct State<T: QueueItem> {
    /// `start` was called.
    pub(super) started: bool,
    /// Whether the watches were started (by `warm_up` or `start`), once.
    pub(super) sources: Sources,
    /// The token the watches were started with, for watches added later.
    pub(super) ctx: Option<CancellationToken>,
    /// Watches added before the sources started, by handle id.
    pub(super) pending: Vec<(u64, Arc<dyn Watch<T>>)>,
    /// The started watches' tokens (children of `ctx`), by handle id: cancelling one stops
    /// that watch's source.
    pub(super) running: HashMap<u64, CancellationToken>,
}

/// Whether the controller's watches were started.
pub(super) enum Sources {
    NotStarted,
    Started,
    Failed(String),
}
