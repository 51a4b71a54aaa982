//! CRD validation rules (`x-kubernetes-validations`): CEL expressions on schema nodes, as
//! `k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel` evaluates them.
//!
//! Every rule is compiled when the CRD is written (a rule that does not parse, or does not
//! type-check against the schema, refuses the CRD with `compilation failed: ...` at
//! `...x-kubernetes-validations[i].rule`; one over the cost budget with `estimated rule cost
//! exceeds budget ...`, see `crd_rules::check_schema`), and evaluated on
//! every write of a custom object with `self` bound to the node's value, within upstream's
//! runtime cost limits (see [`crate::cel::runtime_cost`]). A rule that names
//! `oldSelf` is a transition rule: it is evaluated only on update, when the node has an old
//! value (or always, with `oldSelf` an optional, under `optionalOldSelf`). On update, a node
//! whose value did not change is not refused by its other rules (ratcheting, on by default
//! since Kubernetes 1.30; upstream turns those errors into warnings, this server drops them).
//! Old values are found by field name, by key in maps, and by the keys of
//! `x-kubernetes-list-type: map` lists; items of other lists have none, as upstream.
//!
//! The language is the cel crate's standard library with its macros (`has`, `all`,
//! `exists`, `exists_one`, `map`, `filter`), its strings extension (`lowerAscii`,
//! `upperAscii`, `split`, `join`, `trim`, `replace`, `indexOf`, `lastIndexOf`, `substring`,
//! `format`) and its lists extension, plus Kubernetes' list library (`isSorted`, `sum`,
//! `min`, `max`, `indexOf`, `lastIndexOf`), and the quantity, url, ip, cidr, format and regex
//! (`find`, `findAll`) libraries of [`crate::cel::library`]. The cel crate checks no types
//! when compiling; `rule` checks names (`undeclared reference to 'x'`, as cel-go) and
//! [`crate::cel::check`] types (`undefined field 'x'`, `found no matching overload ...`)
//! when the CRD is written. What the checker lets through as `dyn` (an unknown function, a value of an
//! `x-kubernetes-int-or-string` field, a missing map key) fails on write instead, as an
//! evaluation error (`no such key: x evaluating rule: ...`).

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map as CelMap};
use cel::{Context, Value as Cel};
use serde_json::Value;

use super::decl::decl_of;
use super::error::FieldError;
use super::node::{Additional, ListType, Node};
use super::rule::Rule;
use crate::cel::check::{Decl, check};
use crate::cel::cost::estimate;
use crate::cel::library::{self, add_k8s_lists};
use crate::cel::parse::ENV;
use crate::cel::runtime_cost::{Charge, Meter, sized};
use crate::cel::value::to_cel;

/// Checks that every rule's `fieldPath` names a field the schema declares (`.a.b`,
/// `['a.b']`), as upstream does when the CRD is written; `path` is the node's in the schema.
pub(crate) fn check_field_paths(node: &Node, path: &str, errors: &mut Vec<FieldError>) {
    for rule in &node.rules {
        let Some(fp) = &rule.field_path else { continue };
        if let Err(why) = resolve_field_path(node, fp) {
            errors.push(FieldError::new(
                &child(
                    path,
                    &format!("x-kubernetes-validations[{}].fieldPath", rule.index),
                ),
                "FieldValueInvalid",
                format!(
                    "Invalid value: {}: fieldPath must be a valid path: {why}",
                    super::error::quote(fp)
                ),
            ));
        }
    }
    for (k, p) in &node.properties {
        check_field_paths(p, &format!("{}[{k}]", child(path, "properties")), errors);
    }
    if let Some(Additional::Schema(s)) = &node.additional {
        check_field_paths(s, &child(path, "additionalProperties"), errors);
    }
    if let Some(items) = &node.items {
        check_field_paths(items, &child(path, "items"), errors);
    }
}

