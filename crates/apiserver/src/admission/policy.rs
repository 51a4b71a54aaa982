//! ValidatingAdmissionPolicy (`admissionregistration.k8s.io/v1`): CEL policies bound to
//! requests by ValidatingAdmissionPolicyBindings, enforced as upstream's
//! `plugin/policy/validating` (dispatcher and validator) enforces them.
//!
//! For every binding (in policy name, then binding name order) whose `spec.policyName` names
//! a stored policy:
//! 1. the policy's `matchConstraints` and then the binding's `matchResources` must match the
//!    request: `namespaceSelector`, `objectSelector` (the object's or the old object's
//!    labels), `resourceRules` (operations, apiGroups, apiVersions, resources with `*` and
//!    subresources as `pods/status`, `*/scale`, `pods/*`, resourceNames, scope), minus
//!    `excludeResourceRules`;
//! 2. the params are collected: none without `spec.paramKind` or without the binding's
//!    `paramRef`; otherwise the object `paramRef.name` names (or those `paramRef.selector`
//!    selects) in `paramRef.namespace`, else the request's namespace; none found is a
//!    configuration error under `parameterNotFoundAction: Deny`, and skips the binding
//!    under `Allow`;
//! 3. for each param, `matchConditions` are evaluated (one `false` skips the policy; an error
//!    follows `failurePolicy`), then `variables` in order, then every validation, with
//!    `object`, `oldObject` (`null` on create), `request` (an `AdmissionRequest`: kind,
//!    resource, subResource, name, namespace, operation, userInfo, dryRun), `params`,
//!    `namespaceObject` and `variables` bound;
//! 4. a validation that is not `true` is a failure worded by its `messageExpression`, its
//!    `message` or `failed expression: <expression>`; an evaluation error is one only under
//!    `failurePolicy: Fail` (the default), worded `expression '<e>' resulted in error: ...`.
//!    Each failure goes to the binding's `validationActions`: `Deny` refuses the request
//!    (the first denial is answered, with the validation's `reason`, `Invalid` 422 by
//!    default), `Warn` adds a `Warning`, `Audit` does nothing here (there is no audit log).
//!
//! Configuration errors (an unknown `paramKind`, a bad selector, missing params) refuse the
//! request under `failurePolicy: Fail` whatever the binding's actions, worded `failed to
//! configure binding: ...`, as upstream.
//!
//! Not done: the `authorizer` variable (declared, so policies naming it compile, but an
//! evaluation error when reached), `auditAnnotations` (there is no audit log),
//! `matchPolicy: Equivalent` (rules match the request's own group and version), CEL type
//! checking (a non-boolean validation result is a failure, not a compilation error).
//!
//! CEL is compiled once per policy resourceVersion ([`Cache`]), with the CRD rules' language
//! ([`crate::cel`]): the same standard library, extensions and Kubernetes libraries.

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map as CelMap};
use cel::{Context, Program, Value as Cel};
use crt_labels::{LabelSelector, MatchExpression};
use parking_lot::Mutex;
use serde_json::{Value, json};

use super::{Attributes, Lookup};
use crate::cel::library::add_k8s_lists;
use crate::cel::parse::{ENV, free_idents, parse, position};
use crate::cel::value::to_cel;
use crate::error::ApiError;
use crate::validation::FieldError;

/// The variables a policy's expressions may name.
const VARIABLES: [&str; 7] = [
    "object",
    "oldObject",
    "request",
    "params",
    "namespaceObject",
    "variables",
    "authorizer",
];

/// Compiles one expression of a policy; the error is worded as upstream's (`compilation
/// failed: ERROR: <input>:1:11: ...`).
fn compile(src: &str) -> Result<Program, String> {
    let p = parse(src).map_err(|e| format!("compilation failed: {e}"))?;
    let mut free = Vec::new();
    free_idents(p.expression(), &mut Vec::new(), &mut free);
    if let Some((id, name)) = free.iter().find(|(_, n)| !VARIABLES.contains(&n.as_str())) {
        let (line, col, text) = position(src, p.source_info().offset_for(*id));
        return Err(format!(
            "compilation failed: ERROR: <input>:{line}:{col}: undeclared reference to '{name}' (in container '')\n | {text}\n | {}^",
            ".".repeat(col - 1)
        ));
    }
    Ok(p)
}

