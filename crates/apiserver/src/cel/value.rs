//! JSON values as CEL sees them.

use std::collections::HashMap;
use std::sync::Arc;

use cel::Value as Cel;
use cel::objects::{Key, Map as CelMap};
use serde_json::Value;

/// A JSON value as CEL sees it: integers as `int`, other numbers as `double`, objects as
/// maps with string keys.
pub(crate) fn to_cel(v: &Value) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Cel::Int(i),
            None => match n.as_u64() {
                Some(u) => Cel::UInt(u),
                None => Cel::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(a) => Cel::List(Arc::new(a.iter().map(to_cel).collect())),
        Value::Object(m) => {
            let map: HashMap<Key, Cel> = m
                .iter()
                .map(|(k, v)| (Key::from(k.as_str()), to_cel(v)))
                .collect();
            Cel::Map(CelMap { map: Arc::new(map) })
        }
    }
}
