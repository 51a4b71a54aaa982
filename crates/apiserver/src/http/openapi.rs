//! The OpenAPI documents kubectl reads, with the served kinds' schemas.
//!
//! - `/openapi/v3` is an index of per-group-version documents; each URL carries a hash of its
//!   document, so clients' caches notice when a CRD changes what a group version serves.
//! - `/openapi/v3/api/v1` and `/openapi/v3/apis/GROUP/VERSION` carry the schema of every kind
//!   the group version serves under `components.schemas`, by upstream's definition names
//!   (`io.k8s.api.apps.v1.Deployment`, `com.example.v1.Widget` for a custom resource) and with
//!   every type they reach: built-in kinds from [`crate::schema::builtin`] (k8s-openapi's
//!   schemas), custom resources from their CRD's `openAPIV3Schema`, wrapped with `apiVersion`,
//!   `kind` and an `ObjectMeta` `metadata` as upstream does. Kind schemas carry
//!   `x-kubernetes-group-version-kind`; merged lists carry `x-kubernetes-patch-strategy` and
//!   `x-kubernetes-patch-merge-key` from the server's own [`MergeKeys`] table, so `kubectl
//!   explain` and client-side strategic merge patches see what the server does.
//! - Their paths declare, for every served resource, POST, PUT and PATCH operations tagged with
//!   the kind's `x-kubernetes-group-version-kind` and the `fieldValidation` query parameter:
//!   kubectl (1.27+) looks for exactly that to leave field validation to the server. Custom
//!   resources honour it; built-in kinds are not checked.
//! - `/openapi/v2` is the same in Swagger 2.0 JSON (`definitions`, refs `#/definitions/...`),
//!   and in protobuf ([`proto`]: gnostic's `openapi.v2.Document`) for clients that ask for it:
//!   client-go's discovery asks v2 only in protobuf (`kubectl explain --output
//!   plaintext-openapiv2`, and kubectl's fallback when a v3 document is missing).
//!
//! The built-in part of a group version's document is computed once per process (per set of
//! served built-in resources); documents of group versions with custom resources are computed
//! per request, from the CRDs then stored.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use serde_json::{Map, Value, json};

use crate::discovery::GIT_VERSION;
use crate::patch::MergeKeys;
use crate::resource::ResourceInfo;
use crate::schema::builtin;

pub mod proto;

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const DEFS: &str = "#/$defs/";

fn gv_key(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// 64-bit FNV-1a: a stable content hash (not for security).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The built-in definitions with the extensions upstream adds: every kind's
/// `x-kubernetes-group-version-kind`, and the patch strategy and merge key of merged lists.
fn annotated() -> &'static BTreeMap<String, Value> {
    static DEFINITIONS: OnceLock<BTreeMap<String, Value>> = OnceLock::new();
    DEFINITIONS.get_or_init(|| {
        let mut defs = builtin::definitions().clone();
        for k in builtin::kinds() {
            if let Some(Value::Object(schema)) = defs.get_mut(k.definition) {
                let gvks = schema
                    .entry("x-kubernetes-group-version-kind")
                    .or_insert_with(|| json!([]));
                if let Some(list) = gvks.as_array_mut() {
                    list.push(json!({ "group": k.group, "version": k.version, "kind": k.kind }));
                }
            }
            let keys = MergeKeys::builtin(k.group, k.kind);
            let mut seen = BTreeSet::new();
            annotate_merge_keys(&mut defs, k.definition, &keys, &mut Vec::new(), &mut seen);
        }
        defs
    })
}

/// The definition a property refers to, directly or through its list's items.
fn referenced(prop: &Value) -> Option<&str> {
    let target = prop.get("items").unwrap_or(prop);
    target.get("$ref")?.as_str()?.strip_prefix(DEFS)
}