/// One expression and its program (or why it did not compile).
struct Expr {
    source: String,
    program: Result<Program, String>,
}

impl Expr {
    fn new(source: &str) -> Self {
        Expr {
            source: source.to_string(),
            program: compile(source),
        }
    }

    /// Evaluates the expression; an error is worded as upstream's CEL filter words it.
    fn eval(&self, ctx: &Context<'_, '_>) -> Result<Cel, String> {
        let program = self
            .program
            .as_ref()
            .map_err(|e| format!("expression '{}' resulted in error: {e}", self.source.trim()))?;
        program.execute(ctx).map_err(|e| {
            format!(
                "expression '{}' resulted in error: {}",
                self.source.trim(),
                lower_first(&e.to_string())
            )
        })
    }
}

/// cel-go's errors begin in lower case (`no such key: x`); the cel crate's do not.
fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_ascii_lowercase())
        .into_iter()
        .chain(chars)
        .collect()
}

/// One entry of `spec.validations`.
struct Validation {
    expr: Expr,
    message: Option<String>,
    message_expression: Option<Program>,
    reason: Option<String>,
}

/// A policy's spec, compiled.
pub(crate) struct Compiled {
    name: String,
    /// `failurePolicy: Fail` (the default), else `Ignore`.
    fail: bool,
    /// `spec.matchConstraints` (`null` when absent).
    constraints: Value,
    /// `spec.paramKind`: apiVersion and kind.
    param_kind: Option<(String, String)>,
    conditions: Vec<(String, Expr)>,
    variables: Vec<(String, Expr)>,
    validations: Vec<Validation>,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled")
            .field("name", &self.name)
            .finish()
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn list_of<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

impl Compiled {
    fn new(policy: &Value) -> Self {
        let spec = policy.get("spec").unwrap_or(&Value::Null);
        let named = |key: &str, expr_key: &str| -> Vec<(String, Expr)> {
            list_of(spec, key)
                .iter()
                .map(|c| {
                    (
                        str_of(c, "name").to_string(),
                        Expr::new(str_of(c, expr_key)),
                    )
                })
                .collect()
        };
        let param_kind = spec
            .get("paramKind")
            .filter(|p| p.is_object())
            .map(|p| (str_of(p, "apiVersion").into(), str_of(p, "kind").into()));
        let validations = list_of(spec, "validations")
            .iter()
            .map(|v| Validation {
                expr: Expr::new(str_of(v, "expression")),
                message: Some(str_of(v, "message").trim().to_string()).filter(|m| !m.is_empty()),
                message_expression: v
                    .get("messageExpression")
                    .and_then(Value::as_str)
                    .filter(|s| !s.trim().is_empty())
                    .and_then(|s| compile(s).ok()),
                reason: v
                    .get("reason")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            })
            .collect();
        Compiled {
            name: crate::validation::str_at(policy, &["metadata", "name"]).to_string(),
            fail: str_of(spec, "failurePolicy") != "Ignore",
            constraints: spec.get("matchConstraints").cloned().unwrap_or(Value::Null),
            param_kind,
            conditions: named("matchConditions", "expression"),
            variables: named("variables", "expression"),
            validations,
        }
    }
}

/// The compiled policies, by name, each with the resourceVersion it was compiled at: a
/// policy is compiled again only when it changed. The storage layer keeps one.
#[derive(Default)]
pub(crate) struct Cache(Mutex<HashMap<String, (String, Arc<Compiled>)>>);

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("policies", &self.0.lock().len())
            .finish()
    }
}

impl Cache {
    /// The compiled form of `policy`, compiled now unless its resourceVersion was.
    fn get(&self, policy: &Value) -> Arc<Compiled> {
        let name = crate::validation::str_at(policy, &["metadata", "name"]);
        let rv = crate::validation::str_at(policy, &["metadata", "resourceVersion"]);
        let mut map = self.0.lock();
        if let Some((at, c)) = map.get(name)
            && at == rv
        {
            return c.clone();
        }
        let c = Arc::new(Compiled::new(policy));
        map.insert(name.to_string(), (rv.to_string(), c.clone()));
        c
    }
}

