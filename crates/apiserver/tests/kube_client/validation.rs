//! Upstream's validation of built-in kinds, over HTTP: a table of bad inputs, each naming the
//! upstream rule it mirrors (the function of `validation.go` and the check in it), with the
//! code, reason, field and message a kube-apiserver 1.33 answers.
//!
//! Each group of rules has its own file of cases under `validation/`; the runner here creates
//! (or, for an update case, creates the valid `before` object then replaces it) and compares
//! the answer with the case's expectations, reporting every mismatching case at once.

#[path = "validation/core.rs"]
mod core_cases;
#[path = "validation/workloads.rs"]
mod workload_cases;

use kube_client::Client;
use serde_json::{Value, json};

use crate::common::{client, raw, server};

/// One bad input.
pub(crate) struct Case {
    /// The upstream rule it mirrors, e.g. `ValidateServicePort: port in 1..65535`.
    pub rule: &'static str,
    /// The object to create (or the update's new object), with `apiVersion`, `kind` and
    /// `metadata.name`. Namespaced kinds go to the `default` namespace.
    pub obj: Value,
    /// For an update: the valid object created first; `obj` then replaces it (its
    /// `resourceVersion` is filled in by the runner).
    pub before: Option<Value>,
    /// The expected `message` of the Status, whole.
    pub message: &'static str,
    /// The expected causes, `(reason, field)` in order; empty to skip the check.
    pub causes: &'static [(&'static str, &'static str)],
}

impl Case {
    /// A create that must fail with 422 `Invalid` and exactly `message`.
    pub fn create(rule: &'static str, obj: Value, message: &'static str) -> Self {
        Case {
            rule,
            obj,
            before: None,
            message,
            causes: &[],
        }
    }

    /// An update of `before` to `obj` that must fail with 422 `Invalid` and exactly `message`.
    pub fn update(rule: &'static str, before: Value, obj: Value, message: &'static str) -> Self {
        Case {
            rule,
            obj,
            before: Some(before),
            message,
            causes: &[],
        }
    }

    /// Also expect these causes, `(reason, field)`, in order.
    pub fn causes(self, causes: &'static [(&'static str, &'static str)]) -> Self {
        Case { causes, ..self }
    }
}

/// The collection URL of an object: `/api/v1/namespaces/default/configmaps` and the like.
pub(crate) fn collection(obj: &Value) -> String {
    let api_version = obj["apiVersion"].as_str().expect("apiVersion");
    let kind = obj["kind"].as_str().expect("kind");
    let row = crt_apiserver::resource::ResourceInfo::builtins()
        .into_iter()
        .find(|r| {
            r.kind == kind
                && (if r.group.is_empty() {
                    r.version == api_version
                } else {
                    format!("{}/{}", r.group, r.version) == api_version
                })
        })
        .unwrap_or_else(|| panic!("{api_version} {kind} is not built in"));
    let prefix = if row.group.is_empty() {
        "/api/v1".to_string()
    } else {
        format!("/apis/{}/{}", row.group, row.version)
    };
    if row.namespaced {
        format!("{prefix}/namespaces/default/{}", row.plural)
    } else {
        format!("{prefix}/{}", row.plural)
    }
}

async fn send(client: &Client, method: &str, uri: &str, obj: &Value) -> (u16, Value) {
    let (code, _, body) = raw(
        client,
        method,
        uri,
        "application/json",
        serde_json::to_vec(obj).unwrap(),
    )
    .await;
    (code, body)
}

/// Runs one case; `Err` describes how the answer differs.
async fn run(client: &Client, case: &Case) -> Result<(), String> {
    let uri = collection(&case.obj);
    let (code, body) = match &case.before {
        None => send(client, "POST", &uri, &case.obj).await,
        Some(before) => {
            let (code, created) = send(client, "POST", &uri, before).await;
            if code != 201 {
                return Err(format!(
                    "the valid `before` object was refused: {code} {created}"
                ));
            }
            let mut obj = case.obj.clone();
            obj["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"].clone();
            let name = obj["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            send(client, "PUT", &format!("{uri}/{name}"), &obj).await
        }
    };
    let mut wrong = Vec::new();
    if code != 422 || body["reason"] != "Invalid" {
        wrong.push(format!("answer {code} {}", body["reason"]));
    }
    if body["message"] != case.message {
        wrong.push(format!(
            "message\n      got:  {}\n      want: {}",
            body["message"], case.message
        ));
    }
    if !case.causes.is_empty() {
        let got: Vec<(String, String)> = body["details"]["causes"]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .map(|c| {
                        (
                            c["reason"].as_str().unwrap_or_default().to_string(),
                            c["field"].as_str().unwrap_or_default().to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let want: Vec<(String, String)> = case
            .causes
            .iter()
            .map(|(r, f)| (r.to_string(), f.to_string()))
            .collect();
        if got != want {
            wrong.push(format!("causes\n      got:  {got:?}\n      want: {want:?}"));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("\n    "))
    }
}

/// Runs every case on one server; fails listing each case whose answer differs.
pub(crate) async fn check_all(cases: Vec<Case>) {
    let server = server().await;
    let client = client(&server).await;
    let mut failures = Vec::new();
    for case in &cases {
        if let Err(why) = run(&client, case).await {
            failures.push(format!("{}:\n    {why}", case.rule));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from upstream:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// A minimal valid object of `api_version`/`kind` named `name` with the given fields.
pub(crate) fn object(api_version: &str, kind: &str, name: &str, fields: Value) -> Value {
    let mut obj = json!({ "apiVersion": api_version, "kind": kind, "metadata": { "name": name } });
    if let (Some(o), Some(f)) = (obj.as_object_mut(), fields.as_object()) {
        for (k, v) in f {
            if k == "metadata" {
                if let (Some(m), Some(extra)) = (o["metadata"].as_object_mut(), v.as_object()) {
                    m.extend(extra.clone());
                }
            } else {
                o.insert(k.clone(), v.clone());
            }
        }
    }
    obj
}
