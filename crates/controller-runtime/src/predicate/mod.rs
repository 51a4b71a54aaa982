//! Predicates: filters that decide, per event, whether a handler sees it.
//!
//! A source calls every predicate of a watch before the handler; the event reaches the handler
//! only if all of them return `true`.

use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};

/// A filter on events. Every method defaults to `true` (let the event through).
pub trait Predicate<K>: Send + Sync {
    /// Whether a create event passes.
    fn create(&self, _event: &CreateEvent<K>) -> bool {
        true
    }
    /// Whether an update event passes.
    fn update(&self, _event: &UpdateEvent<K>) -> bool {
        true
    }
    /// Whether a delete event passes.
    fn delete(&self, _event: &DeleteEvent<K>) -> bool {
        true
    }
    /// Whether a generic event passes.
    fn generic(&self, _event: &GenericEvent<K>) -> bool {
        true
    }
}
