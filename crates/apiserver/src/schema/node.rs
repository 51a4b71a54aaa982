//! One schema node, parsed from JSON, with the structural checks of
//! `apiextensions-apiserver` (every specified field has a type, arrays have items, properties
//! and additionalProperties exclude each other, ...).

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::{Map, Value};

use super::error::{FieldError, quote};

/// `additionalProperties`.
#[derive(Debug, Clone)]
pub(crate) enum Additional {
    /// `true` or `false`.
    Bool(bool),
    /// A schema every other key's value follows.
    Schema(Box<Node>),
}

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListType {
    Atomic,
    Set,
    Map,
}

/// A parsed schema node. Fields the validator does not need (description, examples) are
/// dropped.
#[derive(Debug, Clone, Default)]
pub(crate) struct Node {
    pub ty: Option<String>,
    pub nullable: bool,
    pub properties: BTreeMap<String, Node>,
    pub additional: Option<Additional>,
    pub items: Option<Box<Node>>,
    pub required: Vec<String>,
    pub enumeration: Option<Vec<Value>>,
    pub format: Option<String>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub exclusive_minimum: bool,
    pub exclusive_maximum: bool,
    pub multiple_of: Option<f64>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub min_properties: Option<u64>,
    pub max_properties: Option<u64>,
    pub unique_items: bool,
    pub pattern: Option<Regex>,
    pub int_or_string: bool,
    pub preserve_unknown: bool,
    pub embedded: bool,
    pub list_type: Option<ListType>,
    pub list_map_keys: Vec<String>,
    /// `x-kubernetes-map-type: atomic`.
    pub map_atomic: bool,
    pub default: Option<Value>,
    pub all_of: Vec<Node>,
    pub any_of: Vec<Node>,
    pub one_of: Vec<Node>,
    pub not: Option<Box<Node>>,
    /// `x-kubernetes-validations`, compiled.
    pub rules: Vec<std::sync::Arc<super::rule::Rule>>,
}

const TYPES: [&str; 6] = ["object", "array", "string", "integer", "number", "boolean"];

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn invalid(errors: &mut Vec<FieldError>, path: &str, value: &Value, why: &str) {
    errors.push(FieldError::new(
        path,
        "FieldValueInvalid",
        format!("Invalid value: {value}: {why}"),
    ));
}

fn forbidden(errors: &mut Vec<FieldError>, path: &str, why: &str) {
    errors.push(FieldError::new(
        path,
        "FieldValueForbidden",
        format!("Forbidden: {why}"),
    ));
}

fn required(errors: &mut Vec<FieldError>, path: &str, why: &str) {
    errors.push(FieldError::new(
        path,
        "FieldValueRequired",
        format!("Required value: {why}"),
    ));
}

struct Reader<'a> {
    m: &'a Map<String, Value>,
    path: &'a str,
}

impl Reader<'_> {
    fn bool(&self, key: &str, errors: &mut Vec<FieldError>) -> bool {
        match self.m.get(key) {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(v) => {
                invalid(errors, &child(self.path, key), v, "must be a boolean");
                false
            }
        }
    }

    fn number(&self, key: &str, errors: &mut Vec<FieldError>) -> Option<f64> {
        match self.m.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => n.as_f64(),
            Some(v) => {
                invalid(errors, &child(self.path, key), v, "must be a number");
                None
            }
        }
    }

    fn count(&self, key: &str, errors: &mut Vec<FieldError>) -> Option<u64> {
        match self.m.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64(),
            Some(v) => {
                invalid(
                    errors,
                    &child(self.path, key),
                    v,
                    "must be a non-negative integer",
                );
                None
            }
        }
    }

    fn string(&self, key: &str, errors: &mut Vec<FieldError>) -> Option<String> {
        match self.m.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => {
                invalid(errors, &child(self.path, key), v, "must be a string");
                None
            }
        }
    }

    fn strings(&self, key: &str, errors: &mut Vec<FieldError>) -> Vec<String> {
        match self.m.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            Some(v) => {
                invalid(
                    errors,
                    &child(self.path, key),
                    v,
                    "must be a list of strings",
                );
                Vec::new()
            }
        }
    }

    fn schemas(&self, key: &str, errors: &mut Vec<FieldError>) -> Vec<Node> {
        match self.m.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    Node::parse_in(s, &format!("{}[{i}]", child(self.path, key)), true, errors)
                })
                .collect(),
            Some(v) => {
                invalid(
                    errors,
                    &child(self.path, key),
                    v,
                    "must be a list of schemas",
                );
                Vec::new()
            }
        }
    }
}

