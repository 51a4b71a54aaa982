//! FlowSchemas: a status write keeps all metadata.

use crate::kinds::{StatusStrategy, Strategy, strategy::DEFAULT};

/// The FlowSchema strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    status: StatusStrategy::SpecAndMetadata,
    ..DEFAULT
};
