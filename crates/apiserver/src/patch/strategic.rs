//! Strategic merge patch, as `k8s.io/apimachinery/pkg/util/strategicpatch` applies it on the
//! server (`MergeParallelList` and `IgnoreUnmatchedNulls` on).
//!
//! * Maps merge key by key; `null` deletes a key; a key the original lacks is added (with its
//!   nulls and directives resolved).
//! * Lists with `patchStrategy: merge` and a `patchMergeKey` merge element by element on that
//!   key; merged lists of primitives (`finalizers`) are the union; every other list is
//!   replaced. An empty patch list leaves a merged list unchanged.
//! * Directives: `$patch: replace | delete | merge` in a map, `{"<key>": v, "$patch":
//!   "delete"}` and `{"$patch": "replace"}` as list elements, `$retainKeys: [..]`,
//!   `$setElementOrder/<field>: [..]` and `$deleteFromPrimitiveList/<field>: [..]`. No
//!   directive survives into the result.
//! * Order of a merged list (upstream's `normalizeElementOrder`): patched elements follow the
//!   patch's order (or `$setElementOrder`'s), server-only elements keep their relative order
//!   and are interleaved by their places on the server; a new element goes before the
//!   server-only elements it meets (`kubectl patch` of a new container puts it first).

use serde_json::{Map, Value};

use super::PatchError;
use super::merge_keys::{FieldMeta, Ty};

type R<T> = Result<T, PatchError>;

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ORDER_PREFIX: &str = "$setElementOrder/";
const DELETE_PRIMITIVE_PREFIX: &str = "$deleteFromPrimitiveList/";

fn bad(msg: impl Into<String>) -> PatchError {
    PatchError::BadStrategicPatch(msg.into())
}

/// Merges `patch` into `original`, a value of type `ty`.
pub(crate) fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    ty: Ty,
) -> R<Map<String, Value>> {
    if let Some(d) = patch.remove(DIRECTIVE) {
        match d.as_str() {
            // The patch is the new value, with its own directives and nulls resolved.
            Some("replace") => return merge_map(Map::new(), patch, ty),
            Some("delete") => return Ok(Map::new()),
            Some("merge") => {}
            _ => {
                return Err(bad(format!(
                    "unknown patch type: {d} in map: {}",
                    Value::Object(patch)
                )));
            }
        }
    }
    if let Some(keys) = patch.remove(RETAIN_KEYS) {
        apply_retain_keys(&mut original, &patch, keys)?;
    }
    let order_keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ORDER_PREFIX))
        .cloned()
        .collect();
    for directive in order_keys {
        let order = patch.remove(&directive).unwrap_or_default();
        let field = &directive[SET_ORDER_PREFIX.len()..];
        let patch_list = patch.remove(field);
        set_element_order(&mut original, field, order, patch_list, ty.field(field))?;
    }
    let mut deletes = Vec::new();
    for (key, value) in patch {
        if let Some(field) = key.strip_prefix(DELETE_PRIMITIVE_PREFIX) {
            deletes.push((field.to_string(), value));
            continue;
        }
        let meta = ty.field(&key);
        match original.get_mut(&key) {
            Some(slot) => match merge_field(Some(slot.take()), value, meta, &key)? {
                Some(v) => *slot = v,
                None => {
                    original.remove(&key);
                }
            },
            None => {
                if let Some(v) = merge_field(None, value, meta, &key)? {
                    original.insert(key, v);
                }
            }
        }
    }
    for (field, value) in deletes {
        let Value::Array(remove) = value else {
            return Err(bad("invalid patch format of primitive list"));
        };
        if let Some(Value::Array(list)) = original.get_mut(&field) {
            list.retain(|v| !remove.contains(v));
        }
    }
    Ok(original)
}

/// `$retainKeys`: keys of the original not in the list are dropped; the patch may not set
/// keys outside it.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    keys: Value,
) -> R<()> {
    let keep: Vec<&str> = match &keys {
        Value::Array(a) => a
            .iter()
            .map(|v| v.as_str())
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| bad("invalid patch format of retainKeys"))?,
        _ => return Err(bad("invalid patch format of retainKeys")),
    };
    if patch
        .iter()
        .any(|(k, v)| !k.starts_with('$') && !v.is_null() && !keep.contains(&k.as_str()))
    {
        return Err(PatchError::UnprocessableStrategicPatch(
            "patch content doesn't match retainKeys list".into(),
        ));
    }
    original.retain(|k, _| keep.contains(&k.as_str()));
    Ok(())
}

