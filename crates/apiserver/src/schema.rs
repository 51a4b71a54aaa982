//! CRD structural schemas (`apiextensions.k8s.io/v1` `openAPIV3Schema`): the structural
//! check, pruning, defaulting and validation of custom objects, as
//! `k8s.io/apiextensions-apiserver/pkg/apiserver/schema` does them.
//!
//! # The API the storage layer calls
//!
//! ```text
//! pub struct StructuralSchema;
//! impl StructuralSchema {
//!     pub fn from_value(schema: &Value) -> Result<StructuralSchema, SchemaError>;
//!     pub fn prune(&self, obj: &mut Value);
//!     pub fn prune_reporting(&self, obj: &mut Value) -> Vec<String>;
//!     pub fn apply_defaults(&self, obj: &mut Value);
//!     pub fn validate(&self, obj: &Value) -> Vec<FieldError>;
//!     pub fn validate_update(&self, obj: &Value, old: &Value) -> Vec<FieldError>;
//! }
//! pub struct FieldError { pub path: String, pub reason: &'static str, pub message: String }
//! pub struct SchemaError { pub errors: Vec<FieldError> }
//! ```
//!
//! On create and update of a custom object the real server does, in order:
//! [`apply_defaults`](StructuralSchema::apply_defaults), [`prune`](StructuralSchema::prune),
//! then [`validate`](StructuralSchema::validate) (an answer of 422 `Invalid` with one cause per
//! [`FieldError`]: `field` = `path`, `message` = `message`, `reason` = `reason`). Build the
//! schema once per CRD version with [`from_value`](StructuralSchema::from_value); a schema
//! that is not structural is a 422 on the CRD itself, with the errors' paths relative to
//! `spec.versions[i].schema.openAPIV3Schema`.
//!
//! Validation includes the CEL rules of `x-kubernetes-validations` (module
//! `validation_rules`, on the crate's CEL engine, `cel`): they are
//! compiled by [`from_value`](StructuralSchema::from_value), which refuses, as a real server
//! does, a rule that does not parse, nests deeper than 250 levels, does not type-check against the schema of its node
//! (`cel::check`: undefined fields, operators on the wrong types, a result that is not a
//! `bool`) or whose estimated cost is over budget (`cel::cost`: 10M per rule, 100M per schema, sized by
//! `maxItems`, `maxProperties` and `maxLength`), and evaluated by
//! [`validate`](StructuralSchema::validate), and on
//! update by [`validate_update`](StructuralSchema::validate_update), which also runs the
//! transition rules (`oldSelf`) and lets unchanged values through (ratcheting).
//!
//! At the root, `apiVersion`, `kind` and `metadata` are never pruned (metadata is the
//! server's to check); an `x-kubernetes-embedded-resource` object keeps them too and must
//! have `apiVersion` and `kind`.
//!
//! ```
//! use crt_apiserver::schema::StructuralSchema;
//! use serde_json::json;
//!
//! let schema = StructuralSchema::from_value(&json!({
//!     "type": "object",
//!     "properties": {"spec": {"type": "object", "required": ["replicas"], "properties": {
//!         "replicas": {"type": "integer", "minimum": 0},
//!         "mode": {"type": "string", "enum": ["a", "b"], "default": "a"}}}}
//! })).unwrap();
//! let mut obj = json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"},
//!                      "spec": {"replicas": "three", "junk": 1}});
//! schema.apply_defaults(&mut obj);
//! schema.prune(&mut obj);
//! assert_eq!(obj["spec"], json!({"replicas": "three", "mode": "a"}));
//! let errs = schema.validate(&obj);
//! assert_eq!(errs[0].to_string(),
//!     r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#);
//! ```

pub mod builtin;
mod crd_rules;
pub(crate) mod decl;
pub mod decode;
mod error;
mod format;
mod node;
mod path;
mod prune;
mod rule;
#[cfg(test)]
mod tests;
mod validate;
mod validation_rules;

use serde_json::Value;

pub(crate) use error::quote;
pub use error::{FieldError, SchemaError};
use node::Node;

/// A checked structural schema of one CRD version.
#[derive(Debug, Clone)]
pub struct StructuralSchema {
    root: Node,
}

impl StructuralSchema {
    /// The declared type of the field a simple JSONPath (`.spec.a.b`, property names only)
    /// names, `""` when the schema leaves it untyped; `None` when the path names no declared
    /// field (the check upstream's selectable fields make).
    pub(crate) fn field_type(&self, json_path: &str) -> Option<&str> {
        let mut node = &self.root;
        for name in json_path.strip_prefix('.')?.split('.') {
            node = node.properties.get(name)?;
        }
        Some(node.ty.as_deref().unwrap_or(""))
    }

    /// Checks that `schema` (an `openAPIV3Schema` value) is structural, and compiles it.
    pub fn from_value(schema: &Value) -> Result<Self, SchemaError> {
        Self::from_value_at(schema, "")
    }

    /// [`from_value`](Self::from_value) for the schema at `base` in its CRD
    /// (`spec.versions[0].schema.openAPIV3Schema`): error paths stay relative to the schema,
    /// but a message that names a path in the CRD (a transition rule where old values cannot
    /// be correlated) names it in full, as upstream's does.
    pub fn from_value_at(schema: &Value, base: &str) -> Result<Self, SchemaError> {
        let mut errors = Vec::new();
        let root = Node::parse(schema, "", &mut errors);
        if errors.is_empty() {
            check_defaults(&root, "", "", &mut errors);
            validation_rules::check_field_paths(&root, "", &mut errors);
        }
        if errors.is_empty() {
            crd_rules::check_schema(&root, base, &mut errors);
        }
        if root.ty.as_deref() != Some("object") && errors.is_empty() {
            errors.push(FieldError::new(
                "type",
                "FieldValueInvalid",
                format!(
                    "Invalid value: {}: must be object at the root",
                    quote(root.ty.as_deref().unwrap_or(""))
                ),
            ));
        }
        if errors.is_empty() {
            Ok(StructuralSchema { root })
        } else {
            Err(SchemaError { errors })
        }
    }

