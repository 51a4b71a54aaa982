//! A simulated Kubernetes cluster on the embedded API server ([`crt_apiserver`]): nodes,
//! their kubelets, a scheduler and the workload controllers of kube-controller-manager, each
//! a tokio task that watches the store and writes through its normal write path (defaults,
//! validation, admission policies, `managedFields`, watch events), under upstream's field
//! managers and users (`kubelet` as `system:node:<node>`, `kube-scheduler`,
//! `kube-controller-manager` as each controller's ServiceAccount).
//!
//! ```no_run
//! # async fn run() -> Result<(), crt_apiserver::Error> {
//! let server = crt_apiserver::Server::start(crt_apiserver::Config::default()).await?;
//! let cluster = crt_cluster::Cluster::start(server.storage(), crt_cluster::ClusterConfig::default());
//! // `kubectl create deployment web --image=nginx --replicas=3` now rolls out: three Running,
//! // Ready pods on the nodes, with IPs; `kubectl expose` gives the Service its endpoints.
//! cluster.stop();
//! # Ok(()) }
//! ```
//!
//! What runs:
//! - **Nodes** (`node-1` .. `node-N`): Ready, with capacity, labels (`kubernetes.io/hostname`,
//!   ...), addresses, and Lease heartbeats in `kube-node-lease`.
//! - **Scheduler**: binds pods by requests, `nodeSelector`, required node affinity, required
//!   inter-pod affinity and anti-affinity, taints and tolerations; an unschedulable pod stays
//!   `Pending` with upstream's `FailedScheduling`.
//! - **Kubelets**: bound pods run (`podIP`, `hostIP`, container statuses, conditions), init
//!   containers first; Jobs' pods succeed; deletions complete; annotations script failures
//!   (see [`script`]).
//! - **ReplicaSet** (also running ReplicationControllers) and **Deployment** controllers:
//!   replicas, rolling updates (`maxSurge`/`maxUnavailable`), `Recreate`, revisions and
//!   `rollout undo`, `revisionHistoryLimit`, pause, `Available`/`Progressing` conditions.
//! - **EndpointSlice** and **Endpoints** controllers: a Service's endpoints are its selected
//!   pods with IPs, ready or not, and terminating.
//! - **Job** controller: completions, parallelism, `backoffLimit`, suspension, the
//!   `Complete`/`Failed` conditions and `ttlSecondsAfterFinished`.
//! - **StatefulSet** controller: pods `<set>-<ordinal>` with stable hostnames and claims,
//!   `OrderedReady` and `Parallel`, rolling updates from the top (`partition`) and
//!   `OnDelete`, ControllerRevisions.
//! - **Volumes**: kind's default StorageClass `standard`, claims bound to matching volumes or
//!   to ones a simulated provisioner makes (for `WaitForFirstConsumer`, on the node of the
//!   first pod using them); claims of pods' `ephemeral` volumes; pods wait for their claims.
//! - **DaemonSet** controller: one pod per eligible node (selectors, affinity, taints and the
//!   daemon tolerations), rolling updates within `maxUnavailable` or `maxSurge`.
//! - **CronJob** controller: Jobs on 5-field schedules and `@hourly`-style descriptors,
//!   concurrency policies, suspension, `startingDeadlineSeconds`, history limits.
//! - **ResourceQuota** controller: `status.hard` from `spec.hard`, `status.used` measured
//!   from the namespace's objects, and given back when they go (the server's admission
//!   charges creates).
//! - **Disruption** controller: PodDisruptionBudgets' healthy, desired and expected pods,
//!   allowed disruptions and `DisruptionAllowed` condition.
//!
//! Time: every delay and timestamp is on tokio's clock (offset to the wall time at start), so
//! a test on a paused clock drives the cluster with `tokio::time::advance`.
//!
//! Left out, for now: preferred inter-pod affinity, probes, preemption, node failures, CronJob time
//! zones other than UTC, StatefulSet `maxUnavailable`, volume expansion, snapshots and mounts.

mod api;
mod clock;
mod config;
mod controller;
mod cronjob;
mod daemonset;
mod deployment;
mod disruption;
mod endpoints;
mod ephemeral;
mod history;
mod interpod;
mod job;
mod kubelet;
mod nodes;
mod obj;
mod quantity;
mod quota;
mod replicaset;
mod schedule;
mod scheduler;
pub mod script;
mod statefulset;
#[cfg(test)]
mod tests;
mod volume;

use crt_apiserver::storage::Storage;
use tokio::task::JoinHandle;

pub use config::ClusterConfig;

/// A running simulated cluster: its controllers are tokio tasks on the runtime that started
/// it, stopped by [`Cluster::stop`] or when it is dropped.
pub struct Cluster {
    tasks: Vec<JoinHandle<()>>,
    nodes: Vec<String>,
    storage: Storage,
}

impl Cluster {
    /// Registers the nodes and starts every controller on the current tokio runtime (it
    /// panics outside one). While it runs, the store deletes bound pods gracefully
    /// ([`Storage::set_graceful_pod_deletion`]): their kubelets finish the deletion.
    pub fn start(storage: &Storage, config: ClusterConfig) -> Cluster {
        storage.set_graceful_pod_deletion(true);
        let api = api::Api::new(storage.clone());
        let sim_nodes = config.sim_nodes();
        let mut tasks = nodes::start(&api, &config);
        tasks.extend(scheduler::start(&api));
        tasks.extend(kubelet::start(&api, &sim_nodes));
        tasks.extend(replicaset::start(&api));
        tasks.extend(deployment::start(&api));
        tasks.extend(endpoints::start(&api));
        tasks.extend(job::start(&api));
        tasks.extend(statefulset::start(&api));
        tasks.extend(volume::start(&api));
        tasks.extend(ephemeral::start(&api));
        tasks.extend(daemonset::start(&api));
        tasks.extend(cronjob::start(&api));
        tasks.extend(quota::start(&api));
        tasks.extend(disruption::start(&api));
        Cluster {
            tasks,
            nodes: sim_nodes.into_iter().map(|n| n.name).collect(),
            storage: storage.clone(),
        }
    }

    /// The names of the simulated nodes.
    pub fn nodes(&self) -> &[String] {
        &self.nodes
    }

    /// Stops every controller (the objects they wrote stay).
    pub fn stop(self) {}
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("nodes", &self.nodes)
            .finish_non_exhaustive()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        self.storage.set_graceful_pod_deletion(false);
    }
}
