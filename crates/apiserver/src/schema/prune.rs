//! Pruning of unknown fields and defaulting, as `apiextensions-apiserver`'s
//! `schema/pruning` and `schema/defaulting` do them.

use serde_json::Value;

use super::node::{Additional, Node};
use super::path::Path;

/// Fields of an object that pruning never drops at the root or in an embedded resource.
const RESOURCE_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The definition whose fields a resource's `metadata` may hold.
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// Drops what `node` does not know from `v`. `keep_resource_fields`: `v` is the root object
/// or an embedded resource. `path` is where `v` is (`spec.items[0]`, as upstream's field paths
/// read); the path of every dropped field is added to `dropped`. Paths are rendered only for
/// dropped fields: pruning a valid object allocates nothing.
///
/// In a resource (the root, or an `x-kubernetes-embedded-resource` object) `apiVersion`,
/// `kind` and `metadata` are kept whatever the schema says, and a `metadata` object is not pruned by
/// the schema at all: it is decoded as `ObjectMeta`, which drops (and reports) only the fields
/// `ObjectMeta` does not have. A schema may say `metadata: {type: object}` (controller-gen
/// writes that at every resource root) and the object keeps its name, labels and the rest.
pub(crate) fn prune(
    node: &Node,
    v: &mut Value,
    keep_resource_fields: bool,
    path: &Path<'_>,
    dropped: &mut Vec<String>,
) {
    match v {
        Value::Object(map) => {
            let resource = keep_resource_fields || node.embedded;
            map.retain(|k, child| {
                if resource && RESOURCE_FIELDS.contains(&k.as_str()) {
                    // The server checks these itself (a value of the wrong type is its to
                    // refuse); the schema never prunes them.
                    if k == "metadata" && child.is_object() {
                        coerce_object_meta(child, &Path::Field(path, k), dropped);
                    }
                    return true;
                }
                if let Some(p) = node.properties.get(k.as_str()) {
                    prune(p, child, false, &Path::Field(path, k), dropped);
                    return true;
                }
                match &node.additional {
                    Some(Additional::Schema(s)) => {
                        prune(s, child, false, &Path::Entry(path, k), dropped);
                        true
                    }
                    Some(Additional::Bool(true)) => true,
                    _ if node.preserve_unknown => true,
                    _ => {
                        dropped.push(Path::Field(path, k).render());
                        false
                    }
                }
            });
        }
        Value::Array(items) => {
            if let Some(item) = &node.items {
                for (i, child) in items.iter_mut().enumerate() {
                    prune(item, child, false, &Path::Index(path, i), dropped);
                }
            }
        }
        _ => {}
    }
}

/// Drops the fields of a resource's `metadata` that `ObjectMeta` does not declare, adding
/// their paths (`metadata.colour`) to `dropped`, as upstream's `objectmeta.Coerce` does. A
/// value of the wrong type is left for the server's metadata checks to refuse.
fn coerce_object_meta(meta: &mut Value, path: &Path<'_>, dropped: &mut Vec<String>) {
    if let Ok(unknown) = super::decode::decode(OBJECT_META, meta) {
        let prefix = path.render();
        dropped.extend(unknown.into_iter().map(|f| format!("{prefix}.{f}")));
    }
}

/// Sets defaults in `v` following `node`.
pub(crate) fn default(node: &Node, v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, p) in &node.properties {
                let Some(d) = &p.default else { continue };
                let missing = match map.get(k) {
                    None => true,
                    Some(Value::Null) => !p.nullable,
                    Some(_) => false,
                };
                if missing {
                    map.insert(k.clone(), d.clone());
                }
            }
            for (k, child) in map.iter_mut() {
                if let Some(p) = node.properties.get(k) {
                    default(p, child);
                } else if let Some(Additional::Schema(s)) = &node.additional {
                    default(s, child);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = &node.items {
                for child in items {
                    default(item, child);
                }
            }
        }
        _ => {}
    }
}
