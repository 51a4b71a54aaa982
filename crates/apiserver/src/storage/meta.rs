//! Small helpers over `metadata` of JSON objects, and the system values the server fills in
//! (uid, timestamps, generated names).

use serde_json::{Map, Value};

pub(crate) use crate::json::{get_path, set_path};

/// `metadata.<field>` as a string, if present.
pub(crate) fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// `metadata.name` (empty when missing).
pub(crate) fn name(obj: &Value) -> &str {
    meta_str(obj, "name").unwrap_or("")
}

/// `metadata.uid` (empty when missing).
pub(crate) fn uid(obj: &Value) -> &str {
    meta_str(obj, "uid").unwrap_or("")
}

/// `metadata.resourceVersion` (empty when missing).
pub(crate) fn resource_version(obj: &Value) -> &str {
    meta_str(obj, "resourceVersion").unwrap_or("")
}

/// Whether `metadata.deletionTimestamp` is set.
pub(crate) fn is_deleting(obj: &Value) -> bool {
    obj.get("metadata")
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|v| !v.is_null())
}

/// `metadata.finalizers`.
pub(crate) fn finalizers(obj: &Value) -> Vec<String> {
    string_list(obj.get("metadata").and_then(|m| m.get("finalizers")))
}

/// A JSON array of strings as a vector (non-strings are skipped).
pub(crate) fn string_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// `metadata.ownerReferences[*].uid`.
pub(crate) fn owner_uids(obj: &Value) -> Vec<String> {
    obj.get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("uid")?.as_str().map(str::to_string))
        .collect()
}

/// Whether `metadata.ownerReferences` names an owner (without copying the list).
pub(crate) fn has_owner_refs(obj: &Value) -> bool {
    obj.get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
}

/// `metadata.ownerReferences`.
pub(crate) fn owner_refs(obj: &Value) -> Vec<Value> {
    obj.get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The `metadata` object, created when missing or not an object.
pub(crate) fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let map = obj.as_object_mut().expect("made an object above");
    // Looked up before inserting: `entry` would allocate the key on every call.
    if !map.get("metadata").is_some_and(Value::is_object) {
        map.insert("metadata".into(), Value::Object(Map::new()));
    }
    map.get_mut("metadata")
        .and_then(Value::as_object_mut)
        .expect("made an object above")
}

/// Sets `metadata.<field>`; `Value::Null` removes it.
pub(crate) fn set_meta(obj: &mut Value, field: &str, value: Value) {
    let meta = meta_mut(obj);
    if value.is_null() {
        meta.remove(field);
    } else {
        meta.insert(field.to_string(), value);
    }
}

/// Sets `metadata.finalizers`, removing the field when empty (as the real server stores it).
pub(crate) fn set_finalizers(obj: &mut Value, finalizers: &[String]) {
    let value = if finalizers.is_empty() {
        Value::Null
    } else {
        Value::from(finalizers.to_vec())
    };
    set_meta(obj, "finalizers", value);
}

pub(crate) use crate::uid::new_uid;

/// Now, as RFC 3339 with second precision (`2024-01-02T03:04:05Z`), as `metav1.Time` is sent.
pub(crate) fn now() -> String {
    rfc3339_seconds(&chrono::Utc::now())
}

/// The time `seconds` from now, as [`now`] writes it.
pub(crate) fn seconds_from_now(seconds: i64) -> String {
    rfc3339_seconds(&(chrono::Utc::now() + chrono::Duration::seconds(seconds)))
}

/// `2024-01-02T03:04:05Z`: written digit by digit (every write stamps a time or two, and
/// chrono's `format` parses its pattern on each call).
fn rfc3339_seconds(t: &chrono::DateTime<chrono::Utc>) -> String {
    use chrono::{Datelike, Timelike};
    let year = t.year();
    if !(0..=9999).contains(&year) {
        return t.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    }
    let mut out = String::with_capacity(20);
    let mut digits = |n: u32, width: u32, sep: char| {
        for p in (0..width).rev() {
            out.push(char::from(b'0' + (n / 10u32.pow(p) % 10) as u8));
        }
        out.push(sep);
    };
    digits(year as u32, 4, '-');
    digits(t.month(), 2, '-');
    digits(t.day(), 2, 'T');
    digits(t.hour(), 2, ':');
    digits(t.minute(), 2, ':');
    digits(t.second(), 2, 'Z');
    out
}

/// The characters of generated name suffixes (the real server's alphabet: no vowels, no
/// confusable digits).
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// `generateName` plus 5 random characters, the prefix cut to leave room (63 characters in all).
pub(crate) fn generate_name(prefix: &str) -> String {
    let keep = prefix.chars().take(58).collect::<String>();
    let suffix: String = (0..5)
        .map(|_| ALPHANUMS[rand::random_range(0..ALPHANUMS.len())] as char)
        .collect();
    format!("{keep}{suffix}")
}

