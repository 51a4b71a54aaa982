//! Server-side apply: merge the applied configuration into the live object, check ownership,
//! take the applier's fields, and remove the fields it stopped applying that nobody owns.

use serde_json::{Map, Value, json};

use super::fieldpath::{FieldSet, Path, PathElement, path_string};
use super::managed::{ManagedFields, Operation};
use super::shape::{ListKind, Shape, item_key};
use super::walk::{self, list_elements};
use super::writer::Writer;
use crate::error::ApiError;

/// Why an apply failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Fields the apply would change are owned by other managers (409 Conflict).
    #[error("{}", conflict_message(.0))]
    Conflicts(Vec<Conflict>),
    /// The configuration's lists do not fit their schema (422).
    #[error("{0}")]
    Shape(#[from] walk::WalkError),
}

/// The message the real server gives a failed apply: one conflict on one line, several
/// grouped by manager (managers sorted).
fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [c] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            c.manager, c.field
        );
    }
    let mut managers: Vec<&str> = conflicts.iter().map(|c| c.manager.as_str()).collect();
    managers.sort_unstable();
    managers.dedup();
    let mut lines = Vec::new();
    for m in managers {
        lines.push(format!("conflicts with {m}:"));
        for c in conflicts.iter().filter(|c| c.manager == m) {
            lines.push(format!("- {}", c.field));
        }
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        match &e {
            Error::Conflicts(list) => {
                let causes: Vec<Value> = list
                    .iter()
                    .map(|c| {
                        json!({
                            "type": "FieldManagerConflict",
                            "message": format!("conflict with {}", c.manager),
                            "field": c.field,
                        })
                    })
                    .collect();
                ApiError::new(409, "Conflict", e.to_string())
                    .with_details(json!({ "causes": causes }))
            }
            Error::Shape(_) => ApiError::new(
                422,
                "Invalid",
                format!("failed to create typed patch object: {e}"),
            ),
        }
    }
}

/// One conflict: the entry's label (as [`super::managed::Entry::label`]) and the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The other manager, as the message names it.
    pub manager: String,
    /// The field, as `.data.key`.
    pub field: String,
}

/// Applies `config` (already checked: an object of the right kind, no `managedFields`) to
/// `live` (the stored object; `None` when it does not exist yet). Answers the new object
/// with its `metadata.managedFields` set.
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    shape: &Shape,
    w: &Writer<'_>,
    force: bool,
) -> Result<Value, Error> {
    let config = without_nulls(config);
    let config_set = walk::config_set(&config, shape)?;
    let mut managed = live.map(ManagedFields::from_object).unwrap_or_default();
    let empty = Value::Object(Map::new());
    let base = live.unwrap_or(&empty);
    let mut merged = merge(base, &config, shape, &mut Vec::new());

    let changed = walk::compare(live, &merged, shape).changed;
    let mut clashes: Vec<(usize, FieldSet)> = Vec::new();
    for (i, e) in managed.entries.iter().enumerate() {
        if e.is(w.manager, Operation::Apply, w.subresource) {
            continue;
        }
        let clash = e.fields.intersection(&changed);
        if !clash.is_empty() {
            clashes.push((i, clash));
        }
    }
    if !force && !clashes.is_empty() {
        let allowed = live
            .filter(|_| w.manager == KUBECTL)
            .and_then(|l| upgraded_from_client_side(l, shape))
            .unwrap_or_default();
        let conflicts: Vec<Conflict> = clashes
            .iter()
            .flat_map(|(i, clash)| {
                let label = managed.entries[*i].label();
                clash
                    .difference(&allowed)
                    .paths()
                    .into_iter()
                    .map(move |p| Conflict {
                        manager: label.clone(),
                        field: path_string(&p),
                    })
            })
            .collect();
        if !conflicts.is_empty() {
            return Err(Error::Conflicts(conflicts));
        }
    }
    // Forced, or every conflict was kubectl taking over what its client-side apply set.
    for (i, clash) in clashes {
        let e = &mut managed.entries[i];
        e.fields = e.fields.difference(&clash);
    }

    let previous = managed
        .find(w.manager, Operation::Apply, w.subresource)
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    let mut owned = config_set.clone();
    for e in &managed.entries {
        if !e.is(w.manager, Operation::Apply, w.subresource) {
            owned = owned.union(&e.fields);
        }
    }
    let orphans = protect_metadata(previous.orphaned_by(&owned), &previous);
    remove(
        &mut merged,
        &orphans,
        shape,
        &mut Vec::new(),
        &mut Vec::new(),
    );

    managed.set(
        w.manager,
        Operation::Apply,
        w.subresource,
        w.api_version,
        config_set,
        w.now,
    );
    managed.write(&mut merged);
    Ok(merged)
}