/// The field path a `fieldPath` names under `node`, as upstream's `ValidFieldPath` prints it
/// (`a.b`, `a[key]` for a key of a map).
fn resolve_field_path(mut node: &Node, fp: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = fp;
    while !rest.is_empty() {
        let name = if let Some(r) = rest.strip_prefix("['") {
            let end = r.find("']").ok_or("unexpected end of JSON path")?;
            rest = &r[end + 2..];
            &r[..end]
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            rest = &r[end..];
            &r[..end]
        } else {
            return Err(format!("expected [ or . but got: {rest}"));
        };
        if let Some(p) = node.properties.get(name) {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(name);
            node = p;
        } else if let Some(Additional::Schema(s)) = &node.additional {
            out.push_str(&format!("[{name}]"));
            node = s;
        } else {
            return Err("does not refer to a valid field".into());
        }
    }
    Ok(out)
}

/// A value under `node` as CEL sees it: numbers of `type: number` as `double` (as upstream,
/// also when written as integers), the rest as [`to_cel`] makes them.
fn to_cel_typed(node: &Node, v: &Value) -> Cel {
    match v {
        Value::Number(n) if node.ty.as_deref() == Some("number") => {
            Cel::Float(n.as_f64().unwrap_or(f64::NAN))
        }
        Value::Array(a) => match &node.items {
            Some(items) => Cel::List(Arc::new(a.iter().map(|x| to_cel_typed(items, x)).collect())),
            None => to_cel(v),
        },
        Value::Object(m) => {
            let map: HashMap<Key, Cel> = m
                .iter()
                .map(|(k, x)| {
                    let sub = node.properties.get(k).or(match &node.additional {
                        Some(Additional::Schema(s)) => Some(s),
                        _ => None,
                    });
                    let c = match sub {
                        Some(sub) => to_cel_typed(sub, x),
                        None => to_cel(x),
                    };
                    (Key::from(k.as_str()), c)
                })
                .collect();
            Cel::Map(CelMap { map: Arc::new(map) })
        }
        _ => to_cel(v),
    }
}

