//! Secrets: `stringData` is merged into `data` on write.

use crate::error::ApiError;
use crate::kinds::{Strategy, defaults::*, label, strategy::DEFAULT};
use crate::table::columns::*;
use crate::validation;
use serde_json::{Value, json};

/// The Secret strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    normalize: Some(normalize_secret),
    defaults: Some(secret_defaults),
    validate: Some(validation::core::secret),
    field_labels: &[label("type")],
    columns: secret_columns,
    ..DEFAULT
};

/// Normalizes a Secret as the real server stores it: `stringData` (write-only) is merged into
/// `data`, base64-encoded; `data` values must be base64 (400 otherwise, as the decoder answers).
fn normalize_secret(obj: &mut Value) -> Result<(), ApiError> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    if let Some(data) = obj.get("data").and_then(Value::as_object) {
        for v in data.values() {
            let ok = v.as_str().is_some_and(|s| b64.decode(s).is_ok()) || v.is_null();
            if !ok {
                return Err(ApiError::bad_request(
                    "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data in field data",
                ));
            }
        }
    }
    let Some(map) = obj.as_object_mut() else {
        return Ok(());
    };
    if let Some(string_data) = map.remove("stringData") {
        let Value::Object(entries) = string_data else {
            return Err(ApiError::bad_request(
                "Secret in version \"v1\" cannot be handled as a Secret: stringData must be a map of strings",
            ));
        };
        let data = map.entry("data").or_insert_with(|| json!({}));
        if !data.is_object() {
            *data = json!({});
        }
        let data = data.as_object_mut().expect("made an object above");
        for (k, v) in entries {
            let text = v.as_str().unwrap_or_default().to_string();
            data.insert(k, Value::from(b64.encode(text)));
        }
    }
    Ok(())
}

fn secret_defaults(obj: &mut Value, _next_cluster_ip: &mut u32) {
    default_at(obj, ".type", json!("Opaque"))
}

fn secret_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Type", |o| string(o, "/type")),
        ("Data", |o| json!(count(o, "/data"))),
    ]
}
