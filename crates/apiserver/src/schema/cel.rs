//! CRD validation rules (`x-kubernetes-validations`): CEL expressions on schema nodes, as
//! `k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel` evaluates them.
//!
//! Every rule is compiled when the CRD is written (a rule that does not parse, or does not
//! type-check against the schema, refuses the CRD with `compilation failed: ...` at
//! `...x-kubernetes-validations[i].rule`; one over the cost budget with `estimated rule cost
//! exceeds budget ...`, see `crd_rules::check_schema`), and evaluated on
//! every write of a custom object with `self` bound to the node's value, within upstream's
//! runtime cost limits (see `runtime_cost`). A rule that names
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
//! (`find`, `findAll`) libraries of `cel_lib`. The cel crate checks no types when
//! compiling; `rule` checks names (`undeclared reference to 'x'`, as cel-go) and `check`
//! types (`undefined field 'x'`, `found no matching overload ...`) when the CRD is written.
//! What `check` lets through as `dyn` (an unknown function, a value of an
//! `x-kubernetes-int-or-string` field, a missing map key) fails on write instead, as an
//! evaluation error (`no such key: x evaluating rule: ...`).

use std::collections::HashMap;
use std::sync::Arc;

use cel::extractors::This;
use cel::objects::{Key, Map as CelMap};
use cel::{Context, Value as Cel};
use serde_json::Value;

use super::FieldError;
use super::node::{Additional, ListType, Node};
use super::rule::{ENV, Rule};
use super::runtime_cost::{Charge, Meter, Which};

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
                    super::quote(fp)
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

/// A JSON value as CEL sees it: integers as `int`, other numbers as `double`, objects as
/// maps with string keys.
pub(crate) fn to_cel(v: &Value) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Cel::Int(i),
            None => match n.as_u64() {
                Some(u) => Cel::UInt(u),
                None => Cel::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(a) => Cel::List(Arc::new(a.iter().map(to_cel).collect())),
        Value::Object(m) => {
            let map: HashMap<Key, Cel> = m
                .iter()
                .map(|(k, v)| (Key::from(k.as_str()), to_cel(v)))
                .collect();
            Cel::Map(CelMap { map: Arc::new(map) })
        }
    }
}

/// The least (`Less`) or greatest (`Greater`) element of a list; an error when empty.
fn extreme(l: &[Cel], keep: std::cmp::Ordering) -> Result<Cel, cel::ExecutionError> {
    let mut best = l
        .first()
        .ok_or_else(|| cel::ExecutionError::function_error("min/max", "list is empty"))?;
    for x in &l[1..] {
        match x.partial_cmp(best) {
            Some(o) if o == keep => best = x,
            Some(_) => {}
            None => {
                return Err(cel::ExecutionError::ValuesNotComparable(
                    x.clone(),
                    best.clone(),
                ));
            }
        }
    }
    Ok(best.clone())
}

/// Kubernetes' list library: `isSorted`, `sum`, `min`, `max` on lists.
pub(crate) fn add_k8s_lists(ctx: &mut Context<'_, '_>) {
    let _ = ctx.add_function("min", |This(l): This<Arc<Vec<Cel>>>| {
        extreme(&l, std::cmp::Ordering::Less)
    });
    let _ = ctx.add_function("max", |This(l): This<Arc<Vec<Cel>>>| {
        extreme(&l, std::cmp::Ordering::Greater)
    });
    let _ = ctx.add_function("isSorted", |This(l): This<Arc<Vec<Cel>>>| {
        l.windows(2)
            .all(|w| w[0].partial_cmp(&w[1]) != Some(std::cmp::Ordering::Greater))
    });
    let _ = ctx.add_function("sum", |This(l): This<Arc<Vec<Cel>>>| -> Cel {
        let mut int = 0i64;
        let mut float = 0f64;
        let mut any_float = false;
        for x in l.iter() {
            match x {
                Cel::Int(i) => int = int.wrapping_add(*i),
                Cel::UInt(u) => int = int.wrapping_add(*u as i64),
                Cel::Float(f) => {
                    any_float = true;
                    float += f
                }
                _ => {}
            }
        }
        if any_float {
            Cel::Float(float + int as f64)
        } else {
            Cel::Int(int)
        }
    });
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
/// within upstream's runtime cost limits ([`runtime_cost`](super::runtime_cost)): a first
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
            match meter.charge(rule, Which::Rule, node, resource_root, v, old) {
                Charge::Run => {
                    let mut message_meter = |field: &str| {
                        let ty = type_of(node, v);
                        let detail = match meter.charge(rule, Which::Message, node, resource_root, v, old) {
                            Charge::Run => return Ok(()),
                            Charge::Recount => return Err(None),
                            Charge::OutOfBudget => "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run".to_string(),
                            Charge::OverCallLimit => format!(
                                "no further validation rules will be run due to call cost exceeds limit for messageExpression: {}",
                                super::quote(rule.message_source.as_deref().unwrap_or_default())
                            ),
                        };
                        Err(Some(FieldError::new(
                            field,
                            "FieldValueInvalid",
                            format!("Invalid value: {}: {detail}", super::quote(&ty)),
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
                            super::quote(&type_of(node, v))
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
                            super::quote(&type_of(node, v)),
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
    super::cel_lib::register(&mut ctx);
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
                super::quote(&ty)
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
                format!("Invalid value: {}: {detail}", super::quote(&ty)),
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

/// The message of a failed rule: the `messageExpression`'s string when it evaluates to a
/// non-empty one, else `message`, else `failed rule: <rule>`.
fn message(rule: &Rule, ctx: &Context<'_, '_>) -> String {
    if let Some(expr) = &rule.message_expression
        && let Ok(Cel::String(s)) = expr.execute(ctx)
        && !s.trim().is_empty()
    {
        return s.trim().to_string();
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
        "FieldValueDuplicate" => format!("Duplicate value: {}", super::quote(ty)),
        _ => format!("Invalid value: {}: {detail}", super::quote(ty)),
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