/// Checks a ValidatingAdmissionPolicy as upstream does when it is written (the parts that
/// are cheap here): at least one validation, and every expression compiles.
pub(crate) fn validate_policy(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    if list_of(spec, "validations").is_empty() && list_of(spec, "auditAnnotations").is_empty() {
        errs.push(FieldError::required(
            "spec.validations",
            "validations or auditAnnotations must contain at least one item",
        ));
    }
    let mut check =
        |path: String, src: Option<&Value>, required: bool| match src.and_then(Value::as_str) {
            Some(s) if !s.trim().is_empty() => {
                if let Err(why) = compile(s) {
                    errs.push(FieldError::invalid(path, &Value::from(s), &why));
                }
            }
            _ if required => errs.push(FieldError::required(path, "expression is not specified")),
            _ => {}
        };
    for (i, v) in list_of(spec, "validations").iter().enumerate() {
        check(
            format!("spec.validations[{i}].expression"),
            v.get("expression"),
            true,
        );
        check(
            format!("spec.validations[{i}].messageExpression"),
            v.get("messageExpression"),
            false,
        );
    }
    for (key, field) in [
        ("matchConditions", "expression"),
        ("variables", "expression"),
        ("auditAnnotations", "valueExpression"),
    ] {
        for (i, v) in list_of(spec, key).iter().enumerate() {
            check(format!("spec.{key}[{i}].{field}"), v.get(field), true);
        }
    }
    errs
}

/// The validation actions a binding may name.
const ACTIONS: [&str; 3] = ["Audit", "Deny", "Warn"];

/// Checks a ValidatingAdmissionPolicyBinding as upstream does when it is written (the cheap
/// parts): a policy name and at least one known, distinct validation action.
pub(crate) fn validate_binding(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    if str_of(spec, "policyName").is_empty() {
        errs.push(FieldError::required("spec.policyName", ""));
    }
    let actions = list_of(spec, "validationActions");
    if actions.is_empty() {
        errs.push(FieldError::required(
            "spec.validationActions",
            "at least one validation action is required",
        ));
    }
    for (i, a) in actions.iter().enumerate() {
        let path = format!("spec.validationActions[{i}]");
        if actions[..i].contains(a) {
            errs.push(FieldError::duplicate(path, a));
        } else if !a.as_str().is_some_and(|s| ACTIONS.contains(&s)) {
            errs.push(FieldError::not_supported(path, a, &ACTIONS));
        }
    }
    errs
}

/// One validation's outcome for one param.
enum Decision {
    /// Refused (or errored under `failurePolicy: Fail`): the message and the `reason`.
    Deny(String, Option<String>),
}

/// The first denial, answered as the request's error.
struct Denial {
    policy: String,
    binding: String,
    message: String,
    reason: Option<String>,
}

