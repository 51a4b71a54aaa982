//! Every write other than apply (create, update, the three patch types) records an `Update`
//! entry for its manager: it takes the fields it added or changed (from whoever owned them:
//! an update is never refused for ownership) and drops the fields it removed from its own
//! entry (other managers keep theirs, as upstream: an applier still owns what an update
//! deleted, and gets it back on its next apply).

use serde_json::Value;

use super::Writer;
use super::managed::{ManagedFields, Operation};
use super::shape::Shape;
use super::walk;

/// Sets `new`'s `metadata.managedFields` for a write of `new` over `old` (`None` for a
/// create): `old`'s entries, updated for what changed.
pub fn record_update(old: Option<&Value>, new: &mut Value, shape: &Shape, w: &Writer<'_>) {
    let mut managed = old.map(ManagedFields::from_object).unwrap_or_default();
    let cmp = walk::compare(old, new, shape);
    let changed = cmp.changed();
    let mine = managed
        .find(w.manager, Operation::Update, w.subresource)
        .map(|e| e.fields.clone());
    for e in &mut managed.entries {
        if !e.is(w.manager, Operation::Update, w.subresource) {
            e.fields = e.fields.difference(&changed);
        }
    }
    if mine.is_some() || !changed.is_empty() {
        let fields = mine
            .unwrap_or_default()
            .recursive_difference(&cmp.removed)
            .union(&changed);
        managed.set(
            w.manager,
            Operation::Update,
            w.subresource,
            w.api_version,
            fields,
            w.now,
        );
    }
    managed.write(new);
}