/// The manager `kubectl apply --server-side` uses: the one allowed to take over, without
/// conflicts, the fields its client-side apply set.
const KUBECTL: &str = "kubectl";

/// The annotation `kubectl apply` (client side) keeps its last configuration in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The fields `kubectl apply --server-side` may take over without conflicts, as the real
/// server's last-applied manager allows them: those of the object's client-side
/// last-applied configuration that still hold the values it set.
fn upgraded_from_client_side(live: &Value, shape: &Shape) -> Option<FieldSet> {
    let text = live
        .pointer("/metadata/annotations")?
        .get(LAST_APPLIED)?
        .as_str()?;
    let last: Value = serde_json::from_str(text).ok()?;
    let set = walk::config_set(&last, shape).ok()?;
    let cmp = walk::compare(Some(&last), live, shape);
    Some(set.difference(&cmp.changed).difference(&cmp.removed))
}

/// The root's `metadata` is never removed: when nothing under it is owned any more, only what
/// the applier had under it goes.
fn protect_metadata(mut orphans: FieldSet, previous: &FieldSet) -> FieldSet {
    let meta = PathElement::Field("metadata".into());
    if orphans.contains(std::slice::from_ref(&meta)) {
        orphans.remove_child(&meta);
        if let Some(under) = previous.child(&meta) {
            for p in under.orphaned_by(&FieldSet::new()).paths() {
                let mut full = vec![meta.clone()];
                full.extend(p);
                orphans.insert(&full);
            }
        }
    }
    orphans
}

/// The configuration without `null` fields (an apply that names a field as `null` sets
/// nothing).
fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// Merges `config` into `live`: maps field by field, map lists item by item (by key, new
/// items appended), sets by value, everything else (scalars, atomic lists and maps) replaced.
pub fn merge(live: &Value, config: &Value, shape: &Shape, names: &mut Vec<String>) -> Value {
    match (live, config) {
        (Value::Object(l), Value::Object(c)) if names.is_empty() || !shape.atomic_map(names) => {
            let mut out = l.clone();
            for (k, cv) in c {
                names.push(k.clone());
                let v = match l.get(k) {
                    Some(lv) => merge(lv, cv, shape, names),
                    None => cv.clone(),
                };
                names.pop();
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        (Value::Array(l), Value::Array(c)) => match shape.list(names) {
            ListKind::Atomic => config.clone(),
            ListKind::Set => {
                let mut out = l.clone();
                out.extend(c.iter().filter(|v| !l.contains(v)).cloned());
                Value::Array(out)
            }
            ListKind::Map(keys) => {
                let mut out = l.clone();
                for item in c {
                    let k = item_key(item, &keys);
                    match out
                        .iter_mut()
                        .find(|x| k.is_some() && item_key(x, &keys) == k)
                    {
                        Some(existing) => *existing = merge(existing, item, shape, names),
                        None => out.push(item.clone()),
                    }
                }
                Value::Array(out)
            }
        },
        _ => config.clone(),
    }
}

/// Removes the members of `set` from `v` (fields, list items), recursing into the rest.
fn remove(v: &mut Value, set: &FieldSet, shape: &Shape, names: &mut Vec<String>, path: &mut Path) {
    match v {
        Value::Object(map) => {
            for (e, member, under) in set.children() {
                let PathElement::Field(name) = e else {
                    continue;
                };
                if member {
                    map.remove(name);
                } else if let Some(child) = map.get_mut(name) {
                    names.push(name.clone());
                    path.push(e.clone());
                    remove(child, under, shape, names, path);
                    path.pop();
                    names.pop();
                }
            }
        }
        Value::Array(items) => {
            let kind = shape.list(names);
            let Ok(ids) = list_elements(items, &kind, path) else {
                return;
            };
            let ids: Vec<PathElement> = ids.into_iter().map(|(e, _)| e).collect();
            let mut drop = vec![false; items.len()];
            for (i, e) in ids.iter().enumerate() {
                let Some((_, member, under)) = set.children().find(|(x, _, _)| *x == e) else {
                    continue;
                };
                if member {
                    drop[i] = true;
                } else {
                    path.push(e.clone());
                    remove(&mut items[i], under, shape, names, path);
                    path.pop();
                }
            }
            let mut i = 0;
            items.retain(|_| {
                i += 1;
                !drop[i - 1]
            });
        }
        _ => {}
    }
}