/// Runs every policy bound by `bindings` against the request: the warnings the write carries
/// (`Warn` actions), or the error that refuses it (`Deny` actions, configuration errors under
/// `failurePolicy: Fail`). The admission configuration itself is exempt.
pub(crate) fn admit(
    cache: &Cache,
    bindings: &[Arc<Value>],
    attrs: &Attributes<'_>,
    store: &dyn Lookup,
) -> Result<Vec<String>, ApiError> {
    if bindings.is_empty() || attrs.is_exempt() {
        return Ok(Vec::new());
    }
    let mut ordered: Vec<&Arc<Value>> = bindings.iter().collect();
    ordered.sort_by_key(|b| {
        (
            crate::validation::str_at(b, &["spec", "policyName"]),
            crate::validation::str_at(b, &["metadata", "name"]),
        )
    });
    let mut warnings = Vec::new();
    let mut denial: Option<Denial> = None;
    let mut request: Option<Cel> = None;
    let mut namespace: Option<Cel> = None;
    for binding in ordered {
        let binding_name = crate::validation::str_at(binding, &["metadata", "name"]);
        let spec = binding.get("spec").unwrap_or(&Value::Null);
        let Some(policy) = store.policy(str_of(spec, "policyName")) else {
            continue;
        };
        let compiled = cache.get(&policy);
        let mut deny = |message: String, reason: Option<String>| {
            if denial.is_none() {
                denial = Some(Denial {
                    policy: compiled.name.clone(),
                    binding: binding_name.to_string(),
                    message,
                    reason,
                });
            }
        };
        match matches(&compiled.constraints, attrs, store) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => {
                if compiled.fail {
                    deny(format!("failed to configure policy: {e}"), None);
                }
                continue;
            }
        }
        let scope = spec.get("matchResources").filter(|m| !m.is_null());
        let matched = scope.map_or(Ok(true), |m| matches(m, attrs, store));
        let params = matched.and_then(|m| match m {
            true => collect_params(&compiled, spec, attrs, store).map(Some),
            false => Ok(None),
        });
        let params = match params {
            Ok(Some(p)) => p,
            Ok(None) => continue,
            Err(e) => {
                if compiled.fail {
                    deny(format!("failed to configure binding: {e}"), None);
                }
                continue;
            }
        };
        if params.is_empty() {
            continue;
        }
        let request = request.get_or_insert_with(|| request_of(attrs));
        let namespace = namespace.get_or_insert_with(|| namespace_of(attrs, store));
        let actions: Vec<&str> = list_of(spec, "validationActions")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for param in &params {
            for Decision::Deny(message, reason) in
                evaluate(&compiled, attrs, request, namespace, param.as_deref())
            {
                for action in &actions {
                    match *action {
                        "Deny" => deny(message.clone(), reason.clone()),
                        "Warn" => warnings.push(format!(
                            "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{binding_name}': {message}",
                            compiled.name
                        )),
                        _ => {}
                    }
                }
            }
        }
    }
    match denial {
        Some(d) => Err(refusal(attrs, d)),
        None => Ok(warnings),
    }
}

/// The error of a denial: a `Forbidden`-worded message with the validation's reason and
/// the code upstream gives that reason.
fn refusal(attrs: &Attributes<'_>, d: Denial) -> ApiError {
    let message = format!(
        "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
        d.policy, d.binding, d.message
    );
    let reason = d.reason.unwrap_or_else(|| "Invalid".to_string());
    let code = match reason.as_str() {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    };
    let name = if attrs.name.is_empty() {
        "Unknown"
    } else {
        attrs.name
    };
    let mut details =
        json!({"name": name, "kind": attrs.resource, "causes": [{"message": message}]});
    if !attrs.group.is_empty() {
        details["group"] = Value::from(attrs.group);
    }
    ApiError::new(
        code,
        reason,
        format!(
            "{} \"{name}\" is forbidden: {message}",
            attrs.group_resource()
        ),
    )
    .with_details(details)
}

/// The labels of an object.
fn labels(obj: &Value) -> Option<&serde_json::Map<String, Value>> {
    obj.get("metadata")?.get("labels")?.as_object()
}

/// A `metav1.LabelSelector` as a selector (absent or `null`: everything).
pub(super) fn selector(sel: Option<&Value>) -> Result<LabelSelector, String> {
    let Some(sel) = sel.filter(|s| !s.is_null()) else {
        return Ok(LabelSelector::everything());
    };
    let match_labels: Vec<(String, String)> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default();
    let exprs = list_of(sel, "matchExpressions")
        .iter()
        .map(|e| MatchExpression {
            key: str_of(e, "key").to_string(),
            operator: str_of(e, "operator").to_string(),
            values: list_of(e, "values")
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
        });
    LabelSelector::from_parts(match_labels, exprs).map_err(|e| e.to_string())
}

/// Whether `obj`'s labels satisfy `sel`.
pub(super) fn selects(sel: &LabelSelector, obj: Option<&Value>) -> bool {
    let Some(obj) = obj else { return false };
    let labels = labels(obj);
    sel.matches_fn(|k| labels.and_then(|l| l.get(k)).and_then(Value::as_str))
}

