//! Field paths and sets of them, and their `FieldsV1` encoding.
//!
//! A [`FieldSet`] is a tree: each node is reached by a [`PathElement`] and may itself be a
//! member of the set (it is owned) while also having owned descendants. `FieldsV1` writes a
//! node as an object keyed by its children's encodings, with `".": {}` when the node is a
//! member that also has children, and `{}` for a member leaf.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

/// One step of a path into an object. The derived order (fields, keys, values, indexes, each
/// by its text) is the order `FieldsV1` and conflict messages list them in.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    /// A field of an object (`f:name`).
    Field(String),
    /// An item of a map list, by its key fields: the canonical JSON object of the key
    /// values, names sorted (`k:{"name":"app"}`).
    Key(String),
    /// An item of a set list, by its JSON value (`v:"a"`).
    Value(String),
    /// An item of a list by position (`i:0`), for lists with no better identity.
    Index(usize),
}

impl PathElement {
    /// The element of a map-list item: its key fields, in name order.
    pub fn key(fields: &BTreeMap<String, Value>) -> PathElement {
        let map: Map<String, Value> = fields.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        PathElement::Key(Value::Object(map).to_string())
    }

    /// The element of a set-list item.
    pub fn value(v: &Value) -> PathElement {
        PathElement::Value(v.to_string())
    }

    /// The `FieldsV1` key of this element.
    pub fn encode(&self) -> String {
        let (prefix, text) = match self {
            PathElement::Field(f) => ("f:", f.as_str()),
            PathElement::Key(k) => ("k:", k.as_str()),
            PathElement::Value(v) => ("v:", v.as_str()),
            PathElement::Index(i) => return format!("i:{i}"),
        };
        // Every stored write encodes each of its fields: no formatting machinery for these.
        let mut out = String::with_capacity(prefix.len() + text.len());
        out.push_str(prefix);
        out.push_str(text);
        out
    }

    /// Parses a `FieldsV1` key; `None` when it is none of the four forms.
    pub fn decode(s: &str) -> Option<PathElement> {
        let (kind, rest) = s.split_at_checked(2)?;
        match kind {
            "f:" => Some(PathElement::Field(rest.to_string())),
            "k:" => {
                let v: Value = serde_json::from_str(rest).ok()?;
                let map = v.as_object()?;
                let sorted: BTreeMap<String, Value> =
                    map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                Some(PathElement::key(&sorted))
            }
            "v:" => {
                let v: Value = serde_json::from_str(rest).ok()?;
                Some(PathElement::value(&v))
            }
            "i:" => rest.parse().ok().map(PathElement::Index),
            _ => None,
        }
    }
}

impl fmt::Display for PathElement {
    /// As structured-merge-diff prints a path element: `.name`, `[name="app"]`, `[="a"]`, `[0]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(k) => {
                let parts: Vec<String> = match serde_json::from_str::<Value>(k) {
                    Ok(Value::Object(m)) => m.iter().map(|(k, v)| format!("{k}={v}")).collect(),
                    _ => vec![k.clone()],
                };
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(v) => write!(f, "[={v}]"),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path from the object's root.
pub type Path = Vec<PathElement>;

/// Prints a path as conflict messages do: `.spec.containers[name="app"].image`.
pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// Why a `FieldsV1` value could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid FieldsV1 at {at:?}: {why}")]
pub struct DecodeError {
    /// The key (or `""` for the root) where decoding failed.
    pub at: String,
    /// What was wrong.
    pub why: &'static str,
}

/// A set of field paths (a tree; see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    children: BTreeMap<PathElement, Node>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Node {
    member: bool,
    set: FieldSet,
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> FieldSet {
        FieldSet::default()
    }

