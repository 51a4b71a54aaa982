//! [`Sharded`]: another provider's clusters divided among the replicas of an operator, each
//! cluster engaged by exactly one replica at a time.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube_client::Api;
use kube_client::api::PostParams;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::BoxError;
use crate::ObjectKey;
use crate::multicluster::aware::{Aware, Provider};
use crate::multicluster::cluster::Cluster;
use crate::multicluster::error::Error;
use crate::sharding::{Membership, ShardingOptions, assign};

/// The label on each cluster's Lease, naming the ring (not the ring's own label: a cluster's
/// Lease is not a member).
pub const CLUSTER_LEASE_LABEL: &str = "multicluster.crt.dev/ring";
/// The annotation on each cluster's Lease naming the cluster.
pub const CLUSTER_ANNOTATION: &str = "multicluster.crt.dev/cluster";

/// Divides the clusters of another provider among the replicas running it: each replica
/// engages only its share, and each cluster is engaged by exactly one replica at a time.
///
/// Kubernetes coordinates the replicas, through Leases in a hub cluster (the one the replicas
/// run in, usually), the way [`sharding`](crate::sharding) does for the objects of one cluster:
/// - **Membership**: each replica renews its own Lease in a ring named by `name` (the
///   sharding ring, `shard.crt.dev/ring: <name>`), and sees the others' renewals.
/// - **Assignment**: rendezvous hashing of each cluster's name over the live replicas
///   ([`sharding::assign`](crate::sharding::assign)): balanced, and a replica joining or leaving
///   moves only the clusters that must move.
/// - **Exclusion**: a replica engages a cluster only while it holds that cluster's Lease
///   (`<name>-<hash of the cluster's name>`, labelled [`CLUSTER_LEASE_LABEL`], the cluster in
///   [`CLUSTER_ANNOTATION`]). It takes the Lease when the cluster is assigned to it and the
///   Lease is free, released, or not renewed for the lease duration (measured on its own clock
///   from when it saw the last change, as leader election does). A replica a cluster moves away
///   from disengages it (waiting, as [`Aware::disengage`] does, for its reconciles to end)
///   before it releases the Lease; a replica that cannot renew its Leases disengages its
///   clusters once its last renewal is half a lease duration old, before another may take them.
/// - **Stopping**: a replica that stops disengages its clusters and releases their Leases; the
///   others take them once its ring Lease expires (the lease duration). A replica that dies
///   without releasing is taken over after the lease duration too.
///
/// ```no_run
/// use std::sync::Arc;
/// use controller_runtime::multicluster::providers::{ClusterSet, Sharded};
/// use controller_runtime::sharding::ShardingOptions;
/// # fn f(hub: kube_client::Client, local: controller_runtime::manager::Manager) -> Result<(), Box<dyn std::error::Error>> {
/// let members = ClusterSet::new();
/// let options = ShardingOptions::default().with_lease_namespace("my-operator");
/// let sharded = Sharded::new("my-operator", members, hub, options)?;
/// let mgr = controller_runtime::multicluster::Manager::new(local, Some(Arc::new(sharded)))?;
/// # let _ = mgr; Ok(()) }
/// ```
pub struct Sharded<P> {
    name: String,
    inner: P,
    hub: kube_client::Client,
    options: ShardingOptions,
}

impl<P: Provider> Sharded<P> {
    /// The clusters of `inner`, divided among the replicas of the ring `name` (a valid label
    /// value, the same on every replica) whose Leases are in `hub`. `options` names this
    /// replica (unique in the ring) and the Leases' namespace and timings.
    pub fn new(
        name: impl Into<String>,
        inner: P,
        hub: kube_client::Client,
        options: ShardingOptions,
    ) -> Result<Self, crate::sharding::Error> {
        let name = name.into();
        options.check(&name)?;
        Ok(Sharded {
            name,
            inner,
            hub,
            options,
        })
    }
}

impl<P: Provider> Provider for Sharded<P> {
    fn start(
        &self,
        ctx: CancellationToken,
        aware: Arc<dyn Aware>,
    ) -> BoxFuture<'_, Result<(), BoxError>> {
        Box::pin(async move {
            let shard = Arc::new(Shard {
                ring: self.name.clone(),
                membership: Membership::new(&self.name, self.options.clone()),
                leases: Api::namespaced(self.hub.clone(), &self.options.lease_namespace),
                aware,
                candidates: Mutex::default(),
                observed: Mutex::default(),
                wake: Notify::new(),
            });
            // The ring's renewals run beside; dropping this future (a provider stopped
            // without its context) stops them too, so the others see this replica gone.
            let ring = shard.membership.run(self.hub.clone(), ctx.clone());
            let offered: Arc<dyn Aware> = shard.clone();
            let (inner, (), _) = tokio::join!(
                self.inner.start(ctx.clone(), offered),
                shard.run(ctx.clone()),
                ring
            );
            inner
        })
    }

    fn describe(&self) -> String {
        format!(
            "{} sharded as replica {} of {}",
            self.inner.describe(),
            self.options.replica(),
            self.name
        )
    }
}

