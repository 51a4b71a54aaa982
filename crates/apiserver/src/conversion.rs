//! CRD conversion strategy `Webhook`: the `ConversionReview` a CRD's conversion webhook is
//! sent, and the checks its answer passes, as apiextensions-apiserver's webhook converter
//! makes them.
//!
//! One review per conversion: a single object, or every item of a list that is not already at
//! the desired version (items already there are not sent, and a conversion with nothing to
//! send calls nothing). The answer must be a `ConversionReview` (`apiextensions.k8s.io/v1`,
//! with the request's `uid`) whose `result.status` is `Success`, with as many objects as were
//! sent, each of the desired `apiVersion` and of the kind it was sent as, with the same name,
//! namespace and uid; its metadata is the original's but for labels and annotations, which the
//! webhook may change. Any failure is a 500 worded as upstream words it:
//! `conversion webhook for <group>/<version>, Kind=<Kind> failed: <why>`.
//!
//! This module neither reads nor writes the store: [`Webhook::from_crd`] is handed the CRD and
//! the store's [`Lookup`] (for `service` references) by the storage, and the HTTP layer calls
//! [`Webhook::convert_object`] and [`Webhook::convert_list`] outside the store's lock.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::admission::Lookup;
use crate::error::ApiError;
use crate::webhook_client::{self, Target};

/// How long a conversion webhook may take (upstream's fixed 30s).
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// The ConversionReview versions this server speaks, in no preference order (the CRD's
/// `conversionReviewVersions` order decides).
const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// A CRD's conversion webhook: where it is, which review version it speaks.
#[derive(Clone, Debug)]
pub(crate) struct Webhook {
    /// Where the webhook is reached, or why it cannot be.
    target: Result<Target, String>,
    /// `v1` or `v1beta1`: the first of the CRD's `conversionReviewVersions` this server speaks.
    review_version: &'static str,
    /// How long a call may take.
    timeout: Duration,
}

impl Webhook {
    /// The conversion webhook of a stored CRD: `None` when its strategy is not `Webhook`.
    /// `service` references are resolved through `lookup`; a configuration that cannot be
    /// used fails each conversion, as upstream's client does when it posts.
    pub(crate) fn from_crd(crd: &Value, lookup: &dyn Lookup) -> Option<Webhook> {
        let conversion = crd.pointer("/spec/conversion")?;
        if conversion.get("strategy").and_then(Value::as_str) != Some("Webhook") {
            return None;
        }
        let review_versions = conversion
            .pointer("/webhook/conversionReviewVersions")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let review_version = review_versions
            .iter()
            .filter_map(Value::as_str)
            .find_map(|v| REVIEW_VERSIONS.into_iter().find(|known| *known == v))
            .unwrap_or("v1");
        let target = match conversion.pointer("/webhook/clientConfig") {
            Some(client_config) => webhook_client::resolve(client_config, lookup),
            None => Err("no webhook clientConfig".to_string()),
        };
        Some(Webhook {
            target,
            review_version,
            timeout: TIMEOUT,
        })
    }

    /// A webhook at `target` speaking ConversionReview `v1` (tests).
    #[cfg(test)]
    pub(crate) fn for_target(target: Target) -> Webhook {
        Webhook {
            target: Ok(target),
            review_version: "v1",
            timeout: TIMEOUT,
        }
    }

    /// `object` at `api_version` (the object itself when it is there already).
    pub(crate) async fn convert_object(
        &self,
        object: Value,
        api_version: &str,
    ) -> Result<Value, ApiError> {
        if api_version_of(&object) == api_version {
            return Ok(object);
        }
        let gvk = gvk(&object);
        let mut converted = self
            .call(&gvk, std::slice::from_ref(&object), api_version)
            .await?;
        if converted.len() != 1 {
            return Err(failed(&format!(
                "conversion webhook for {gvk} returned {} objects, expected 1",
                converted.len()
            )));
        }
        let mut out = converted.remove(0);
        check_converted(&object, &out, api_version).map_err(|e| {
            failed(&format!(
                "conversion webhook for {gvk} returned invalid object: {e}"
            ))
        })?;
        restore_meta(&object, &mut out).map_err(|e| {
            failed(&format!(
                "conversion webhook for {gvk} returned invalid metadata: {e}"
            ))
        })?;
        Ok(out)
    }

