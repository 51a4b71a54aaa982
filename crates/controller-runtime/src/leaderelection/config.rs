//! The configuration of leader election ([`LeaderElectionConfig`]), its errors and the
//! identity of this process. A leaf of `leaderelection`, which re-exports it.

use std::time::Duration;

/// client-go's `JitterFactor`: a candidate waits between `retry_period` and 2.2 times as long
/// between two attempts to acquire.
pub(crate) const JITTER_FACTOR: f64 = 1.2;

/// Why leader election failed or ended.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The lease could not be renewed within `renew_deadline`: leadership is lost.
    #[error("lost the lease {namespace}/{name}")]
    LeaseLost {
        /// The lease's namespace.
        namespace: String,
        /// The lease's name.
        name: String,
    },
    /// The configuration cannot work (e.g. renew_deadline >= lease_duration).
    #[error("invalid leader election config: {0}")]
    InvalidConfig(String),
}

/// How leader election runs. Defaults: controller-runtime's (15 s / 10 s / 2 s); set the
/// others with the `with_*` setters (one per field).
///
/// ```
/// use std::time::Duration;
/// use controller_runtime::leaderelection::LeaderElectionConfig;
///
/// let config = LeaderElectionConfig::default().with_lease_name("my-operator");
/// assert!(config.validate().is_ok());
/// let bad = config.with_renew_deadline(Duration::from_secs(20));
/// assert!(bad.validate().is_err());
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct LeaderElectionConfig {
    /// The Lease's name (controller-runtime's `LeaderElectionID`).
    pub(crate) lease_name: String,
    /// The Lease's namespace (default `default`; in-cluster, controller-runtime uses the pod's).
    pub(crate) lease_namespace: String,
    /// This candidate's identity (default: host name plus `_` and a random suffix).
    pub(crate) identity: String,
    /// How long a lease is valid without renewal (default 15 s). Written to the Lease in whole
    /// seconds, rounded up.
    pub(crate) lease_duration: Duration,
    /// How long the leader keeps retrying to renew before giving up (default 10 s).
    pub(crate) renew_deadline: Duration,
    /// How often candidates try to acquire and the leader to renew (default 2 s).
    pub(crate) retry_period: Duration,
    /// Release the lease when cancelled, so another candidate takes over at once (default
    /// `false`, as controller-runtime's `LeaderElectionReleaseOnCancel`).
    pub(crate) release_on_cancel: bool,
}

impl Default for LeaderElectionConfig {
    fn default() -> Self {
        LeaderElectionConfig {
            lease_name: "controller-runtime-leader".into(),
            lease_namespace: "default".into(),
            identity: default_identity(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            release_on_cancel: false,
        }
    }
}

impl LeaderElectionConfig {
    /// The Lease's name (controller-runtime's `LeaderElectionID`).
    pub fn with_lease_name(mut self, name: impl Into<String>) -> Self {
        self.lease_name = name.into();
        self
    }

    /// The Lease's namespace (default `default`; in-cluster, controller-runtime uses the pod's).
    pub fn with_lease_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.lease_namespace = namespace.into();
        self
    }

    /// This candidate's identity (default: host name plus `_` and a random suffix).
    pub fn with_identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = identity.into();
        self
    }

    /// How long a lease is valid without renewal (default 15 s). Written to the Lease in whole
    /// seconds, rounded up.
    pub fn with_lease_duration(mut self, duration: Duration) -> Self {
        self.lease_duration = duration;
        self
    }

    /// How long the leader keeps retrying to renew before giving up (default 10 s).
    pub fn with_renew_deadline(mut self, deadline: Duration) -> Self {
        self.renew_deadline = deadline;
        self
    }

    /// How often candidates try to acquire and the leader to renew (default 2 s).
    pub fn with_retry_period(mut self, period: Duration) -> Self {
        self.retry_period = period;
        self
    }

    /// Release the lease when cancelled, so another candidate takes over at once (default
    /// `false`, as controller-runtime's `LeaderElectionReleaseOnCancel`).
    pub fn with_release_on_cancel(mut self, release: bool) -> Self {
        self.release_on_cancel = release;
        self
    }

    /// Checks the config as client-go's `NewLeaderElector` does: names and identity set,
    /// `lease_duration > renew_deadline > 1.2 * retry_period`, `lease_duration` at least one
    /// second, no zero durations.
    pub fn validate(&self) -> Result<(), Error> {
        let invalid = |msg: String| Err(Error::InvalidConfig(msg));
        if self.lease_name.is_empty() {
            return invalid("lease_name must not be empty".into());
        }
        if self.lease_namespace.is_empty() {
            return invalid("lease_namespace must not be empty".into());
        }
        if self.identity.is_empty() {
            return invalid("identity must not be empty".into());
        }
        if self.retry_period.is_zero() {
            return invalid("retry_period must be greater than zero".into());
        }
        if self.lease_duration < Duration::from_secs(1) {
            return invalid(format!(
                "lease_duration ({:?}) must be at least one second",
                self.lease_duration
            ));
        }
        if self.lease_duration <= self.renew_deadline {
            return invalid(format!(
                "lease_duration ({:?}) must be greater than renew_deadline ({:?})",
                self.lease_duration, self.renew_deadline
            ));
        }
        if self.renew_deadline <= self.retry_period.mul_f64(JITTER_FACTOR) {
            return invalid(format!(
                "renew_deadline ({:?}) must be greater than retry_period * {JITTER_FACTOR} ({:?})",
                self.renew_deadline,
                self.retry_period.mul_f64(JITTER_FACTOR)
            ));
        }
        Ok(())
    }

    /// `lease_duration` in whole seconds, rounded up, as written to the Lease.
    pub(crate) fn lease_duration_seconds(&self) -> i32 {
        let d = self.lease_duration;
        let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
        i32::try_from(secs).unwrap_or(i32::MAX)
    }
}

/// The host name plus `_` and a random suffix (a UUID, as controller-runtime's), so replicas
/// on one host, or a restarted pod, never share an identity.
///
/// ```
/// let a = controller_runtime::leaderelection::default_identity();
/// let b = controller_runtime::leaderelection::default_identity();
/// assert_ne!(a, b);
/// assert!(a.contains('_'));
/// ```
pub fn default_identity() -> String {
    format!("{}_{}", host_name(), random_uuid())
}

/// The kernel's host name, else `$HOSTNAME`, else `localhost`.
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| "localhost".to_string())
}

/// A random (version 4) UUID in its usual text form.
fn random_uuid() -> String {
    let mut bytes: [u8; 16] = rand::random();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}
