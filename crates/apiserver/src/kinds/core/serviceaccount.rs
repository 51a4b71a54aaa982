//! ServiceAccounts.

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::patch::MergeRoot;
use crate::table::columns::*;
use serde_json::json;

/// The ServiceAccount strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    merge_root: MergeRoot::ServiceAccount,
    columns: service_account_columns,
    action_subresources: &["token"],
    ..DEFAULT
};

fn service_account_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Secrets", |o| json!(count(o, "/secrets")))]
}
