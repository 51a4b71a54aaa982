//! The labels sharding writes: which shard holds an object, whether it is being drained, and
//! which ring a member's Lease belongs to.
//!
//! | label | on | value |
//! | --- | --- | --- |
//! | `shard.crt.dev/<controller>` | every object of the controller's `for` kind (and the children a reconciler labels with [`copy_shard_label`]) | the replica that reconciles it |
//! | `drain.shard.crt.dev/<controller>` | an object being moved away from its replica | `true` |
//! | `shard.crt.dev/ring` | each member's Lease | the controller's name |

use kube_core::Resource;

/// The prefix of the label naming an object's shard; the controller's name follows it.
const SHARD_PREFIX: &str = "shard.crt.dev/";
/// The prefix of the label asking a shard to let go of an object.
const DRAIN_PREFIX: &str = "drain.shard.crt.dev/";
/// The label naming the ring (the controller) a member's Lease belongs to.
pub const RING_LABEL: &str = "shard.crt.dev/ring";

/// The label whose value names the replica an object of `controller` is assigned to:
/// `shard.crt.dev/<controller>`.
///
/// ```
/// assert_eq!(controller_runtime::sharding::shard_label("memo"), "shard.crt.dev/memo");
/// ```
pub fn shard_label(controller: &str) -> String {
    format!("{SHARD_PREFIX}{controller}")
}

/// The label the assigner sets on an object that is to leave its shard:
/// `drain.shard.crt.dev/<controller>`. The shard removes it, with the shard label, once no
/// reconcile of the object runs; only then is the object assigned again.
pub fn drain_label(controller: &str) -> String {
    format!("{DRAIN_PREFIX}{controller}")
}

/// The label selector of `replica`'s shard of `controller`: what its cache holds.
///
/// ```
/// assert_eq!(
///     controller_runtime::sharding::selector("memo", "replica-0"),
///     "shard.crt.dev/memo=replica-0",
/// );
/// ```
pub fn selector(controller: &str, replica: &str) -> String {
    format!("{}={replica}", shard_label(controller))
}

/// Copies `owner`'s shard label of `controller` to `child` (removing the child's when the
/// owner has none), so that a controller's owned objects follow their owner into its shard: a
/// cache restricted to the shard (`ByObject::with_label_selector(selector(..))` for the
/// child's kind) then holds only the shard's children. Without it, owned objects still reach
/// the right shard (their events enqueue the owner, which only its shard's cache holds), but
/// every replica caches all of them.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use controller_runtime::sharding::{copy_shard_label, shard_label};
///
/// let mut owner = ConfigMap::default();
/// owner.metadata.labels = Some([(shard_label("memo"), "replica-1".to_string())].into());
/// let mut child = ConfigMap::default();
/// copy_shard_label("memo", &owner, &mut child);
/// assert_eq!(child.metadata.labels.unwrap()[&shard_label("memo")], "replica-1");
/// ```
pub fn copy_shard_label<O: Resource, C: Resource>(controller: &str, owner: &O, child: &mut C) {
    let key = shard_label(controller);
    let value = owner
        .meta()
        .labels
        .as_ref()
        .and_then(|labels| labels.get(&key))
        .cloned();
    let labels = child.meta_mut().labels.get_or_insert_with(Default::default);
    match value {
        Some(value) => {
            labels.insert(key, value);
        }
        None => {
            labels.remove(&key);
        }
    }
}

/// Whether `controller` and `replica` make valid label keys and values (checked by the
/// label selector parser), with the reason when not.
pub(crate) fn check(controller: &str, replica: &str) -> Result<(), String> {
    crt_labels::Requirement::new(
        &shard_label(controller),
        crt_labels::Operator::Equals,
        [replica],
    )
    .map(|_| ())
    .map_err(|e| e.to_string())?;
    crt_labels::Requirement::new(
        &drain_label(controller),
        crt_labels::Operator::Exists,
        [] as [&str; 0],
    )
    .map(|_| ())
    .map_err(|e| e.to_string())
}