/// Marks the merged lists below definition `name` (reached at `path` of a kind) as `keys`
/// says; each definition is visited once per kind.
fn annotate_merge_keys(
    defs: &mut BTreeMap<String, Value>,
    name: &str,
    keys: &MergeKeys,
    path: &mut Vec<String>,
    seen: &mut BTreeSet<String>,
) {
    if !seen.insert(name.to_string()) {
        return;
    }
    let Some(props) = defs.get_mut(name).and_then(|d| d.get_mut("properties")) else {
        return;
    };
    let Some(props) = props.as_object_mut() else {
        return;
    };
    let mut next = Vec::new();
    for (field, prop) in props.iter_mut() {
        path.push(field.clone());
        let at: Vec<&str> = path.iter().map(String::as_str).collect();
        if prop.get("type").and_then(Value::as_str) == Some("array")
            && keys.is_merged_list(&at)
            && let Some(obj) = prop.as_object_mut()
        {
            obj.insert("x-kubernetes-patch-strategy".into(), "merge".into());
            if let Some(key) = keys.merge_key(&at) {
                obj.insert("x-kubernetes-patch-merge-key".into(), key.into());
            }
        }
        if let Some(target) = referenced(prop) {
            next.push((field.clone(), target.to_string()));
        }
        path.pop();
    }
    for (field, target) in next {
        path.push(field);
        annotate_merge_keys(defs, &target, keys, path, seen);
        path.pop();
    }
}

/// Every definition reachable from `roots`, by name.
fn closure(
    defs: &BTreeMap<String, Value>,
    roots: impl IntoIterator<Item = String>,
    out: &mut BTreeMap<String, Value>,
) {
    let mut todo: Vec<String> = roots.into_iter().collect();
    while let Some(name) = todo.pop() {
        if out.contains_key(&name) {
            continue;
        }
        let Some(schema) = defs.get(&name) else {
            continue;
        };
        collect_refs(schema, &mut todo);
        out.insert(name, schema.clone());
    }
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(name) = m
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix(DEFS))
            {
                out.push(name.to_string());
            }
            m.values().for_each(|v| collect_refs(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// Rewrites `#/$defs/<name>` references to `prefix<name>`; with `wrap` (OpenAPI v3), a
/// reference with sibling keywords (a description) becomes `allOf: [{$ref}]`, as upstream
/// writes it, since v3 ignores a `$ref`'s siblings.
fn rewrite_refs(v: &mut Value, prefix: &str, wrap: bool) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref")
                && let Some(name) = r.strip_prefix(DEFS)
            {
                *r = format!("{prefix}{name}");
                if wrap && m.len() > 1 {
                    let r = m.remove("$ref").unwrap_or_default();
                    m.insert("allOf".into(), json!([{ "$ref": r }]));
                }
                return;
            }
            m.values_mut().for_each(|v| rewrite_refs(v, prefix, wrap));
        }
        Value::Array(a) => a.iter_mut().for_each(|v| rewrite_refs(v, prefix, wrap)),
        _ => {}
    }
}

/// Upstream's definition name of a custom kind: the group reversed, then version and kind
/// (`com.example.v1.Widget`).
fn custom_name(r: &ResourceInfo) -> String {
    let mut parts: Vec<&str> = r.group.split('.').collect();
    parts.reverse();
    format!("{}.{}.{}", parts.join("."), r.version, r.kind)
}

/// The served version's `openAPIV3Schema` of the CRD serving `r`.
fn crd_schema<'a>(crds: &'a [Value], r: &ResourceInfo) -> Option<&'a Value> {
    let crd = crds.iter().find(|c| {
        c.pointer("/spec/group").and_then(Value::as_str) == Some(r.group.as_str())
            && c.pointer("/spec/names/plural").and_then(Value::as_str) == Some(r.plural.as_str())
    })?;
    crd.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(r.version.as_str()))?
        .pointer("/schema/openAPIV3Schema")
}

/// A custom kind's schema, wrapped as upstream wraps it. Swagger 2.0 gets what kubectl's
/// client-side validation copes with (apiextensions' `ToStructuralOpenAPIV2`): a root keeping
/// unknown fields is a bare `object`, and [`to_v2`] simplifies the rest.
fn custom_schema(crds: &[Value], r: &ResourceInfo, flavor: Flavor) -> Value {
    let gvk = json!([{ "group": r.group, "version": r.version, "kind": r.kind }]);
    let mut schema = crd_schema(crds, r)
        .cloned()
        .unwrap_or_else(|| json!({ "type": "object" }));
    if flavor == Flavor::V2 {
        if preserves_unknown(&schema) {
            return json!({ "type": "object", "x-kubernetes-group-version-kind": gvk });
        }
        to_v2(&mut schema);
    }
    let Some(obj) = schema.as_object_mut() else {
        return schema;
    };
    let props = obj
        .entry("properties")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    if let Some(props) = props {
        // The same fields, with the same docs, as every built-in kind's.
        let field = |f: &str| {
            annotated()
                .get("io.k8s.api.core.v1.ConfigMap")
                .and_then(|cm| cm.pointer(&format!("/properties/{f}")))
                .cloned()
                .unwrap_or_else(|| json!({ "type": "string" }))
        };
        props.insert("apiVersion".into(), field("apiVersion"));
        props.insert("kind".into(), field("kind"));
        props.insert("metadata".into(), field("metadata"));
    }
    obj.insert("x-kubernetes-group-version-kind".into(), gvk);
    schema
}

