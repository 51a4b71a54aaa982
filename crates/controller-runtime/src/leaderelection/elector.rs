//! [`LeaderElector`]: the acquire, renew and release loops over a [`LeaseLock`].

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use tokio::sync::{Mutex, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::KubeLeaseLock;
use super::config::{Error, JITTER_FACTOR, LeaderElectionConfig};
use super::lock::{LeaderElectionRecord, LeaseLock, LockError, Versioned};

/// A candidate for leadership of one lease: see the [module docs](super).
pub struct LeaderElector {
    config: LeaderElectionConfig,
    lock: Arc<dyn LeaseLock>,
    status: watch::Sender<bool>,
    /// What this candidate last saw of the lock; held by `run` for its whole duration, so two
    /// concurrent `run`s on one elector take turns.
    observed: Mutex<Observed>,
}

/// The record as last seen, and when it was last seen to change (on our clock).
struct Observed {
    record: LeaderElectionRecord,
    version: Option<String>,
    at: Instant,
}

/// How acquisition ended.
enum Acquired {
    /// We hold the lease since the try that started then.
    At(Instant),
    /// Cancelled; `in_flight` when a try was cut short (it may have written the lease).
    Cancelled { in_flight: bool },
}

/// The outcome of one try to acquire or renew.
enum Attempt {
    /// We hold the lease (acquired or renewed).
    Held,
    /// Another candidate holds the lease and renewed it within its duration.
    HeldBy(String),
    /// The lock could not be read or written (a conflict, an API error, a timeout).
    Failed(LockError),
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("lock", &self.lock.describe())
            .field("identity", &self.config.identity)
            .field("leading", &*self.status.borrow())
            .finish_non_exhaustive()
    }
}

impl LeaderElector {
    /// A candidate using `client` for the Lease.
    pub fn new(client: kube_client::Client, config: LeaderElectionConfig) -> Result<Self, Error> {
        let lock = KubeLeaseLock::new(client, &config.lease_namespace, &config.lease_name);
        Self::with_lock(Arc::new(lock), config)
    }

    /// A candidate competing on `lock` (e.g. a [`MemoryLock`](super::MemoryLock) in tests).
    /// The config's lease name and namespace are then only used in errors.
    pub fn with_lock(
        lock: Arc<dyn LeaseLock>,
        config: LeaderElectionConfig,
    ) -> Result<Self, Error> {
        config.validate()?;
        Ok(LeaderElector {
            config,
            lock,
            status: watch::Sender::new(false),
            observed: Mutex::new(Observed {
                record: LeaderElectionRecord::default(),
                version: None,
                at: Instant::now(),
            }),
        })
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        &self.config.identity
    }

    /// The config the candidate runs with.
    pub fn config(&self) -> &LeaderElectionConfig {
        &self.config
    }

    /// `true` while this candidate leads; see [`run`](Self::run).
    pub fn leader_status(&self) -> watch::Receiver<bool> {
        self.status.subscribe()
    }

    /// Whether this candidate leads now.
    pub fn is_leader(&self) -> bool {
        *self.status.borrow()
    }

    /// Acquires the lease (retrying every `retry_period`), then renews it until `ctx` is
    /// cancelled (`Ok`, releasing the lease if configured) or renewal fails for
    /// `renew_deadline` ([`Error::LeaseLost`]). The status turns `true` when acquired and
    /// `false` before `run` returns.
    pub async fn run(&self, ctx: CancellationToken) -> Result<(), Error> {
        let mut observed = self.observed.lock().await;
        let desc = self.lock.describe();
        tracing::info!(lease = %desc, identity = %self.config.identity, "attempting to acquire leader lease");
        let mut last_renew = match self.acquire(&mut observed, &ctx).await {
            Acquired::At(started) => started,
            Acquired::Cancelled { in_flight } => {
                // A write cut short may have taken the lease on the server: give it back.
                if in_flight && self.config.release_on_cancel {
                    self.release(&mut observed).await;
                }
                return Ok(());
            }
        };
        tracing::info!(lease = %desc, identity = %self.config.identity, "successfully acquired lease");
        self.status.send_replace(true);
        let result = self.renew(&mut observed, &ctx, &mut last_renew).await;
        self.status.send_replace(false);
        match &result {
            Ok(()) => {
                if self.config.release_on_cancel {
                    self.release(&mut observed).await;
                }
            }
            Err(e) => tracing::warn!(lease = %desc, identity = %self.config.identity, "{e}"),
        }
        result
    }