/// `$setElementOrder/<field>`: merges the field's patch list (if any) and puts the result in
/// the given order, server-only elements keeping their places.
fn set_element_order(
    original: &mut Map<String, Value>,
    field: &str,
    order: Value,
    patch_list: Option<Value>,
    meta: FieldMeta,
) -> R<()> {
    let Value::Array(order) = order else {
        return Err(bad("invalid patch format of setElementOrder list"));
    };
    let server = match original.get(field) {
        Some(Value::Array(a)) => Some(a.clone()),
        _ => None,
    };
    let patch_list = match patch_list {
        Some(Value::Array(a)) => Some(a),
        Some(Value::Null) | None => None,
        Some(_) => return Err(bad(format!("the value of {field} must be a list"))),
    };
    if let Some(p) = &patch_list {
        check_order_matches(p, &order, meta.merge_key, field)?;
    }
    let merged = match (&server, patch_list) {
        (None, None) => return Ok(()),
        (Some(s), None) => s.clone(),
        (s, Some(p)) => merge_list(s.clone().unwrap_or_default(), p, meta, field)?,
    };
    let key = meta.merge_key;
    let (in_order, server_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|v| index_of(&order, v, key).is_some());
    let server = server.unwrap_or_default();
    let ordered = normalize(in_order, server_only, &order, &server, key);
    original.insert(field.to_string(), Value::Array(ordered));
    Ok(())
}

/// The patch list's elements (directives aside) must appear in the `$setElementOrder` list,
/// in the same relative order.
fn check_order_matches(patch: &[Value], order: &[Value], key: Option<&str>, field: &str) -> R<()> {
    let mut rest = order.iter();
    for item in patch.iter().filter(|v| v.get(DIRECTIVE).is_none()) {
        let same = |o: &&Value| match key {
            Some(k) => item.get(k).is_some() && o.get(k) == item.get(k),
            None => *o == item,
        };
        if !rest.any(|o| same(&o)) {
            return Err(bad(format!(
                "the order in the patch list {field} doesn't match its $setElementOrder list"
            )));
        }
    }
    Ok(())
}

/// The new value of a field: `None` deletes it.
fn merge_field(
    original: Option<Value>,
    patch: Value,
    meta: FieldMeta,
    field: &str,
) -> R<Option<Value>> {
    Ok(Some(match patch {
        Value::Null => return Ok(None),
        Value::Object(p) => {
            let o = match original {
                Some(Value::Object(o)) => o,
                _ => Map::new(),
            };
            Value::Object(merge_map(o, p, meta.ty)?)
        }
        Value::Array(p) => {
            let o = match original {
                Some(Value::Array(o)) => o,
                _ => Vec::new(),
            };
            Value::Array(merge_list(o, p, meta, field)?)
        }
        scalar => scalar,
    }))
}

