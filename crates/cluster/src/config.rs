//! What the simulated cluster is made of: [`ClusterConfig`].

/// The simulated cluster's shape: how many nodes and what each offers.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ClusterConfig {
    /// How many nodes (`node-1` .. `node-N`).
    pub nodes: usize,
    /// Each node's CPU capacity (a quantity: `4`, `3500m`).
    pub node_cpu: String,
    /// Each node's memory capacity (a quantity: `16Gi`).
    pub node_memory: String,
    /// How many pods each node runs at most.
    pub node_pods: u32,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            nodes: 3,
            node_cpu: "4".into(),
            node_memory: "16Gi".into(),
            node_pods: 110,
        }
    }
}

impl ClusterConfig {
    /// Sets [`ClusterConfig::nodes`].
    pub fn with_nodes(mut self, nodes: usize) -> Self {
        self.nodes = nodes;
        self
    }

    /// Sets each node's capacity: [`ClusterConfig::node_cpu`], [`ClusterConfig::node_memory`]
    /// and [`ClusterConfig::node_pods`].
    pub fn with_node_capacity(mut self, cpu: &str, memory: &str, pods: u32) -> Self {
        self.node_cpu = cpu.into();
        self.node_memory = memory.into();
        self.node_pods = pods;
        self
    }
}

/// One simulated node: its name and addresses.
#[derive(Clone, Debug)]
pub(crate) struct SimNode {
    /// `node-<n>`.
    pub(crate) name: String,
    /// The node's `InternalIP` (`172.18.0.<n+1>`), every pod's `hostIP`.
    pub(crate) ip: String,
    /// The third octet of its pods' IPs (`10.244.<n>.x`).
    pub(crate) subnet: usize,
}

impl ClusterConfig {
    /// The nodes this configuration makes.
    pub(crate) fn sim_nodes(&self) -> Vec<SimNode> {
        (1..=self.nodes)
            .map(|n| SimNode {
                name: format!("node-{n}"),
                ip: format!("172.18.{}.{}", n / 250, n % 250 + 1),
                subnet: n,
            })
            .collect()
    }
}
