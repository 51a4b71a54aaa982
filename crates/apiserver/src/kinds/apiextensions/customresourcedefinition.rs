//! CustomResourceDefinitions (their status is the server's own).

use crate::kinds::{StatusStrategy, Strategy, strategy::DEFAULT, strategy::STATUS_META};

/// The CustomResourceDefinition strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    status: StatusStrategy::SpecAnd(STATUS_META),
    initial_status: None,
    ..DEFAULT
};