fn type_of(node: &Node, v: &Value) -> String {
    if let Some(t) = &node.ty {
        return t.clone();
    }
    match v {
        Value::String(_) => "string",
        Value::Number(_) => "integer",
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::Bool(_) => "boolean",
        Value::Null => "null",
    }
    .to_string()
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Evaluates the rules of `node` and of every node under it against `v`, with `old` the
/// value at the same place before an update (`None` on create, or where there is none),
/// within upstream's runtime cost limits ([`crate::cel::runtime_cost`]): a first
/// pass charges each rule its static estimate; if that bound could reach a limit, the
/// object is validated again charging actual costs.
pub(crate) fn validate(
    node: &Node,
    v: &Value,
    old: Option<&Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let mut first = Vec::new();
    let mut meter = Meter::bound();
    walk(node, v, old, path, &mut meter, &mut first);
    if !meter.recount() {
        errors.extend(first);
        return;
    }
    walk(node, v, old, path, &mut Meter::exact(), errors);
}

fn walk(
    node: &Node,
    v: &Value,
    old: Option<&Value>,
    path: &str,
    meter: &mut Meter,
    errors: &mut Vec<FieldError>,
) {
    if meter.stopped() {
        return;
    }
    // Ratcheting: an unchanged value is not refused by its rules, save transition rules.
    let unchanged = old == Some(v);
    if !v.is_null() {
        for rule in &node.rules {
            if unchanged && !rule.transition {
                continue;
            }
            if rule.transition && old.is_none() && !rule.optional_old_self {
                continue;
            }
            let resource_root = path.is_empty() || node.embedded;
            match meter.charge(
                || static_cost(rule, Which::Rule, node, resource_root),
                || actual_cost(rule, Which::Rule, node, resource_root, v, old),
            ) {
                Charge::Run => {
                    let mut message_meter = |field: &str| {
                        let ty = type_of(node, v);
                        let detail = match meter.charge(
                            || static_cost(rule, Which::Message, node, resource_root),
                            || actual_cost(rule, Which::Message, node, resource_root, v, old),
                        ) {
                            Charge::Run => return Ok(()),
                            Charge::Recount => return Err(None),
                            Charge::OutOfBudget => "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run".to_string(),
                            Charge::OverCallLimit => format!(
                                "no further validation rules will be run due to call cost exceeds limit for messageExpression: {}",
                                super::error::quote(rule.message_source.as_deref().unwrap_or_default())
                            ),
                        };
                        Err(Some(FieldError::new(
                            field,
                            "FieldValueInvalid",
                            format!("Invalid value: {}: {detail}", super::error::quote(&ty)),
                        )))
                    };
                    if check_rule(rule, node, v, old, path, &mut message_meter, errors) {
                        return;
                    }
                }
                Charge::Recount => return,
                Charge::OutOfBudget => {
                    errors.push(FieldError::new(
                        path,
                        "FieldValueInvalid",
                        format!(
                            "Invalid value: {}: validation failed due to running out of cost budget, no further validation rules will be run",
                            super::error::quote(&type_of(node, v))
                        ),
                    ));
                    return;
                }
                Charge::OverCallLimit => {
                    errors.push(FieldError::new(
                        path,
                        "FieldValueInvalid",
                        format!(
                            "Invalid value: {}: 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                            super::error::quote(&type_of(node, v)),
                            rule.error_string()
                        ),
                    ));
                    return;
                }
            }
        }
    }
    match v {
        Value::Object(m) => {
            let old_m = old.and_then(Value::as_object);
            for (k, child_v) in m {
                let sub = match node.properties.get(k) {
                    Some(p) => p,
                    None => match &node.additional {
                        Some(Additional::Schema(s)) => s,
                        _ => continue,
                    },
                };
                let old_child = old_m.and_then(|o| o.get(k));
                walk(sub, child_v, old_child, &child(path, k), meter, errors);
                if meter.stopped() {
                    return;
                }
            }
        }
        Value::Array(a) => {
            let Some(items) = &node.items else { return };
            let old_a = old.and_then(Value::as_array);
            for (i, item) in a.iter().enumerate() {
                let old_item = match (node.list_type, old_a) {
                    (Some(ListType::Map), Some(olds)) => olds
                        .iter()
                        .find(|o| node.list_map_keys.iter().all(|k| o.get(k) == item.get(k))),
                    _ => None,
                };
                walk(
                    items,
                    item,
                    old_item,
                    &format!("{path}[{i}]"),
                    meter,
                    errors,
                );
                if meter.stopped() {
                    return;
                }
            }
        }
        _ => {}
    }
}

/// Evaluates one rule; `charge_message` charges its messageExpression (an error, or `None`
/// when the pass gives up, stops validation). Answers whether validation stops.
fn check_rule(
    rule: &Rule,
    node: &Node,
    v: &Value,
    old: Option<&Value>,
    path: &str,
    charge_message: &mut dyn FnMut(&str) -> Result<(), Option<FieldError>>,
    errors: &mut Vec<FieldError>,
) -> bool {
    if rule.transition && old.is_none() && !rule.optional_old_self {
        return false;
    }
    let mut ctx = Context::with_env(ENV.clone());
    add_k8s_lists(&mut ctx);
    library::register(&mut ctx);
    let view = |x: &Value| {
        if path.is_empty() {
            to_cel_typed(node, &root_view(x))
        } else {
            to_cel_typed(node, x)
        }
    };
    ctx.add_variable_from_value("self", view(v));
    if rule.transition {
        let old_cel = match (old, rule.optional_old_self) {
            (Some(o), false) => view(o),
            (Some(o), true) => optional(Some(view(o))),
            (None, _) => optional(None),
        };
        ctx.add_variable_from_value("oldSelf", old_cel);
    }
    let field = match rule
        .field_path
        .as_deref()
        .and_then(|fp| resolve_field_path(node, fp).ok())
    {
        Some(rel) if rel.starts_with('[') => format!("{path}{rel}"),
        Some(rel) => child(path, &rel),
        // Upstream validates the root with a nil field path, which prints as `<nil>`.
        None if path.is_empty() => "<nil>".to_string(),
        None => path.to_string(),
    };
    let ty = type_of(node, v);
    match rule.program.execute(&ctx) {
        Ok(Cel::Bool(true)) => {}
        Ok(Cel::Bool(false)) => {
            if rule.message_expression.is_some() {
                match charge_message(&field) {
                    Ok(()) => {}
                    Err(stop) => {
                        errors.extend(stop);
                        return true;
                    }
                }
            }
            let detail = message(rule, &ctx);
            errors.push(field_error(&field, rule.reason, &ty, &detail));
        }
        Ok(other) => errors.push(FieldError::new(
            &field,
            "FieldValueInvalid",
            format!(
                "Invalid value: {}: rule did not evaluate to a bool: {other:?}",
                super::error::quote(&ty)
            ),
        )),
        Err(e) => {
            let overload = matches!(e, cel::ExecutionError::NoSuchOverload(_));
            // cel-go's errors begin in lower case (`no such key: x`); the cel crate's do not.
            let e = e.to_string();
            let mut chars = e.chars();
            let e: String = chars
                .next()
                .map(|c| c.to_ascii_lowercase())
                .into_iter()
                .chain(chars)
                .collect();
            let detail = if overload {
                format!(
                    "'{e}': call arguments did not match a supported operator, function or macro signature for rule: {}",
                    rule.error_string()
                )
            } else {
                format!("{e} evaluating rule: {}", rule.error_string())
            };
            errors.push(FieldError::new(
                &field,
                "FieldValueInvalid",
                format!("Invalid value: {}: {detail}", super::error::quote(&ty)),
            ))
        }
    }
    false
}

/// The object as a root rule sees it: its `metadata` holds only `name` and `generateName`,
/// as upstream exposes it.
fn root_view(obj: &Value) -> Value {
    let mut obj = obj.clone();
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        meta.retain(|k, _| k == "name" || k == "generateName");
    }
    obj
}

