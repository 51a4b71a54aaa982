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
    /// Added or modified: scalars (and atomic values) whose value differs, fields, items and
    /// maps present only in the new version. What a writer takes ownership of.
    pub changed: FieldSet,
    /// Fields and items present only in the old version.
    pub removed: FieldSet,
}

/// Compares two versions of an object (`None`: it did not exist). The sets are built bottom
/// up, each path element made once.
pub fn compare(old: Option<&Value>, new: &Value, shape: &Shape) -> Comparison {
    let mut c = Cmp {
        shape,
        names: Vec::new(),
    };
    let empty = Value::Object(Map::new());
    let d = c.value(Some(old.unwrap_or(&empty)), Some(new));
    Comparison {
        changed: d.changed,
        removed: d.removed,
    }
}

/// The comparison of one subtree, relative to it, and whether the node itself is a changed or
/// removed member.
#[derive(Default)]
struct Diff {
    changed: FieldSet,
    removed: FieldSet,
    self_changed: bool,
    self_removed: bool,
}

impl Diff {
    /// The diff of a value compared whole (a scalar, an atomic list or map).
    fn leaf<T: PartialEq + ?Sized>(old: Option<&T>, new: Option<&T>) -> Diff {
        Diff {
            self_changed: match (old, new) {
                (None, Some(_)) => true,
                (Some(a), Some(b)) => a != b,
                _ => false,
            },
            self_removed: old.is_some() && new.is_none(),
            ..Diff::default()
        }
    }

    fn attach(&mut self, e: PathElement, child: Diff) {
        let changed = child.self_changed || !child.changed.is_empty();
        let removed = child.self_removed || !child.removed.is_empty();
        match (changed, removed) {
            (true, true) => {
                self.changed
                    .attach(e.clone(), child.self_changed, child.changed);
                self.removed.attach(e, child.self_removed, child.removed);
            }
            (true, false) => self.changed.attach(e, child.self_changed, child.changed),
            (false, true) => self.removed.attach(e, child.self_removed, child.removed),
            (false, false) => {}
        }
    }
}

struct Cmp<'s, 'v> {
    shape: &'s Shape,
    names: Vec<&'v str>,
}

impl<'v> Cmp<'_, 'v> {
    fn value(&mut self, old: Option<&'v Value>, new: Option<&'v Value>) -> Diff {
        let old = old.filter(|v| !v.is_null());
        let new = new.filter(|v| !v.is_null());
        match (old, new) {
            (None, None) => Diff::default(),
            (Some(Value::Object(a)), Some(Value::Object(b))) => self.maps(Some(a), Some(b)),
            (None, Some(Value::Object(b))) => self.maps(None, Some(b)),
            (Some(Value::Object(a)), None) => self.maps(Some(a), None),
            (Some(Value::Array(a)), Some(Value::Array(b))) => self.lists(Some(a), Some(b)),
            (None, Some(Value::Array(b))) => self.lists(None, Some(b)),
            (Some(Value::Array(a)), None) => self.lists(Some(a), None),
            _ => Diff::leaf(old, new),
        }
    }

    fn maps(
        &mut self,
        old: Option<&'v Map<String, Value>>,
        new: Option<&'v Map<String, Value>>,
    ) -> Diff {
        let at_root = self.names.is_empty();
        if !at_root && self.shape.atomic_map(&self.names) {
            return Diff::leaf(old, new);
        }
        let mut d = Diff::default();
        for (k, v) in new.into_iter().flatten() {
            self.names.push(k);
            if !unowned(&self.names) {
                let child = self.value(old.and_then(|a| a.get(k)), Some(v));
                d.attach(PathElement::Field(k.clone()), child);
            }
            self.names.pop();
        }
        if let Some(a) = old {
            let in_new = |k: &String| new.is_some_and(|b| b.contains_key(k));
            for (k, v) in a.iter().filter(|(k, _)| !in_new(k)) {
                self.names.push(k);
                if !unowned(&self.names) {
                    let child = self.value(Some(v), None);
                    d.attach(PathElement::Field(k.clone()), child);
                }
                self.names.pop();
            }
        }
        // A map that appears (or goes) is itself added (removed), except the root's metadata
        // and, for built-in kinds, `spec` and `status`, which every object of the kind has.
        let structural = self.names == ["metadata"]
            || (matches!(self.shape, Shape::Builtin { .. })
                && (self.names == ["spec"] || self.names == ["status"]));
        if !at_root && !structural {
            d.self_changed = old.is_none() && new.is_some();
            d.self_removed = old.is_some() && new.is_none();
        }
        d
    }

    fn lists(&mut self, old: Option<&'v Vec<Value>>, new: Option<&'v Vec<Value>>) -> Diff {
        let kind = self.shape.list(&self.names);
        let a: &'v [Value] = old.map(Vec::as_slice).unwrap_or(&[]);
        let b: &'v [Value] = new.map(Vec::as_slice).unwrap_or(&[]);
        let items = match kind {
            ListKind::Atomic => None,
            _ => lenient_elements(a, &kind, &[]).zip(lenient_elements(b, &kind, &[])),
        };
        let Some((a_items, b_items)) = items else {
            return Diff::leaf(old, new);
        };
        let keyed = matches!(kind, ListKind::Map(_));
        let a_map: BTreeMap<PathElement, &'v Value> = a_items.into_iter().collect();
        let mut d = Diff::default();
        let mut seen = std::collections::HashSet::new();
        for (e, item) in b_items {
            if !seen.insert(e.clone()) {
                continue;
            }
            let before = a_map.get(&e).copied();
            let child = match (before, keyed) {
                (None, true) => {
                    let mut c = self.value(None, Some(item));
                    c.self_changed = true;
                    c
                }
                (None, false) => Diff {
                    self_changed: true,
                    ..Diff::default()
                },
                (Some(x), true) => {
                    let mut c = self.value(Some(x), Some(item));
                    c.self_changed = false;
                    c.self_removed = false;
                    c
                }
                (Some(_), false) => Diff::default(),
            };
            d.attach(e, child);
        }
        for (e, _) in a_map.into_iter().filter(|(e, _)| !seen.contains(e)) {
            d.attach(
                e,
                Diff {
                    self_removed: true,
                    ..Diff::default()
                },
            );
        }
        d
    }
}
