//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go's `leaderelection`.
//!
//! Several replicas of a program run; one of them, the leader, does the work. Each replica is
//! a candidate ([`LeaderElector`]) for one Lease:
//!
//! - **Acquire.** A candidate reads the Lease every `retry_period` (plus up to 1.2 times as much
//!   random jitter, so candidates do not stampede). It takes the Lease when nobody holds it, when
//!   it holds it already (a restart under the same identity), or when the holder has not
//!   renewed it for the Lease's `leaseDurationSeconds`. "Not renewed" is judged on the
//!   candidate's own clock: it notes when it last *saw the Lease change*, so clocks of different
//!   machines never need to agree.
//! - **Renew.** The leader rewrites `renewTime` every `retry_period`. If it cannot renew for
//!   `renew_deadline` after its last success, or sees another holder, it steps down:
//!   [`leader_status`](LeaderElector::leader_status) turns `false` and
//!   [`run`](LeaderElector::run) returns [`Error::LeaseLost`].
//! - **Release.** When the candidate is cancelled it stops; with `release_on_cancel` a leader
//!   first clears `holderIdentity` (and sets `leaseDurationSeconds` to 1), so another candidate
//!   takes over at its next try instead of waiting a whole lease duration.
//!
//! Every write names the `resourceVersion` it read: of two candidates racing for a free Lease
//! the API server lets one win (the other gets a 409 and retries later).
//!
//! **Why there is never more than one leader.** A leader steps down at most `renew_deadline`
//! after the start of its last successful renewal; any other candidate saw that renewal after it
//! was written, and waits a full lease duration from then. As `renew_deadline < lease_duration`
//! (checked by [`LeaderElector::new`]), the old leader's status is `false` before anyone else's
//! turns `true`. This is a little stricter than client-go, which counts the deadline from the
//! first failed retry and so can overlap when `retry_period + renew_deadline > lease_duration`.
//!
//! The timing logic is written against the [`LeaseLock`] trait (client-go's
//! `resourcelock.Interface`): [`KubeLeaseLock`] stores the record in a Lease, [`MemoryLock`]
//! in memory for tests.
//!
//! ```no_run
//! use controller_runtime::leaderelection::{LeaderElectionConfig, LeaderElector};
//! use tokio_util::sync::CancellationToken;
//!
//! # async fn demo(client: kube_client::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let config = LeaderElectionConfig::default().with_lease_name("my-operator");
//! let elector = LeaderElector::new(client, config)?;
//! let mut leading = elector.leader_status();
//! let ctx = CancellationToken::new();
//! let election = tokio::spawn({
//!     let ctx = ctx.clone();
//!     async move { elector.run(ctx).await }
//! });
//! leading.wait_for(|l| *l).await?;
//! // ... lead until the status turns false or `election` returns an error.
//! ctx.cancel();
//! election.await??;
//! # Ok(())
//! # }
//! ```

mod config;
mod elector;
mod lease_lock;
mod lock;
#[cfg(test)]
mod tests;

pub use elector::LeaderElector;
pub use lease_lock::KubeLeaseLock;
pub use lock::{LeaderElectionRecord, LeaseLock, LockError, MemoryLock, Versioned};

pub(crate) use config::host_name;
pub use config::{Error, LeaderElectionConfig, default_identity};
