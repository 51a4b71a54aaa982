//! Comparing two versions of an object, and the JSON merge patch from one to the other.
//!
//! Both work on the objects' JSON, as Go's `equality.Semantic.DeepEqual` and
//! `client.MergeFrom` work on Go structs: a field that is absent, `null`, an empty list or an
//! empty map counts as unset, so `Some(vec![])` and `None` (which the API server stores alike)
//! never make a difference, and never make a write.

use serde_json::{Map, Value};

/// Whether `v` is unset: `null`, `[]` or `{}`.
fn is_unset(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// Whether `a` and `b` say the same, unset fields (absent, `null`, `[]`, `{}`) being equal.
pub(crate) fn semantic_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.iter()
                .all(|(k, xv)| semantic_eq(xv, y.get(k).unwrap_or(&Value::Null)))
                && y.iter()
                    .filter(|(k, _)| !x.contains_key(*k))
                    .all(|(_, yv)| is_unset(yv))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(xv, yv)| semantic_eq(xv, yv))
        }
        _ => a == b || (is_unset(a) && is_unset(b)),
    }
}

/// The JSON merge patch (RFC 7386) that turns `before` into `after`, or `None` when they are
/// [semantically equal](semantic_eq). Maps are patched key by key (`null` removes a key);
/// lists and scalars are replaced whole, as a merge patch does.
pub(crate) fn merge_diff(before: &Value, after: &Value) -> Option<Value> {
    if semantic_eq(before, after) {
        return None;
    }
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            let mut patch = Map::new();
            for (k, av) in a {
                match b.get(k) {
                    Some(bv) => {
                        if let Some(d) = merge_diff(bv, av) {
                            patch.insert(k.clone(), d);
                        }
                    }
                    None if !is_unset(av) => {
                        patch.insert(k.clone(), av.clone());
                    }
                    None => {}
                }
            }
            for (k, bv) in b {
                if !a.contains_key(k) && !is_unset(bv) {
                    patch.insert(k.clone(), Value::Null);
                }
            }
            Some(Value::Object(patch))
        }
        _ if is_unset(after) => Some(Value::Null),
        _ => Some(after.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unset_fields_are_equal_whatever_their_spelling() {
        let a = json!({"metadata": {"name": "x", "finalizers": []}, "data": {}});
        let b = json!({"metadata": {"name": "x", "labels": null}});
        assert!(semantic_eq(&a, &b));
        assert!(semantic_eq(&b, &a));
        assert!(merge_diff(&a, &b).is_none());
    }

    #[test]
    fn values_and_list_order_matter() {
        assert!(!semantic_eq(&json!({"a": "1"}), &json!({"a": "2"})));
        assert!(!semantic_eq(&json!({"a": "1"}), &json!({})));
        assert!(!semantic_eq(&json!({}), &json!({"a": 0})));
        assert!(!semantic_eq(&json!([1, 2]), &json!([2, 1])));
        assert!(!semantic_eq(&json!([1]), &json!([1, null])));
        assert!(
            !semantic_eq(&json!(""), &json!(null)),
            "an empty string is a value"
        );
    }

    #[test]
    fn the_merge_patch_carries_only_the_difference() {
        let before = json!({
            "metadata": {"name": "x", "labels": {"a": "1", "b": "2"}, "finalizers": ["f"]},
            "data": {"keep": "k", "change": "old"},
        });
        let after = json!({
            "metadata": {"name": "x", "labels": {"a": "1", "c": "3"}, "finalizers": []},
            "data": {"keep": "k", "change": "new"},
        });
        assert_eq!(
            merge_diff(&before, &after).unwrap(),
            json!({
                "metadata": {"labels": {"b": null, "c": "3"}, "finalizers": null},
                "data": {"change": "new"},
            })
        );
    }

    #[test]
    fn lists_are_replaced_whole_and_new_maps_sent_whole() {
        let before = json!({"spec": {"ports": [1, 2]}});
        let after = json!({"spec": {"ports": [1, 2, 3]}, "status": {"ready": true}});
        assert_eq!(
            merge_diff(&before, &after).unwrap(),
            json!({"spec": {"ports": [1, 2, 3]}, "status": {"ready": true}})
        );
        assert_eq!(
            merge_diff(&Value::Null, &json!({"a": 1})).unwrap(),
            json!({"a": 1})
        );
        assert_eq!(
            merge_diff(&json!({"a": 1}), &Value::Null).unwrap(),
            Value::Null
        );
    }
}
