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

use serde_json::{Value, json};

pub use apply::{Conflict, apply};
pub use update::record_update;

use crate::error::ApiError;

/// Who writes, through what, and when.
#[derive(Clone, Copy, Debug)]
pub struct Writer<'a> {
    /// The field manager.
    pub manager: &'a str,
    /// `Some("status")` or `Some("scale")` for writes through a subresource.
    pub subresource: Option<&'a str>,
    /// The `apiVersion` the request spoke.
    pub api_version: &'a str,
    /// The time to stamp changed entries with (RFC 3339, seconds).
    pub now: &'a str,
}

/// Why an apply failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Fields the apply would change are owned by other managers (409 Conflict).
    #[error("{}", conflict_message(.0))]
    Conflicts(Vec<Conflict>),
    /// The configuration's lists do not fit their schema (422).
    #[error("{0}")]
    Shape(#[from] walk::WalkError),
}

/// The message the real server gives a failed apply: one conflict on one line, several
/// grouped by manager (managers sorted).
fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [c] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            c.manager, c.field
        );
    }
    let mut managers: Vec<&str> = conflicts.iter().map(|c| c.manager.as_str()).collect();
    managers.sort_unstable();
    managers.dedup();
    let mut lines = Vec::new();
    for m in managers {
        lines.push(format!("conflicts with {m}:"));
        for c in conflicts.iter().filter(|c| c.manager == m) {
            lines.push(format!("- {}", c.field));
        }
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        match &e {
            Error::Conflicts(list) => {
                let causes: Vec<Value> = list
                    .iter()
                    .map(|c| {
                        json!({
                            "type": "FieldManagerConflict",
                            "message": format!("conflict with {}", c.manager),
                            "field": c.field,
                        })
                    })
                    .collect();
                ApiError::new(409, "Conflict", e.to_string())
                    .with_details(json!({ "causes": causes }))
            }
            Error::Shape(_) => ApiError::new(
                422,
                "Invalid",
                format!("failed to create typed patch object: {e}"),
            ),
        }
    }
}

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