    /// A `<Kind>List` at `api_version`: its items not already there converted in one review,
    /// the list's own `apiVersion` set.
    pub(crate) async fn convert_list(
        &self,
        mut list: Value,
        api_version: &str,
    ) -> Result<Value, ApiError> {
        let gvk = gvk(&list);
        let items = list
            .get_mut("items")
            .and_then(Value::as_array_mut)
            .map(std::mem::take)
            .unwrap_or_default();
        let (sent, at): (Vec<Value>, Vec<usize>) = items
            .iter()
            .enumerate()
            .filter(|(_, o)| api_version_of(o) != api_version)
            .map(|(i, o)| (o.clone(), i))
            .unzip();
        let mut items = items;
        if !sent.is_empty() {
            let converted = self.call(&gvk, &sent, api_version).await?;
            if converted.len() != sent.len() {
                return Err(failed(&format!(
                    "conversion webhook for {gvk} returned {} objects, expected {}",
                    converted.len(),
                    sent.len()
                )));
            }
            for (index, (mut out, i)) in converted.into_iter().zip(at).enumerate() {
                let original = &items[i];
                check_converted(original, &out, api_version).map_err(|e| {
                    failed(&format!(
                        "conversion webhook for {gvk} returned invalid converted object at index {index}: {e}"
                    ))
                })?;
                restore_meta(original, &mut out).map_err(|e| {
                    failed(&format!(
                        "conversion webhook for {gvk} returned invalid metadata in object at index {index}: {e}"
                    ))
                })?;
                items[i] = out;
            }
        }
        if let Some(map) = list.as_object_mut() {
            map.insert("items".into(), Value::Array(items));
            map.insert("apiVersion".into(), Value::from(api_version));
        }
        Ok(list)
    }

    /// Sends one review of `objects` and answers its validated `convertedObjects`.
    async fn call(
        &self,
        gvk: &str,
        objects: &[Value],
        api_version: &str,
    ) -> Result<Vec<Value>, ApiError> {
        let uid = crate_uid();
        let review = json!({
            "apiVersion": format!("apiextensions.k8s.io/{}", self.review_version),
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": api_version, "objects": objects},
        });
        let fail = |e: &dyn std::fmt::Display| {
            failed(&format!("conversion webhook for {gvk} failed: {e}"))
        };
        let target = self.target.as_ref().map_err(|e| fail(e))?;
        let answer = webhook_client::post_json(target, &review, self.timeout)
            .await
            .map_err(|e| fail(&e))?;
        self.converted_objects(&uid, answer).map_err(|e| fail(&e))
    }

    /// The `convertedObjects` of a webhook's answer, checked as upstream checks a v1 review
    /// (v1beta1 answers are not checked for their kind and uid, as upstream).
    fn converted_objects(&self, uid: &str, answer: Value) -> Result<Vec<Value>, String> {
        let v1 = self.review_version == "v1";
        if v1 {
            let got = format!(
                "{}, Kind={}",
                answer
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                answer.get("kind").and_then(Value::as_str).unwrap_or("")
            );
            let want = "apiextensions.k8s.io/v1, Kind=ConversionReview";
            if got != want {
                return Err(format!("expected webhook response of {want}, got {got}"));
            }
        }
        let Some(response) = answer.get("response").filter(|r| r.is_object()) else {
            return Err("no response provided".into());
        };
        let got_uid = response.get("uid").and_then(Value::as_str).unwrap_or("");
        if v1 && got_uid != uid {
            return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
        }
        let result = response.get("result");
        let status = result
            .and_then(|r| r.get("status"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if status != "Success" {
            let message = result
                .and_then(|r| r.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("");
            if !message.is_empty() {
                return Err(message.to_string());
            }
            return Err(format!(
                "response.result.status was '{status}', not 'Success'"
            ));
        }
        Ok(match response.get("convertedObjects") {
            Some(Value::Array(objects)) => objects.clone(),
            _ => Vec::new(),
        })
    }
}

/// The 500 of a failed conversion, as upstream's `NewInternalError` words it.
fn failed(message: &str) -> ApiError {
    ApiError::internal(format!("Internal error occurred: {message}"))
        .with_details(json!({"causes": [{"message": message}]}))
}

fn api_version_of(obj: &Value) -> &str {
    obj.get("apiVersion").and_then(Value::as_str).unwrap_or("")
}

/// An object's group, version and kind as Go prints a `GroupVersionKind`.
fn gvk(obj: &Value) -> String {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = api_version_of(obj);
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The checks of one converted object: the desired version, and the kind, name, namespace and
/// uid of the object sent.
fn check_converted(original: &Value, converted: &Value, api_version: &str) -> Result<(), String> {
    let got = api_version_of(converted);
    if got != api_version {
        return Err(format!(
            "invalid groupVersion (expected {api_version}, received {got})"
        ));
    }
    let kind = |o: &Value| {
        o.get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    if kind(original) != kind(converted) {
        return Err(format!(
            "invalid kind (expected {}, received {})",
            kind(original),
            kind(converted)
        ));
    }
    for (field, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let (e, a) = (meta_str(original, field), meta_str(converted, field));
        if e != a {
            return Err(format!("must have the same {what}: {e} != {a}"));
        }
    }
    Ok(())
}

/// The original's metadata, with the converted object's labels and annotations (each a map
/// of strings), as upstream's `restoreObjectMeta` keeps them.
fn restore_meta(original: &Value, converted: &mut Value) -> Result<(), String> {
    let answered = match converted.get("metadata") {
        None => return Err("missing metadata in converted object".into()),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                json_type(other)
            ));
        }
    };
    let mut meta = match original.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    for field in ["labels", "annotations"] {
        match answered.get(field) {
            None | Some(Value::Null) => {
                meta.remove(field);
            }
            Some(Value::Object(values)) => {
                if let Some((k, v)) = values.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!(
                        "metadata.{field}[{k}] must be a string, but is {} in converted object",
                        json_type(v)
                    ));
                }
                meta.insert(field.into(), Value::Object(values.clone()));
            }
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    json_type(other)
                ));
            }
        }
    }
    if let Some(map) = converted.as_object_mut() {
        map.insert("metadata".into(), Value::Object(meta));
    }
    Ok(())
}