fn preserves_unknown(schema: &Value) -> bool {
    schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
}

/// A structural schema as Swagger 2.0 publishes it, at every depth: no junctors (`allOf`,
/// `oneOf`, `anyOf`, `not`); a nullable node untyped, without `items` or `properties`; a node
/// keeping unknown fields without `items` or `properties` (and untyped when an object); an
/// array without `items` untyped; nullable properties no longer `required`.
fn to_v2(schema: &mut Value) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    for junctor in ["allOf", "oneOf", "anyOf", "not"] {
        obj.remove(junctor);
    }
    if obj.remove("nullable") == Some(Value::Bool(true)) {
        obj.remove("type");
        obj.remove("items");
        obj.remove("properties");
    }
    let preserve = obj.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if preserve {
        obj.remove("items");
        obj.remove("properties");
    }
    let is = |obj: &Map<String, Value>, t: &str| obj.get("type").and_then(Value::as_str) == Some(t);
    if (is(obj, "array") && !obj.contains_key("items")) || (preserve && is(obj, "object")) {
        obj.remove("type");
    }
    let nullable = |v: &Value| v.get("nullable") == Some(&Value::Bool(true));
    let nullable_props: Vec<String> = obj
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .filter(|(_, p)| nullable(p))
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default();
    let nullable_values = obj.get("additionalProperties").is_some_and(nullable);
    if let Some(Value::Array(required)) = obj.get_mut("required") {
        required.retain(|f| {
            !f.as_str()
                .is_some_and(|f| nullable_props.iter().any(|p| p == f))
        });
    }
    if nullable_values || obj.get("required").is_some_and(|r| r == &json!([])) {
        obj.remove("required");
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        props.values_mut().for_each(to_v2);
    }
    if let Some(items) = obj.get_mut("items") {
        to_v2(items);
    }
    if let Some(extra @ Value::Object(_)) = obj.get_mut("additionalProperties") {
        to_v2(extra);
    }
}

/// The schemas of one group version's kinds (refs `#/$defs/...`), and each kind's name.
fn schemas(
    served: &[&ResourceInfo],
    crds: &[Value],
    flavor: Flavor,
) -> (BTreeMap<String, Value>, HashMap<String, String>) {
    let mut out = BTreeMap::new();
    let mut names = HashMap::new();
    let mut roots = Vec::new();
    for r in served {
        if r.custom {
            let name = custom_name(r);
            out.insert(name.clone(), custom_schema(crds, r, flavor));
            roots.push(OBJECT_META.to_string());
            names.insert(r.kind.clone(), name);
        } else if let Some(k) = builtin::kind(&r.group, &r.version, &r.kind) {
            roots.push(k.definition.to_string());
            names.insert(r.kind.clone(), k.definition.to_string());
        }
    }
    closure(annotated(), roots, &mut out);
    (out, names)
}

/// The operations' query parameters: `fieldValidation` is the one kubectl looks for.
fn query_parameters() -> Vec<Value> {
    ["dryRun", "fieldManager", "fieldValidation"]
        .iter()
        .map(|name| json!({ "name": name, "in": "query", "type": "string", "schema": { "type": "string", "uniqueItems": true } }))
        .collect()
}

/// How a document version writes operations.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flavor {
    V2,
    V3,
}

impl Flavor {
    fn prefix(self) -> &'static str {
        match self {
            Flavor::V2 => "#/definitions/",
            Flavor::V3 => "#/components/schemas/",
        }
    }
}

