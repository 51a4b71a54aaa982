//! MutatingWebhookConfigurations.

use super::webhook_columns;
use crate::kinds::{Strategy, strategy::DEFAULT};

/// The MutatingWebhookConfiguration strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    columns: webhook_columns,
    ..DEFAULT
};