/// A new value (nothing to merge with): its directives and nulls resolved.
fn clean(v: Value, ty: Ty) -> R<Value> {
    match v {
        Value::Object(o) => Ok(Value::Object(merge_map(Map::new(), o, ty)?)),
        other => Ok(other),
    }
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum ElementKind {
    Object,
    Scalar,
}

fn element_kind(original: &[Value], patch: &[Value]) -> R<Option<ElementKind>> {
    let mut kind = None;
    for v in original.iter().chain(patch) {
        let k = match v {
            Value::Array(_) => {
                return Err(PatchError::UnprocessableStrategicPatch(
                    "lists of lists are not supported".into(),
                ));
            }
            Value::Object(_) => ElementKind::Object,
            _ => ElementKind::Scalar,
        };
        match kind {
            None => kind = Some(k),
            Some(prev) if prev != k => {
                return Err(bad(
                    "mismatched types: a list mixes objects with other values",
                ));
            }
            _ => {}
        }
    }
    Ok(kind)
}

/// Merges two lists of a field with the given strategy.
fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    meta: FieldMeta,
    field: &str,
) -> R<Vec<Value>> {
    if !meta.merge {
        return patch.into_iter().map(|v| clean(v, meta.ty)).collect();
    }
    let Some(kind) = element_kind(&original, &patch)? else {
        return Ok(original);
    };
    if kind == ElementKind::Scalar {
        let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
        for v in original.iter().chain(&patch) {
            if !merged.contains(v) {
                merged.push(v.clone());
            }
        }
        let (from_patch, server_only) = merged.into_iter().partition(|v| patch.contains(v));
        return Ok(normalize(from_patch, server_only, &patch, &original, None));
    }
    let Some(key) = meta.merge_key else {
        return Err(bad(format!(
            "cannot merge lists without merge key for {field}"
        )));
    };
    let (mut original, patch) = split_special_elements(original, patch, key, meta.ty)?;
    // The server's order is the list before the new elements join it.
    let server_order = original.clone();
    for item in &patch {
        let wanted = item.get(key);
        match original.iter_mut().find(|o| o.get(key) == wanted) {
            Some(slot) => {
                let (Value::Object(o), Value::Object(p)) = (slot.take(), item.clone()) else {
                    return Err(bad(
                        "mismatched types: a list mixes objects with other values",
                    ));
                };
                *slot = Value::Object(merge_map(o, p, meta.ty)?);
            }
            None => original.push(clean(item.clone(), meta.ty)?),
        }
    }
    let (from_patch, server_only) = original
        .into_iter()
        .partition(|v| index_of(&patch, v, Some(key)).is_some());
    Ok(normalize(
        from_patch,
        server_only,
        &patch,
        &server_order,
        Some(key),
    ))
}

/// Applies `$patch: delete` and `$patch: replace` list elements; returns the original and
/// the patch without them. Every other patch element must carry the merge key.
fn split_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    key: &str,
    ty: Ty,
) -> R<(Vec<Value>, Vec<Value>)> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let Some(directive) = item.get(DIRECTIVE) else {
            if item.get(key).is_none() {
                return Err(bad(format!(
                    "map: {item} does not contain declared merge key: {key}"
                )));
            }
            plain.push(item);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let Some(wanted) = item.get(key) else {
                    return Err(bad(format!(
                        "map: {item} does not contain declared merge key: {key}"
                    )));
                };
                original.retain(|o| o.get(key) != Some(wanted));
            }
            Some("replace") => replace = true,
            Some("merge") => {
                return Err(bad("merging lists cannot yet be specified in the patch"));
            }
            _ => {
                return Err(bad(format!(
                    "unknown patch type: {directive} in map: {item}"
                )));
            }
        }
    }
    if replace {
        let cleaned = plain.into_iter().map(|v| clean(v, ty)).collect::<R<_>>()?;
        return Ok((cleaned, Vec::new()));
    }
    Ok((original, plain))
}

/// Position of `item` in `list`, by merge key for objects, by equality otherwise.
fn index_of(list: &[Value], item: &Value, key: Option<&str>) -> Option<usize> {
    match key {
        Some(k) => {
            let wanted = item.get(k)?;
            list.iter().position(|v| v.get(k) == Some(wanted))
        }
        None => list.iter().position(|v| v == item),
    }
}

/// Sorts patched elements by `patch_order` and server-only ones by `server_order`, then
/// interleaves them: where both appear in `server_order` the earlier goes first, otherwise
/// the patched element does (so new elements come before the server-only ones they meet, as
/// upstream's `mergeSortedSlice`).
fn normalize(
    mut from_patch: Vec<Value>,
    mut server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let rank = |list: &[Value], v: &Value| index_of(list, v, key).map_or(-1, |i| i as isize);
    from_patch.sort_by_key(|v| rank(patch_order, v));
    server_only.sort_by_key(|v| rank(server_order, v));
    let mut out = Vec::with_capacity(from_patch.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = from_patch.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                match (
                    index_of(server_order, l, key),
                    index_of(server_order, r, key),
                ) {
                    (Some(li), Some(ri)) => li < ri,
                    _ => false,
                }
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}
