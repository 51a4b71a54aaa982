//! Decoding of built-in objects as kube-apiserver's JSON decoder does it: a value of the
//! wrong JSON type is an error worded as Go's `encoding/json` words its `UnmarshalTypeError`,
//! and fields the kind's Go structs do not declare are dropped and reported (for
//! `fieldValidation`), with paths as upstream's strict decoder prints them.
//!
//! The walk follows the kind's schema in [`builtin::definitions`] over the object in place:
//! nothing is cloned, and paths are only rendered when something is reported.
//!
//! Types whose Go decoding is their own are accepted as the real decoder accepts them:
//! `IntOrString` (a string or an int32), `Quantity` (a string or a number), `Time` (a string),
//! and schemas without a type or an object schema without properties (`RawExtension`,
//! apiextensions' `JSON`, `FieldsV1`: any JSON).
//!
//! ```
//! use crt_apiserver::schema::decode;
//! use serde_json::json;
//!
//! let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
//!                     "data": {"a": 1}});
//! let err = decode::decode("io.k8s.api.core.v1.ConfigMap", &mut cm).unwrap_err();
//! assert_eq!(err, "json: cannot unmarshal number into Go struct field ConfigMap.data of type string");
//!
//! let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
//!                     "data": {"a": "1"}, "colour": "red"});
//! let unknown = decode::decode("io.k8s.api.core.v1.ConfigMap", &mut cm).unwrap();
//! assert_eq!(unknown, ["colour"]);
//! assert!(cm.get("colour").is_none());
//! ```

use std::fmt::Write as _;

use serde_json::Value;

use super::builtin;

const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";

/// Decodes `obj` as the built-in type `definition` (a name in [`builtin::definitions`]):
/// answers Go's message for the first value of the wrong type, or else the paths of the
/// unknown fields, which are removed from `obj` (in the order the walk meets them).
/// An unknown `definition` accepts anything.
pub fn decode(definition: &str, obj: &mut Value) -> Result<Vec<String>, String> {
    let defs = builtin::definitions();
    let Some((name, schema)) = defs.get_key_value(definition) else {
        return Ok(Vec::new());
    };
    let mut unknown = Vec::new();
    let root = Path::Root;
    walk(
        schema,
        Some(name.as_str()),
        obj,
        &root,
        struct_name(name),
        &mut unknown,
    )?;
    Ok(unknown)
}

/// Where the walk is, kept on the call stack: struct fields (which Go's error names), map
/// keys and array indices (which only the strict decoder's paths name).
enum Path<'p> {
    Root,
    Field(&'p Path<'p>, &'p str),
    Key(&'p Path<'p>, &'p str),
    Index(&'p Path<'p>, usize),
}

impl Path<'_> {
    /// The strict decoder's form: `spec.template.spec.containers[0].foo`.
    fn strict(&self, out: &mut String) {
        match self {
            Path::Root => {}
            Path::Field(p, n) | Path::Key(p, n) => {
                p.strict(out);
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(n);
            }
            Path::Index(p, i) => {
                p.strict(out);
                let _ = write!(out, "[{i}]");
            }
        }
    }

    /// Go's `UnmarshalTypeError.Field`: the struct fields only, dotted.
    fn go(&self, out: &mut String) {
        match self {
            Path::Root => {}
            Path::Field(p, n) => {
                p.go(out);
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(n);
            }
            Path::Key(p, _) | Path::Index(p, _) => p.go(out),
        }
    }
}

/// The schema behind `$ref`s, with the definition's name when there was one.
fn resolve(schema: &'static Value) -> (&'static Value, Option<&'static str>) {
    let mut s = schema;
    let mut name = None;
    while let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let Some((k, v)) = r
            .strip_prefix("#/$defs/")
            .and_then(|n| builtin::definitions().get_key_value(n))
        else {
            break;
        };
        s = v;
        name = Some(k.as_str());
    }
    (s, name)
}

/// `io.k8s.api.core.v1.PodSpec` → `PodSpec`.
fn struct_name(definition: &str) -> &str {
    definition.rsplit('.').next().unwrap_or(definition)
}

/// The Go type a schema decodes into, as `reflect.Type.String()` prints it.
fn go_type(schema: &'static Value) -> String {
    let (s, name) = resolve(schema);
    if let Some(name) = name {
        let mut parts = name.rsplit('.');
        let ty = parts.next().unwrap_or(name);
        let pkg = parts.next().unwrap_or("");
        return format!("{pkg}.{ty}");
    }
    let format = s.get("format").and_then(Value::as_str);
    match s.get("type").and_then(Value::as_str) {
        Some("string") if format == Some("byte") => "[]uint8".into(),
        Some("string") => "string".into(),
        Some("integer") => format.unwrap_or("int64").into(),
        Some("number") => "float64".into(),
        Some("boolean") => "bool".into(),
        Some("array") => match s.get("items") {
            Some(items) => format!("[]{}", go_type(items)),
            None => "[]interface {}".into(),
        },
        Some("object") => match s.get("additionalProperties") {
            Some(ap) if ap.is_object() => format!("map[string]{}", go_type(ap)),
            _ => "map[string]interface {}".into(),
        },
        _ => "interface {}".into(),
    }
}