/// `oldSelf` under `optionalOldSelf`: an optional of the old value.
fn optional(v: Option<Cel>) -> Cel {
    let mut env_ctx = Context::with_env(ENV.clone());
    let src = if v.is_some() {
        "optional.of(x)"
    } else {
        "optional.none()"
    };
    if let Some(v) = v {
        env_ctx.add_variable_from_value("x", v);
    }
    match ENV.compile(src).map(|p| p.execute(&env_ctx)) {
        Ok(Ok(o)) => o,
        _ => Cel::Null,
    }
}

/// The longest message a `messageExpression` may give, in bytes after trimming (upstream's
/// `MaxEvaluatedMessageExpressionSizeBytes`).
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// The message of a failed rule: the `messageExpression`'s string, trimmed, when it is not
/// empty, has no line break and is at most [`MAX_MESSAGE_BYTES`] long; else `message`, else
/// `failed rule: <rule>`.
fn message(rule: &Rule, ctx: &Context<'_, '_>) -> String {
    if let Some(expr) = &rule.message_expression
        && let Ok(Cel::String(s)) = expr.execute(ctx)
    {
        let s = s.trim();
        if !s.is_empty() && !s.contains('\n') && s.len() <= MAX_MESSAGE_BYTES {
            return s.to_string();
        }
    }
    match &rule.message {
        Some(m) => m.clone(),
        None => format!("failed rule: {}", rule.error_string()),
    }
}

impl Rule {
    /// The rule in error messages: its `message`, else its source, as upstream's
    /// `ruleErrorString`.
    fn error_string(&self) -> &str {
        self.message.as_deref().unwrap_or(self.source.trim())
    }
}