/// Whether a `MatchResources` (a policy's `matchConstraints`, a binding's `matchResources`)
/// selects the request, as upstream's `matching.Matcher`.
fn matches(criteria: &Value, attrs: &Attributes<'_>, store: &dyn Lookup) -> Result<bool, String> {
    if criteria.is_null() {
        return Ok(true);
    }
    // namespaceSelector: cluster-scoped objects other than namespaces are always selected.
    let ns_sel = selector(criteria.get("namespaceSelector"))?;
    if !ns_sel.is_everything() && (attrs.namespaced || attrs.resource == "namespaces") {
        let selected = if attrs.is(crate::resource::names::NAMESPACES) {
            selects(&ns_sel, attrs.object.or(attrs.old_object))
        } else {
            match store.namespace(attrs.namespace) {
                Some(ns) => selects(&ns_sel, Some(&ns)),
                None => return Err(format!("namespace \"{}\" not found", attrs.namespace)),
            }
        };
        if !selected {
            return Ok(false);
        }
    }
    let obj_sel = selector(criteria.get("objectSelector"))?;
    if !obj_sel.is_everything()
        && !selects(&obj_sel, attrs.object)
        && !selects(&obj_sel, attrs.old_object)
    {
        return Ok(false);
    }
    if list_of(criteria, "excludeResourceRules")
        .iter()
        .any(|r| rule_matches(r, attrs))
    {
        return Ok(false);
    }
    let rules = list_of(criteria, "resourceRules");
    Ok(rules.is_empty() || rules.iter().any(|r| rule_matches(r, attrs)))
}

/// Whether a `NamedRuleWithOperations` matches the request.
pub(super) fn rule_matches(rule: &Value, attrs: &Attributes<'_>) -> bool {
    let has = |key: &str, want: &str| {
        list_of(rule, key)
            .iter()
            .filter_map(Value::as_str)
            .any(|x| x == "*" || x == want)
    };
    let resource = list_of(rule, "resources")
        .iter()
        .filter_map(Value::as_str)
        .any(|r| match r.split_once('/') {
            None => (r == "*" || r == attrs.resource) && attrs.subresource.is_empty(),
            Some((res, sub)) => {
                (res == "*" || res == attrs.resource) && (sub == "*" || sub == attrs.subresource)
            }
        });
    let names = list_of(rule, "resourceNames");
    let named = names.is_empty() || names.iter().any(|n| n.as_str() == Some(attrs.name));
    let scope = match str_of(rule, "scope") {
        "Cluster" => !attrs.namespaced,
        "Namespaced" => attrs.namespaced,
        _ => true,
    };
    has("operations", attrs.operation.as_str())
        && has("apiGroups", attrs.group)
        && has("apiVersions", attrs.version)
        && resource
        && named
        && scope
}

/// The params of one binding: `[None]` when the policy or the binding uses none.
fn collect_params(
    c: &Compiled,
    spec: &Value,
    attrs: &Attributes<'_>,
    store: &dyn Lookup,
) -> Result<Vec<Option<Arc<Value>>>, String> {
    let Some((api_version, kind)) = &c.param_kind else {
        return Ok(vec![None]);
    };
    let Some(pref) = spec.get("paramRef").filter(|p| p.is_object()) else {
        return Ok(vec![None]);
    };
    let namespaced = store.kind_scope(api_version, kind).ok_or_else(|| {
        format!("paramKind kind `&ParamKind{{APIVersion:{api_version},Kind:{kind},}}` not known")
    })?;
    let ref_ns = str_of(pref, "namespace");
    let ns = if namespaced {
        if !ref_ns.is_empty() {
            ref_ns
        } else if !attrs.namespace.is_empty() {
            attrs.namespace
        } else {
            return Err(
                "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                    .into(),
            );
        }
    } else if !ref_ns.is_empty() {
        return Err(
            "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
        );
    } else {
        ""
    };
    let name = str_of(pref, "name");
    let params: Vec<Arc<Value>> = if !name.is_empty() {
        store.get(api_version, kind, ns, name).into_iter().collect()
    } else if let Some(sel) = pref.get("selector").filter(|s| !s.is_null()) {
        let sel = selector(Some(sel))?;
        store
            .list(api_version, kind, namespaced.then_some(ns))
            .into_iter()
            .filter(|p| selects(&sel, Some(p)))
            .collect()
    } else {
        return Err("one of name or selector must be provided".into());
    };
    if params.is_empty() && str_of(pref, "parameterNotFoundAction") == "Deny" {
        return Err(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        );
    }
    Ok(params.into_iter().map(Some).collect())
}

