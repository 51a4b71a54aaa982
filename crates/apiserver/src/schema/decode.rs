//! Decoding of built-in objects as kube-apiserver's JSON decoder does it: a value of the
//! wrong JSON type is an error worded as Go's `encoding/json` words its `UnmarshalTypeError`,
//! and fields the kind's Go structs do not declare are dropped and reported (for
//! `fieldValidation`), with paths as upstream's strict decoder prints them.
//!
//! The walk follows the kind's schema over the object in place: nothing is cloned, nothing
//! is allocated for a valid object, and paths are only rendered when something is reported.
//! The schemas in [`builtin::definitions`] are compiled once per process, on first use, into
//! one arena of nodes whose `$ref`s are indices (see [`Decoder`]), so the walk looks no name
//! up; [`Decoder::for_kind`] finds a kind's root with one map lookup.
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

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

use super::builtin;
use super::path::Path;

const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";

/// Decodes `obj` as the built-in type `definition` (a name in [`builtin::definitions`]):
/// answers Go's message for the first value of the wrong type, or else the paths of the
/// unknown fields, which are removed from `obj` (in the order the walk meets them).
/// An unknown `definition` accepts anything.
pub fn decode(definition: &str, obj: &mut Value) -> Result<Vec<String>, String> {
    match compiled().by_def.get(definition) {
        Some(&root) => Decoder { root }.decode(obj),
        None => Ok(Vec::new()),
    }
}

/// The compiled schema of one built-in kind: what [`decode`] walks, found once from the
/// kind's group, version and kind (a map lookup; the schemas are compiled once per process, on
/// first use).
///
/// ```
/// use crt_apiserver::schema::decode::Decoder;
/// use serde_json::json;
///
/// let deployment = Decoder::for_kind("apps", "v1", "Deployment").unwrap();
/// let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": "3"}});
/// assert_eq!(
///     deployment.decode(&mut d).unwrap_err(),
///     "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
/// );
/// assert!(Decoder::for_kind("apps", "v1", "Widget").is_none());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Decoder {
    root: usize,
}

impl Decoder {
    /// The decoder of the built-in kind `kind` of `group`/`version`, if one is served.
    pub fn for_kind(group: &str, version: &str, kind: &str) -> Option<Decoder> {
        let i = builtin::kind_index(group, version, kind)?;
        Some(Decoder {
            root: compiled().kinds[i],
        })
    }

    /// Decodes `obj` as [`decode`] does.
    pub fn decode(self, obj: &mut Value) -> Result<Vec<String>, String> {
        let c = compiled();
        let mut unknown = Vec::new();
        let root = &c.nodes[self.root];
        walk(
            c,
            root,
            obj,
            &Path::Root,
            root.name.unwrap_or(""),
            &mut unknown,
        )?;
        Ok(unknown)
    }
}

/// Every definition in [`builtin::definitions`], compiled into one arena: `$ref`s are indices
/// into `nodes`, each node knows its shape and its Go type, so a walk does no name lookups and
/// no string work unless it reports something.
struct Compiled {
    nodes: Vec<Node>,
    /// A definition's node, by its name.
    by_def: HashMap<&'static str, usize>,
    /// The node of each of [`builtin::kinds`], in its order.
    kinds: Vec<usize>,
}

/// One compiled schema.
struct Node {
    shape: Shape,
    /// The Go type a value decodes into, as `reflect.Type.String()` prints it (for messages).
    go_type: String,
    /// The Go struct's name when the node is a definition (`PodSpec`): what a type error inside
    /// it names.
    name: Option<&'static str>,
}

enum Shape {
    /// Any JSON: no type (decoded by its own rules: oneOf, int-or-string), or an opaque object
    /// (`RawExtension`, `JSON`, `FieldsV1`), or `Quantity` (a string or a number).
    Any,
    /// `IntOrString`: a string or an int32.
    IntOrString,
    String,
    Boolean,
    Number,
    /// An integer of 32 or 64 bits.
    Integer(u32),
    /// An array, of items of this node if the schema says.
    Array(Option<usize>),
    /// A struct: its fields sorted by name (as a JSON object's keys iterate).
    Struct(Box<[(&'static str, usize)]>),
    /// A map of values of this node; `nested`: the values are objects or arrays (whose paths
    /// name the key).
    Map {
        values: usize,
        nested: bool,
    },
}

fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let mut c = Compiler {
            defs: builtin::definitions(),
            nodes: Vec::new(),
            by_def: HashMap::new(),
        };
        for name in c.defs.keys() {
            c.definition(name);
        }
        let kinds = builtin::kinds()
            .iter()
            .map(|k| c.by_def[k.definition])
            .collect();
        Compiled {
            nodes: c.nodes,
            by_def: c.by_def,
            kinds,
        }
    })
}

