//! ResourceQuotas (validated as upstream validates them; their usage prints after AGE).

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::table::columns::*;
use crate::validation;

/// The ResourceQuota strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    validate: Some(validation::quota::resource_quota),
    columns_after_age: resource_quota_after_age,
    ..DEFAULT
};

fn resource_quota_after_age() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Request", |o| quota_usage(o, false)),
        ("Limit", |o| quota_usage(o, true)),
    ]
}
