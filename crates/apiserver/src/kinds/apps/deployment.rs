//! Deployments: a status write keeps the labels too.

use super::workload_wide;
use crate::kinds::{StatusStrategy, Strategy, defaults::*, strategy::DEFAULT};
use crate::patch::MergeRoot;
use crate::table::columns::*;
use crate::validation;
use serde_json::{Value, json};

/// The Deployment strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    defaults: Some(deployment_defaults),
    validate: Some(validation::apps::deployment),
    status: StatusStrategy::SpecAnd(&["labels"]),
    merge_root: MergeRoot::Workload,
    columns: deployment_columns,
    columns_wide: workload_wide,
    ..DEFAULT
};

fn deployment_defaults(obj: &mut Value, _next_cluster_ip: &mut u32) {
    default_at(obj, ".spec.replicas", json!(1));
    default_at(obj, ".spec.revisionHistoryLimit", json!(10));
    default_at(obj, ".spec.progressDeadlineSeconds", json!(600));
    // Field by field, as upstream's SetDefaults_Deployment: `kubectl create deployment` sends
    // `strategy: {}`.
    default_at(obj, ".spec.strategy.type", json!("RollingUpdate"));
    if obj.pointer("/spec/strategy/type") == Some(&json!("RollingUpdate")) {
        default_at(
            obj,
            ".spec.strategy.rollingUpdate.maxUnavailable",
            json!("25%"),
        );
        default_at(obj, ".spec.strategy.rollingUpdate.maxSurge", json!("25%"));
    }
    default_template(obj);
}

fn deployment_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Ready", |o| {
            ratio(int(o, "/status/readyReplicas"), int(o, "/spec/replicas"))
        }),
        ("Up-to-date", |o| json!(int(o, "/status/updatedReplicas"))),
        ("Available", |o| json!(int(o, "/status/availableReplicas"))),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_strategy_is_defaulted_field_by_field() {
        let mut d = json!({"spec": {"strategy": {}}});
        deployment_defaults(&mut d, &mut 0);
        assert_eq!(
            d["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        let mut d = json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1}}}});
        deployment_defaults(&mut d, &mut 0);
        assert_eq!(
            d["spec"]["strategy"]["rollingUpdate"],
            json!({"maxUnavailable": "25%", "maxSurge": 1})
        );
        let mut d = json!({"spec": {"strategy": {"type": "Recreate"}}});
        deployment_defaults(&mut d, &mut 0);
        assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
    }
}
