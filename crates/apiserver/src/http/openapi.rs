//! The OpenAPI documents kubectl reads.
//!
//! kubectl (1.27+) decides whether the server validates fields itself (so that it can skip
//! client-side schema validation) by looking, in the OpenAPI v3 document of the object's group
//! version, for a PATCH operation tagged with the object's `x-kubernetes-group-version-kind`
//! that declares the `fieldValidation` query parameter. These documents declare exactly that
//! for every served resource (custom resources honour it; built-in kinds are not checked).
//! They carry no schemas: `kubectl apply` then computes patches from its compiled-in types
//! (built-in kinds) or as JSON merge patches (custom resources), as it does against any server
//! without schemas.
//! `/openapi/v2` is a minimal Swagger 2.0 document without definitions: kubectl only reads it
//! as a fallback (and asks for protobuf, which it then cannot use).

use serde_json::{Value, json};

use crate::discovery::GIT_VERSION;
use crate::resource::ResourceInfo;

/// `/openapi/v2`: the legacy document (a minimal Swagger 2.0 one).
pub fn v2(_resources: &[ResourceInfo]) -> Value {
    json!({ "swagger": "2.0", "info": { "title": "Kubernetes", "version": GIT_VERSION }, "paths": {}, "definitions": {} })
}

fn gv_key(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `/openapi/v3`: the index of per-group-version documents. Each URL carries a hash of its
/// document, so clients' caches notice when a CRD changes what a group version serves.
pub fn v3_root(resources: &[ResourceInfo]) -> Value {
    let mut paths = serde_json::Map::new();
    for r in resources {
        let key = gv_key(&r.group, &r.version);
        if paths.contains_key(&key) {
            continue;
        }
        let doc = v3_group_version(resources, &r.group, &r.version).unwrap_or_default();
        let url = format!(
            "/openapi/v3/{key}?hash={:016X}",
            fnv1a(doc.to_string().as_bytes())
        );
        paths.insert(key, json!({ "serverRelativeURL": url }));
    }
    json!({ "paths": paths })
}

/// 64-bit FNV-1a: a stable content hash (not for security).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn parameters() -> Value {
    let query = |name: &str| json!({ "name": name, "in": "query", "schema": { "type": "string", "uniqueItems": true } });
    json!([
        query("dryRun"),
        query("fieldManager"),
        query("fieldValidation")
    ])
}

fn operation(r: &ResourceInfo, action: &str, content: &[&str]) -> Value {
    let content: serde_json::Map<String, Value> = content
        .iter()
        .map(|c| (c.to_string(), json!({ "schema": {} })))
        .collect();
    json!({
        "operationId": format!("{action}{}", r.kind),
        "parameters": parameters(),
        "requestBody": { "content": content, "required": true },
        "responses": { "200": { "description": "OK" } },
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": { "group": r.group, "version": r.version, "kind": r.kind },
    })
}

/// `/openapi/v3/api/v1` or `/openapi/v3/apis/GROUP/VERSION`, if served.
pub fn v3_group_version(resources: &[ResourceInfo], group: &str, version: &str) -> Option<Value> {
    let mut paths = serde_json::Map::new();
    let prefix = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    for r in resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        let collection = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", r.plural)
        } else {
            format!("{prefix}/{}", r.plural)
        };
        paths.insert(
            collection.clone(),
            json!({ "post": operation(r, "post", &["*/*"]) }),
        );
        let patch_types = [
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ];
        paths.insert(
            format!("{collection}/{{name}}"),
            json!({ "put": operation(r, "put", &["*/*"]), "patch": operation(r, "patch", &patch_types) }),
        );
    }
    if paths.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": { "title": "Kubernetes", "version": GIT_VERSION },
        "paths": paths,
        "components": { "schemas": {} },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm() -> ResourceInfo {
        ResourceInfo {
            group: String::new(),
            version: "v1".into(),
            plural: "configmaps".into(),
            singular: "configmap".into(),
            kind: "ConfigMap".into(),
            list_kind: "ConfigMapList".into(),
            namespaced: true,
            short_names: vec![],
            categories: vec![],
            status_subresource: false,
            scale: None,
            generation: false,
            custom: false,
        }
    }

    #[test]
    fn patch_operations_declare_field_validation() {
        let root = v3_root(&[cm()]);
        let url = root["paths"]["api/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        assert!(url.starts_with("/openapi/v3/api/v1?hash="), "{url}");
        let mut other = cm();
        other.plural = "others".into();
        let changed = v3_root(&[cm(), other]);
        assert_ne!(changed["paths"]["api/v1"], root["paths"]["api/v1"]);
        let doc = v3_group_version(&[cm()], "", "v1").unwrap();
        let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"]["kind"],
            "ConfigMap"
        );
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        assert!(v3_group_version(&[cm()], "apps", "v1").is_none());
    }
}
