//! NetworkPolicies.

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::table::columns::*;
use serde_json::json;

/// The NetworkPolicy strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    columns: network_policy_columns,
    ..DEFAULT
};

fn network_policy_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Pod-Selector", |o| match get(o, "/spec/podSelector") {
        Some(sel) if sel.as_object().is_some_and(|m| !m.is_empty()) => {
            let labels = selector(&json!({"spec": {"selector": sel}}));
            if labels == json!("<none>") {
                json!("")
            } else {
                labels
            }
        }
        _ => json!("<none>"),
    })]
}
