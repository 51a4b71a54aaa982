//! The lock a [`LeaderElector`](super::LeaderElector) competes for, as client-go's
//! `resourcelock.Interface`: read the election record, create it, or replace it under
//! optimistic concurrency.
//!
//! The elector needs nothing else from storage, so the timing logic is written once against
//! [`LeaseLock`] and tested against [`MemoryLock`]; [`KubeLeaseLock`](super::KubeLeaseLock)
//! stores the record in a `coordination.k8s.io/v1` Lease.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::jiff::Timestamp;
use parking_lot::Mutex;

/// What a lock stores: who holds the lease and since when, as the fields of a Lease's spec
/// (client-go's `LeaderElectionRecord`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaderElectionRecord {
    /// The holder's identity; empty when nobody holds the lease (e.g. after a release).
    pub holder_identity: String,
    /// How long candidates wait, after they last saw the record change, before they may take
    /// the lease.
    pub lease_duration_seconds: i32,
    /// When the current holder acquired the lease.
    pub acquire_time: Option<Timestamp>,
    /// When the current holder last renewed the lease.
    pub renew_time: Option<Timestamp>,
    /// How many times the lease changed hands.
    pub lease_transitions: i32,
}

/// A record as read from a lock, with the version an update must name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versioned {
    /// The record.
    pub record: LeaderElectionRecord,
    /// The storage's version of it (a Lease's `resourceVersion`). Any write changes it, so a
    /// candidate that sees a new version knows the holder is alive.
    pub version: String,
}

/// Why a lock operation failed.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The record changed since it was read (or was created meanwhile): another candidate won
    /// the race. An HTTP 409 from the API server.
    #[error("the lock {0} was changed by another candidate")]
    Conflict(String),
    /// The storage failed or could not be reached.
    #[error("lock {lock}: {source}")]
    Storage {
        /// The lock (`namespace/name`).
        lock: String,
        /// The underlying error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// The storage a leader election runs on (client-go's `resourcelock.Interface`).
///
/// Implementations make [`update`](Self::update) conditional on the version read, so that of
/// two candidates racing for a free lease only one wins.
pub trait LeaseLock: Send + Sync {
    /// The current record, `None` when the lock does not exist yet.
    fn get(&self) -> BoxFuture<'_, Result<Option<Versioned>, LockError>>;
    /// Creates the lock holding `record`; [`LockError::Conflict`] when it already exists.
    /// Returns the new version.
    fn create(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<String, LockError>>;
    /// Replaces the record if its version is still `version`, else [`LockError::Conflict`].
    /// Returns the new version.
    fn update(
        &self,
        record: LeaderElectionRecord,
        version: String,
    ) -> BoxFuture<'_, Result<String, LockError>>;
    /// The lock's name for logs, e.g. `default/my-controller`.
    fn describe(&self) -> String;
}

/// An in-memory [`LeaseLock`], for tests and for candidates in one process.
///
/// Handles made by [`handle`](Self::handle) share the record but each has its own failure
/// switch, latency and request count, so a test can cut one candidate off the storage while the
/// others carry on. Clones share everything.
///
/// ```
/// use controller_runtime::leaderelection::{LeaderElectionRecord, LeaseLock, MemoryLock};
/// # futures::executor::block_on(async {
/// let lock = MemoryLock::new();
/// assert!(lock.get().await.unwrap().is_none());
/// let record = LeaderElectionRecord { holder_identity: "a".into(), ..Default::default() };
/// let v1 = lock.create(record.clone()).await.unwrap();
/// let v2 = lock.update(record.clone(), v1.clone()).await.unwrap();
/// // A write naming an old version loses.
/// assert!(lock.update(record, v1).await.is_err());
/// assert_eq!(lock.get().await.unwrap().unwrap().version, v2);
/// # });
/// ```
#[derive(Clone, Debug, Default)]
pub struct MemoryLock {
    shared: Arc<Mutex<Option<(LeaderElectionRecord, u64)>>>,
    failing: Arc<AtomicBool>,
    latency: Arc<Mutex<Duration>>,
    requests: Arc<AtomicUsize>,
}

impl MemoryLock {
    /// An empty lock (no record yet).
    pub fn new() -> Self {
        Self::default()
    }

    /// Another handle on the same record, with its own failure switch.
    pub fn handle(&self) -> Self {
        MemoryLock {
            shared: self.shared.clone(),
            ..Default::default()
        }
    }

    /// Every operation through this handle takes effect at once but answers `latency` later
    /// (on tokio's clock), like a request whose response is slow. Cancelling it meanwhile
    /// leaves the effect in place.
    pub fn set_latency(&self, latency: Duration) {
        *self.latency.lock() = latency;
    }

    /// How many operations were made through this handle.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// While `true`, every operation through this handle (and its clones) fails as if the
    /// storage were unreachable.
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }

    /// Waits for the configured latency.
    async fn answer<R>(&self, result: R) -> R {
        let latency = *self.latency.lock();
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        result
    }

    /// The stored record, read directly (no failure switch, not counted).
    pub fn record(&self) -> Option<LeaderElectionRecord> {
        self.shared.lock().as_ref().map(|(r, _)| r.clone())
    }

    fn check(&self) -> Result<(), LockError> {
        self.requests.fetch_add(1, Ordering::SeqCst);
        if self.failing.load(Ordering::SeqCst) {
            return Err(LockError::Storage {
                lock: self.describe(),
                source: "storage unreachable (MemoryLock::set_failing)".into(),
            });
        }
        Ok(())
    }
}

impl LeaseLock for MemoryLock {
    fn get(&self) -> BoxFuture<'_, Result<Option<Versioned>, LockError>> {
        Box::pin(async move {
            self.check()?;
            let read = self.shared.lock().as_ref().map(|(record, v)| Versioned {
                record: record.clone(),
                version: v.to_string(),
            });
            self.answer(Ok(read)).await
        })
    }

    fn create(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<String, LockError>> {
        Box::pin(async move {
            self.check()?;
            let created = {
                let mut shared = self.shared.lock();
                if shared.is_some() {
                    Err(LockError::Conflict(self.describe()))
                } else {
                    *shared = Some((record, 1));
                    Ok("1".to_string())
                }
            };
            self.answer(created).await
        })
    }

    fn update(
        &self,
        record: LeaderElectionRecord,
        version: String,
    ) -> BoxFuture<'_, Result<String, LockError>> {
        Box::pin(async move {
            self.check()?;
            let updated = match self.shared.lock().as_mut() {
                Some((stored, v)) if v.to_string() == version => {
                    *stored = record;
                    *v += 1;
                    Ok(v.to_string())
                }
                _ => Err(LockError::Conflict(self.describe())),
            };
            self.answer(updated).await
        })
    }

    fn describe(&self) -> String {
        "memory".to_string()
    }
}
