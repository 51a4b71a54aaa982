//! Validation of a value against a schema node, with the real server's messages
//! (`spec.replicas in body must be of type integer: "string"`).

use serde_json::{Map, Value};

use super::error::{FieldError, quote};
use super::format::check_format;
use super::node::{Additional, ListType, Node};

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if is_integer(n) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integer(n: &serde_json::Number) -> bool {
    n.is_i64()
        || n.is_u64()
        || n.as_f64()
            .is_some_and(|f| f.fract() == 0.0 && f.is_finite())
}

/// Prints a bound without a trailing `.0`.
fn num(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        format!("{f}")
    }
}

fn invalid(errors: &mut Vec<FieldError>, path: &str, value: &Value, msg: String) {
    errors.push(FieldError::new(
        path,
        "FieldValueInvalid",
        format!("Invalid value: {value}: {msg}"),
    ));
}

fn type_error(errors: &mut Vec<FieldError>, path: &str, want: &str, v: &Value) {
    let actual = type_name(v);
    invalid(
        errors,
        path,
        &Value::String(actual.into()),
        format!("{path} in body must be of type {want}: \"{actual}\""),
    );
}

/// Whether `v` has the node's type; reports a type error when not.
fn check_type(node: &Node, v: &Value, path: &str, errors: &mut Vec<FieldError>) -> bool {
    if v.is_null() {
        if node.nullable || (node.ty.is_none() && !node.int_or_string) {
            return false; // valid, and nothing more to check
        }
        let want = node.ty.as_deref().unwrap_or("integer,string");
        type_error(errors, path, want, v);
        return false;
    }
    if node.int_or_string {
        let ok = matches!(v, Value::String(_)) || matches!(v, Value::Number(n) if is_integer(n));
        if !ok {
            type_error(errors, path, "integer,string", v);
        }
        return ok;
    }
    let ok = match node.ty.as_deref() {
        None => true,
        Some("object") => v.is_object(),
        Some("array") => v.is_array(),
        Some("string") => v.is_string(),
        Some("integer") => matches!(v, Value::Number(n) if is_integer(n)),
        Some("number") => v.is_number(),
        Some("boolean") => v.is_boolean(),
        Some(_) => true,
    };
    if !ok {
        type_error(errors, path, node.ty.as_deref().unwrap_or(""), v);
    }
    ok
}

/// Validates `v` at `path` against `node`; `root` skips `metadata` (the server's to check).
pub(crate) fn validate(
    node: &Node,
    v: &Value,
    path: &str,
    root: bool,
    errors: &mut Vec<FieldError>,
) {
    if !check_type(node, v, path, errors) {
        return;
    }
    // kube-openapi checks junctors right after the type, before the value's own checks.
    validate_junctors(node, v, path, errors);
    if let Some(allowed) = &node.enumeration
        && !allowed.contains(v)
    {
        // As upstream: every allowed value quoted, non-strings as their JSON.
        let list: Vec<String> = allowed
            .iter()
            .map(|a| match a {
                Value::String(s) => quote(s),
                other => quote(&other.to_string()),
            })
            .collect();
        errors.push(FieldError::new(
            path,
            "FieldValueNotSupported",
            format!(
                "Unsupported value: {v}: supported values: {}",
                list.join(", ")
            ),
        ));
    }
    match v {
        Value::String(s) => validate_string(node, s, v, path, errors),
        Value::Number(n) => validate_number(node, n, v, path, errors),
        Value::Object(m) => validate_object(node, m, path, root, errors),
        Value::Array(a) => validate_array(node, a, path, errors),
        _ => {}
    }
}

fn validate_string(node: &Node, s: &str, v: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let len = s.chars().count() as u64;
    if let Some(min) = node.min_length
        && len < min
    {
        invalid(
            errors,
            path,
            v,
            format!("{path} in body should be at least {min} chars long"),
        );
    }
    if let Some(max) = node.max_length
        && len > max
    {
        errors.push(FieldError::new(
            path,
            "FieldValueTooLong",
            format!("Too long: may not be more than {max} bytes"),
        ));
    }
    if let Some(re) = &node.pattern
        && !re.is_match(s)
    {
        invalid(
            errors,
            path,
            v,
            format!("{path} in body should match '{}'", re.as_str()),
        );
    }
    if let Some(f) = &node.format
        && !check_format(f, v)
    {
        invalid(
            errors,
            path,
            v,
            format!("{path} in body must be of type {f}: {v}"),
        );
    }
}

