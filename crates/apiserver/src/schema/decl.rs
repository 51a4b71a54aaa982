//! The CEL type of a structural schema node ([`decl_of`]), as upstream's `SchemaDeclType`
//! derives it: an object with its properties, `map(string, T)` under `additionalProperties`,
//! `list(T)` for arrays, `string`, `int`, `double`, `bool`, `bytes`, `timestamp` and
//! `duration` by type and format, `dyn` for `x-kubernetes-int-or-string`; the root and
//! embedded resources also get `apiVersion`, `kind` and `metadata.name`/`generateName`. The
//! sizes are upstream's estimates (`maxItems`, `maxLength`, or what fits in a 3 MiB request),
//! which the cost estimate of [`crate::cel`] reads.

use std::collections::BTreeMap;

use super::node::{Additional, Node};
use crate::cel::check::{Decl, DeclKind, MAX_REQUEST_SIZE_BYTES};

/// The declared type of the schema `value` (not a resource root), for tests that size CEL
/// expressions by a schema.
#[cfg(test)]
pub(crate) fn decl_of_value(value: &serde_json::Value) -> Decl {
    let mut errs = Vec::new();
    let node = Node::parse(value, "", &mut errs);
    assert!(errs.is_empty(), "{value}: {errs:?}");
    decl_of(&node, false)
}

/// The declared type of `node`; `resource_root` at the root of a custom resource and of
/// an embedded resource, where `apiVersion`, `kind` and `metadata.name`/`generateName`
/// are always declared.
pub(crate) fn decl_of(node: &Node, resource_root: bool) -> Decl {
    let max_string = MAX_REQUEST_SIZE_BYTES - 2;
    if node.int_or_string {
        // Upstream sizes an int-or-string as the longest string a request holds, whatever
        // its maxLength.
        return Decl::new(DeclKind::Dyn, 1, max_string);
    }
    match node.ty.as_deref() {
        Some("array") => {
            let Some(items) = &node.items else {
                return Decl::new(DeclKind::Dyn, 2, max_string);
            };
            let elem = decl_of(items, items.embedded);
            let max = node.max_items.unwrap_or(max_string / (elem.min_size + 1));
            Decl::new(DeclKind::List(Box::new(elem)), 2, max)
        }
        Some("object") => {
            if let Some(Additional::Schema(s)) = &node.additional {
                let value = decl_of(s, s.embedded);
                // A key of at least `""`, its quotes, a colon and a comma per property.
                let max = node
                    .max_properties
                    .unwrap_or(max_string / (6 + value.min_size));
                return Decl::new(DeclKind::Map(Box::new(value)), 2, max);
            }
            let mut fields = BTreeMap::new();
            let mut min_size = 2;
            for (name, prop) in &node.properties {
                let d = decl_of(prop, prop.embedded);
                if node.required.contains(name) && prop.default.is_none() {
                    min_size += name.len() as u64 + d.min_size + 4;
                }
                fields.insert(name.clone(), d);
            }
            if resource_root && !declares_type_and_object_meta(node) {
                let string = || Decl::new(DeclKind::String, 2, max_string);
                fields.insert("apiVersion".into(), string());
                fields.insert("kind".into(), string());
                let meta = BTreeMap::from([
                    ("name".to_string(), string()),
                    ("generateName".to_string(), string()),
                ]);
                fields.insert(
                    "metadata".into(),
                    Decl::new(
                        DeclKind::Object {
                            fields: meta,
                            open: false,
                        },
                        2,
                        0,
                    ),
                );
            }
            let open = node.preserve_unknown;
            Decl::new(DeclKind::Object { fields, open }, min_size, 0)
        }
        Some("string") => match node.format.as_deref() {
            Some("byte") => Decl::new(DeclKind::Bytes, 2, node.max_length.unwrap_or(max_string)),
            // Sizes of RFC 3339 values with their quotes.
            Some("duration") => Decl::new(DeclKind::Duration, 3, 32),
            Some("date") => Decl::new(DeclKind::Timestamp, 12, 12),
            Some("date-time") => Decl::new(DeclKind::Timestamp, 21, 32),
            _ => {
                let max = match (&node.max_length, &node.enumeration) {
                    // maxLength counts code points, of up to 4 bytes each.
                    (Some(m), _) => m.saturating_mul(4),
                    (None, Some(e)) if !e.is_empty() => e
                        .iter()
                        .map(|v| v.as_str().map_or(0, |s| s.len() as u64))
                        .max()
                        .unwrap_or(0),
                    _ => max_string,
                };
                Decl::new(DeclKind::String, 2, max)
            }
        },
        Some("boolean") => Decl::new(DeclKind::Bool, 4, 0),
        Some("integer") => Decl::new(DeclKind::Int, 1, 0),
        Some("number") => Decl::new(DeclKind::Double, 1, 0),
        _ => Decl::new(DeclKind::Dyn, 1, max_string),
    }
}

/// Whether a resource root already declares `apiVersion`, `kind` and `metadata.name` and
/// `generateName` as strings; upstream then keeps its schema as it is (its other metadata
/// fields declared too) rather than replacing them.
fn declares_type_and_object_meta(node: &Node) -> bool {
    let string = |n: Option<&Node>| n.is_some_and(|n| n.ty.as_deref() == Some("string"));
    let meta = node.properties.get("metadata");
    string(node.properties.get("apiVersion"))
        && string(node.properties.get("kind"))
        && meta.is_some_and(|m| {
            m.ty.as_deref() == Some("object")
                && string(m.properties.get("name"))
                && string(m.properties.get("generateName"))
        })
}