/// The cause for a failed rule, by its `reason`, as upstream's `fieldErrorForReason`.
fn field_error(field: &str, reason: &'static str, ty: &str, detail: &str) -> FieldError {
    let message = match reason {
        "FieldValueForbidden" => format!("Forbidden: {detail}"),
        "FieldValueRequired" => format!("Required value: {detail}"),
        "FieldValueDuplicate" => format!("Duplicate value: {}", super::error::quote(ty)),
        _ => format!("Invalid value: {}: {detail}", super::error::quote(ty)),
    };
    FieldError::new(field, reason, message)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::schema::StructuralSchema;

    fn schema(spec: serde_json::Value) -> StructuralSchema {
        StructuralSchema::from_value(&json!({"type": "object", "properties": {"spec": spec}}))
            .unwrap()
    }

    fn errors(s: &StructuralSchema, spec: serde_json::Value) -> Vec<String> {
        s.validate(&json!({"spec": spec}))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn cross_field_rule_with_default_message() {
        let s = schema(json!({"type": "object",
            "x-kubernetes-validations": [{"rule": "self.minReplicas <= self.maxReplicas"}],
            "properties": {"minReplicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}}}));
        assert!(errors(&s, json!({"minReplicas": 1, "maxReplicas": 3})).is_empty());
        assert_eq!(
            errors(&s, json!({"minReplicas": 4, "maxReplicas": 3})),
            [r#"spec: Invalid value: "object": failed rule: self.minReplicas <= self.maxReplicas"#]
        );
    }

    #[test]
    fn messages_reasons_and_field_paths() {
        let s = schema(json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "self.name.matches('^[a-z]+$')", "message": "name must be lowercase letters",
             "fieldPath": ".name"},
            {"rule": "size(self.name) < 6", "messageExpression": "'name too long: ' + self.name",
             "reason": "FieldValueForbidden"},
            {"rule": "has(self.owner)", "message": "owner is required", "reason": "FieldValueRequired"},
        ], "properties": {"name": {"type": "string"}, "owner": {"type": "string"}}}));
        assert!(errors(&s, json!({"name": "abc", "owner": "me"})).is_empty());
        assert_eq!(
            errors(&s, json!({"name": "ABCDEFG"})),
            [
                r#"spec.name: Invalid value: "object": name must be lowercase letters"#,
                "spec: Forbidden: name too long: ABCDEFG",
                "spec: Required value: owner is required",
            ]
        );
        let errs = s.validate(&json!({"spec": {"name": "abc"}}));
        assert_eq!(errs[0].reason, "FieldValueRequired");
    }

    #[test]
    fn list_macros_and_library() {
        let s = schema(json!({"type": "object", "properties": {
            // Bounded as Gateway API bounds them: unbounded, the O(n²) uniqueness rule is over
            // the cost budget and the CRD is refused, as upstream.
            "listeners": {"type": "array", "maxItems": 64, "items": {"type": "object",
                "properties": {"name": {"type": "string", "maxLength": 253},
                               "port": {"type": "integer"}}},
                "x-kubernetes-validations": [
                    {"rule": "self.all(l1, self.exists_one(l2, l1.name == l2.name))",
                     "message": "Listener name must be unique within the Gateway"},
                    {"rule": "self.map(l, l.port).isSorted()", "message": "sorted"},
                    {"rule": "self.map(l, l.port).sum() < 100000", "message": "sum"},
                    // On strings a computed list has no size bound upstream (its elements'
                    // lengths are unknown), so these search a list of ints.
                    {"rule": "self.map(l, l.port).indexOf(8080) == -1 && \
                              self.map(l, l.port).lastIndexOf(8080) == -1 && 'abc'.indexOf('c') == 2",
                     "message": "indexOf"},
                    {"rule": "self.map(l, l.port).min() > 0 && self.map(l, l.port).max() < 1024",
                     "message": "privileged ports"},
                    {"rule": "self.filter(l, l.name.startsWith('x')).size() == 0 && \
                              self.exists(l, l.name.lowerAscii() == l.name)", "message": "names"}]}}}));
        let ok = json!({"listeners": [{"name": "a", "port": 80}, {"name": "b", "port": 443}]});
        assert!(errors(&s, ok).is_empty());
        let dup = json!({"listeners": [{"name": "a", "port": 443}, {"name": "a", "port": 80}]});
        assert_eq!(
            errors(&s, dup),
            [
                r#"spec.listeners: Invalid value: "array": Listener name must be unique within the Gateway"#,
                r#"spec.listeners: Invalid value: "array": sorted"#,
            ]
        );
    }

    #[test]
    fn transition_rules_and_ratcheting() {
        let s = schema(json!({"type": "object", "properties": {
            "cluster": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "Value is immutable"}]},
            "name": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$')"}]}}}));
        // On create a transition rule does not run.
        assert!(errors(&s, json!({"cluster": "a", "name": "ok"})).is_empty());
        let old = json!({"spec": {"cluster": "a", "name": "BAD"}});
        let upd = |spec| -> Vec<String> {
            s.validate_update(&json!({"spec": spec}), &old)
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        // An unchanged invalid value is kept (ratcheting); a changed one is refused.
        assert!(upd(json!({"cluster": "a", "name": "BAD"})).is_empty());
        assert_eq!(
            upd(json!({"cluster": "b", "name": "STILLBAD"})),
            [
                r#"spec.cluster: Invalid value: "string": Value is immutable"#,
                r#"spec.name: Invalid value: "string": failed rule: self.matches('^[a-z]+$')"#,
            ]
        );
    }

    #[test]
    fn evaluation_errors_name_the_rule() {
        // Both rules type-check (a map's value, an int-or-string) and fail only on evaluation.
        let s = schema(json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "self.labels.missing > 1"},
            {"rule": "self.name > 1", "message": "bad name"}],
            "properties": {"name": {"x-kubernetes-int-or-string": true},
                           "labels": {"type": "object",
                                      "additionalProperties": {"type": "integer"}}}}));
        let errs = errors(&s, json!({"name": "a", "labels": {}}));
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(
            errs[0].starts_with(r#"spec: Invalid value: "object": "#)
                && errs[0]
                    .ends_with(": no such key: missing evaluating rule: self.labels.missing > 1"),
            "{}",
            errs[0]
        );
        assert!(errs[1].ends_with("bad name"), "{}", errs[1]);
    }

    #[test]
    fn root_rules_see_name_and_kind_only_in_metadata() {
        let s = StructuralSchema::from_value(&json!({"type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.metadata.name.startsWith('pool-') && self.kind == 'Pool'"}]}))
        .unwrap();
        // Other metadata is not declared to rules: naming it refuses the schema, as upstream.
        let err = StructuralSchema::from_value(&json!({"type": "object",
            "x-kubernetes-validations": [{"rule": "!has(self.metadata.labels)"}]}))
        .unwrap_err();
        assert!(
            err.errors[0]
                .message
                .ends_with("compilation failed: ERROR: <input>:1:5: undefined field 'labels'\n | !has(self.metadata.labels)\n | ....^"),
            "{err}"
        );
        let obj = json!({"kind": "Pool", "metadata": {"name": "pool-a", "labels": {"a": "b"}}});
        assert!(s.validate(&obj).is_empty(), "{:?}", s.validate(&obj));
        let obj = json!({"kind": "Pool", "metadata": {"name": "other"}});
        assert_eq!(
            s.validate(&obj)[0].to_string(),
            r#"<nil>: Invalid value: "object": failed rule: self.metadata.name.startsWith('pool-') && self.kind == 'Pool'"#
        );
    }

    #[test]
    fn numbers_are_doubles() {
        let s = schema(
            json!({"type": "object", "properties": {"ratio": {"type": "number",
            "x-kubernetes-validations": [{"rule": "self + 0.5 <= 2.0"}]}}}),
        );
        assert!(errors(&s, json!({"ratio": 1})).is_empty());
        assert_eq!(
            errors(&s, json!({"ratio": 2})),
            [r#"spec.ratio: Invalid value: "number": failed rule: self + 0.5 <= 2.0"#]
        );
    }

    #[test]
    fn optional_old_self() {
        let s = schema(
            json!({"type": "object", "properties": {"mode": {"type": "string",
            "x-kubernetes-validations": [{"rule": "!oldSelf.hasValue() || self == oldSelf.value()",
                "optionalOldSelf": true, "message": "immutable once set"}]}}}),
        );
        assert!(
            errors(&s, json!({"mode": "a"})).is_empty(),
            "runs on create, with no old value"
        );
        let old = json!({"spec": {"mode": "a"}});
        let errs = s.validate_update(&json!({"spec": {"mode": "b"}}), &old);
        assert_eq!(
            errs[0].to_string(),
            r#"spec.mode: Invalid value: "string": immutable once set"#
        );
    }

    #[test]
    fn bad_rules_refuse_the_schema() {
        let err = StructuralSchema::from_value(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "x-kubernetes-validations": [
                {"rule": "self.a <= "}, {"rule": "self.a", "reason": "Nope"}]}}}))
        .unwrap_err();
        assert_eq!(err.errors.len(), 2, "{err}");
        assert_eq!(
            err.errors[0].path,
            "properties[spec].x-kubernetes-validations[0].rule"
        );
        assert!(
            err.errors[0].message.starts_with(
                r#"Invalid value: apiextensions.ValidationRule{Rule:"self.a <= ", Message:"", "#
            ) && err.errors[0].message.contains(": compilation failed: "),
            "{}",
            err.errors[0].message
        );
        assert_eq!(
            err.errors[1].path,
            "properties[spec].x-kubernetes-validations[1].reason"
        );
        assert_eq!(err.errors[1].reason, "FieldValueNotSupported");
    }
}

