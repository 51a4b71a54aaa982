//! The simulated nodes, as each node's kubelet keeps them: it registers its Node (capacity,
//! allocatable, labels, addresses, the pressure and `Ready` conditions), renews its Lease in
//! `kube-node-lease` every 10 s (the heartbeat the node lifecycle controller reads; 40 s
//! duration) and refreshes its conditions' `lastHeartbeatTime` every 5 minutes, as upstream's
//! kubelet does with node leases on. A deleted Node or Lease is registered again.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::api::{Actor, Api};
use crate::config::{ClusterConfig, SimNode};
use crate::obj;

/// The namespace of the node Leases.
const LEASE_NAMESPACE: &str = "kube-node-lease";
/// How often a Lease is renewed (a quarter of its duration, as upstream).
const RENEW: Duration = Duration::from_secs(10);
/// How often the conditions' heartbeat is refreshed (`nodeStatusReportFrequency`).
const REPORT: Duration = Duration::from_secs(300);

/// The kubelet's identity on `node`.
pub(crate) fn kubelet(node: &str) -> Actor {
    Actor::new(
        "kubelet",
        &format!("system:node:{node}"),
        &["system:nodes"],
        "kubelet",
    )
}

/// Registers the nodes now (so the scheduler sees them at once), then spawns their
/// heartbeats.
pub(crate) fn start(api: &Api, config: &ClusterConfig) -> Vec<JoinHandle<()>> {
    let nodes = config.sim_nodes();
    for node in &nodes {
        register(api, config, node);
        renew(api, node);
    }
    let api = api.clone();
    let config = config.clone();
    vec![tokio::spawn(async move {
        let mut since_report = Duration::ZERO;
        loop {
            tokio::time::sleep(RENEW).await;
            since_report += RENEW;
            let report = since_report >= REPORT;
            if report {
                since_report = Duration::ZERO;
            }
            for node in &nodes {
                if report || api.get(&api.res.nodes, None, &node.name).is_none() {
                    register(&api, &config, node);
                }
                renew(&api, node);
            }
        }
    })]
}

/// Creates the Node, or refreshes its status' heartbeats.
fn register(api: &Api, config: &ClusterConfig, node: &SimNode) {
    let who = kubelet(&node.name);
    let now = api.clock.stamp();
    let existing = api.get(&api.res.nodes, None, &node.name);
    let status = status(config, node, existing.as_ref(), &now);
    if existing.is_none() {
        let body = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {
                "name": node.name,
                "labels": {
                    "beta.kubernetes.io/arch": "amd64",
                    "beta.kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "kubernetes.io/hostname": node.name,
                    "kubernetes.io/os": "linux",
                },
                "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
            },
            "spec": {
                "podCIDR": format!("10.244.{}.0/24", node.subnet),
                "podCIDRs": [format!("10.244.{}.0/24", node.subnet)],
            },
        });
        if let Err(e) = api.create(&api.res.nodes, None, body, &who) {
            tracing::warn!("registering node {}: {e}", node.name);
            return;
        }
    }
    let patch = json!({"status": status});
    if let Err(e) = api.merge_patch(
        &api.res.nodes,
        None,
        &node.name,
        Some("status"),
        &patch,
        &who,
    ) {
        tracing::warn!("updating node {} status: {e}", node.name);
    }
}

/// The node's status: capacity, allocatable, conditions (keeping their transition times),
/// addresses and node info.
fn status(config: &ClusterConfig, node: &SimNode, existing: Option<&Value>, now: &str) -> Value {
    let capacity = json!({
        "cpu": config.node_cpu,
        "memory": config.node_memory,
        "pods": config.node_pods.to_string(),
        "ephemeral-storage": "100Gi",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
    });
    let condition = |type_: &str, status: &str, reason: &str, message: &str| {
        let since = existing
            .and_then(|n| obj::condition(n, type_))
            .filter(|c| obj::str_at(c, "/status") == status)
            .map(|c| obj::str_at(c, "/lastTransitionTime").to_string())
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| now.to_string());
        json!({
            "type": type_, "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": now, "lastTransitionTime": since,
        })
    };
    json!({
        "capacity": capacity,
        "allocatable": capacity,
        "conditions": [
            condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        ],
        "addresses": [
            {"type": "InternalIP", "address": node.ip},
            {"type": "Hostname", "address": node.name},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": format!("{:032x}", node.subnet),
            "systemUUID": format!("00000000-0000-0000-0000-{:012x}", node.subnet),
            "bootID": format!("00000000-0000-0000-0001-{:012x}", node.subnet),
            "kernelVersion": "6.8.0",
            "osImage": "crt simulated node",
            "containerRuntimeVersion": "containerd://2.0.0",
            "kubeletVersion": "v1.33.0",
            "kubeProxyVersion": "",
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
    })
}

/// Renews (or creates) the node's Lease.
fn renew(api: &Api, node: &SimNode) {
    let who = kubelet(&node.name);
    let now = crate::clock::micro_time(api.clock.now());
    let ns = Some(LEASE_NAMESPACE);
    if api.get(&api.res.leases, ns, &node.name).is_some() {
        let patch = json!({"spec": {"renewTime": now}});
        if let Err(e) = api.merge_patch(&api.res.leases, ns, &node.name, None, &patch, &who) {
            tracing::warn!("renewing the lease of node {}: {e}", node.name);
        }
        return;
    }
    let Some(n) = api.get(&api.res.nodes, None, &node.name) else {
        return;
    };
    let body = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {
            "name": node.name, "namespace": LEASE_NAMESPACE,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node.name, "uid": obj::uid(&n)}],
        },
        "spec": {"holderIdentity": node.name, "leaseDurationSeconds": 40, "renewTime": now},
    });
    if let Err(e) = api.create(&api.res.leases, ns, body, &who) {
        tracing::warn!("creating the lease of node {}: {e}", node.name);
    }
}