fn operation(
    r: &ResourceInfo,
    action: &str,
    content: &[&str],
    schema: Option<&str>,
    flavor: Flavor,
) -> Value {
    let body_schema = schema.map_or(
        json!({}),
        |s| json!({ "$ref": format!("{}{s}", flavor.prefix()) }),
    );
    // PATCH bodies are patches, not objects.
    let request_schema = if action == "patch" {
        json!({ "type": "object" })
    } else {
        body_schema.clone()
    };
    let mut params = query_parameters();
    let mut op = json!({
        "operationId": format!("{action}{}", r.kind),
        "responses": {},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": { "group": r.group, "version": r.version, "kind": r.kind },
    });
    match flavor {
        Flavor::V3 => {
            let content_of = |schema: &Value| -> Map<String, Value> {
                content
                    .iter()
                    .map(|c| (c.to_string(), json!({ "schema": schema })))
                    .collect()
            };
            for p in &mut params {
                p.as_object_mut().map(|p| p.remove("type"));
            }
            op["requestBody"] = json!({ "content": content_of(&request_schema), "required": true });
            op["responses"]["200"] = json!({
                "description": "OK",
                "content": { "application/json": { "schema": body_schema } },
            });
        }
        Flavor::V2 => {
            for p in &mut params {
                p.as_object_mut().map(|p| p.remove("schema"));
            }
            params.push(
                json!({ "name": "body", "in": "body", "required": true, "schema": request_schema }),
            );
            op["consumes"] = json!(content);
            op["produces"] = json!(["application/json"]);
            op["responses"]["200"] = json!({ "description": "OK", "schema": body_schema });
        }
    }
    op["parameters"] = Value::Array(params);
    op
}

fn paths(
    served: &[&ResourceInfo],
    names: &HashMap<String, String>,
    flavor: Flavor,
    out: &mut Map<String, Value>,
) {
    for r in served {
        let prefix = if r.group.is_empty() {
            format!("/api/{}", r.version)
        } else {
            format!("/apis/{}/{}", r.group, r.version)
        };
        let collection = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", r.plural)
        } else {
            format!("{prefix}/{}", r.plural)
        };
        let schema = names.get(&r.kind).map(String::as_str);
        out.insert(
            collection.clone(),
            json!({ "post": operation(r, "post", &["*/*"], schema, flavor) }),
        );
        // kubectl computes strategic merge patches from these schemas only where the operation
        // accepts them: built-in kinds (custom resources get JSON merge patches, as upstream).
        let mut patch_types = vec![
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ];
        if !r.custom {
            patch_types.push("application/strategic-merge-patch+json");
        }
        out.insert(
            format!("{collection}/{{name}}"),
            json!({
                "put": operation(r, "put", &["*/*"], schema, flavor),
                "patch": operation(r, "patch", &patch_types, schema, flavor),
            }),
        );
    }
}

/// A v3 document and its hash.
struct Document {
    doc: Value,
    hash: u64,
}

fn build_v3(served: &[&ResourceInfo], crds: &[Value]) -> Document {
    let (mut schemas, names) = schemas(served, crds, Flavor::V3);
    for s in schemas.values_mut() {
        rewrite_refs(s, Flavor::V3.prefix(), true);
    }
    let mut p = Map::new();
    paths(served, &names, Flavor::V3, &mut p);
    let doc = json!({
        "openapi": "3.0.0",
        "info": { "title": "Kubernetes", "version": GIT_VERSION },
        "paths": p,
        "components": { "schemas": schemas },
    });
    let hash = fnv1a(doc.to_string().as_bytes());
    Document { doc, hash }
}

/// The v3 document of `group`/`version`: from the cache when it serves built-in kinds only.
fn v3_document(
    resources: &[ResourceInfo],
    crds: &[Value],
    group: &str,
    version: &str,
) -> Option<Arc<Document>> {
    let served: Vec<&ResourceInfo> = resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    if served.is_empty() {
        return None;
    }
    if served.iter().any(|r| r.custom) {
        return Some(Arc::new(build_v3(&served, crds)));
    }
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Document>>>> = OnceLock::new();
    let key = served
        .iter()
        .map(|r| {
            format!(
                "{}/{}/{}/{}/{}",
                r.group, r.version, r.plural, r.kind, r.namespaced
            )
        })
        .collect::<Vec<_>>()
        .join(",");
    let cache = CACHE.get_or_init(Default::default);
    if let Some(doc) = cache.lock().get(&key) {
        return Some(doc.clone());
    }
    let doc = Arc::new(build_v3(&served, crds));
    cache.lock().insert(key, doc.clone());
    Some(doc)
}

/// `/openapi/v3`: the index of per-group-version documents, each URL with its document's hash.
pub fn v3_root(resources: &[ResourceInfo], crds: &[Value]) -> Value {
    let mut paths = Map::new();
    for r in resources {
        let key = gv_key(&r.group, &r.version);
        if paths.contains_key(&key) {
            continue;
        }
        let Some(doc) = v3_document(resources, crds, &r.group, &r.version) else {
            continue;
        };
        let url = format!("/openapi/v3/{key}?hash={:016X}", doc.hash);
        paths.insert(key, json!({ "serverRelativeURL": url }));
    }
    json!({ "paths": paths })
}

