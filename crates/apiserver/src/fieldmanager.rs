//! Field management: who owns which field of an object (`metadata.managedFields`), and
//! server-side apply, as `sigs.k8s.io/structured-merge-diff` and the API server's
//! `managedfields` package do them.
//!
//! * [`fieldpath`]: paths and sets of paths, and their `FieldsV1` encoding (`f:`, `k:`, `v:`,
//!   `i:`, `.`).
//! * [`shape`]: how a kind's lists and maps merge (map lists by their keys, sets, atomic).
//! * [`walk`]: the set an applied configuration sets, and the comparison of two versions.
//! * [`managed`]: the `managedFields` entries of an object.
//! * [`apply()`]: server-side apply: merge, conflicts (409 unless forced), removal of fields
//!   the applier stopped applying that nobody else owns.
//! * [`record_update`]: the `Update` entry every other write records.
//!
//! ```
//! use crt_apiserver::fieldmanager::{Writer, apply, shape::Shape};
//! use serde_json::json;
//!
//! let w = |manager| Writer { manager, subresource: None, api_version: "v1", now: "2026-01-01T00:00:00Z" };
//! let shape = Shape::builtin("", "ConfigMap");
//! let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}});
//! let live = apply(None, &cm, &shape, &w("alice"), false).unwrap();
//! assert_eq!(live["metadata"]["managedFields"][0]["fieldsV1"], json!({"f:data": {"f:a": {}}}));
//!
//! let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "2"}});
//! let err = apply(Some(&live), &other, &shape, &w("bob"), false).unwrap_err();
//! assert_eq!(err.to_string(), r#"Apply failed with 1 conflict: conflict with "alice": .data.a"#);
//! ```

pub mod apply;
pub mod fieldpath;
pub mod managed;
pub mod shape;
#[cfg(test)]
mod tests;
pub mod update;
pub mod walk;
mod writer;

use serde_json::Value;

pub use apply::{Conflict, Error, apply};
pub use update::record_update;
pub use writer::Writer;

use crate::error::ApiError;

/// The default field manager of a request without `fieldManager`: the user agent up to its
/// first `/`, printable characters only, at most 128 bytes (as the real server derives it).
///
/// ```
/// assert_eq!(crt_apiserver::fieldmanager::manager_from_user_agent("kubectl/v1.33.0 (linux/amd64)"), "kubectl");
/// ```
pub fn manager_from_user_agent(user_agent: &str) -> String {
    let prefix = user_agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in prefix.chars().filter(|c| !c.is_control()) {
        if out.len() >= 128 {
            break;
        }
        out.push(c);
    }
    out
}

/// Reads an apply body: YAML (JSON is YAML too) holding one object.
pub fn parse_config(body: &[u8]) -> Result<Value, ApiError> {
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) => serde_yaml_ng::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?,
    };
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "error decoding YAML: the applied configuration must be an object",
        ));
    }
    Ok(v)
}