fn validate_number(
    node: &Node,
    n: &serde_json::Number,
    v: &Value,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let Some(x) = n.as_f64() else { return };
    if let Some(m) = node.multiple_of
        && m > 0.0
        && ((x / m) - (x / m).round()).abs() > 1e-9
    {
        invalid(
            errors,
            path,
            v,
            format!("{path} in body should be a multiple of {}", num(m)),
        );
    }
    if let Some(min) = node.minimum {
        if node.exclusive_minimum && x <= min {
            invalid(
                errors,
                path,
                v,
                format!("{path} in body should be greater than {}", num(min)),
            );
        } else if x < min {
            invalid(
                errors,
                path,
                v,
                format!(
                    "{path} in body should be greater than or equal to {}",
                    num(min)
                ),
            );
        }
    }
    if let Some(max) = node.maximum {
        if node.exclusive_maximum && x >= max {
            invalid(
                errors,
                path,
                v,
                format!("{path} in body should be less than {}", num(max)),
            );
        } else if x > max {
            invalid(
                errors,
                path,
                v,
                format!(
                    "{path} in body should be less than or equal to {}",
                    num(max)
                ),
            );
        }
    }
    if let Some(f) = &node.format
        && !check_format(f, v)
    {
        invalid(
            errors,
            path,
            v,
            format!("{path} in body must be of type {f}: {v}"),
        );
    }
}

fn validate_object(
    node: &Node,
    m: &Map<String, Value>,
    path: &str,
    root: bool,
    errors: &mut Vec<FieldError>,
) {
    for key in &node.required {
        if !m.contains_key(key) {
            errors.push(FieldError::new(
                &child(path, key),
                "FieldValueRequired",
                "Required value",
            ));
        }
    }
    if node.embedded {
        for key in ["apiVersion", "kind"] {
            let present = m
                .get(key)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty());
            if !present {
                errors.push(FieldError::new(
                    &child(path, key),
                    "FieldValueRequired",
                    "Required value: must not be empty",
                ));
            }
        }
        if let Some(meta) = m.get("metadata").and_then(Value::as_object) {
            let at = child(path, "metadata");
            errors.extend(
                crate::validation::validate_embedded_object_meta(meta, &at)
                    .into_iter()
                    .map(|e| FieldError::new(&e.field, e.reason, e.message)),
            );
        }
    }
    let count = (node.min_properties, node.max_properties);
    check_count(errors, path, m.len(), count, "properties");
    for (k, child_v) in m {
        if root && k == "metadata" {
            validate_root_metadata(node.properties.get("metadata"), child_v, errors);
            continue;
        }
        if let Some(p) = node.properties.get(k) {
            validate(p, child_v, &child(path, k), false, errors);
        } else if let Some(Additional::Schema(s)) = &node.additional {
            validate(s, child_v, &child(path, k), false, errors);
        }
    }
}

/// The root's `metadata` is the server's to check as `ObjectMeta`; its schema may only
/// constrain `name` and `generateName` (the structural checks refuse anything else), and those
/// constraints apply, as upstream's OpenAPI validation of the whole object applies them.
fn validate_root_metadata(schema: Option<&Node>, meta: &Value, errors: &mut Vec<FieldError>) {
    let (Some(schema), Value::Object(meta)) = (schema, meta) else {
        return;
    };
    for key in ["name", "generateName"] {
        if let (Some(p), Some(v)) = (schema.properties.get(key), meta.get(key)) {
            validate(p, v, &format!("metadata.{key}"), false, errors);
        }
    }
}

/// minProperties/maxProperties and minItems/maxItems: `bounds` is (min, max); `noun` names what
/// is counted in the too-few message (the real server says "items" in the too-many one for both).
fn check_count(
    errors: &mut Vec<FieldError>,
    path: &str,
    count: usize,
    bounds: (Option<u64>, Option<u64>),
    noun: &str,
) {
    let count = count as u64;
    if let Some(min) = bounds.0
        && count < min
    {
        invalid(
            errors,
            path,
            &Value::from(count),
            format!("{path} in body should have at least {min} {noun}"),
        );
    }
    if let Some(max) = bounds.1
        && count > max
    {
        errors.push(FieldError::new(
            path,
            "FieldValueTooMany",
            format!("Too many: {count}: must have at most {max} items"),
        ));
    }
}

fn validate_array(node: &Node, a: &[Value], path: &str, errors: &mut Vec<FieldError>) {
    check_count(
        errors,
        path,
        a.len(),
        (node.min_items, node.max_items),
        "items",
    );
    match node.list_type {
        Some(ListType::Map) => {
            let keys: Vec<Value> = a
                .iter()
                .map(|item| {
                    let mut k = Map::new();
                    for name in &node.list_map_keys {
                        if let Some(v) = item.get(name) {
                            k.insert(name.clone(), v.clone());
                        }
                    }
                    Value::Object(k)
                })
                .collect();
            report_duplicates(&keys, path, errors);
        }
        Some(ListType::Set) => report_duplicates(a, path, errors),
        _ if node.unique_items => report_duplicates(a, path, errors),
        _ => {}
    }
    if let Some(item) = &node.items {
        for (i, v) in a.iter().enumerate() {
            validate(item, v, &format!("{path}[{i}]"), false, errors);
        }
    }
}

/// `Duplicate value` at every index that repeats an earlier element.
fn report_duplicates(values: &[Value], path: &str, errors: &mut Vec<FieldError>) {
    for (i, v) in values.iter().enumerate() {
        if values[..i].contains(v) {
            errors.push(FieldError::new(
                &format!("{path}[{i}]"),
                "FieldValueDuplicate",
                format!("Duplicate value: {v}"),
            ));
        }
    }
}

