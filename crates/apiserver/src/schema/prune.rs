//! Pruning of unknown fields and defaulting, as `apiextensions-apiserver`'s
//! `schema/pruning` and `schema/defaulting` do them.

use serde_json::Value;

use super::node::{Additional, Node};
use super::path::Path;

/// Fields of an object that pruning never drops at the root or in an embedded resource.
const RESOURCE_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Drops what `node` does not know from `v`. `keep_resource_fields`: `v` is the root object
/// or an embedded resource. `path` is where `v` is (`spec.items[0]`, as upstream's field paths
/// read); the path of every dropped field is added to `dropped`. Paths are rendered only for
/// dropped fields: pruning a valid object allocates nothing.
pub(crate) fn prune(
    node: &Node,
    v: &mut Value,
    keep_resource_fields: bool,
    path: &Path<'_>,
    dropped: &mut Vec<String>,
) {
    match v {
        Value::Object(map) => {
            let keep_meta = keep_resource_fields || node.embedded;
            map.retain(|k, child| {
                if keep_meta && RESOURCE_FIELDS.contains(&k.as_str()) {
                    // metadata is checked by the server's ObjectMeta rules; apiVersion and
                    // kind are strings. A schema for them, if any, still prunes below.
                    if let Some(p) = node.properties.get(k.as_str()) {
                        prune(p, child, false, &Path::Field(path, k), dropped);
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
