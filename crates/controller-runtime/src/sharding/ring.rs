//! The ring: each replica's Lease, renewed, and the live members as this replica sees them.

use std::collections::HashMap;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube_client::Api;
use kube_client::api::{ListParams, Patch, PatchParams, PostParams};
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::labels::RING_LABEL;
use super::options::ShardingOptions;
use crate::BoxError;

/// A Lease as last observed: its holder and renew time, and when this replica saw them change.
struct Observed {
    holder: String,
    renew: Option<String>,
    seen: Instant,
}

/// One replica's view of the ring of a controller: its own Lease's freshness, and the members
/// whose Leases it saw renewed within the lease duration.
pub(crate) struct Membership {
    controller: String,
    options: ShardingOptions,
    /// When the last successful renewal was sent.
    renewed: Mutex<Option<Instant>>,
    /// Leases by name.
    observed: Mutex<HashMap<String, Observed>>,
    /// The live members, sorted; changes wake the assigner.
    live: watch::Sender<Vec<String>>,
}

impl Membership {
    pub(crate) fn new(controller: &str, options: ShardingOptions) -> Self {
        Membership {
            controller: controller.to_string(),
            options,
            renewed: Mutex::new(None),
            observed: Mutex::new(HashMap::new()),
            live: watch::Sender::new(Vec::new()),
        }
    }

    pub(crate) fn controller(&self) -> &str {
        &self.controller
    }

    pub(crate) fn replica(&self) -> &str {
        &self.options.replica
    }

    pub(crate) fn options(&self) -> &ShardingOptions {
        &self.options
    }

    /// This replica's Lease: `<controller>-<replica>`, lowercased, characters a Lease name
    /// cannot hold replaced by `-`.
    pub(crate) fn lease_name(&self) -> String {
        format!("{}-{}", self.controller, self.options.replica)
            .to_lowercase()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                    c
                } else {
                    '-'
                }
            })
            .collect()
    }

    /// Whether this replica may start a reconcile: its last renewal was sent less than half a
    /// lease duration ago (the fence that lets the others take its objects after a full one).
    pub(crate) fn fresh(&self) -> bool {
        self.renewed
            .lock()
            .is_some_and(|at| at.elapsed() < self.options.lease_duration / 2)
    }

    /// The live members, sorted by name.
    pub(crate) fn live(&self) -> Vec<String> {
        self.live.borrow().clone()
    }

    /// A receiver told of every change of the live members.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Vec<String>> {
        self.live.subscribe()
    }

    /// Whether this replica coordinates the ring: it is fresh and the smallest live member.
    pub(crate) fn coordinates(&self) -> bool {
        self.fresh() && self.live.borrow().first().map(String::as_str) == Some(self.replica())
    }

    /// Renews (or creates) this replica's Lease.
    async fn renew(&self, api: &Api<Lease>) -> Result<(), kube_client::Error> {
        let sent = Instant::now();
        let name = self.lease_name();
        let seconds =
            i32::try_from(self.options.lease_duration.as_secs().max(1)).unwrap_or(i32::MAX);
        let spec = serde_json::json!({
            "holderIdentity": self.options.replica,
            "leaseDurationSeconds": seconds,
            "renewTime": MicroTime(Timestamp::now()),
        });
        let patch = serde_json::json!({ "spec": spec });
        match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(kube_client::Error::Api(status)) if status.code == 404 => {
                let lease: Lease = serde_json::from_value(serde_json::json!({
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {
                        "name": name,
                        "namespace": self.options.lease_namespace,
                        "labels": { RING_LABEL: self.controller },
                    },
                    "spec": spec,
                }))
                .map_err(kube_client::Error::SerdeError)?;
                api.create(&PostParams::default(), &lease).await?;
            }
            Err(e) => return Err(e),
        }
        *self.renewed.lock() = Some(sent);
        Ok(())
    }

    /// Lists the ring's Leases and updates the live members.
    async fn observe(&self, api: &Api<Lease>) -> Result<(), kube_client::Error> {
        let selector = format!("{RING_LABEL}={}", self.controller);
        let leases = api.list(&ListParams::default().labels(&selector)).await?;
        let now = Instant::now();
        let mut observed = self.observed.lock();
        let mut seen = HashMap::with_capacity(leases.items.len());
        for lease in leases.items {
            let Some(name) = lease.metadata.name.clone() else {
                continue;
            };
            let spec = lease.spec.unwrap_or_default();
            let holder = spec.holder_identity.unwrap_or_default();
            let renew = spec
                .renew_time
                .as_ref()
                .and_then(|t| serde_json::to_string(t).ok());
            let entry = match observed.remove(&name) {
                Some(old) if old.holder == holder && old.renew == renew => old,
                _ => Observed {
                    holder,
                    renew,
                    seen: now,
                },
            };
            seen.insert(name, entry);
        }
        *observed = seen;
        let duration = self.options.lease_duration;
        let mut live: Vec<String> = observed
            .values()
            .filter(|o| !o.holder.is_empty() && now.duration_since(o.seen) < duration)
            .map(|o| o.holder.clone())
            .collect();
        live.sort();
        live.dedup();
        drop(observed);
        self.live.send_if_modified(|old| {
            let changed = *old != live;
            if changed {
                tracing::info!(controller = %self.controller, replica = %self.options.replica, members = ?live, "shard ring changed");
                *old = live;
            }
            changed
        });
        Ok(())
    }

    /// Renews and observes every renew period until `ctx` is cancelled. Failures are logged
    /// and retried: a replica that cannot renew fences itself (see [`fresh`](Self::fresh)).
    pub(crate) async fn run(
        &self,
        client: kube_client::Client,
        ctx: CancellationToken,
    ) -> Result<(), BoxError> {
        let api: Api<Lease> = Api::namespaced(client, &self.options.lease_namespace);
        loop {
            if let Err(e) = self.renew(&api).await {
                tracing::warn!(controller = %self.controller, lease = %self.lease_name(), error = %e, "renewing the shard lease failed");
            }
            if let Err(e) = self.observe(&api).await {
                tracing::warn!(controller = %self.controller, error = %e, "reading the shard ring failed");
            }
            tokio::select! {
                () = ctx.cancelled() => return Ok(()),
                () = tokio::time::sleep(self.options.renew_period) => {}
            }
        }
    }
}