impl Node {
    /// Parses and checks a schema; problems go to `errors` with paths under `path`.
    pub(crate) fn parse(v: &Value, path: &str, errors: &mut Vec<FieldError>) -> Node {
        Self::parse_in(v, path, false, errors)
    }

    /// `in_junctor`: inside allOf/anyOf/oneOf/not, where only value validations belong and no
    /// type is required.
    fn parse_in(v: &Value, path: &str, in_junctor: bool, errors: &mut Vec<FieldError>) -> Node {
        let Value::Object(m) = v else {
            invalid(errors, path, v, "must be a schema object");
            return Node::default();
        };
        let r = Reader { m, path };
        let mut n = Node {
            ty: r.string("type", errors),
            nullable: r.bool("nullable", errors),
            required: r.strings("required", errors),
            format: r.string("format", errors),
            minimum: r.number("minimum", errors),
            maximum: r.number("maximum", errors),
            exclusive_minimum: r.bool("exclusiveMinimum", errors),
            exclusive_maximum: r.bool("exclusiveMaximum", errors),
            multiple_of: r.number("multipleOf", errors),
            min_length: r.count("minLength", errors),
            max_length: r.count("maxLength", errors),
            min_items: r.count("minItems", errors),
            max_items: r.count("maxItems", errors),
            min_properties: r.count("minProperties", errors),
            max_properties: r.count("maxProperties", errors),
            unique_items: r.bool("uniqueItems", errors),
            int_or_string: r.bool("x-kubernetes-int-or-string", errors),
            preserve_unknown: r.bool("x-kubernetes-preserve-unknown-fields", errors),
            embedded: r.bool("x-kubernetes-embedded-resource", errors),
            list_map_keys: r.strings("x-kubernetes-list-map-keys", errors),
            map_atomic: m.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic"),
            default: m.get("default").cloned(),
            all_of: r.schemas("allOf", errors),
            any_of: r.schemas("anyOf", errors),
            one_of: r.schemas("oneOf", errors),
            rules: super::rule::parse_rules(m, path, errors),
            ..Node::default()
        };
        if let Some(ty) = &n.ty
            && !TYPES.contains(&ty.as_str())
        {
            let supported: Vec<String> = TYPES.iter().map(|t| quote(t)).collect();
            errors.push(FieldError::new(
                &child(path, "type"),
                "FieldValueNotSupported",
                format!(
                    "Unsupported value: {}: supported values: {}",
                    quote(ty),
                    supported.join(", ")
                ),
            ));
        }
        if let Some(e) = m.get("enum") {
            match e {
                Value::Array(a) => n.enumeration = Some(a.clone()),
                Value::Null => {}
                other => invalid(errors, &child(path, "enum"), other, "must be a list"),
            }
        }
        if let Some(p) = r.string("pattern", errors) {
            match Regex::new(&p) {
                Ok(re) => n.pattern = Some(re),
                Err(e) => invalid(
                    errors,
                    &child(path, "pattern"),
                    &Value::String(p),
                    &format!("must be a valid regular expression, but isn't: {e}"),
                ),
            }
        }
        if let Some(lt) = r.string("x-kubernetes-list-type", errors) {
            n.list_type = match lt.as_str() {
                "atomic" => Some(ListType::Atomic),
                "set" => Some(ListType::Set),
                "map" => Some(ListType::Map),
                _ => {
                    errors.push(FieldError::new(
                        &child(path, "x-kubernetes-list-type"),
                        "FieldValueNotSupported",
                        format!(
                            "Unsupported value: {}: supported values: \"atomic\", \"map\", \"set\"",
                            quote(&lt)
                        ),
                    ));
                    None
                }
            };
        }
        match m.get("properties") {
            None | Some(Value::Null) => {}
            Some(Value::Object(props)) => {
                for (k, s) in props {
                    let p = format!("{}[{k}]", child(path, "properties"));
                    n.properties
                        .insert(k.clone(), Node::parse_in(s, &p, in_junctor, errors));
                }
            }
            Some(other) => invalid(
                errors,
                &child(path, "properties"),
                other,
                "must be an object",
            ),
        }
        match m.get("additionalProperties") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => n.additional = Some(Additional::Bool(*b)),
            Some(s @ Value::Object(_)) => {
                let p = child(path, "additionalProperties");
                n.additional = Some(Additional::Schema(Box::new(Node::parse_in(
                    s, &p, in_junctor, errors,
                ))));
            }
            Some(other) => invalid(
                errors,
                &child(path, "additionalProperties"),
                other,
                "must be a boolean or a schema",
            ),
        }
        match m.get("items") {
            None | Some(Value::Null) => {}
            Some(Value::Array(_)) => forbidden(
                errors,
                &child(path, "items"),
                "items must be a schema object and not an array",
            ),
            Some(s) => {
                n.items = Some(Box::new(Node::parse_in(
                    s,
                    &child(path, "items"),
                    in_junctor,
                    errors,
                )))
            }
        }
        if let Some(s) = m.get("not") {
            n.not = Some(Box::new(Node::parse_in(
                s,
                &child(path, "not"),
                true,
                errors,
            )));
        }
        for (key, why) in [
            ("$ref", "$ref is not supported"),
            ("additionalItems", "additionalItems cannot be set to false"),
            ("definitions", "definitions are not supported"),
        ] {
            if m.contains_key(key) {
                forbidden(errors, &child(path, key), why);
            }
        }
        n.check_structural(m, path, in_junctor, errors);
        n
    }

    /// What a resource (the root, or an embedded resource) may say of its `apiVersion`,
    /// `kind` and `metadata`: the first two are strings, `metadata` an object, and at the
    /// root `metadata` may restrict only `name` and `generateName`, since the server
    /// validates it as `ObjectMeta` (upstream's `validateStructuralMetadataInvariants`).
    fn check_resource_fields(
        &self,
        m: &Map<String, Value>,
        path: &str,
        errors: &mut Vec<FieldError>,
    ) {
        let root = path.is_empty();
        let props = child(path, "properties");
        if root || self.embedded {
            for key in ["kind", "apiVersion"] {
                if let Some(p) = self.properties.get(key)
                    && p.ty.as_deref() != Some("string")
                {
                    invalid(
                        errors,
                        &format!("{props}[{key}].type"),
                        &json_str(p.ty.as_deref()),
                        "must be string",
                    );
                }
            }
        }
        let Some(meta) = self.properties.get("metadata") else {
            return;
        };
        let at = format!("{props}[metadata]");
        if (root || self.embedded) && meta.ty.as_deref() != Some("object") {
            invalid(
                errors,
                &child(&at, "type"),
                &json_str(meta.ty.as_deref()),
                "must be object",
            );
        }
        let raw = m.get("properties").and_then(|p| p.get("metadata"));
        if root && !raw.is_some_and(restricts_only_names) {
            forbidden(
                errors,
                &at,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            );
        }
    }

    fn check_structural(
        &self,
        m: &Map<String, Value>,
        path: &str,
        in_junctor: bool,
        errors: &mut Vec<FieldError>,
    ) {
        if m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
            invalid(
                errors,
                &child(path, "x-kubernetes-preserve-unknown-fields"),
                &Value::Bool(false),
                "must be true or undefined",
            );
        }
        if in_junctor {
            if self.properties.contains_key("metadata") {
                forbidden(
                    errors,
                    &format!("{}[metadata]", child(path, "properties")),
                    "must not be specified in a nested context",
                );
            }
            return;
        }
        self.check_resource_fields(m, path, errors);
        if self.int_or_string {
            if self.ty.is_some() {
                invalid(
                    errors,
                    &child(path, "type"),
                    &json_str(self.ty.as_deref()),
                    "must be empty to be structural if x-kubernetes-int-or-string is true",
                );
            }
        } else if self.ty.is_none() && !self.preserve_unknown {
            let why = if path.is_empty() {
                "must not be empty at the root"
            } else if path.ends_with("items") {
                "must not be empty for specified array items"
            } else {
                "must not be empty for specified object fields"
            };
            required(errors, &child(path, "type"), why);
        }
        if !self.properties.is_empty()
            && matches!(
                self.additional,
                Some(Additional::Schema(_)) | Some(Additional::Bool(true))
            )
        {
            forbidden(
                errors,
                &child(path, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            );
        }
        if self.ty.as_deref() == Some("array") && self.items.is_none() {
            required(errors, &child(path, "items"), "must be specified");
        }
        if self.embedded && self.ty.as_deref() != Some("object") {
            invalid(
                errors,
                &child(path, "type"),
                &json_str(self.ty.as_deref()),
                "must be object if x-kubernetes-embedded-resource is true",
            );
        }
        if !self.list_map_keys.is_empty() && self.list_type != Some(ListType::Map) {
            forbidden(
                errors,
                &child(path, "x-kubernetes-list-map-keys"),
                "must be empty if x-kubernetes-list-type is not map",
            );
        }
        if let Some(lt) = self.list_type {
            if self.ty.as_deref() != Some("array") {
                invalid(
                    errors,
                    &child(path, "x-kubernetes-list-type"),
                    &json_str(Some(match lt {
                        ListType::Atomic => "atomic",
                        ListType::Set => "set",
                        ListType::Map => "map",
                    })),
                    "must only be used if type is array",
                );
            }
            if lt == ListType::Map {
                let items_obj = self
                    .items
                    .as_ref()
                    .is_some_and(|i| i.ty.as_deref() == Some("object"));
                if !items_obj {
                    forbidden(
                        errors,
                        &child(path, "items"),
                        "items must be an object when x-kubernetes-list-type is map",
                    );
                } else if self.list_map_keys.is_empty() {
                    required(
                        errors,
                        &child(path, "x-kubernetes-list-map-keys"),
                        "must not be empty if x-kubernetes-list-type is map",
                    );
                } else if let Some(items) = &self.items {
                    for k in &self.list_map_keys {
                        let Some(key) = items.properties.get(k) else {
                            invalid(
                                errors,
                                &child(path, "x-kubernetes-list-map-keys"),
                                &Value::String(k.clone()),
                                "entries must all be names of item properties",
                            );
                            continue;
                        };
                        let at = format!("{}.properties[{k}]", child(path, "items"));
                        if matches!(key.ty.as_deref(), Some("array" | "object")) {
                            invalid(
                                errors,
                                &child(&at, "type"),
                                &json_str(items.ty.as_deref()),
                                "must be a scalar type if parent array's x-kubernetes-list-type is map",
                            );
                        }
                        // A key must be present in every item for the items to be told apart.
                        if !items.required.contains(k) && key.default.is_none() {
                            required(
                                errors,
                                &child(&at, "default"),
                                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                            );
                        }
                        if key.nullable {
                            forbidden(
                                errors,
                                &child(&at, "nullable"),
                                "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Whether the schema of a root's `metadata` says nothing but its type, a default (checked
/// elsewhere) and properties for `name` and `generateName`; zero values (`false`, `""`, `[]`,
/// `{}`) say nothing.
fn restricts_only_names(meta: &Value) -> bool {
    let Value::Object(m) = meta else {
        return false;
    };
    m.iter().all(|(k, v)| match k.as_str() {
        "type" | "default" => true,
        "properties" => v
            .as_object()
            .is_some_and(|p| p.keys().all(|k| k == "name" || k == "generateName")),
        _ => match v {
            Value::Null => true,
            Value::Bool(b) => !b,
            Value::String(s) => s.is_empty(),
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            Value::Number(_) => false,
        },
    })
}

fn json_str(s: Option<&str>) -> Value {
    Value::String(s.unwrap_or("").to_string())
}