/// A JSON value's type as Go names the type it decodes to.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// A fresh request uid.
fn crate_uid() -> String {
    let b: [u8; 16] = rand::random();
    format!(
        "{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
        b[0],
        b[1],
        b[2],
        b[3],
        b[4],
        b[5],
        b[6] & 0x0f | 0x40,
        b[7],
        b[8] & 0x3f | 0x80,
        b[9],
        b[10],
        b[11],
        b[12],
        b[13],
        b[14],
        b[15]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn webhook() -> Webhook {
        Webhook::for_target(Target {
            url: "https://127.0.0.1:1/convert".parse().unwrap(),
            server_name: "127.0.0.1".into(),
            ca_bundle: None,
        })
    }

    #[test]
    fn answers_are_checked_as_upstream_checks_them() {
        let w = webhook();
        let ok = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u", "result": {"status": "Success"}, "convertedObjects": [{"a": 1}]}});
        assert_eq!(
            w.converted_objects("u", ok.clone()).unwrap(),
            vec![json!({"a": 1})]
        );
        assert_eq!(
            w.converted_objects("other", ok).unwrap_err(),
            "expected response.uid=\"other\", got \"u\""
        );
        let failed = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u", "result": {"status": "Failure", "message": "no way"}}});
        assert_eq!(w.converted_objects("u", failed).unwrap_err(), "no way");
        let silent = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u", "result": {"status": "Failure"}}});
        assert_eq!(
            w.converted_objects("u", silent).unwrap_err(),
            "response.result.status was 'Failure', not 'Success'"
        );
        let wrong = json!({"apiVersion": "v1", "kind": "Status"});
        assert_eq!(
            w.converted_objects("u", wrong).unwrap_err(),
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got v1, Kind=Status"
        );
    }

    #[test]
    fn converted_objects_keep_the_original_metadata_but_labels_and_annotations() {
        let original = json!({"apiVersion": "example.com/v2", "kind": "W",
            "metadata": {"name": "a", "uid": "1", "resourceVersion": "7", "labels": {"x": "1"}}});
        let mut converted = json!({"apiVersion": "example.com/v1", "kind": "W",
            "metadata": {"name": "a", "uid": "1", "resourceVersion": "99", "annotations": {"n": "v"}}});
        check_converted(&original, &converted, "example.com/v1").unwrap();
        restore_meta(&original, &mut converted).unwrap();
        assert_eq!(
            converted["metadata"],
            json!({"name": "a", "uid": "1", "resourceVersion": "7", "annotations": {"n": "v"}})
        );
        let renamed = json!({"apiVersion": "example.com/v1", "kind": "W", "metadata": {"name": "b", "uid": "1"}});
        assert_eq!(
            check_converted(&original, &renamed, "example.com/v1").unwrap_err(),
            "must have the same name: a != b"
        );
        assert_eq!(
            check_converted(&original, &renamed, "example.com/v3").unwrap_err(),
            "invalid groupVersion (expected example.com/v3, received example.com/v1)"
        );
        let mut bad = json!({"metadata": {"labels": {"x": 1}}});
        assert_eq!(
            restore_meta(&original, &mut bad).unwrap_err(),
            "metadata.labels[x] must be a string, but is float64 in converted object"
        );
        assert_eq!(gvk(&original), "example.com/v2, Kind=W");
    }

    #[tokio::test]
    async fn nothing_to_convert_calls_nothing() {
        // The target refuses connections: any call would fail.
        let w = webhook();
        let obj = json!({"apiVersion": "example.com/v1", "kind": "W", "metadata": {"name": "a"}});
        assert_eq!(
            w.convert_object(obj.clone(), "example.com/v1")
                .await
                .unwrap(),
            obj
        );
        let list = json!({"apiVersion": "example.com/v2", "kind": "WList", "items": [obj.clone()]});
        let out = w.convert_list(list, "example.com/v1").await.unwrap();
        assert_eq!(out["apiVersion"], "example.com/v1");
        assert_eq!(out["items"][0], obj);
        let err = w
            .convert_object(
                json!({"apiVersion": "example.com/v2", "kind": "W"}),
                "example.com/v1",
            )
            .await
            .unwrap_err();
        assert_eq!(err.code, 500);
        assert!(
            err.message.starts_with(
                "Internal error occurred: conversion webhook for example.com/v2, Kind=W failed: "
            ),
            "{}",
            err.message
        );
    }
}
