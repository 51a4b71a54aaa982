//! How a controller is sharded ([`ShardingOptions`]) and why sharding fails ([`Error`]). A
//! leaf of `sharding`, which re-exports it.

use std::time::Duration;

use super::labels;

/// Why a controller could not be sharded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The controller's or the replica's name makes no valid label.
    #[error("sharding controller {controller:?} as replica {replica:?}: {reason}")]
    InvalidName {
        /// The controller's name.
        controller: String,
        /// The replica's name.
        replica: String,
        /// Why it is not a valid label key or value.
        reason: String,
    },
    /// The manager's cache already has an informer of the `for` kind, which holds every object
    /// rather than the shard's: build sharded controllers before anything reads that kind.
    #[error(
        "the cache already holds every {kind} object: build the sharded controller {controller:?} before reading {kind} through the cache"
    )]
    CacheInUse {
        /// The controller's name.
        controller: String,
        /// The `for` kind.
        kind: String,
    },
    /// The timings do not make a working ring.
    #[error("sharding controller {controller:?}: {reason}")]
    InvalidTimings {
        /// The controller's name.
        controller: String,
        /// What is wrong.
        reason: String,
    },
}

/// Options of a sharded controller (see the [module docs](crate::sharding)). Every field has a default;
/// set the others with the `with_*` setters.
///
/// ```
/// use std::time::Duration;
/// use controller_runtime::sharding::ShardingOptions;
///
/// let options = ShardingOptions::default()
///     .with_replica("replica-0")
///     .with_lease_namespace("my-operator")
///     .with_lease_duration(Duration::from_secs(15));
/// # let _ = options;
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ShardingOptions {
    pub(crate) replica: String,
    pub(crate) lease_namespace: String,
    pub(crate) lease_duration: Duration,
    pub(crate) renew_period: Duration,
    pub(crate) assign_period: Duration,
}

impl Default for ShardingOptions {
    fn default() -> Self {
        ShardingOptions {
            replica: default_replica(),
            lease_namespace: "default".to_string(),
            lease_duration: Duration::from_secs(15),
            renew_period: Duration::from_secs(2),
            assign_period: Duration::from_secs(5),
        }
    }
}

/// `$POD_NAME`, else the host name (lowercased, cut to 40 characters) plus `-` and 8 random
/// hex digits: a valid label value and Lease name suffix.
fn default_replica() -> String {
    if let Ok(pod) = std::env::var("POD_NAME")
        && !pod.is_empty()
    {
        return pod;
    }
    let host: String = crate::leaderelection::default_identity()
        .split('_')
        .next()
        .unwrap_or("replica")
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    let host = host.trim_matches('-');
    let host = if host.is_empty() { "replica" } else { host };
    format!("{host}-{:08x}", rand::random::<u32>())
}

impl ShardingOptions {
    /// This replica's name: the value of the shard label on its objects, and its Lease's
    /// suffix (default `$POD_NAME`, else the host name and a random suffix). A valid label
    /// value; unique among the replicas.
    pub fn with_replica(mut self, replica: impl Into<String>) -> Self {
        self.replica = replica.into();
        self
    }

    /// The namespace of the ring's Leases (default `default`).
    pub fn with_lease_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.lease_namespace = namespace.into();
        self
    }

    /// How long a member counts as live after its last observed renewal (default 15 s): a dead
    /// replica's objects move after it. At least three renew periods.
    pub fn with_lease_duration(mut self, duration: Duration) -> Self {
        self.lease_duration = duration;
        self
    }

    /// How often a replica renews its Lease and reads the ring (default 2 s).
    pub fn with_renew_period(mut self, period: Duration) -> Self {
        self.renew_period = period;
        self
    }

    /// How often the coordinator lists the objects to assign new ones and move those whose
    /// shard changed (default 5 s); it also assigns at once when the ring changes.
    pub fn with_assign_period(mut self, period: Duration) -> Self {
        self.assign_period = period;
        self
    }

    /// This replica's name.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Checks names and timings for `controller`.
    pub(crate) fn check(&self, controller: &str) -> Result<(), Error> {
        labels::check(controller, &self.replica).map_err(|reason| Error::InvalidName {
            controller: controller.to_string(),
            replica: self.replica.clone(),
            reason,
        })?;
        let invalid = |reason: &str| {
            Err(Error::InvalidTimings {
                controller: controller.to_string(),
                reason: reason.to_string(),
            })
        };
        if self.renew_period.is_zero() || self.assign_period.is_zero() {
            return invalid("the renew and assign periods must be positive");
        }
        if self.lease_duration < self.renew_period * 3 {
            return invalid("the lease duration must be at least three renew periods");
        }
        Ok(())
    }
}
