//! Field sets read off objects: the set an applied configuration sets, and the comparison
//! of two versions of an object (what an update added, modified and removed).
//!
//! Both skip what no manager owns: `apiVersion`, `kind` and the server's metadata (`name`,
//! `namespace`, `uid`, `resourceVersion`, `generation`, `creationTimestamp`, `selfLink`,
//! `managedFields`), as the real server strips them.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::fieldpath::{FieldSet, Path, PathElement};
use super::shape::{ListKind, Shape, item_key};

/// The metadata fields owned by the server, never by a manager.
const SERVER_METADATA: [&str; 10] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "selfLink",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// Whether the field at `names` is never owned.
pub(crate) fn unowned<S: AsRef<str>>(names: &[S]) -> bool {
    match names {
        [top] => matches!(top.as_ref(), "apiVersion" | "kind"),
        [meta, f] => meta.as_ref() == "metadata" && SERVER_METADATA.contains(&f.as_ref()),
        _ => false,
    }
}

/// Why an object's lists cannot be read as their schema says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WalkError {
    /// A map-list item without one of its key fields.
    #[error(
        "{path}: element {index}: associative list with keys has an element that omits key field {key:?} (and doesn't have default value)"
    )]
    MissingKey {
        /// The list, as `.spec.containers`.
        path: String,
        /// The item's position.
        index: usize,
        /// The first key field it lacks.
        key: String,
    },
    /// Two items of a map list or set with one identity.
    #[error("{path}: duplicate entries for key {element}")]
    Duplicate {
        /// The list.
        path: String,
        /// The repeated identity, as `[name="a"]`.
        element: String,
    },
}

/// The identities of a list's items for its kind; `Err` on a missing key or a duplicate.
pub(crate) fn list_elements<'v>(
    list: &'v [Value],
    kind: &ListKind,
    path: &[PathElement],
) -> Result<Vec<(PathElement, &'v Value)>, WalkError> {
    let mut out = Vec::with_capacity(list.len());
    let mut seen = std::collections::HashSet::new();
    for (i, item) in list.iter().enumerate() {
        let e = match kind {
            ListKind::Atomic => PathElement::Index(i),
            ListKind::Set => PathElement::value(item),
            ListKind::Map(keys) => match item_key(item, keys) {
                Some(k) => PathElement::key(&k),
                None => {
                    let missing = keys
                        .iter()
                        .find(|k| item.get(k.as_str()).is_none_or(Value::is_null))
                        .cloned()
                        .unwrap_or_default();
                    return Err(WalkError::MissingKey {
                        path: super::fieldpath::path_string(path),
                        index: i,
                        key: missing,
                    });
                }
            },
        };
        if !seen.insert(e.clone()) {
            return Err(WalkError::Duplicate {
                path: super::fieldpath::path_string(path),
                element: e.to_string(),
            });
        }
        out.push((e, item));
    }
    Ok(out)
}

/// Identities of a stored list's items, tolerating what a non-apply write let in: a list
/// whose items cannot all be identified is treated as atomic.
fn lenient_elements<'v>(
    list: &'v [Value],
    kind: &ListKind,
    path: &[PathElement],
) -> Option<Vec<(PathElement, &'v Value)>> {
    list_elements(list, kind, path).ok()
}

struct Walker<'s> {
    shape: &'s Shape,
    names: Vec<String>,
    path: Path,
}

/// The set of fields an applied configuration sets: its scalars, its list items (map and set
/// lists) and its atomic lists and maps. Maps themselves are not members.
pub fn config_set(config: &Value, shape: &Shape) -> Result<FieldSet, WalkError> {
    let mut w = Walker {
        shape,
        names: Vec::new(),
        path: Vec::new(),
    };
    let mut set = FieldSet::new();
    config_into(&mut w, config, &mut set)?;
    Ok(set)
}

fn config_into(w: &mut Walker, v: &Value, set: &mut FieldSet) -> Result<(), WalkError> {
    match v {
        Value::Object(map) => {
            if !w.path.is_empty() && w.shape.atomic_map(&w.names) {
                set.insert(&w.path);
                return Ok(());
            }
            for (k, child) in map {
                w.names.push(k.clone());
                if !unowned(&w.names) && !child.is_null() {
                    w.path.push(PathElement::Field(k.clone()));
                    config_into(w, child, set)?;
                    w.path.pop();
                }
                w.names.pop();
            }
        }
        Value::Array(list) => {
            let kind = w.shape.list(&w.names);
            if kind == ListKind::Atomic {
                set.insert(&w.path);
                return Ok(());
            }
            for (e, item) in list_elements(list, &kind, &w.path)? {
                w.path.push(e);
                set.insert(&w.path);
                if matches!(kind, ListKind::Map(_)) {
                    config_into(w, item, set)?;
                }
                w.path.pop();
            }
        }
        _ => set.insert(&w.path),
    }
    Ok(())
}

/// What changed from one version of an object to the next.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Fields, items and maps present only in the new version.
    pub added: FieldSet,
    /// Scalars (and atomic values) present in both with different values.
    pub modified: FieldSet,
    /// Fields and items present only in the old version.
    pub removed: FieldSet,
}

