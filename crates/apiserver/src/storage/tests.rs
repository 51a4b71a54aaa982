//! Unit tests of the store: every rule, driven through the public [`Storage`] API.

mod cel;
mod crd;
mod crud;
mod delete;
mod durable;
mod field_validation;
mod list;
mod watch;

use serde_json::{Value, json};

use super::*;

/// A store with default tunables.
fn store() -> Storage {
    Storage::new(StorageConfig::default())
}

/// The resource at `group/v1/plural`.
fn res(s: &Storage, group: &str, plural: &str) -> ResourceInfo {
    s.resolve(group, "v1", plural)
        .unwrap_or_else(|| panic!("{group}/{plural} not served"))
}

fn w() -> WriteOptions {
    WriteOptions::default()
}

/// A ConfigMap body.
fn cm(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

/// Creates a ConfigMap in `default`.
fn create_cm(s: &Storage, name: &str) -> Value {
    s.create(
        &res(s, "", "configmaps"),
        Some("default"),
        cm(name, json!({"a": "1"})),
        &w(),
    )
    .unwrap()
}

/// A Deployment body.
fn deployment(name: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}},
        },
    })
}

fn rv_of(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// Runs `f`, which must fail with `code`, and checks that nothing changed.
fn fails_unchanged(
    s: &Storage,
    code: u16,
    f: impl FnOnce() -> Result<Value, ApiError>,
) -> ApiError {
    let before = s.dump();
    let err = f().expect_err("must fail");
    assert_eq!(err.code, code, "{err:?}");
    assert_eq!(s.dump(), before, "store changed by a failed request");
    err
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}
