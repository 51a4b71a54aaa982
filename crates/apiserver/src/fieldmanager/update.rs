//! Every write other than apply (create, update, the three patch types) records an `Update`
//! entry for its manager: it takes the fields it added or changed (from whoever owned them:
//! an update is never refused for ownership) and drops the fields it removed from its own
//! entry (other managers keep theirs, as upstream: an applier still owns what an update
//! deleted, and gets it back on its next apply).
//!
//! This runs on every write, so it works on the stored entries in place: an entry is decoded
//! only when the write touches its fields (or it is the writer's), and re-encoded only when it
//! changes.

use serde_json::Value;

use super::fieldpath::FieldSet;
use super::managed::{Entry, Operation, value_is, write_values};
use super::shape::Shape;
use super::walk;
use super::writer::Writer;

/// Sets `new`'s `metadata.managedFields` for a write of `new` over `old` (`None` for a
/// create): the entries `new` carries when it carries some (a client may edit them), else
/// `old`'s, updated for what changed.
pub fn record_update(old: Option<&Value>, new: &mut Value, shape: &Shape, w: &Writer<'_>) {
    let walk::Comparison { changed, removed } = walk::compare(old, new, shape);
    let mut entries = take_entries(new);
    if entries.is_empty() {
        entries = old
            .and_then(|o| o.pointer("/metadata/managedFields"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
    }
    let mut mine = None;
    let mut kept = Vec::with_capacity(entries.len() + 1);
    for v in entries {
        if value_is(&v, w.manager, Operation::Update, w.subresource) {
            mine = Entry::from_value(&v).map(|e| (v, e));
            continue;
        }
        let touched = v
            .get("fieldsV1")
            .is_some_and(|f| changed.intersects_fields_v1(f));
        if !touched {
            kept.push(v);
        } else if let Some(mut e) = Entry::from_value(&v) {
            e.fields = e.fields.difference(&changed);
            if !e.fields.is_empty() {
                kept.push(e.into_value());
            }
        }
    }
    let mut fields = match &mine {
        Some((_, e)) => e.fields.recursive_difference(&removed),
        None => FieldSet::new(),
    };
    fields.merge(changed);
    match mine {
        Some((raw, e)) if e.fields == fields && e.api_version == w.api_version => kept.push(raw),
        _ if fields.is_empty() => {}
        _ => kept.push(
            Entry {
                manager: w.manager.to_string(),
                operation: Operation::Update,
                api_version: w.api_version.to_string(),
                time: Some(w.now.to_string()),
                subresource: w.subresource.map(String::from),
                fields,
            }
            .into_value(),
        ),
    }
    write_values(new, kept);
}

/// The entries `obj` carries (taken out of it).
fn take_entries(obj: &mut Value) -> Vec<Value> {
    match obj
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove("managedFields"))
    {
        Some(Value::Array(list)) => list,
        _ => Vec::new(),
    }
}