    /// Tries every `retry_period` (with jitter) until the lease is ours or `ctx` is cancelled.
    async fn acquire(&self, observed: &mut Observed, ctx: &CancellationToken) -> Acquired {
        loop {
            let started = Instant::now();
            let attempt = tokio::select! {
                a = self.try_acquire_or_renew(observed, self.config.renew_deadline, false) => a,
                _ = ctx.cancelled() => return Acquired::Cancelled { in_flight: true },
            };
            match attempt {
                Attempt::Held => return Acquired::At(started),
                Attempt::HeldBy(holder) => {
                    tracing::debug!(lease = %self.lock.describe(), %holder, "lease is held and has not yet expired");
                }
                Attempt::Failed(e) => {
                    tracing::debug!(lease = %self.lock.describe(), "failed to acquire lease: {e}");
                }
            }
            let wait = jittered(self.config.retry_period);
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = ctx.cancelled() => return Acquired::Cancelled { in_flight: false },
            }
        }
    }

    /// Renews every `retry_period` until cancelled (`Ok`) or until no renewal succeeded for
    /// `renew_deadline` after the start of the last successful one, or another candidate holds
    /// the lease ([`Error::LeaseLost`]).
    async fn renew(
        &self,
        observed: &mut Observed,
        ctx: &CancellationToken,
        last_renew: &mut Instant,
    ) -> Result<(), Error> {
        let mut next = *last_renew + self.config.retry_period;
        loop {
            let deadline = *last_renew + self.config.renew_deadline;
            tokio::select! {
                _ = tokio::time::sleep_until(next.min(deadline)) => {}
                _ = ctx.cancelled() => return Ok(()),
            }
            let started = Instant::now();
            if started >= deadline {
                return Err(self.lost());
            }
            let attempt = tokio::select! {
                a = self.try_acquire_or_renew(observed, deadline - started, true) => a,
                _ = ctx.cancelled() => return Ok(()),
            };
            match attempt {
                Attempt::Held => *last_renew = started,
                Attempt::HeldBy(holder) => {
                    tracing::warn!(lease = %self.lock.describe(), %holder, "another candidate holds the lease");
                    return Err(self.lost());
                }
                Attempt::Failed(e) => {
                    tracing::debug!(lease = %self.lock.describe(), "failed to renew lease: {e}");
                }
            }
            next = started + self.config.retry_period;
        }
    }

    fn lost(&self) -> Error {
        Error::LeaseLost {
            namespace: self.config.lease_namespace.clone(),
            name: self.config.lease_name.clone(),
        }
    }

    /// One try to take or keep the lease, within `timeout` (client-go's `tryAcquireOrRenew`).
    async fn try_acquire_or_renew(
        &self,
        observed: &mut Observed,
        timeout: Duration,
        leading: bool,
    ) -> Attempt {
        match tokio::time::timeout(timeout, self.try_once(observed, leading)).await {
            Ok(Ok(attempt)) => attempt,
            Ok(Err(e)) => Attempt::Failed(e),
            Err(_) => Attempt::Failed(LockError::Storage {
                lock: self.lock.describe(),
                source: format!("no answer within {timeout:?}").into(),
            }),
        }
    }

    async fn try_once(&self, observed: &mut Observed, leading: bool) -> Result<Attempt, LockError> {
        let now = Timestamp::now();
        let mut record = LeaderElectionRecord {
            holder_identity: self.config.identity.clone(),
            lease_duration_seconds: self.config.lease_duration_seconds(),
            acquire_time: Some(now),
            renew_time: Some(now),
            lease_transitions: 0,
        };
        // Fast path (as client-go's): the leader renews the version it wrote last, without
        // reading first. One request instead of two; on any failure, read and decide.
        if leading
            && observed.record.holder_identity == self.config.identity
            && let Some(version) = observed.version.clone()
        {
            let renewed = LeaderElectionRecord {
                acquire_time: observed.record.acquire_time,
                lease_transitions: observed.record.lease_transitions,
                ..record.clone()
            };
            match self.lock.update(renewed.clone(), version).await {
                Ok(version) => {
                    observed.observe(renewed, version);
                    return Ok(Attempt::Held);
                }
                Err(e) => {
                    tracing::debug!(lease = %self.lock.describe(), "optimistic renewal failed, reading the lease: {e}")
                }
            }
        }
        let Some(Versioned {
            record: old,
            version,
        }) = self.lock.get().await?
        else {
            let version = self.lock.create(record.clone()).await?;
            observed.observe(record, version);
            return Ok(Attempt::Held);
        };
        if observed.version.as_ref() != Some(&version) {
            observed.observe(old.clone(), version.clone());
        }
        let ours = old.holder_identity == self.config.identity;
        if !old.holder_identity.is_empty() && !ours {
            let duration = match old.lease_duration_seconds {
                s if s > 0 => Duration::from_secs(s as u64),
                _ => self.config.lease_duration,
            };
            if observed.at + duration > Instant::now() {
                return Ok(Attempt::HeldBy(old.holder_identity));
            }
        }
        if ours {
            record.acquire_time = old.acquire_time;
            record.lease_transitions = old.lease_transitions;
        } else {
            record.lease_transitions = old.lease_transitions.saturating_add(1);
        }
        let version = self.lock.update(record.clone(), version).await?;
        observed.observe(record, version);
        Ok(Attempt::Held)
    }

    /// Gives the lease up if we hold it: clears the holder and sets a one-second duration, so
    /// the next candidate to try takes it (client-go's `release`). Tries the version we wrote
    /// last, else reads the lease again (our last write may have landed unanswered).
    async fn release(&self, observed: &mut Observed) {
        let released = |transitions| LeaderElectionRecord {
            holder_identity: String::new(),
            lease_duration_seconds: 1,
            acquire_time: Some(Timestamp::now()),
            renew_time: Some(Timestamp::now()),
            lease_transitions: transitions,
        };
        let attempt = async {
            if observed.record.holder_identity == self.config.identity
                && let Some(version) = observed.version.clone()
            {
                let record = released(observed.record.lease_transitions);
                if let Ok(version) = self.lock.update(record.clone(), version).await {
                    return Ok(Some((record, version)));
                }
            }
            match self.lock.get().await? {
                Some(current) if current.record.holder_identity == self.config.identity => {
                    let record = released(current.record.lease_transitions);
                    let version = self.lock.update(record.clone(), current.version).await?;
                    Ok(Some((record, version)))
                }
                _ => Ok(None),
            }
        };
        let desc = self.lock.describe();
        match tokio::time::timeout(self.config.renew_deadline, attempt).await {
            Ok(Ok(Some((record, version)))) => {
                observed.observe(record, version);
                tracing::info!(lease = %desc, "released the lease");
            }
            Ok(Ok(None)) => {}
            Ok(Err::<_, LockError>(e)) => {
                tracing::warn!(lease = %desc, "failed to release the lease: {e}")
            }
            Err(_) => tracing::warn!(lease = %desc, "failed to release the lease: timed out"),
        }
    }
}

impl Observed {
    fn observe(&mut self, record: LeaderElectionRecord, version: String) {
        self.record = record;
        self.version = Some(version);
        self.at = Instant::now();
    }
}

/// `period` plus a random part of up to `JITTER_FACTOR * period` (client-go's `wait.Jitter`).
fn jittered(period: Duration) -> Duration {
    period + period.mul_f64(JITTER_FACTOR * rand::random::<f64>())
}