/// `/openapi/v3/api/v1` or `/openapi/v3/apis/GROUP/VERSION`, if served. `crds` are the stored
/// CustomResourceDefinitions, whose schemas document the custom resources.
pub fn v3_group_version(
    resources: &[ResourceInfo],
    crds: &[Value],
    group: &str,
    version: &str,
) -> Option<Value> {
    v3_document(resources, crds, group, version).map(|d| d.doc.clone())
}

/// `/openapi/v2`: the legacy Swagger 2.0 document, every served kind's schema under
/// `definitions`.
pub fn v2(resources: &[ResourceInfo], crds: &[Value]) -> Value {
    let served: Vec<&ResourceInfo> = resources.iter().collect();
    let (mut defs, names) = schemas(&served, crds, Flavor::V2);
    for s in defs.values_mut() {
        rewrite_refs(s, Flavor::V2.prefix(), false);
    }
    let mut p = Map::new();
    paths(&served, &names, Flavor::V2, &mut p);
    json!({
        "swagger": "2.0",
        "info": { "title": "Kubernetes", "version": GIT_VERSION },
        "paths": p,
        "definitions": defs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(group: &str, version: &str, plural: &str, kind: &str, custom: bool) -> ResourceInfo {
        ResourceInfo {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            singular: kind.to_lowercase(),
            kind: kind.into(),
            list_kind: format!("{kind}List"),
            namespaced: true,
            short_names: vec![],
            categories: vec![],
            status_subresource: false,
            scale: None,
            generation: false,
            custom,
            deprecation_warning: None,
            selectable_fields: Vec::new(),
            storage_version_hash: None,
        }
    }

    fn cm() -> ResourceInfo {
        res("", "v1", "configmaps", "ConfigMap", false)
    }

    fn widget() -> ResourceInfo {
        res("example.com", "v1", "widgets", "Widget", true)
    }

    fn crd(spec_props: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": { "name": "widgets.example.com" },
            "spec": {
                "group": "example.com",
                "names": { "plural": "widgets", "kind": "Widget" },
                "scope": "Namespaced",
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": { "openAPIV3Schema": {
                        "type": "object",
                        "properties": { "spec": { "type": "object", "description": "The widget.", "properties": spec_props } },
                    } },
                }],
            },
        })
    }

    /// Every `$ref` in `doc` starts with `prefix` and names a schema under `schemas`.
    fn assert_refs_resolve(doc: &Value, prefix: &str, schemas: &Value) {
        fn walk(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Object(m) => {
                    if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                        out.push(r.to_string());
                    }
                    m.values().for_each(|v| walk(v, out));
                }
                Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
                _ => {}
            }
        }
        let mut refs = Vec::new();
        walk(doc, &mut refs);
        assert!(!refs.is_empty());
        for r in refs {
            let name = r.strip_prefix(prefix).unwrap_or_else(|| panic!("{r}"));
            assert!(schemas.get(name).is_some(), "{r} does not resolve");
        }
    }

    #[test]
    fn patch_operations_declare_field_validation() {
        let root = v3_root(&[cm()], &[]);
        let url = root["paths"]["api/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        assert!(url.starts_with("/openapi/v3/api/v1?hash="), "{url}");
        let other = res("", "v1", "secrets", "Secret", false);
        let changed = v3_root(&[cm(), other], &[]);
        assert_ne!(changed["paths"]["api/v1"], root["paths"]["api/v1"]);
        let doc = v3_group_version(&[cm()], &[], "", "v1").unwrap();
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
        assert!(v3_group_version(&[cm()], &[], "apps", "v1").is_none());
    }

    #[test]
    fn v3_documents_carry_the_served_kinds_schemas() {
        let deploy = res("apps", "v1", "deployments", "Deployment", false);
        let doc = v3_group_version(&[deploy], &[], "apps", "v1").unwrap();
        let schemas = &doc["components"]["schemas"];
        assert_refs_resolve(&doc, "#/components/schemas/", schemas);
        let d = &schemas["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            d["x-kubernetes-group-version-kind"],
            json!([{ "group": "apps", "version": "v1", "kind": "Deployment" }])
        );
        // A described reference is wrapped in allOf, as upstream writes it.
        assert_eq!(
            d["properties"]["spec"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"
        );
        let replicas = &schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"];
        assert_eq!(replicas["type"], "integer");
        let containers = &schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
        let tolerations = &schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["tolerations"];
        assert!(tolerations.get("x-kubernetes-patch-merge-key").is_none());
        let ports = &schemas["io.k8s.api.core.v1.Container"]["properties"]["ports"];
        assert_eq!(ports["x-kubernetes-patch-merge-key"], "containerPort");
        // The operations' bodies are the kind.
        let put = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["put"];
        assert_eq!(
            put["requestBody"]["content"]["*/*"]["schema"]["$ref"],
            "#/components/schemas/io.k8s.api.apps.v1.Deployment"
        );
        // Only what the group version reaches: no core kinds.
        assert!(schemas.get("io.k8s.api.core.v1.ConfigMap").is_none());
    }

    #[test]
    fn custom_resources_get_their_crd_schema() {
        let crds = [crd(json!({ "size": { "type": "integer" } }))];
        let doc = v3_group_version(&[widget()], &crds, "example.com", "v1").unwrap();
        let schemas = &doc["components"]["schemas"];
        assert_refs_resolve(&doc, "#/components/schemas/", schemas);
        let w = &schemas["com.example.v1.Widget"];
        assert_eq!(
            w["properties"]["spec"]["properties"]["size"]["type"],
            "integer"
        );
        assert_eq!(
            w["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert_eq!(w["properties"]["kind"]["type"], "string");
        // kubectl must not send strategic merge patches for custom resources.
        let patch =
            &doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
        let content = patch["requestBody"]["content"].as_object().unwrap();
        assert!(content.contains_key("application/merge-patch+json"));
        assert!(!content.contains_key("application/strategic-merge-patch+json"));
        assert_eq!(
            w["x-kubernetes-group-version-kind"][0],
            json!({ "group": "example.com", "version": "v1", "kind": "Widget" })
        );
        // The index's hash follows the CRD's schema.
        let before = v3_root(&[widget()], &crds);
        let changed = [crd(json!({ "size": { "type": "string" } }))];
        let after = v3_root(&[widget()], &changed);
        assert_ne!(
            before["paths"]["apis/example.com/v1"],
            after["paths"]["apis/example.com/v1"]
        );
    }

    #[test]
    fn v2_simplifies_custom_schemas_as_upstream() {
        let preserving = json!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true });
        let mut c = crd(json!({}));
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = preserving.clone();
        let doc = v2(&[widget()], &[c.clone()]);
        assert_eq!(
            doc["definitions"]["com.example.v1.Widget"],
            json!({ "type": "object", "x-kubernetes-group-version-kind":
                [{ "group": "example.com", "version": "v1", "kind": "Widget" }] })
        );
        // Version 3 publishes the schema as written, with the object's fields.
        let v3 = v3_group_version(&[widget()], &[c], "example.com", "v1").unwrap();
        let w = &v3["components"]["schemas"]["com.example.v1.Widget"];
        assert_eq!(w["x-kubernetes-preserve-unknown-fields"], true);
        assert_eq!(w["properties"]["kind"]["type"], "string");

        let doc = v2(
            &[widget()],
            &[crd(json!({
                "free": { "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                          "properties": { "a": { "type": "string" } } },
                "maybe": { "type": "string", "nullable": true },
                "list": { "type": "array", "nullable": true, "items": { "type": "string" } },
                "either": { "type": "string", "oneOf": [{ "format": "ipv4" }, { "format": "ipv6" }] },
            }))],
        );
        let spec = &doc["definitions"]["com.example.v1.Widget"]["properties"]["spec"]["properties"];
        assert_eq!(
            spec["free"],
            json!({ "x-kubernetes-preserve-unknown-fields": true })
        );
        assert_eq!(spec["maybe"], json!({}));
        assert_eq!(spec["list"], json!({}));
        assert_eq!(spec["either"], json!({ "type": "string" }));
    }

    #[test]
    fn v2_has_definitions_and_paths() {
        let crds = [crd(json!({}))];
        let doc = v2(&[cm(), widget()], &crds);
        let defs = &doc["definitions"];
        assert_refs_resolve(&doc, "#/definitions/", defs);
        assert!(defs.get("io.k8s.api.core.v1.ConfigMap").is_some());
        assert!(defs.get("com.example.v1.Widget").is_some());
        let patch =
            &doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
        );
    }
}