    /// Drops fields the schema does not know (unless preserved by
    /// `x-kubernetes-preserve-unknown-fields` or an `additionalProperties` schema), keeping
    /// `apiVersion`, `kind` and `metadata` at the root and in embedded resources.
    pub fn prune(&self, obj: &mut Value) {
        self.prune_reporting(obj);
    }

    /// [`prune`](Self::prune), answering the path of every field it dropped (`spec.foo`,
    /// `spec.items[0].bar`, as upstream's pruning reports them for `fieldValidation`), sorted.
    pub fn prune_reporting(&self, obj: &mut Value) -> Vec<String> {
        let mut dropped = Vec::new();
        prune::prune(&self.root, obj, true, &path::Path::Root, &mut dropped);
        dropped.sort();
        dropped
    }

    /// Sets the `default` of every absent property (and of `null` where the property is not
    /// nullable), recursing into what it sets.
    pub fn apply_defaults(&self, obj: &mut Value) {
        prune::default(&self.root, obj);
    }

    /// Checks `obj` against the schema; empty when valid. `metadata` at the root is not
    /// checked here.
    pub fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errors = Vec::new();
        validate::validate(&self.root, obj, "", true, &mut errors);
        if !blocks_rules(&errors) {
            validation_rules::validate(&self.root, obj, None, "", &mut errors);
        }
        errors
    }

    /// [`validate`](Self::validate) for an update from `old`: the `x-kubernetes-validations`
    /// rules that name `oldSelf` (transition rules) run too, and a value that did not change
    /// is not refused by its rules other than transition rules (ratcheting).
    ///
    /// ```
    /// use crt_apiserver::schema::StructuralSchema;
    /// use serde_json::json;
    ///
    /// let schema = StructuralSchema::from_value(&json!({
    ///     "type": "object",
    ///     "properties": {"spec": {"type": "object", "properties": {
    ///         "cluster": {"type": "string", "x-kubernetes-validations": [
    ///             {"rule": "self == oldSelf", "message": "Value is immutable"}]},
    ///         "name": {"type": "string", "x-kubernetes-validations": [
    ///             {"rule": "self.matches('^[a-z]+$')"}]}}}}
    /// })).unwrap();
    /// let old = json!({"spec": {"cluster": "a", "name": "Legacy"}});
    /// // The invalid name did not change: kept. The cluster did: refused.
    /// let new = json!({"spec": {"cluster": "b", "name": "Legacy"}});
    /// let errs = schema.validate_update(&new, &old);
    /// assert_eq!(errs.len(), 1);
    /// assert_eq!(errs[0].to_string(),
    ///     r#"spec.cluster: Invalid value: "string": Value is immutable"#);
    /// // On create the transition rule does not run; the name rule does.
    /// assert_eq!(schema.validate(&new)[0].to_string(),
    ///     r#"spec.name: Invalid value: "string": failed rule: self.matches('^[a-z]+$')"#);
    /// ```
    pub fn validate_update(&self, obj: &Value, old: &Value) -> Vec<FieldError> {
        let mut errors = Vec::new();
        validate::validate(&self.root, obj, "", true, &mut errors);
        if !blocks_rules(&errors) {
            validation_rules::validate(&self.root, obj, Some(old), "", &mut errors);
        }
        errors
    }
}

/// Whether schema errors keep the CEL rules from running: a value of the wrong type, which
/// the rules could not read (upstream's `hasBlockingErr`).
fn blocks_rules(errors: &[FieldError]) -> bool {
    errors
        .iter()
        .any(|e| e.message.contains(" in body must be of type "))
}

/// A `default` must validate against its own schema and hold no field pruning would drop,
/// as the real server requires of a structural schema. `path` is in the schema, `body` the
/// field the default is for.
fn check_defaults(node: &Node, path: &str, body: &str, errors: &mut Vec<FieldError>) {
    let at = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    if let Some(d) = &node.default {
        let mut found = Vec::new();
        validate::validate(node, d, body, false, &mut found);
        for e in found {
            errors.push(FieldError::new(&at("default"), e.reason, e.message));
        }
        let mut pruned = d.clone();
        prune::prune(node, &mut pruned, false, &path::Path::Root, &mut Vec::new());
        if &pruned != d {
            errors.push(FieldError::new(
                &at("default"),
                "FieldValueInvalid",
                format!("Invalid value: {d}: must not have unknown fields"),
            ));
        }
    }
    let child = |k: &str| {
        if body.is_empty() {
            k.to_string()
        } else {
            format!("{body}.{k}")
        }
    };
    for (k, p) in &node.properties {
        check_defaults(p, &format!("{}[{k}]", at("properties")), &child(k), errors);
    }
    if let Some(node::Additional::Schema(s)) = &node.additional {
        check_defaults(s, &at("additionalProperties"), &child("*"), errors);
    }
    if let Some(items) = &node.items {
        check_defaults(items, &at("items"), &format!("{body}[*]"), errors);
    }
}