/// A cluster the inner provider offered.
struct Candidate {
    cluster: Cluster,
    /// The inner provider's context for it.
    ctx: CancellationToken,
    /// While this replica engages it: the engagement's context and when its Lease was last
    /// renewed (the request's start).
    engaged: Option<(CancellationToken, Instant)>,
}

/// A cluster Lease as last observed, and when it was seen to change.
struct Observed {
    holder: String,
    renew: Option<String>,
    seen: Instant,
}

/// One running replica of a [`Sharded`] provider.
struct Shard {
    ring: String,
    membership: Membership,
    leases: Api<Lease>,
    /// What engages the clusters (the manager).
    aware: Arc<dyn Aware>,
    candidates: Mutex<BTreeMap<String, Candidate>>,
    observed: Mutex<HashMap<String, Observed>>,
    wake: Notify,
}

impl Shard {
    fn replica(&self) -> &str {
        self.membership.replica()
    }

    fn lease_duration(&self) -> Duration {
        self.membership.options().lease_duration
    }

    /// The Lease of cluster `cluster`: the ring's name and a hash of the cluster's (any
    /// string), so that it is a valid name whatever the cluster is called.
    fn lease_name(&self, cluster: &str) -> String {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for b in cluster.bytes() {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!("{}-{hash:016x}", self.ring)
    }

    /// Decides every assign period, and at once when the ring or the candidates change, which
    /// clusters this replica engages; at the end disengages them all and releases their Leases.
    async fn run(self: &Arc<Self>, ctx: CancellationToken) {
        let mut ring = self.membership.subscribe();
        let period = self
            .membership
            .options()
            .renew_period
            .min(self.membership.options().assign_period);
        loop {
            self.step().await;
            tokio::select! {
                () = ctx.cancelled() => break,
                () = tokio::time::sleep(period) => {}
                () = self.wake.notified() => {}
                _ = ring.changed() => {}
            }
        }
        let engaged: Vec<String> = {
            let candidates = self.candidates.lock();
            (candidates.iter())
                .filter(|(_, c)| c.engaged.is_some())
                .map(|(name, _)| name.clone())
                .collect()
        };
        for name in engaged {
            self.leave(&name).await;
        }
    }

    /// One round: holds and engages the clusters assigned here, leaves the others.
    async fn step(self: &Arc<Self>) {
        let live = self.membership.live();
        let fresh = self.membership.fresh();
        let names: Vec<(String, bool)> = {
            let mut candidates = self.candidates.lock();
            candidates.retain(|_, c| !c.ctx.is_cancelled() || c.engaged.is_some());
            (candidates.iter())
                .map(|(name, c)| (name.clone(), c.engaged.is_some()))
                .collect()
        };
        for (name, engaged) in names {
            let gone = self
                .candidates
                .lock()
                .get(&name)
                .is_none_or(|c| c.ctx.is_cancelled());
            let assigned =
                fresh && assign(&ObjectKey::new("", name.as_str()), &live) == Some(self.replica());
            if gone || !assigned {
                if engaged {
                    self.leave(&name).await;
                }
                if gone {
                    self.candidates.lock().remove(&name);
                }
                continue;
            }
            let sent = Instant::now();
            match self.hold(&name).await {
                Ok(true) => self.engage(&name, sent).await,
                Ok(false) => {
                    if engaged {
                        // Another replica holds it now: it must not run here.
                        self.leave(&name).await;
                    }
                }
                Err(e) => {
                    tracing::warn!(ring = %self.ring, cluster = %name, error = %e, "renewing a cluster's lease failed");
                    self.fence(&name).await;
                }
            }
        }
    }

    /// Engages `name` (renewed at `renewed`) unless it is engaged already.
    async fn engage(&self, name: &str, renewed: Instant) {
        let fresh = {
            let mut candidates = self.candidates.lock();
            let Some(c) = candidates.get_mut(name) else {
                return;
            };
            if let Some((_, at)) = &mut c.engaged {
                *at = renewed;
                return;
            }
            let token = c.ctx.child_token();
            c.engaged = Some((token.clone(), renewed));
            (c.cluster.renewed(), token)
        };
        let (cluster, token) = fresh;
        match self.aware.engage(token.clone(), cluster).await {
            Ok(()) | Err(Error::AlreadyEngaged(_)) => {
                tracing::info!(ring = %self.ring, replica = %self.replica(), cluster = %name, "engaged its share's cluster");
            }
            Err(e) => {
                tracing::error!(ring = %self.ring, cluster = %name, error = %e, "could not engage cluster");
                if let Some(c) = self.candidates.lock().get_mut(name) {
                    c.engaged = None;
                }
                token.cancel();
                self.release(name).await;
            }
        }
    }

    /// Disengages `name` if its last renewal is half a lease duration old: another replica may
    /// take it after a whole one.
    async fn fence(&self, name: &str) {
        let stale = self
            .candidates
            .lock()
            .get(name)
            .and_then(|c| c.engaged.as_ref())
            .is_some_and(|(_, at)| at.elapsed() >= self.lease_duration() / 2);
        if stale {
            tracing::warn!(ring = %self.ring, cluster = %name, "disengaging a cluster whose lease could not be renewed");
            self.disengage_here(name).await;
        }
    }

    /// Stops engaging `name` here, then releases its Lease.
    async fn leave(&self, name: &str) {
        self.disengage_here(name).await;
        self.release(name).await;
    }

    async fn disengage_here(&self, name: &str) {
        let token = self
            .candidates
            .lock()
            .get_mut(name)
            .and_then(|c| c.engaged.take());
        if let Some((token, _)) = token {
            self.aware.disengage(name).await;
            token.cancel();
        }
    }

    /// Takes or renews the Lease of cluster `name`; whether this replica holds it now.
    async fn hold(&self, name: &str) -> Result<bool, kube_client::Error> {
        let lease_name = self.lease_name(name);
        let seconds = i32::try_from(self.lease_duration().as_secs().max(1)).unwrap_or(i32::MAX);
        let now = MicroTime(Timestamp::now());
        let Some(mut lease) = self.leases.get_opt(&lease_name).await? else {
            let lease: Lease = serde_json::from_value(serde_json::json!({
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {
                    "name": lease_name,
                    "labels": { CLUSTER_LEASE_LABEL: self.ring },
                    "annotations": { CLUSTER_ANNOTATION: name },
                },
                "spec": {
                    "holderIdentity": self.replica(),
                    "leaseDurationSeconds": seconds,
                    "acquireTime": now,
                    "renewTime": now,
                },
            }))
            .map_err(kube_client::Error::SerdeError)?;
            return match self.leases.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube_client::Error::Api(s)) if s.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let renew = spec
            .renew_time
            .as_ref()
            .and_then(|t| serde_json::to_string(t).ok());
        let expired = {
            let mut observed = self.observed.lock();
            let seen = match observed.remove(&lease_name) {
                Some(o) if o.holder == holder && o.renew == renew => o.seen,
                _ => Instant::now(),
            };
            observed.insert(
                lease_name.clone(),
                Observed {
                    holder: holder.clone(),
                    renew,
                    seen,
                },
            );
            seen.elapsed() >= self.lease_duration()
        };
        let mine = holder == self.replica();
        if !(mine || holder.is_empty() || expired) {
            return Ok(false);
        }
        if !mine {
            spec.acquire_time = Some(now.clone());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
        spec.holder_identity = Some(self.replica().to_string());
        spec.lease_duration_seconds = Some(seconds);
        spec.renew_time = Some(now);
        // Conditional on the version read: two replicas cannot both take it.
        match (self.leases)
            .replace(&lease_name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube_client::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Gives up the Lease of cluster `name` if this replica holds it, so that the replica it
    /// is assigned to takes it at once.
    async fn release(&self, name: &str) {
        let lease_name = self.lease_name(name);
        let Ok(Some(mut lease)) = self.leases.get_opt(&lease_name).await else {
            return;
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        if spec.holder_identity.as_deref() != Some(self.replica()) {
            return;
        }
        spec.holder_identity = None;
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        if let Err(e) = (self.leases)
            .replace(&lease_name, &PostParams::default(), &lease)
            .await
        {
            tracing::debug!(ring = %self.ring, cluster = %name, error = %e, "releasing a cluster's lease failed; it expires instead");
        }
    }
}

impl Aware for Shard {
    /// A cluster the inner provider offers: a candidate, engaged here if it is this replica's.
    fn engage(&self, ctx: CancellationToken, cluster: Cluster) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            let name = cluster.name().to_string();
            {
                let mut candidates = self.candidates.lock();
                if candidates.get(&name).is_some_and(|c| !c.ctx.is_cancelled()) {
                    return Err(Error::AlreadyEngaged(name));
                }
                candidates.insert(
                    name,
                    Candidate {
                        cluster,
                        ctx,
                        engaged: None,
                    },
                );
            }
            self.wake.notify_one();
            Ok(())
        })
    }

    /// The inner provider withdraws a cluster: disengaged here (if it was) and its Lease
    /// released.
    fn disengage<'a>(&'a self, cluster: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let engaged = match self.candidates.lock().get(cluster) {
                None => return false,
                Some(c) => c.engaged.is_some(),
            };
            if engaged {
                self.leave(cluster).await;
            }
            self.candidates.lock().remove(cluster);
            true
        })
    }
}
