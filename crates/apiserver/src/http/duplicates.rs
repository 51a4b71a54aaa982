//! Duplicate fields in a JSON request body (`{"data": {...}, "data": {...}}`): the real
//! server's decoder keeps the last one and, under `fieldValidation`, reports each as
//! `duplicate field "<path>"` (`Strict`: a 400; `Warn`: a `Warning` header), as it reports
//! unknown fields. `serde_json` keeps the last one silently; this parse does the same and
//! lists where it happened, with paths as upstream prints them (`metadata.labels.app`,
//! `spec.containers[0].name`).

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Parses `body` as JSON: the value (the last of each duplicate field, as `serde_json`) and
/// the paths of the duplicate fields, in the order they were met.
pub(crate) fn parse(body: &[u8]) -> serde_json::Result<(Value, Vec<String>)> {
    let mut path = String::new();
    let mut dups = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = Seed {
        path: &mut path,
        dups: &mut dups,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok((value, dups))
}

/// One value being parsed, at `path`.
struct Seed<'a> {
    path: &'a mut String,
    dups: &'a mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        let base = self.path.len();
        loop {
            use std::fmt::Write;
            let _ = write!(self.path, "[{}]", items.len());
            let next = seq.next_element_seed(Seed {
                path: &mut *self.path,
                dups: &mut *self.dups,
            })?;
            self.path.truncate(base);
            match next {
                Some(v) => items.push(v),
                None => break,
            }
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut obj = Map::new();
        let base = self.path.len();
        while let Some(key) = map.next_key::<String>()? {
            if base > 0 {
                self.path.push('.');
            }
            self.path.push_str(&key);
            let v = map.next_value_seed(Seed {
                path: &mut *self.path,
                dups: &mut *self.dups,
            })?;
            if obj.insert(key, v).is_some() {
                self.dups.push(self.path.clone());
            }
            self.path.truncate(base);
        }
        Ok(Value::Object(obj))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::parse;

    #[test]
    fn finds_duplicates_with_their_paths_and_keeps_the_last() {
        let body = br#"{"kind": "ConfigMap", "data": {"a": "1", "a": "2"},
            "spec": {"containers": [{"name": "x", "name": "y"}]}, "kind": "ConfigMap"}"#;
        let (v, dups) = parse(body).unwrap();
        assert_eq!(v["data"]["a"], "2");
        assert_eq!(v["spec"]["containers"][0]["name"], "y");
        assert_eq!(dups, ["data.a", "spec.containers[0].name", "kind"]);
    }

    #[test]
    fn the_same_value_as_serde_json_without_duplicates() {
        let body = br#"{"a": [1, -2, 3.5, true, null, "s", {"b": {}}], "c": 18446744073709551615}"#;
        let (v, dups) = parse(body).unwrap();
        assert!(dups.is_empty());
        assert_eq!(
            v,
            serde_json::from_slice::<serde_json::Value>(body).unwrap()
        );
        assert_eq!(v["a"][6], json!({"b": {}}));
        assert!(
            parse(b"{\"a\": 1} x").is_err(),
            "trailing characters are an error"
        );
    }
}