struct Compiler {
    defs: &'static std::collections::BTreeMap<String, Value>,
    nodes: Vec<Node>,
    by_def: HashMap<&'static str, usize>,
}

impl Compiler {
    /// The node of the definition `name` (compiled on first use), if it exists.
    fn definition(&mut self, name: &str) -> Option<usize> {
        if let Some(&i) = self.by_def.get(name) {
            return Some(i);
        }
        let (name, schema) = self.defs.get_key_value(name)?;
        let name = name.as_str();
        // A definition that is only a reference is the definition it names.
        if let Some(target) = ref_name(schema).filter(|t| self.defs.contains_key(*t)) {
            let i = self.definition(target)?;
            self.by_def.insert(name, i);
            return Some(i);
        }
        // Reserved before compiling the body, which may reach it again (JSONSchemaProps).
        let i = self.nodes.len();
        self.nodes.push(Node {
            shape: Shape::Any,
            go_type: definition_go_type(name),
            name: Some(struct_name(name)),
        });
        self.by_def.insert(name, i);
        let shape = match name {
            INT_OR_STRING => Shape::IntOrString,
            QUANTITY => Shape::Any,
            _ => self.shape(schema),
        };
        self.nodes[i].shape = shape;
        Some(i)
    }

    /// The node of `schema`: its definition's for a reference, else a new one.
    fn schema(&mut self, schema: &'static Value) -> usize {
        if let Some(i) = ref_name(schema).and_then(|t| self.definition(t)) {
            return i;
        }
        let shape = self.shape(schema);
        let go_type = self.go_type(schema, &shape);
        self.nodes.push(Node {
            shape,
            go_type,
            name: None,
        });
        self.nodes.len() - 1
    }