/// Go's name for a JSON value in an `UnmarshalTypeError`.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn mismatch(value: &str, path: &Path<'_>, strukt: &str, ty: &str) -> String {
    let mut field = String::new();
    path.go(&mut field);
    if field.is_empty() {
        format!("json: cannot unmarshal {value} into Go value of type {ty}")
    } else {
        format!("json: cannot unmarshal {value} into Go struct field {strukt}.{field} of type {ty}")
    }
}

/// Whether a JSON number decodes into a Go integer of `bits`.
fn fits(n: &serde_json::Number, bits: u32) -> bool {
    match n.as_i64() {
        Some(i) if bits == 32 => i32::try_from(i).is_ok(),
        Some(_) => true,
        None => false,
    }
}

fn walk(
    schema: &'static Value,
    def: Option<&'static str>,
    v: &mut Value,
    path: &Path<'_>,
    strukt: &str,
    unknown: &mut Vec<String>,
) -> Result<(), String> {
    let (s, name) = match def {
        Some(d) => (schema, Some(d)),
        None => resolve(schema),
    };
    if v.is_null() {
        // Go leaves the field unset.
        return Ok(());
    }
    match name {
        Some(INT_OR_STRING) => {
            return match v {
                Value::String(_) => Ok(()),
                Value::Number(n) if fits(n, 32) => Ok(()),
                Value::Number(n) => Err(mismatch(&format!("number {n}"), path, strukt, "int32")),
                other => Err(mismatch(json_kind(other), path, strukt, "int32")),
            };
        }
        // Parsed by its own decoder, which takes strings and numbers alike.
        Some(QUANTITY) => return Ok(()),
        _ => {}
    }
    let wrong = |v: &Value| mismatch(json_kind(v), path, strukt, &go_type(schema));
    match s.get("type").and_then(Value::as_str) {
        Some("string") => match v {
            Value::String(_) => Ok(()),
            other => Err(wrong(other)),
        },
        Some("boolean") => match v {
            Value::Bool(_) => Ok(()),
            other => Err(wrong(other)),
        },
        Some("number") => match v {
            Value::Number(_) => Ok(()),
            other => Err(wrong(other)),
        },
        Some("integer") => {
            let bits = if s.get("format").and_then(Value::as_str) == Some("int32") {
                32
            } else {
                64
            };
            match v {
                Value::Number(n) if fits(n, bits) => Ok(()),
                Value::Number(n) => Err(mismatch(
                    &format!("number {n}"),
                    path,
                    strukt,
                    &go_type(schema),
                )),
                other => Err(wrong(other)),
            }
        }
        Some("array") => {
            let Value::Array(items) = v else {
                return Err(wrong(v));
            };
            let Some(item_schema) = s.get("items") else {
                return Ok(());
            };
            for (i, item) in items.iter_mut().enumerate() {
                let p = Path::Index(path, i);
                walk(item_schema, None, item, &p, strukt, unknown)?;
            }
            Ok(())
        }
        Some("object") => {
            let props = s.get("properties").and_then(Value::as_object);
            let additional = s.get("additionalProperties").filter(|a| a.is_object());
            if props.is_none() && additional.is_none() {
                // Opaque (RawExtension, JSON, FieldsV1): any JSON value.
                return Ok(());
            }
            let Value::Object(map) = v else {
                return Err(wrong(v));
            };
            if let Some(props) = props {
                let here = name.map(struct_name).unwrap_or(strukt);
                let mut dropped: Vec<String> = Vec::new();
                for (k, child) in map.iter_mut() {
                    match props.get(k) {
                        Some(p) => {
                            let at = Path::Field(path, k);
                            walk(p, None, child, &at, here, unknown)?;
                        }
                        None => {
                            let mut full = String::new();
                            Path::Field(path, k).strict(&mut full);
                            unknown.push(full);
                            dropped.push(k.clone());
                        }
                    }
                }
                for k in dropped {
                    map.remove(&k);
                }
            } else if let Some(ap) = additional {
                let (ap_schema, _) = resolve(ap);
                let nested = matches!(
                    ap_schema.get("type").and_then(Value::as_str),
                    Some("object" | "array")
                );
                for (k, child) in map.iter_mut() {
                    if nested {
                        let at = Path::Key(path, k);
                        walk(ap, None, child, &at, strukt, unknown)?;
                    } else {
                        walk(ap, None, child, path, strukt, unknown)?;
                    }
                }
            }
            Ok(())
        }
        // No type: decoded by its own rules (oneOf, int-or-string); anything goes.
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(def: &str, mut obj: Value) -> (Result<Vec<String>, String>, Value) {
        let r = decode(def, &mut obj);
        (r, obj)
    }

    const DEPLOYMENT: &str = "io.k8s.api.apps.v1.Deployment";
    const POD: &str = "io.k8s.api.core.v1.Pod";

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"app": "x"}, "annotations": {"a": "b"},
                         "creationTimestamp": "2024-01-01T00:00:00Z",
                         "managedFields": [{"manager": "m", "operation": "Update",
                                            "fieldsType": "FieldsV1",
                                            "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "x"}},
                "strategy": {"type": "RollingUpdate",
                             "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                "template": {
                    "metadata": {"labels": {"app": "x"}},
                    "spec": {"containers": [{
                        "name": "c", "image": "nginx",
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "resources": {"limits": {"cpu": 1, "memory": "1Gi"},
                                      "requests": {"cpu": "500m"}},
                        "livenessProbe": {"httpGet": {"port": "http", "path": "/"}},
                        "env": [{"name": "A", "value": "1"}]
                    }], "terminationGracePeriodSeconds": 30, "nodeSelector": null}
                }
            },
            "status": {"replicas": 1, "conditions": [{"type": "Available", "status": "True",
                       "lastUpdateTime": "2024-01-01T00:00:00Z"}]}
        })
    }

    #[test]
    fn valid_objects_decode_unchanged() {
        let d = deployment();
        let (r, out) = run(DEPLOYMENT, d.clone());
        assert_eq!(r, Ok(vec![]));
        assert_eq!(out, d);
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 81, "targetPort": "web"}],
                     "selector": {"app": "x"}, "type": "ClusterIP"}});
        assert_eq!(run("io.k8s.api.core.v1.Service", svc).0, Ok(vec![]));
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object",
                            "x-kubernetes-preserve-unknown-fields": true,
                            "properties": {"spec": {"type": "object", "default": {"a": 1},
                                "properties": {"size": {"type": "integer", "maximum": 3}}},
                                "list": {"type": "array", "items": {"type": "string"}}}}}}]}});
        assert_eq!(
            run(
                "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
                crd
            )
            .0,
            Ok(vec![])
        );
    }

    #[test]
    fn type_mismatches_are_worded_as_go() {
        let cases = [
            (
                "/spec/replicas",
                json!("3"),
                "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
            ),
            (
                "/spec/replicas",
                json!(1.5),
                "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32",
            ),
            (
                "/spec/template/spec/containers/0/name",
                json!(5),
                "json: cannot unmarshal number into Go struct field Container.spec.template.spec.containers.name of type string",
            ),
            (
                "/spec/template/spec/containers",
                json!({}),
                "json: cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container",
            ),
            (
                "/spec/template/spec",
                json!("x"),
                "json: cannot unmarshal string into Go struct field PodTemplateSpec.spec.template.spec of type v1.PodSpec",
            ),
            (
                "/metadata/labels/app",
                json!(true),
                "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string",
            ),
            (
                "/spec/strategy/rollingUpdate/maxSurge",
                json!(true),
                "json: cannot unmarshal bool into Go struct field RollingUpdateDeployment.spec.strategy.rollingUpdate.maxSurge of type int32",
            ),
            (
                "/spec/template/spec/nodeSelector",
                json!([]),
                "json: cannot unmarshal array into Go struct field PodSpec.spec.template.spec.nodeSelector of type map[string]string",
            ),
        ];
        for (at, value, want) in cases {
            let mut d = deployment();
            *d.pointer_mut(at).unwrap() = value;
            assert_eq!(run(DEPLOYMENT, d).0, Err(want.to_string()), "{at}");
        }
    }

    #[test]
    fn unknown_fields_are_dropped_and_reported() {
        let mut d = deployment();
        d["spec"]["template"]["spec"]["containers"][0]["foo"] = json!(1);
        d["spec"]["bar"] = json!({"x": 1});
        d["metadata"]["colour"] = json!("red");
        let (r, out) = run(DEPLOYMENT, d);
        assert_eq!(
            r.unwrap(),
            [
                "metadata.colour",
                "spec.bar",
                "spec.template.spec.containers[0].foo"
            ]
        );
        assert_eq!(out, deployment());
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i"}],
                     "overhead": {"cpu": "1"}, "hostnames": 1}});
        assert_eq!(run(POD, pod).0.unwrap(), ["spec.hostnames"]);
    }
}