/// The `request` variable: the request as an `admission.k8s.io/v1 AdmissionRequest`.
fn request_of(attrs: &Attributes<'_>) -> Cel {
    to_cel(&request_json(attrs))
}

/// The request as an `admission.k8s.io/v1 AdmissionRequest` (the fields CEL sees).
pub(super) fn request_json(attrs: &Attributes<'_>) -> Value {
    let kind = json!({"group": attrs.group, "version": attrs.version, "kind": attrs.kind});
    let resource =
        json!({"group": attrs.group, "version": attrs.version, "resource": attrs.resource});
    let mut req = json!({
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": attrs.name,
        "namespace": attrs.namespace,
        "operation": attrs.operation.as_str(),
        "userInfo": attrs.user.to_json(),
        "dryRun": attrs.dry_run,
    });
    if !attrs.subresource.is_empty() {
        req["subResource"] = Value::from(attrs.subresource);
        req["requestSubResource"] = Value::from(attrs.subresource);
    }
    req
}

/// Evaluates an admission webhook's `matchConditions` (`(name, expression)`) with `object`,
/// `oldObject` and `request` bound, as upstream's `matchconditions.Matcher`: `Ok(false)` as
/// soon as one is false; otherwise the errors, worded as upstream's (each names its
/// condition), or `Ok(true)`.
pub(super) fn match_conditions(
    conditions: &[(String, String)],
    attrs: &Attributes<'_>,
) -> Result<bool, String> {
    if conditions.is_empty() {
        return Ok(true);
    }
    let mut ctx = Context::with_env(ENV.clone());
    add_k8s_lists(&mut ctx);
    ctx.add_variable_from_value("object", attrs.object.map_or(Cel::Null, to_cel));
    ctx.add_variable_from_value("oldObject", attrs.old_object.map_or(Cel::Null, to_cel));
    ctx.add_variable_from_value("request", request_of(attrs));
    let mut errors = Vec::new();
    for (name, src) in conditions {
        match Expr::new(src).eval(&ctx) {
            Ok(Cel::Bool(true)) => {}
            Ok(Cel::Bool(false)) => return Ok(false),
            Ok(other) => errors.push(format!(
                "matchCondition '{name}': expression '{}' resulted in error: no such overload: {other:?}",
                src.trim()
            )),
            Err(e) => errors.push(format!("matchCondition '{name}': {e}")),
        }
    }
    match errors.len() {
        0 => Ok(true),
        1 => Err(errors.remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// The `namespaceObject` variable: the request's namespace (`null` for cluster-scoped
/// requests), its metadata trimmed as upstream's `CreateNamespaceObject` trims it.
fn namespace_of(attrs: &Attributes<'_>, store: &dyn Lookup) -> Cel {
    let is_namespace = attrs.is(crate::resource::names::NAMESPACES);
    if attrs.namespace.is_empty() || is_namespace {
        return Cel::Null;
    }
    match store.namespace(attrs.namespace) {
        Some(ns) => {
            let mut ns = Value::clone(&ns);
            if let Some(Value::Object(meta)) = ns.get_mut("metadata") {
                for f in ["managedFields", "ownerReferences", "finalizers"] {
                    meta.remove(f);
                }
            }
            to_cel(&ns)
        }
        None => Cel::Null,
    }
}

/// Evaluates one policy for one param: its failures (none when a match condition is false).
fn evaluate(
    c: &Compiled,
    attrs: &Attributes<'_>,
    request: &Cel,
    namespace: &Cel,
    param: Option<&Value>,
) -> Vec<Decision> {
    let mut ctx = Context::with_env(ENV.clone());
    add_k8s_lists(&mut ctx);
    ctx.add_variable_from_value("object", attrs.object.map_or(Cel::Null, to_cel));
    ctx.add_variable_from_value("oldObject", attrs.old_object.map_or(Cel::Null, to_cel));
    ctx.add_variable_from_value("request", request.clone());
    ctx.add_variable_from_value("params", param.map_or(Cel::Null, to_cel));
    ctx.add_variable_from_value("namespaceObject", namespace.clone());
    let on_error = |message: String| -> Vec<Decision> {
        if c.fail {
            vec![Decision::Deny(message, None)]
        } else {
            Vec::new()
        }
    };
    // matchConditions: one false skips the policy; otherwise errors follow failurePolicy.
    let mut errors = Vec::new();
    for (_, cond) in &c.conditions {
        match cond.eval(&ctx) {
            Ok(Cel::Bool(true)) => {}
            Ok(Cel::Bool(false)) => return Vec::new(),
            Ok(other) => errors.push(format!(
                "expression '{}' resulted in error: no such overload: {other:?}",
                cond.source.trim()
            )),
            Err(e) => errors.push(e),
        }
    }
    match errors.len() {
        0 => {}
        1 => return on_error(errors.remove(0)),
        _ => return on_error(format!("[{}]", errors.join(", "))),
    }
    // variables, in order: a variable that fails is left out, so an expression naming it
    // fails in turn (an unused one fails nothing, as upstream's lazy variables).
    let mut vars: HashMap<Key, Cel> = HashMap::new();
    ctx.add_variable_from_value("variables", cel_map(&vars));
    for (name, expr) in &c.variables {
        if let Ok(v) = expr.eval(&ctx) {
            vars.insert(Key::from(name.as_str()), v);
            ctx.add_variable_from_value("variables", cel_map(&vars));
        }
    }
    let mut out = Vec::new();
    for v in &c.validations {
        match v.expr.eval(&ctx) {
            Ok(Cel::Bool(true)) => {}
            Ok(_) => out.push(Decision::Deny(message(v, &ctx), v.reason.clone())),
            Err(e) => out.extend(on_error(e)),
        }
    }
    out
}

fn cel_map(vars: &HashMap<Key, Cel>) -> Cel {
    Cel::Map(CelMap {
        map: Arc::new(vars.clone()),
    })
}

/// The message of a failed validation: its `messageExpression`'s string when one line and
/// not blank, else its `message`, else `failed expression: <expression>`.
fn message(v: &Validation, ctx: &Context<'_, '_>) -> String {
    if let Some(p) = &v.message_expression
        && let Ok(Cel::String(s)) = p.execute(ctx)
    {
        let s = s.trim();
        if !s.is_empty() && !s.contains('\n') && s.len() <= 5 * 1024 {
            return s.to_string();
        }
    }
    match &v.message {
        Some(m) => m.clone(),
        None => format!("failed expression: {}", v.expr.source.trim()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::Operation;

    #[test]
    fn bad_expressions_refuse_the_policy_at_their_field() {
        let policy = json!({"spec": {"validations": [
            {"expression": "object.spec.replicas <= "},
            {"expression": "object.x == 1", "messageExpression": "nope + 'a'"}],
            "matchConditions": [{"name": "a", "expression": "true"}]}});
        let errs = validate_policy(&policy);
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert_eq!(errs[0].field, "spec.validations[0].expression");
        assert!(
            errs[0].message.starts_with(
                "Invalid value: \"object.spec.replicas <= \": compilation failed: ERROR: <input>:1:"
            ),
            "{}",
            errs[0].message
        );
        assert_eq!(errs[1].field, "spec.validations[1].messageExpression");
        assert!(errs[1].message.contains("undeclared reference to 'nope'"));
        assert_eq!(
            validate_policy(&json!({"spec": {}}))[0].message,
            "Required value: validations or auditAnnotations must contain at least one item"
        );
    }

    /// The crash fuzzing found in CRD rules (a 20,000-term chain overflowing the stack
    /// inside the cel crate's parser) applied to every expression of a policy: each is
    /// refused at its field with cel-go's error, as is one over 100,000 code points.
    #[test]
    fn deep_or_huge_expressions_are_refused_at_their_field_without_overflowing() {
        let deep = format!("1{} > 0", " + 1".repeat(20_000));
        let huge = format!("'{}'", "a".repeat(100_000));
        let policy = json!({"spec": {
            "validations": [{"expression": deep, "messageExpression": huge}],
            "matchConditions": [{"name": "a", "expression": deep}],
            "variables": [{"name": "v", "expression": huge}],
            "auditAnnotations": [{"key": "k", "valueExpression": deep}]}});
        let errs = validate_policy(&policy);
        let found: Vec<(&str, bool)> = errs
            .iter()
            .map(|e| {
                (
                    e.field.as_str(),
                    e.message.contains(
                        "compilation failed: ERROR: <input>:1:1: max recursion depth exceeded: 250",
                    ),
                )
            })
            .collect();
        assert_eq!(
            found,
            [
                ("spec.validations[0].expression", true),
                ("spec.validations[0].messageExpression", false),
                ("spec.matchConditions[0].expression", true),
                ("spec.variables[0].expression", false),
                ("spec.auditAnnotations[0].valueExpression", true),
            ]
        );
        let size = "compilation failed: ERROR: <input>:-1:0: expression code point size exceeds limit: size: 100002, limit 100000";
        assert!(
            errs[1].message.contains(size),
            "{}",
            &errs[1].message[..200]
        );
        assert!(errs[3].message.contains(size));
        // The policy still loads; its expressions fail when evaluated, never crash.
        let compiled = Compiled::new(&policy);
        assert!(compiled.validations[0].expr.program.is_err());
    }

    #[test]
    fn bindings_need_a_policy_and_known_actions() {
        let errs =
            validate_binding(&json!({"spec": {"validationActions": ["Deny", "Nope", "Deny"]}}));
        let errs: Vec<String> = errs
            .iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect();
        assert_eq!(errs.len(), 3, "{errs:?}");
        assert!(errs[0].starts_with("spec.policyName: Required value"));
        assert!(errs[1].starts_with("spec.validationActions[1]: Unsupported value: \"Nope\""));
        assert!(errs[2].starts_with("spec.validationActions[2]: Duplicate value: \"Deny\""));
    }

    fn attrs<'a>(obj: &'a Value, sub: &'a str) -> Attributes<'a> {
        Attributes {
            operation: Operation::Create,
            group: "apps",
            version: "v1",
            kind: "Deployment",
            resource: "deployments",
            subresource: sub,
            namespaced: true,
            namespace: "default",
            name: "web",
            object: Some(obj),
            old_object: None,
            dry_run: false,
            user: &crate::admission::ADMIN,
        }
    }

    #[test]
    fn resource_rules_match_groups_versions_resources_and_subresources() {
        let obj = json!({});
        let rule = |resources: Value| {
            json!({"apiGroups": ["apps"], "apiVersions": ["*"], "operations": ["CREATE"],
                   "resources": resources})
        };
        let main = attrs(&obj, "");
        let status = attrs(&obj, "status");
        assert!(rule_matches(&rule(json!(["deployments"])), &main));
        assert!(!rule_matches(&rule(json!(["deployments"])), &status));
        assert!(rule_matches(&rule(json!(["*"])), &main));
        assert!(!rule_matches(&rule(json!(["*"])), &status));
        assert!(rule_matches(&rule(json!(["deployments/*"])), &status));
        assert!(rule_matches(&rule(json!(["*/status"])), &status));
        assert!(!rule_matches(&rule(json!(["replicasets"])), &main));
        let update = json!({"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["UPDATE"],
                            "resources": ["*"]});
        assert!(!rule_matches(&update, &main));
        let cluster = json!({"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"],
                             "resources": ["*"], "scope": "Cluster"});
        assert!(!rule_matches(&cluster, &main));
    }
}