/// Whether two objects are the same apart from `metadata.resourceVersion` and
/// `metadata.managedFields` (a write that changes nothing else is not stored). Compares in
/// place, without copying either object.
pub(crate) fn same_content(a: &Value, b: &Value) -> bool {
    const VOLATILE: [&str; 2] = ["resourceVersion", "managedFields"];
    equal_except(a, b, &["metadata"]) && {
        match (a.get("metadata"), b.get("metadata")) {
            (Some(ma), Some(mb)) => equal_except(ma, mb, &VOLATILE),
            (None, None) => true,
            (Some(m), None) | (None, Some(m)) => m
                .as_object()
                .is_some_and(|m| m.keys().all(|k| VOLATILE.contains(&k.as_str()))),
        }
    }
}

/// Whether the parts of two objects that `generation` tracks (all but `metadata`, `status`,
/// `apiVersion` and `kind`) are equal.
pub(crate) fn same_spec(a: &Value, b: &Value) -> bool {
    equal_except(a, b, &["metadata", "status", "apiVersion", "kind"])
}

/// Whether two objects are equal outside `metadata` (what `generation` tracks for custom
/// resources without a status subresource: their status is ordinary content).
pub(crate) fn same_outside_metadata(a: &Value, b: &Value) -> bool {
    equal_except(a, b, &["metadata", "apiVersion", "kind"])
}

/// Whether two JSON objects have equal members apart from the `skip`ped keys.
fn equal_except(a: &Value, b: &Value, skip: &[&str]) -> bool {
    match (a.as_object(), b.as_object()) {
        (Some(ma), Some(mb)) => {
            let kept = |m: &'_ serde_json::Map<String, Value>| {
                m.keys().filter(|k| !skip.contains(&k.as_str())).count()
            };
            kept(ma) == kept(mb)
                && ma
                    .iter()
                    .filter(|(k, _)| !skip.contains(&k.as_str()))
                    .all(|(k, v)| mb.get(k) == Some(v))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn uid_is_v4_text() {
        let u = new_uid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"));
        let dashes: Vec<usize> = u.match_indices('-').map(|(i, _)| i).collect();
        assert_eq!(dashes, [8, 13, 18, 23]);
        assert!(
            u.chars()
                .all(|c| c == '-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(u, new_uid());
    }

    #[test]
    fn times_are_rfc3339_seconds() {
        use chrono::TimeZone;
        let t = chrono::Utc.with_ymd_and_hms(2024, 1, 2, 3, 4, 5).unwrap();
        assert_eq!(rfc3339_seconds(&t), "2024-01-02T03:04:05Z");
        let t = chrono::Utc
            .with_ymd_and_hms(987, 12, 31, 23, 59, 59)
            .unwrap();
        assert_eq!(rfc3339_seconds(&t), "0987-12-31T23:59:59Z");
        let now = chrono::Utc::now();
        assert_eq!(
            rfc3339_seconds(&now),
            now.format("%Y-%m-%dT%H:%M:%SZ").to_string()
        );
    }

    #[test]
    fn generated_names() {
        let n = generate_name("web-");
        assert_eq!(n.len(), 9);
        assert!(n.starts_with("web-"));
        assert!(n[4..].bytes().all(|c| ALPHANUMS.contains(&c)));
        assert_eq!(generate_name(&"x".repeat(80)).len(), 63);
    }

    #[test]
    fn paths() {
        let mut v = json!({});
        set_path(&mut v, ".spec.replicas", json!(3));
        assert_eq!(get_path(&v, ".spec.replicas"), Some(&json!(3)));
        assert_eq!(get_path(&v, ".status.replicas"), None);
    }

    #[test]
    fn content_ignores_resource_version() {
        let a = json!({"metadata": {"name": "a", "resourceVersion": "1"}, "data": {"x": "1"}});
        let b = json!({"metadata": {"name": "a", "resourceVersion": "2"}, "data": {"x": "1"}});
        assert!(same_content(&a, &b));
        let c = json!({"metadata": {"name": "a", "resourceVersion": "2", "labels": {}}, "data": {"x": "1"}});
        assert!(!same_content(&a, &c));
        let d = json!({"metadata": {"name": "a"}, "data": {"x": "2"}, "status": {"y": 1}});
        assert!(!same_content(&a, &d));
        assert!(!same_spec(&a, &d));
        let e = json!({"metadata": {"name": "b"}, "data": {"x": "1"}, "status": {"y": 2}});
        assert!(same_spec(&a, &e));
    }
}
