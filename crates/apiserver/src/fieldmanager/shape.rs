//! How the lists and maps of a kind merge: what structured-merge-diff reads from the OpenAPI
//! schema (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`).
//!
//! Built-in kinds take their list keys from the strategic-merge-patch table
//! ([`crate::patch::MergeKeys`]), with the keys server-side apply uses where they differ
//! (container and service ports are keyed by port *and* protocol). Custom resources read their
//! CRD version's `openAPIV3Schema`. Lists with no declared type are atomic, as upstream.

use std::sync::Arc;

use serde_json::Value;

use crate::patch::MergeKeys;

/// How one list merges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListKind {
    /// Replaced whole; owned as one field.
    Atomic,
    /// A set of scalars: items are owned one by one (`v:`).
    Set,
    /// Items identified by these key fields (`k:`).
    Map(Vec<String>),
}

/// The merge shape of one kind.
#[derive(Clone, Debug)]
pub enum Shape {
    /// A built-in kind.
    Builtin {
        /// Its strategic-merge-patch table.
        keys: MergeKeys,
        /// Whether `spec.selector` is an atomic `LabelSelector` (workloads).
        atomic_selector: bool,
    },
    /// A custom resource: the `openAPIV3Schema` at this JSON pointer of the document (the
    /// CRD object as stored, shared, not copied).
    Schema(Arc<Value>, String),
    /// No schema: every list atomic, every map merged by key.
    Untyped,
}

impl Shape {
    /// The shape of a built-in kind.
    pub fn builtin(group: &str, kind: &str) -> Shape {
        let atomic_selector = matches!(
            (group, kind),
            (
                "apps",
                "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet"
            ) | ("batch", "Job")
        );
        Shape::Builtin {
            keys: MergeKeys::builtin(group, kind),
            atomic_selector,
        }
    }

    /// The shape of a custom resource of version `version`, from its CRD object; untyped
    /// when the CRD has no schema for it.
    pub fn from_crd(crd: Arc<Value>, version: &str) -> Shape {
        let index = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .and_then(|vs| {
                vs.iter()
                    .position(|v| v.get("name").and_then(Value::as_str) == Some(version))
            });
        match index {
            Some(i) => Shape::Schema(crd, format!("/spec/versions/{i}/schema/openAPIV3Schema")),
            None => Shape::Untyped,
        }
    }

    /// How the list at `path` (field names from the root, list items skipped) merges.
    pub fn list<S: AsRef<str>>(&self, path: &[S]) -> ListKind {
        if self.object_meta_of_custom(path) {
            // A custom resource's metadata is ObjectMeta whatever its schema says (mostly
            // `metadata: {type: object}`): finalizers are a set, owner references a map
            // keyed by uid, as upstream types a CRD's root metadata.
            return Shape::builtin("", "ConfigMap").list(path);
        }
        match self {
            Shape::Builtin { keys, .. } => {
                let path: Vec<&str> = path.iter().map(AsRef::as_ref).collect();
                let path = path.as_slice();
                if !keys.is_merged_list(path) {
                    return ListKind::Atomic;
                }
                match keys.merge_key(path) {
                    None => ListKind::Set,
                    Some("containerPort") => {
                        ListKind::Map(vec!["containerPort".into(), "protocol".into()])
                    }
                    Some("port") => ListKind::Map(vec!["port".into(), "protocol".into()]),
                    Some(k) => ListKind::Map(vec![k.to_string()]),
                }
            }
            Shape::Schema(doc, pointer) => {
                let Some(node) = doc.pointer(pointer).and_then(|root| schema_at(root, path)) else {
                    return ListKind::Atomic;
                };
                match node.get("x-kubernetes-list-type").and_then(Value::as_str) {
                    Some("set") => ListKind::Set,
                    Some("map") => {
                        let keys: Vec<String> = node
                            .get("x-kubernetes-list-map-keys")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .filter_map(|k| k.as_str().map(String::from))
                            .collect();
                        if keys.is_empty() {
                            ListKind::Atomic
                        } else {
                            ListKind::Map(keys)
                        }
                    }
                    _ => ListKind::Atomic,
                }
            }
            Shape::Untyped => ListKind::Atomic,
        }
    }

    /// Whether `path` is under the root `metadata` of a custom (or untyped) resource.
    fn object_meta_of_custom<S: AsRef<str>>(&self, path: &[S]) -> bool {
        !matches!(self, Shape::Builtin { .. })
            && path.first().is_some_and(|p| p.as_ref() == "metadata")
    }

    /// Whether the object at `path` is atomic (owned and replaced as one field).
    pub fn atomic_map<S: AsRef<str>>(&self, path: &[S]) -> bool {
        if self.object_meta_of_custom(path) {
            return false;
        }
        match self {
            Shape::Builtin {
                atomic_selector, ..
            } => {
                *atomic_selector
                    && path.len() == 2
                    && path[0].as_ref() == "spec"
                    && path[1].as_ref() == "selector"
            }
            Shape::Schema(doc, pointer) => doc
                .pointer(pointer)
                .and_then(|root| schema_at(root, path))
                .is_some_and(|n| {
                    n.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic")
                }),
            Shape::Untyped => false,
        }
    }
}

/// The schema node at `path`, stepping through `items` of arrays on the way.
fn schema_at<'a, S: AsRef<str>>(root: &'a Value, path: &[S]) -> Option<&'a Value> {
    let mut node = root;
    for name in path {
        let name = name.as_ref();
        while node.get("type").and_then(Value::as_str) == Some("array") {
            node = node.get("items")?;
        }
        node = match node.get("properties").and_then(|p| p.get(name)) {
            Some(n) => n,
            None => node.get("additionalProperties").filter(|a| a.is_object())?,
        };
    }
    Some(node)
}

/// The key fields' values of a map-list item, with `protocol` defaulted to `TCP` as the
/// ports' schema does; `None` when the item is not an object or lacks a key field.
pub fn item_key(
    item: &Value,
    keys: &[String],
) -> Option<std::collections::BTreeMap<String, Value>> {
    let obj = item.as_object()?;
    let mut out = std::collections::BTreeMap::new();
    for k in keys {
        let v = match obj.get(k) {
            Some(v) if !v.is_null() => v.clone(),
            _ if k == "protocol" => Value::from("TCP"),
            _ => return None,
        };
        out.insert(k.clone(), v);
    }
    Some(out)
}
