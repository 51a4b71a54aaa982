//! ResourceQuotas (their usage prints after AGE).

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::table::columns::*;

/// The ResourceQuota strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    columns_after_age: resource_quota_after_age,
    ..DEFAULT
};

fn resource_quota_after_age() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Request", |o| quota_usage(o, false)),
        ("Limit", |o| quota_usage(o, true)),
    ]
}
