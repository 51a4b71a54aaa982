//! [`KubeLeaseLock`]: the election record in a `coordination.k8s.io/v1` Lease.

use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube_client::Api;
use kube_client::api::{ObjectMeta, PostParams};
use parking_lot::Mutex;

use super::lock::{LeaderElectionRecord, LeaseLock, LockError, Versioned};

/// A [`LeaseLock`] on a Lease `namespace/name`, through kube-client (client-go's `LeaseLock`).
///
/// Updates replace the Lease last read, with its `resourceVersion`, so the API server rejects
/// (409) a write based on a stale read; fields the record does not cover (labels,
/// `preferredHolder`, `strategy`) are kept.
pub struct KubeLeaseLock {
    api: Api<Lease>,
    namespace: String,
    name: String,
    /// The Lease as last read or written, the base of the next update.
    last: Mutex<Option<Lease>>,
}

impl std::fmt::Debug for KubeLeaseLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeLeaseLock")
            .field("lease", &self.describe())
            .finish_non_exhaustive()
    }
}

impl KubeLeaseLock {
    /// A lock on the Lease `namespace/name` (created on first acquisition).
    pub fn new(client: kube_client::Client, namespace: &str, name: &str) -> Self {
        KubeLeaseLock {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
            name: name.to_string(),
            last: Mutex::new(None),
        }
    }

    fn error(&self, e: kube_client::Error) -> LockError {
        match e {
            kube_client::Error::Api(status) if status.code == 409 => {
                LockError::Conflict(self.describe())
            }
            e => LockError::Storage {
                lock: self.describe(),
                source: Box::new(e),
            },
        }
    }

    /// Keeps `lease` as the base of the next update and returns its version.
    fn remember(&self, lease: Lease) -> String {
        let version = lease.metadata.resource_version.clone().unwrap_or_default();
        *self.last.lock() = Some(lease);
        version
    }
}

impl LeaseLock for KubeLeaseLock {
    fn get(&self) -> BoxFuture<'_, Result<Option<Versioned>, LockError>> {
        Box::pin(async move {
            let Some(lease) = self
                .api
                .get_opt(&self.name)
                .await
                .map_err(|e| self.error(e))?
            else {
                return Ok(None);
            };
            let record = to_record(lease.spec.as_ref());
            let version = self.remember(lease);
            Ok(Some(Versioned { record, version }))
        })
    }

    fn create(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<String, LockError>> {
        Box::pin(async move {
            let lease = Lease {
                metadata: ObjectMeta {
                    namespace: Some(self.namespace.clone()),
                    name: Some(self.name.clone()),
                    ..Default::default()
                },
                spec: Some(to_spec(&record, LeaseSpec::default())),
            };
            let created = (self.api.create(&PostParams::default(), &lease).await)
                .map_err(|e| self.error(e))?;
            Ok(self.remember(created))
        })
    }

    fn update(
        &self,
        record: LeaderElectionRecord,
        version: String,
    ) -> BoxFuture<'_, Result<String, LockError>> {
        Box::pin(async move {
            let mut lease = self.last.lock().clone().unwrap_or_else(|| Lease {
                metadata: ObjectMeta {
                    namespace: Some(self.namespace.clone()),
                    name: Some(self.name.clone()),
                    ..Default::default()
                },
                spec: None,
            });
            lease.metadata.resource_version = Some(version);
            lease.metadata.managed_fields = None;
            lease.spec = Some(to_spec(&record, lease.spec.unwrap_or_default()));
            let updated = (self
                .api
                .replace(&self.name, &PostParams::default(), &lease)
                .await)
                .map_err(|e| self.error(e))?;
            Ok(self.remember(updated))
        })
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// A Lease spec's election fields as a record (absent fields as empty or zero).
pub(crate) fn to_record(spec: Option<&LeaseSpec>) -> LeaderElectionRecord {
    let Some(spec) = spec else {
        return LeaderElectionRecord::default();
    };
    LeaderElectionRecord {
        holder_identity: spec.holder_identity.clone().unwrap_or_default(),
        lease_duration_seconds: spec.lease_duration_seconds.unwrap_or_default(),
        acquire_time: spec.acquire_time.as_ref().map(|t| t.0),
        renew_time: spec.renew_time.as_ref().map(|t| t.0),
        lease_transitions: spec.lease_transitions.unwrap_or_default(),
    }
}

/// `base` with the record's fields; an empty holder clears `holderIdentity`.
pub(crate) fn to_spec(record: &LeaderElectionRecord, base: LeaseSpec) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(record.holder_identity.clone()).filter(|h| !h.is_empty()),
        lease_duration_seconds: Some(record.lease_duration_seconds),
        acquire_time: record.acquire_time.map(MicroTime),
        renew_time: record.renew_time.map(MicroTime),
        lease_transitions: Some(record.lease_transitions),
        ..base
    }
}