    /// Whether the set has no member.
    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    /// Adds a path (its ancestors become nodes, not members).
    pub fn insert(&mut self, path: &[PathElement]) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        let node = self.children.entry(first.clone()).or_default();
        if rest.is_empty() {
            node.member = true;
        } else {
            node.set.insert(rest);
        }
    }

    /// Whether `path` is a member.
    pub fn contains(&self, path: &[PathElement]) -> bool {
        let Some((first, rest)) = path.split_first() else {
            return false;
        };
        match self.children.get(first) {
            Some(n) if rest.is_empty() => n.member,
            Some(n) => n.set.contains(rest),
            None => false,
        }
    }

    /// Whether a member is at `path` or below it.
    pub fn has_at_or_below(&self, path: &[PathElement]) -> bool {
        let Some((first, rest)) = path.split_first() else {
            return !self.is_empty();
        };
        match self.children.get(first) {
            Some(n) if rest.is_empty() => n.member || !n.set.is_empty(),
            Some(n) => n.set.has_at_or_below(rest),
            None => false,
        }
    }

    /// Every member, in order.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for (e, n) in &self.children {
            prefix.push(e.clone());
            if n.member {
                out.push(prefix.clone());
            }
            n.set.collect(prefix, out);
            prefix.pop();
        }
    }

    /// The members of either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        for (e, n) in &other.children {
            let mine = out.children.entry(e.clone()).or_default();
            mine.member |= n.member;
            mine.set = mine.set.union(&n.set);
        }
        out
    }

    /// Adds the members of `other` (the union, in place, reusing `other`'s nodes).
    pub fn merge(&mut self, other: FieldSet) {
        for (e, n) in other.children {
            match self.children.entry(e) {
                std::collections::btree_map::Entry::Vacant(slot) => {
                    slot.insert(n);
                }
                std::collections::btree_map::Entry::Occupied(mut slot) => {
                    let mine = slot.get_mut();
                    mine.member |= n.member;
                    mine.set.merge(n.set);
                }
            }
        }
    }

    /// The members of `self` that are not members of `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        for (e, n) in &self.children {
            let (member, set) = match other.children.get(e) {
                Some(o) => (n.member && !o.member, n.set.difference(&o.set)),
                None => (n.member, n.set.clone()),
            };
            if member || !set.is_empty() {
                out.children.insert(e.clone(), Node { member, set });
            }
        }
        out
    }

    /// `self` without the members of `other` and everything under them.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        for (e, n) in &self.children {
            let node = match other.children.get(e) {
                Some(o) if o.member => continue,
                Some(o) => Node {
                    member: n.member,
                    set: n.set.recursive_difference(&o.set),
                },
                None => n.clone(),
            };
            if node.member || !node.set.is_empty() {
                out.children.insert(e.clone(), node);
            }
        }
        out
    }

    /// The members of both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        for (e, n) in &self.children {
            if let Some(o) = other.children.get(e) {
                let member = n.member && o.member;
                let set = n.set.intersection(&o.set);
                if member || !set.is_empty() {
                    out.children.insert(e.clone(), Node { member, set });
                }
            }
        }
        out
    }

    /// What a previous owner's set leaves behind once `owned` (everything still owned) is
    /// kept: members of `self` with no member of `owned` at or below them, plus (as
    /// structured-merge-diff treats named fields) fields of `self` that only had descendants,
    /// when nothing under them is owned any more.
    pub fn orphaned_by(&self, owned: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        for (e, n) in &self.children {
            let node = match owned.children.get(e) {
                None if n.member || matches!(e, PathElement::Field(_)) => Node {
                    member: true,
                    set: FieldSet::new(),
                },
                None => Node {
                    member: false,
                    set: n.set.orphaned_by(&FieldSet::new()),
                },
                Some(o) => Node {
                    member: false,
                    set: n.set.orphaned_by(&o.set),
                },
            };
            if node.member || !node.set.is_empty() {
                out.children.insert(e.clone(), node);
            }
        }
        out
    }

    /// Visits the direct children: element, whether it is a member, its subtree.
    pub fn children(&self) -> impl Iterator<Item = (&PathElement, bool, &FieldSet)> {
        self.children.iter().map(|(e, n)| (e, n.member, &n.set))
    }

    /// The subtree under one element, if any.
    pub fn child(&self, e: &PathElement) -> Option<&FieldSet> {
        self.children.get(e).map(|n| &n.set)
    }

    /// Puts `set` under element `e` (a member when `member`), replacing what was there.
    pub fn attach(&mut self, e: PathElement, member: bool, set: FieldSet) {
        self.children.insert(e, Node { member, set });
    }

    /// Removes an element and everything under it.
    pub fn remove_child(&mut self, e: &PathElement) {
        self.children.remove(e);
    }

    /// Whether a stored `FieldsV1` value shares a member with this set, read in place
    /// (nothing decoded).
    pub fn intersects_fields_v1(&self, raw: &Value) -> bool {
        raw.as_object().is_some_and(|m| self.intersects_map(m))
    }

    fn intersects_map(&self, raw: &Map<String, Value>) -> bool {
        self.children.iter().any(|(e, n)| {
            let Some(Value::Object(inner)) = raw.get(&e.encode()) else {
                return false;
            };
            let raw_member = inner.is_empty() || inner.contains_key(".");
            (n.member && raw_member) || n.set.intersects_map(inner)
        })
    }

    /// The `FieldsV1` form: `{"f:data": {".": {}, "f:key": {}}}`.
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.fields_v1_map(false))
    }

    /// The `FieldsV1` object of a node (a member when `member`): `"."` first when it is a
    /// member with children, then the children in order. Each map is built at its final size.
    fn fields_v1_map(&self, member: bool) -> Map<String, Value> {
        let dot = member && !self.children.is_empty();
        let mut map = Map::with_capacity(self.children.len() + usize::from(dot));
        if dot {
            map.insert(".".into(), Value::Object(Map::new()));
        }
        for (e, n) in &self.children {
            map.insert(e.encode(), Value::Object(n.set.fields_v1_map(n.member)));
        }
        map
    }

    /// Reads a `FieldsV1` value.
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, DecodeError> {
        let Value::Object(map) = v else {
            return Err(DecodeError {
                at: String::new(),
                why: "not an object",
            });
        };
        let mut out = FieldSet::new();
        for (k, child) in map {
            if k == "." {
                continue;
            }
            let e = PathElement::decode(k).ok_or_else(|| DecodeError {
                at: k.clone(),
                why: "unknown key form",
            })?;
            let Value::Object(inner) = child else {
                return Err(DecodeError {
                    at: k.clone(),
                    why: "not an object",
                });
            };
            let member = inner.is_empty() || inner.contains_key(".");
            let set = FieldSet::from_fields_v1(child).map_err(|mut err| {
                err.at = format!("{k}/{}", err.at);
                err
            })?;
            out.children.insert(e, Node { member, set });
        }
        Ok(out)
    }
}
