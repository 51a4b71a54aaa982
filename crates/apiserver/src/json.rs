//! Reading and writing JSON objects by path, the two ways the server names a field: a dotted
//! path as CRDs and printer columns write it ([`get_path`], [`set_path`]: `.spec.replicas`),
//! and a list of keys from the root ([`at`], [`str_at`], [`array_at`], [`has`]:
//! `&["spec", "replicas"]`). Absent steps and values of another type read as absent, never
//! as a panic. [`FieldOrder`] says in which order an object's fields are written.

mod order;

pub use order::FieldOrder;
pub(crate) use order::{GoOrder, Ordered};

use serde_json::{Map, Value};

/// The value at a dotted JSON path (`.spec.replicas`), if every step exists.
pub(crate) fn get_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    path.trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .try_fold(obj, |v, key| v.get(key))
}

/// Sets the value at a dotted JSON path, creating objects on the way.
pub(crate) fn set_path(obj: &mut Value, path: &str, value: Value) {
    let keys: Vec<&str> = path
        .trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .collect();
    let mut cur = obj;
    for (i, key) in keys.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let map = cur.as_object_mut().expect("made an object above");
        if i + 1 == keys.len() {
            map.insert(key.to_string(), value);
            return;
        }
        cur = map
            .entry(key.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

/// The value at `path` (keys from the root), if every step exists.
pub(crate) fn at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(obj, |v, k| v.get(*k))
}

/// The string at `path`, `""` when absent or not a string.
pub(crate) fn str_at<'a>(obj: &'a Value, path: &[&str]) -> &'a str {
    at(obj, path).and_then(Value::as_str).unwrap_or("")
}

/// The array at `path`, empty when absent or not an array.
pub(crate) fn array_at<'a>(obj: &'a Value, path: &[&str]) -> &'a [Value] {
    at(obj, path)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Whether `path` holds a value other than `null`.
pub(crate) fn has(obj: &Value, path: &[&str]) -> bool {
    at(obj, path).is_some_and(|v| !v.is_null())
}