/// Which expression of a rule is evaluated.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Which {
    /// The rule itself.
    Rule,
    /// Its `messageExpression`, evaluated when the rule fails.
    Message,
}

/// The static estimate of a rule's expression at its node (as when the CRD was written),
/// computed once.
fn static_cost(rule: &Rule, which: Which, node: &Node, resource_root: bool) -> u64 {
    let slot = match which {
        Which::Rule => &rule.static_cost,
        Which::Message => &rule.message_static_cost,
    };
    *slot.get_or_init(|| {
        let decl = decl_of(node, resource_root);
        cost_at(rule, which, &decl)
    })
}

/// The rule's cost with `self` (and `oldSelf`) as long as they actually are.
fn actual_cost(
    rule: &Rule,
    which: Which,
    node: &Node,
    resource_root: bool,
    v: &Value,
    old: Option<&Value>,
) -> u64 {
    let declared = decl_of(node, resource_root);
    let mut values = vec![v];
    if rule.transition {
        values.extend(old);
    }
    let decl = sized(&declared, &values);
    cost_at(rule, which, &decl)
}

fn cost_at(rule: &Rule, which: Which, decl: &Decl) -> u64 {
    let program = match which {
        Which::Rule => &rule.program,
        Which::Message => match &rule.message_expression {
            Some(p) => p,
            None => return 0,
        },
    };
    let expr = program.expression();
    // A rule that does not check was refused with its CRD; charge it nothing here.
    match check(expr, decl, rule.optional_old_self) {
        Ok(checked) => estimate(expr, &checked, decl),
        Err(_) => 0,
    }
}

