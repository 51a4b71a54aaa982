//! YAML as a wire format (`application/yaml`), as kube-apiserver serves it besides JSON and
//! protobuf: create and update bodies in YAML, and whole answers (objects, lists, `Status`
//! errors) in YAML when the client's first choice in `Accept` is YAML. Watch streams stay JSON
//! (YAML has no stream framing, upstream streams no YAML either).
//!
//! Answers are built as JSON and transcoded here, keeping their field order.

use http::Response;
use serde_json::Value;

use super::Body;
use crate::error::ApiError;

/// The media type.
pub const MEDIA_TYPE: &str = "application/yaml";

/// Whether the first media range of `Accept` is YAML (without an `as=` conversion: tables and
/// metadata are answered in JSON).
pub fn wants(accept: Option<&str>) -> bool {
    let Some(first) = accept.and_then(|a| a.split(',').next()) else {
        return false;
    };
    let mut params = first.split(';').map(str::trim);
    params
        .next()
        .is_some_and(|m| m.eq_ignore_ascii_case(MEDIA_TYPE))
        && !params.any(|p| p.starts_with("as="))
}

/// A YAML request body as the JSON object the server works on: one document, a mapping.
pub fn decode(body: &[u8]) -> Result<Value, ApiError> {
    let value: Value = serde_yaml_ng::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!(
            "couldn't get version/kind; json parse error: error converting YAML to JSON: {e}"
        ))
    })?;
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "couldn't get version/kind; json parse error: the body is not an object",
        ));
    }
    Ok(value)
}

/// A whole JSON answer re-encoded as YAML; any other answer (a watch stream) is left as it is.
pub async fn answer(resp: Response<Body>) -> Response<Body> {
    super::response::reencode_json(resp, |json| {
        transcode(json).map(|yaml| (yaml.into_bytes(), MEDIA_TYPE))
    })
    .await
}

/// JSON text as YAML text, in the same field order (YAML mappings keep insertion order).
fn transcode(json: &[u8]) -> Option<String> {
    let value: serde_yaml_ng::Value = serde_json::from_slice(json).ok()?;
    serde_yaml_ng::to_string(&value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_is_wanted_only_as_the_first_plain_choice() {
        assert!(wants(Some("application/yaml")));
        assert!(wants(Some("application/yaml, application/json")));
        assert!(!wants(Some("application/json, application/yaml")));
        assert!(!wants(Some(
            "application/yaml;as=Table;v=v1;g=meta.k8s.io, application/json"
        )));
        assert!(!wants(None));
    }

    #[test]
    fn answers_keep_their_field_order() {
        let yaml =
            transcode(br#"{"kind":"ConfigMap","apiVersion":"v1","data":{"b":"1","a":"true"}}"#)
                .unwrap();
        assert_eq!(
            yaml,
            "kind: ConfigMap\napiVersion: v1\ndata:\n  b: '1'\n  a: 'true'\n"
        );
    }

    #[test]
    fn bodies_are_one_mapping() {
        let obj =
            decode(b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  n: '1'\n")
                .unwrap();
        assert_eq!(obj["metadata"]["name"], "x");
        assert_eq!(obj["data"]["n"], "1");
        assert_eq!(decode(b"- a\n- b\n").unwrap_err().code, 400);
        assert_eq!(decode(b"a: [\n").unwrap_err().code, 400);
    }
}