impl Comparison {
    /// `added ∪ modified`: what a writer takes ownership of.
    pub fn changed(&self) -> FieldSet {
        self.added.union(&self.modified)
    }
}

/// Compares two versions of an object (`None`: it did not exist).
pub fn compare(old: Option<&Value>, new: &Value, shape: &Shape) -> Comparison {
    let mut w = Walker {
        shape,
        names: Vec::new(),
        path: Vec::new(),
    };
    let mut c = Comparison::default();
    let empty = Value::Object(Map::new());
    compare_into(&mut w, Some(old.unwrap_or(&empty)), Some(new), &mut c);
    c
}

fn whole(w: &Walker, old: Option<&Value>, new: Option<&Value>, c: &mut Comparison) {
    match (old, new) {
        (None, Some(_)) => c.added.insert(&w.path),
        (Some(_), None) => c.removed.insert(&w.path),
        (Some(a), Some(b)) if a != b => c.modified.insert(&w.path),
        _ => {}
    }
}

fn compare_into(w: &mut Walker, old: Option<&Value>, new: Option<&Value>, c: &mut Comparison) {
    let old = old.filter(|v| !v.is_null());
    let new = new.filter(|v| !v.is_null());
    match (old, new) {
        (None, None) => {}
        (Some(Value::Object(a)), Some(Value::Object(b))) => compare_maps(w, Some(a), Some(b), c),
        (None, Some(Value::Object(b))) => compare_maps(w, None, Some(b), c),
        (Some(Value::Object(a)), None) => compare_maps(w, Some(a), None, c),
        (Some(Value::Array(a)), Some(Value::Array(b))) => compare_lists(w, Some(a), Some(b), c),
        (None, Some(Value::Array(b))) => compare_lists(w, None, Some(b), c),
        (Some(Value::Array(a)), None) => compare_lists(w, Some(a), None, c),
        _ => whole(w, old, new, c),
    }
}

fn compare_maps(
    w: &mut Walker,
    old: Option<&Map<String, Value>>,
    new: Option<&Map<String, Value>>,
    c: &mut Comparison,
) {
    let at_root = w.path.is_empty();
    if !at_root && w.shape.atomic_map(&w.names) {
        let (a, b) = (
            old.cloned().map(Value::Object),
            new.cloned().map(Value::Object),
        );
        whole(w, a.as_ref(), b.as_ref(), c);
        return;
    }
    let empty = Map::new();
    let (a, b) = (old.unwrap_or(&empty), new.unwrap_or(&empty));
    let mut keys: Vec<&String> = b.keys().collect();
    keys.extend(a.keys().filter(|k| !b.contains_key(*k)));
    for k in keys {
        w.names.push(k.clone());
        if !unowned(&w.names) {
            w.path.push(PathElement::Field(k.clone()));
            compare_into(w, a.get(k), b.get(k), c);
            w.path.pop();
        }
        w.names.pop();
    }
    // A map that appears (or goes) is itself added (removed), except the root's metadata
    // and, for built-in kinds, `spec` and `status`, which every object of the kind has.
    let structural = w.names == ["metadata"]
        || (matches!(w.shape, Shape::Builtin { .. })
            && (w.names == ["spec"] || w.names == ["status"]));
    if !at_root && !structural {
        match (old, new) {
            (None, Some(_)) => c.added.insert(&w.path),
            (Some(_), None) => c.removed.insert(&w.path),
            _ => {}
        }
    }
}

fn compare_lists(
    w: &mut Walker,
    old: Option<&Vec<Value>>,
    new: Option<&Vec<Value>>,
    c: &mut Comparison,
) {
    let kind = w.shape.list(&w.names);
    let empty = Vec::new();
    let (a, b) = (old.unwrap_or(&empty), new.unwrap_or(&empty));
    let items = match kind {
        ListKind::Atomic => None,
        _ => lenient_elements(a, &kind, &w.path).zip(lenient_elements(b, &kind, &w.path)),
    };
    let Some((a_items, b_items)) = items else {
        let (x, y) = (
            old.cloned().map(Value::Array),
            new.cloned().map(Value::Array),
        );
        whole(w, x.as_ref(), y.as_ref(), c);
        return;
    };
    let a_map: BTreeMap<PathElement, &Value> = a_items.into_iter().collect();
    let b_map: BTreeMap<PathElement, &Value> = b_items.into_iter().collect();
    for (e, item) in &b_map {
        w.path.push(e.clone());
        match a_map.get(e) {
            None => {
                c.added.insert(&w.path);
                if matches!(kind, ListKind::Map(_)) {
                    compare_into(w, None, Some(item), c);
                }
            }
            Some(before) if matches!(kind, ListKind::Map(_)) => {
                compare_into(w, Some(before), Some(item), c);
            }
            Some(_) => {}
        }
        w.path.pop();
    }
    for e in a_map.keys().filter(|e| !b_map.contains_key(*e)) {
        w.path.push(e.clone());
        c.removed.insert(&w.path);
        w.path.pop();
    }
}