#[cfg(test)]
mod runtime_cost_tests {
    use serde_json::{Value, json};

    use crate::schema::StructuralSchema;

    fn schema(spec: Value) -> StructuralSchema {
        StructuralSchema::from_value(&json!({"type": "object", "properties": {"spec": spec}}))
            .unwrap()
    }

    fn errors(s: &StructuralSchema, spec: Value) -> Vec<String> {
        s.validate(&json!({"spec": spec}))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_rule_over_the_per_call_limit_stops_validation() {
        // Upstream's conformance test: the CRD is accepted (its estimate is under the
        // static limit), and an object with all 725 elements is refused at run time.
        let rule = "self.largeArray.all(x, self.largeArray.all(y, y == x))";
        let s = schema(json!({"type": "object",
            "x-kubernetes-validations": [{"rule": "self.x + self.y > 0"}, {"rule": rule}],
            "properties": {
                "x": {"type": "integer"}, "y": {"type": "integer"},
                "largeArray": {"type": "array", "maxItems": 725, "items": {"type": "integer"}}}}));
        let small: Vec<i64> = vec![20; 100];
        assert!(errors(&s, json!({"x": 1, "y": 1, "largeArray": small})).is_empty());
        let large: Vec<i64> = vec![20; 725];
        assert_eq!(
            errors(&s, json!({"x": 0, "y": 0, "largeArray": large})),
            [
                r#"spec: Invalid value: "object": failed rule: self.x + self.y > 0"#.to_string(),
                format!(
                    r#"spec: Invalid value: "object": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {rule}"#
                ),
            ]
        );
    }

    /// A list of lists of up to 100 elements, two rules on each costing up to 50,502 (cel-go's
    /// count for a nested `all` over n elements: 5n² + 5n + 2); the CRD's static bounds pass.
    fn lists() -> StructuralSchema {
        schema(json!({"type": "object", "properties": {"lists": {
            "type": "array", "maxItems": 190, "items": {
                "type": "array", "maxItems": 100, "items": {"type": "integer"},
                "x-kubernetes-validations": [
                    {"rule": "self.all(x, self.all(y, y == x))"},
                    {"rule": "self.all(x, self.all(y, x == y))"}]}}}}))
    }

    #[test]
    fn the_object_budget_runs_out_at_the_rule_that_overdraws_it() {
        // Ten rules on each string: `==` on strings costs a tenth per character, so 100,002
        // on a string of a million characters. The CRD's static bounds pass (four bytes per
        // character: 400,002 a rule, 24 strings, 9.6M a rule, 96M in all).
        let rules: Vec<Value> = (0..10).map(|_| json!({"rule": "self == self"})).collect();
        let s = schema(json!({"type": "object", "properties": {"strings": {
            "type": "array", "maxItems": 24, "items": {
                "type": "string", "maxLength": 1_000_000, "x-kubernetes-validations": rules}}}}));
        let long = "a".repeat(1_000_000);
        // Nine strings cost 9 × 1,000,020: within the budget.
        assert!(errors(&s, json!({"strings": vec![long.clone(); 9]})).is_empty());
        // The tenth string's last rule (100,002) overdraws the 99,802 left: validation stops
        // there, with one error, and the later strings are not looked at.
        assert_eq!(
            errors(&s, json!({"strings": vec![long; 24]})),
            [
                r#"spec.strings[9]: Invalid value: "string": validation failed due to running out of cost budget, no further validation rules will be run"#
            ]
        );
    }

    #[test]
    fn actual_sizes_not_schema_bounds_are_charged() {
        let s = lists();
        // 190 lists of 10 elements cost 190 × 2 × 552: the static bound (19.2M) is over the
        // budget, the actual cost is not, and the rules still run.
        let mut short = vec![vec![7; 10]; 190];
        assert!(errors(&s, json!({"lists": short.clone()})).is_empty());
        short[3][1] = 8;
        assert_eq!(
            errors(&s, json!({"lists": short})),
            [
                r#"spec.lists[3]: Invalid value: "array": failed rule: self.all(x, self.all(y, y == x))"#,
                r#"spec.lists[3]: Invalid value: "array": failed rule: self.all(x, self.all(y, x == y))"#
            ]
        );
    }

    #[test]
    fn costs_at_actual_sizes() {
        use super::{Which, actual_cost, static_cost};
        let s = lists();
        let node = s.root.properties["spec"].properties["lists"]
            .items
            .as_deref()
            .unwrap();
        let rule = &node.rules[0];
        let cost = |n: usize| actual_cost(rule, Which::Rule, node, false, &json!(vec![1; n]), None);
        assert_eq!((cost(1), cost(10), cost(100)), (12, 552, 50_502));
        assert_eq!(static_cost(rule, Which::Rule, node, false), 50_502);
    }

    #[test]
    fn a_message_expression_too_long_multiline_or_blank_gives_the_rules_message() {
        // A literal of 5,121 bytes: one more than upstream allows.
        let expression = format!(
            "self == 'long' ? '{}' : self == 'lines' ? 'a\\nb' : self == 'blank' ? '  ' : ' ' + self + ' is not x '",
            "a".repeat(5121)
        );
        let s = schema(json!({"type": "object", "properties": {"name": {
            "type": "string", "maxLength": 8, "x-kubernetes-validations": [
                {"rule": "self == 'x'", "message": "must be x", "messageExpression": expression}]}}}));
        let at = |name: &str| errors(&s, json!({"name": name}));
        assert_eq!(
            at("y"),
            [r#"spec.name: Invalid value: "string": y is not x"#],
            "trimmed"
        );
        for name in ["long", "lines", "blank"] {
            assert_eq!(
                at(name),
                [r#"spec.name: Invalid value: "string": must be x"#],
                "{name}"
            );
        }
    }

    #[test]
    fn a_failed_rules_message_expression_is_charged_too() {
        // Three `==` rules (100,002 each on a million characters), one that fails (3), and
        // its messageExpression, a concatenation costing a tenth per character of its
        // result (200,002): 500,011 a string. After 19 strings 499,791 is left; the 20th
        // string's rules leave 199,782, less than its messageExpression costs.
        let s = schema(json!({"type": "object", "properties": {"strings": {
            "type": "array", "maxItems": 24, "items": {
                "type": "string", "maxLength": 1_000_000, "x-kubernetes-validations": [
                    {"rule": "self == self"}, {"rule": "self == self"}, {"rule": "self == self"},
                    {"rule": "self == 'x'", "messageExpression": "self + self"}]}}}}));
        let long = "a".repeat(1_000_000);
        let got = errors(&s, json!({"strings": vec![long; 24]}));
        assert_eq!(got.len(), 20, "{:?}", &got[got.len().saturating_sub(2)..]);
        assert_eq!(
            got[19],
            r#"spec.strings[19]: Invalid value: "string": messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run"#
        );
    }
}
