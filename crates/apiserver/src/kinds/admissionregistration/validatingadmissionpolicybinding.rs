//! ValidatingAdmissionPolicyBindings.

use crate::kinds::{Strategy, defaults::*, strategy::DEFAULT};
use serde_json::Value;

/// The ValidatingAdmissionPolicyBinding strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    defaults: Some(policy_binding_defaults),
    ..DEFAULT
};

fn policy_binding_defaults(obj: &mut Value, _next_cluster_ip: &mut u32) {
    if let Some(m) = obj.pointer_mut("/spec/matchResources") {
        default_match_resources(m);
    }
}
