//! Providers: where clusters come from.
//!
//! | provider | clusters | engaged / disengaged |
//! | --- | --- | --- |
//! | [`ClusterSet`] | the clients added to it (built from kubeconfigs and their contexts with [`kubeconfig`]) | by [`ClusterSet::add`] / [`ClusterSet::remove`], at any time |
//! | [`Directory`] | one per kubeconfig file in a directory, named by the file's stem | a file appears (or changes) / disappears, seen by polling |
//! | [`KubeconfigSecrets`] | one per Secret labelled `sigs.k8s.io/multicluster-runtime-kubeconfig: "true"` in a namespace of the hub, named by the Secret | a Secret appears (or its kubeconfig changes) / is deleted, seen by polling |
//! | [`Namespaces`] | one virtual cluster per namespace of one cluster, its cache restricted to the namespace | a namespace appears / is deleted or terminating, seen by polling |
//! | `Fleet` (feature `envtest`) | embedded API servers started in-process | `Fleet::add_member` / `Fleet::remove_member` |
//! | [`ClusterProfiles`] | one per ClusterProfile (Cluster Inventory API) in the hub, reached through the kubeconfig Secret written for this consumer, named `<namespace>/<name>` | the profile's control plane turns healthy (or its kubeconfig changes) / the profile is deleted, seen by polling |
//! | [`Sharded`] | another provider's clusters assigned to this replica, each held through a Lease in a hub cluster | assigned and its Lease held / assigned elsewhere, or the Lease lost |
//!
//! Every provider but [`Sharded`] is a [`ClusterSet`] underneath: the others add and remove its
//! members. [`Sharded`] wraps any provider, so that the replicas of an operator divide its
//! clusters among them.

mod cluster_profiles;
mod directory;
#[cfg(feature = "envtest")]
mod fleet;
pub mod kubeconfig;
mod namespaces;
mod secrets;
mod set;
mod sharded;

pub use cluster_profiles::{
    CLUSTER_PROFILE_KUBECONFIG_KEY, CLUSTER_PROFILE_LABEL, CONSUMER_LABEL, CONTROL_PLANE_HEALTHY,
    ClusterProfiles,
};
pub use directory::Directory;
#[cfg(feature = "envtest")]
pub use fleet::Fleet;
pub use namespaces::Namespaces;
pub use secrets::{KUBECONFIG_SECRET_KEY, KUBECONFIG_SECRET_LABEL, KubeconfigSecrets};
pub use set::ClusterSet;
pub use sharded::{CLUSTER_ANNOTATION, CLUSTER_LEASE_LABEL, Sharded};