fn passes(node: &Node, v: &Value, path: &str) -> bool {
    branch(node, v, path).0.is_empty()
}

/// A junctor branch's errors on `v`, and how many checks applied (kube-openapi's
/// `MatchCount`, by which it picks the failing branch to report).
fn branch(node: &Node, v: &Value, path: &str) -> (Vec<FieldError>, usize) {
    let mut e = Vec::new();
    validate(node, v, path, false, &mut e);
    (e, match_count(node, v))
}

/// How many of kube-openapi's validators apply to `v` under `node`, nested ones included:
/// one for the schema, its junctors and enum, its type or format (when declared, twice when
/// the type holds), string and format checks on a string, number checks on a number, and
/// the items of an array and properties of an object, each with their own.
fn match_count(node: &Node, v: &Value) -> usize {
    if v.is_null() {
        return 0;
    }
    let mut n = 4;
    if node.ty.is_some() || node.format.is_some() || node.int_or_string {
        // The type check counts once more when it holds.
        let holds = match node.ty.as_deref() {
            Some("object") => v.is_object(),
            Some("array") => v.is_array(),
            Some("string") => v.is_string(),
            Some("integer") => matches!(v, Value::Number(x) if is_integer(x)),
            Some("number") => v.is_number(),
            Some("boolean") => v.is_boolean(),
            Some(_) => true,
            None if node.int_or_string => {
                v.is_string() || matches!(v, Value::Number(x) if is_integer(x))
            }
            None => v.is_string() || v.is_array(),
        };
        n += 1 + usize::from(holds);
    }
    match v {
        Value::String(_) => n += 1 + usize::from(node.format.is_some()),
        Value::Number(_) => n += 1,
        Value::Array(a) => {
            n += 1;
            if let Some(items) = &node.items {
                n += a.iter().map(|e| match_count(items, e)).sum::<usize>();
            }
        }
        Value::Object(m) => {
            n += 1;
            for (k, x) in m {
                match (node.properties.get(k), &node.additional) {
                    (Some(p), _) => n += match_count(p, x),
                    (None, Some(Additional::Schema(s))) => n += match_count(s, x),
                    _ => {}
                }
            }
        }
        _ => {}
    }
    n
}

/// A junctor's own error, as kube-openapi words it and apiextensions reports it: at no field,
/// of value `""`, naming the value's path in its message.
fn composite(errors: &mut Vec<FieldError>, message: String) {
    errors.push(FieldError::new(
        "",
        "FieldValueInvalid",
        format!("Invalid value: \"\": {message}"),
    ));
}

/// anyOf, oneOf, allOf and not, as kube-openapi checks them: when no anyOf branch holds, its
/// error and the errors of the branch with the most checks applied (the first of equals);
/// when not exactly one oneOf branch holds, its error (with how many did) and, if none did,
/// the errors of its best branch; every allOf branch's errors, and the allOf error if any
/// failed; the not error if its schema holds.
fn validate_junctors(node: &Node, v: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let at = quote(path);
    if !node.any_of.is_empty() {
        let mut best: Option<(Vec<FieldError>, usize)> = None;
        let mut held = false;
        for s in &node.any_of {
            let (errs, count) = branch(s, v, path);
            if errs.is_empty() {
                held = true;
                break;
            }
            if best.as_ref().is_none_or(|(_, c)| count > *c) {
                best = Some((errs, count));
            }
        }
        if !held {
            composite(
                errors,
                format!("{at} must validate at least one schema (anyOf)"),
            );
            errors.extend(best.map(|(e, _)| e).unwrap_or_default());
        }
    }
    if !node.one_of.is_empty() {
        let mut best: Option<(Vec<FieldError>, usize)> = None;
        let mut held = 0;
        for s in &node.one_of {
            let (errs, count) = branch(s, v, path);
            if errs.is_empty() {
                held += 1;
                best = None;
                continue;
            }
            if held == 0 && best.as_ref().is_none_or(|(_, c)| count > *c) {
                best = Some((errs, count));
            }
        }
        if held != 1 {
            let found = if held == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {held} valid alternatives")
            };
            composite(
                errors,
                format!("{at} must validate one and only one schema (oneOf). {found}"),
            );
            errors.extend(best.map(|(e, _)| e).unwrap_or_default());
        }
    }
    if !node.all_of.is_empty() {
        let mut held = 0;
        for sub in &node.all_of {
            let before = errors.len();
            validate(sub, v, path, false, errors);
            if errors.len() == before {
                held += 1;
            }
        }
        if held != node.all_of.len() {
            let none = if held == 0 { ". None validated" } else { "" };
            composite(
                errors,
                format!("{at} must validate all the schemas (allOf){none}"),
            );
        }
    }
    if let Some(not) = &node.not
        && passes(not, v, path)
    {
        composite(errors, format!("{at} must not validate the schema (not)"));
    }
}
