//! ValidatingWebhookConfigurations.

use super::webhook_columns;
use crate::kinds::{Strategy, strategy::DEFAULT};

/// The ValidatingWebhookConfiguration strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    columns: webhook_columns,
    ..DEFAULT
};