    fn shape(&mut self, s: &'static Value) -> Shape {
        match s.get("type").and_then(Value::as_str) {
            Some("string") => Shape::String,
            Some("boolean") => Shape::Boolean,
            Some("number") => Shape::Number,
            Some("integer") if s.get("format").and_then(Value::as_str) == Some("int32") => {
                Shape::Integer(32)
            }
            Some("integer") => Shape::Integer(64),
            Some("array") => Shape::Array(s.get("items").map(|items| self.schema(items))),
            Some("object") => {
                let props = s.get("properties").and_then(Value::as_object);
                let additional = s.get("additionalProperties").filter(|a| a.is_object());
                if let Some(props) = props {
                    let mut fields: Vec<(&'static str, usize)> = props
                        .iter()
                        .map(|(k, p)| (k.as_str(), self.schema(p)))
                        .collect();
                    fields.sort_unstable_by(|a, b| a.0.cmp(b.0));
                    Shape::Struct(fields.into_boxed_slice())
                } else if let Some(ap) = additional {
                    let values = self.schema(ap);
                    let nested = value_is_object_or_array(self.defs, ap);
                    Shape::Map { values, nested }
                } else {
                    // Opaque (RawExtension, JSON, FieldsV1): any JSON value.
                    Shape::Any
                }
            }
            _ => Shape::Any,
        }
    }

    /// The Go type of an inline (unnamed) schema of `shape`.
    fn go_type(&mut self, s: &'static Value, shape: &Shape) -> String {
        let format = s.get("format").and_then(Value::as_str);
        match s.get("type").and_then(Value::as_str) {
            Some("string") if format == Some("byte") => "[]uint8".into(),
            Some("string") => "string".into(),
            Some("integer") => format.unwrap_or("int64").into(),
            Some("number") => "float64".into(),
            Some("boolean") => "bool".into(),
            Some("array") => match shape {
                Shape::Array(Some(items)) => format!("[]{}", self.nodes[*items].go_type),
                _ => "[]interface {}".into(),
            },
            Some("object") => match (shape, s.get("additionalProperties")) {
                (Shape::Map { values, .. }, _) => {
                    format!("map[string]{}", self.nodes[*values].go_type)
                }
                // A struct that also allows other keys: named by Go as the map it would be.
                (_, Some(ap)) if ap.is_object() => {
                    let values = self.schema(ap);
                    format!("map[string]{}", self.nodes[values].go_type)
                }
                _ => "map[string]interface {}".into(),
            },
            _ => "interface {}".into(),
        }
    }
}

/// Whether `schema` (following references) has type `object` or `array`.
fn value_is_object_or_array(
    defs: &'static std::collections::BTreeMap<String, Value>,
    schema: &'static Value,
) -> bool {
    let mut s = schema;
    while let Some(t) = ref_name(s).and_then(|t| defs.get(t)) {
        s = t;
    }
    matches!(
        s.get("type").and_then(Value::as_str),
        Some("object" | "array")
    )
}

/// The definition a `{"$ref": "#/$defs/<name>"}` names.
fn ref_name(schema: &Value) -> Option<&str> {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
}

/// A definition's Go type: `io.k8s.api.core.v1.PodSpec` → `v1.PodSpec`.
fn definition_go_type(name: &str) -> String {
    let mut parts = name.rsplit('.');
    let ty = parts.next().unwrap_or(name);
    let pkg = parts.next().unwrap_or("");
    format!("{pkg}.{ty}")
}

/// `io.k8s.api.core.v1.PodSpec` → `PodSpec`.
fn struct_name(definition: &str) -> &str {
    definition.rsplit('.').next().unwrap_or(definition)
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
    c: &Compiled,
    node: &Node,
    v: &mut Value,
    path: &Path<'_>,
    strukt: &str,
    unknown: &mut Vec<String>,
) -> Result<(), String> {
    if v.is_null() {
        // Go leaves the field unset.
        return Ok(());
    }
    let wrong = |v: &Value| mismatch(json_kind(v), path, strukt, &node.go_type);
    match &node.shape {
        Shape::Any => Ok(()),
        Shape::IntOrString => match v {
            Value::String(_) => Ok(()),
            Value::Number(n) if fits(n, 32) => Ok(()),
            Value::Number(n) => Err(mismatch(&format!("number {n}"), path, strukt, "int32")),
            other => Err(mismatch(json_kind(other), path, strukt, "int32")),
        },
        Shape::String => match v {
            Value::String(_) => Ok(()),
            other => Err(wrong(other)),
        },
        Shape::Boolean => match v {
            Value::Bool(_) => Ok(()),
            other => Err(wrong(other)),
        },
        Shape::Number => match v {
            Value::Number(_) => Ok(()),
            other => Err(wrong(other)),
        },
        Shape::Integer(bits) => match v {
            Value::Number(n) if fits(n, *bits) => Ok(()),
            Value::Number(n) => Err(mismatch(
                &format!("number {n}"),
                path,
                strukt,
                &node.go_type,
            )),
            other => Err(wrong(other)),
        },
        Shape::Array(items) => {
            let Value::Array(values) = v else {
                return Err(wrong(v));
            };
            let Some(items) = items else {
                return Ok(());
            };
            let item = &c.nodes[*items];
            for (i, value) in values.iter_mut().enumerate() {
                walk(c, item, value, &Path::Index(path, i), strukt, unknown)?;
            }
            Ok(())
        }
        Shape::Struct(fields) => {
            let Value::Object(map) = v else {
                return Err(wrong(v));
            };
            let here = node.name.unwrap_or(strukt);
            let mut dropped: Vec<String> = Vec::new();
            for (k, child) in map.iter_mut() {
                match fields.binary_search_by(|(f, _)| (*f).cmp(k.as_str())) {
                    Ok(f) => {
                        let at = Path::Field(path, k);
                        walk(c, &c.nodes[fields[f].1], child, &at, here, unknown)?;
                    }
                    Err(_) => {
                        unknown.push(Path::Field(path, k).render());
                        dropped.push(k.clone());
                    }
                }
            }
            if !dropped.is_empty() {
                for k in dropped {
                    map.remove(&k);
                }
            }
            Ok(())
        }
        Shape::Map { values, nested } => {
            let Value::Object(map) = v else {
                return Err(wrong(v));
            };
            let value = &c.nodes[*values];
            for (k, child) in map.iter_mut() {
                if *nested {
                    walk(c, value, child, &Path::Key(path, k), strukt, unknown)?;
                } else {
                    walk(c, value, child, path, strukt, unknown)?;
                }
            }
            Ok(())
        }
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
