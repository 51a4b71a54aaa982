//! Admission webhooks (`admissionregistration.k8s.io/v1` MutatingWebhookConfiguration and
//! ValidatingWebhookConfiguration), dispatched as upstream's
//! `plugin/webhook/{predicates,generic,mutating,validating}` dispatch them.
//!
//! Configurations are taken in name order, and the webhooks of each in their order. A
//! webhook is called when, in upstream's order:
//! 1. its `namespaceSelector` selects the request's namespace (the Namespace object itself
//!    for `namespaces` requests; cluster-scoped requests are always selected), and its
//!    `objectSelector` selects the object or the old object;
//! 2. one of its `rules` matches: operations (`*`), apiGroups, apiVersions, resources (`*`,
//!    `pods/status`, `*/status`, `pods/*`, `*/*`) and `scope`; under `matchPolicy:
//!    Equivalent` (the default) a rule naming another served version of the same resource
//!    matches too, and the webhook then sees the object at that version;
//! 3. its `matchConditions` (CEL, with `object`, `oldObject` and `request`) are all true; an
//!    error refuses the request under `failurePolicy: Fail` (403 Forbidden) and skips the
//!    webhook under `Ignore`;
//! 4. a `dryRun` request only reaches webhooks whose `sideEffects` is `None` or
//!    `NoneOnDryRun`; any other refuses it: `admission webhook "<name>" does not support dry
//!    run` (400).
//!
//! It is sent an `admission.k8s.io/v1 AdmissionReview` (the request's uid, kind, resource,
//! subResource, requestKind/requestResource, name, namespace, operation, userInfo, object,
//! oldObject, dryRun and options), within its `timeoutSeconds` (10 by default, at most 30).
//! Its answer must be a v1 AdmissionReview with the same uid. A denial (`allowed: false`)
//! is answered with the response's `status` (code 400 at least; message `admission webhook
//! "<name>" denied the request: <message>`, or `... without explanation`). A call that fails
//! (no connection, timeout, a non-200 answer, an invalid review) refuses the request with
//! `failed calling webhook "<name>": ...` (500 InternalError) under `failurePolicy: Fail`
//! (the default) and is skipped under `Ignore`. Warnings of every answer go to the response.
//!
//! Mutating webhooks answer a `JSONPatch` (`patchType`), applied in turn to the object;
//! `reinvocationPolicy: IfNeeded` webhooks are called once more, in order, when a later
//! webhook changed the object after them. Validating webhooks are then called in order (upstream
//! calls them in parallel; the first denial in order is the one answered here).
//!
//! This module decides and words; it never opens a connection: the caller (the storage's
//! async write path) passes a [`Caller`] that resolves a `clientConfig` and POSTs to it.
//!
//! Not done: `admission.k8s.io/v1beta1` reviews (a webhook must accept v1), the
//! `authorizer` variable in `matchConditions`, audit annotations, webhooks on pod bindings
//! and evictions (those writes are not admitted by webhooks), and `CONNECT`. Webhooks see a
//! create's generated name (upstream sends `generateName` and an empty name), and changes a
//! webhook makes outside the subresource a request writes (the spec, on a `status` write)
//! are dropped, as this server's subresource writes keep only their own part.

use crate::uid::new_uid;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::policy::{match_conditions, request_json, rule_matches, selector, selects};
use super::{Attributes, Lookup, Operation};
use crate::error::ApiError;

/// The default `timeoutSeconds`.
const DEFAULT_TIMEOUT: u64 = 10;
/// The longest `timeoutSeconds` honoured.
const MAX_TIMEOUT: u64 = 30;

/// Calls a webhook: resolves `client_config` and POSTs `body` to it within `timeout`,
/// answering the decoded JSON or why the call failed (worded as upstream's Go client).
pub(crate) trait Caller: Sync {
    /// One call.
    fn call<'a>(
        &'a self,
        client_config: &'a Value,
        body: &'a Value,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Value, String>>;
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

/// One webhook of a configuration.
#[derive(Clone, Debug)]
pub(crate) struct Hook {
    /// Its `name`.
    pub(crate) name: String,
    /// The webhook entry as stored.
    spec: Value,
}

impl Hook {
    /// `failurePolicy: Fail` (the default), else `Ignore`.
    fn fails_closed(&self) -> bool {
        str_of(&self.spec, "failurePolicy") != "Ignore"
    }

    /// `timeoutSeconds`, 10 by default, at most 30.
    fn timeout(&self) -> Duration {
        let secs = self
            .spec
            .get("timeoutSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_TIMEOUT)
            .clamp(1, MAX_TIMEOUT);
        Duration::from_secs(secs)
    }

    /// `reinvocationPolicy: IfNeeded`.
    fn reinvoked(&self) -> bool {
        str_of(&self.spec, "reinvocationPolicy") == "IfNeeded"
    }
}

/// The webhooks of `configs` (Mutating or Validating WebhookConfigurations) in the order
/// upstream calls them: configurations by name, webhooks in their order within each.
pub(crate) fn hooks(configs: &[Arc<Value>]) -> Vec<Hook> {
    let mut configs: Vec<&Arc<Value>> = configs.iter().collect();
    configs.sort_by(|a, b| {
        crate::validation::str_at(a, &["metadata", "name"])
            .cmp(crate::validation::str_at(b, &["metadata", "name"]))
    });
    configs
        .into_iter()
        .flat_map(|c| list_of(c, "webhooks").iter())
        .map(|w| Hook {
            name: str_of(w, "name").to_string(),
            spec: w.clone(),
        })
        .collect()
}

/// How a matched webhook sees the request: the version its rule matched (the request's own,
/// or an equivalent one under `matchPolicy: Equivalent`) and the kind at that version.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Invocation {
    version: String,
    kind: String,
}

/// Whether a rule list matches the request at `version`.
fn rules_match(spec: &Value, attrs: &Attributes<'_>, version: &str) -> bool {
    let at = Attributes { version, ..*attrs };
    list_of(spec, "rules").iter().any(|r| rule_matches(r, &at))
}

/// Upstream's `ShouldCallHook`: the selectors, then the rules (exact, then equivalent
/// versions). A selector that cannot be evaluated is an error only when the rules match.
fn should_call(
    hook: &Hook,
    attrs: &Attributes<'_>,
    lookup: &dyn Lookup,
) -> Result<Option<Invocation>, ApiError> {
    let spec = &hook.spec;
    let ns_match = namespace_selected(spec, attrs, lookup);
    if matches!(ns_match, Ok(false)) {
        return Ok(None);
    }
    let obj_match = selector(spec.get("objectSelector")).map(|sel| {
        sel.is_everything() || selects(&sel, attrs.object) || selects(&sel, attrs.old_object)
    });
    if matches!(obj_match, Ok(false)) {
        return Ok(None);
    }
    let invocation = if rules_match(spec, attrs, attrs.version) {
        Some(Invocation {
            version: attrs.version.to_string(),
            kind: attrs.kind.to_string(),
        })
    } else if str_of(spec, "matchPolicy") != "Exact" && attrs.subresource != "scale" {
        lookup
            .equivalents(attrs.group, attrs.resource)
            .into_iter()
            .find(|(v, _)| v != attrs.version && rules_match(spec, attrs, v))
            .map(|(version, kind)| Invocation { version, kind })
    } else {
        None
    };
    let Some(invocation) = invocation else {
        return Ok(None);
    };
    ns_match.map_err(|e| ApiError::internal(format!("Internal error occurred: {e}")))?;
    obj_match.map_err(|e| ApiError::internal(format!("Internal error occurred: {e}")))?;
    Ok(Some(invocation))
}

/// Whether the webhook's `namespaceSelector` selects the request.
fn namespace_selected(
    spec: &Value,
    attrs: &Attributes<'_>,
    lookup: &dyn Lookup,
) -> Result<bool, String> {
    let is_namespace = attrs.is(crate::resource::names::NAMESPACES);
    if !attrs.namespaced && !is_namespace {
        return Ok(true);
    }
    let sel = selector(spec.get("namespaceSelector"))?;
    if sel.is_everything() {
        return Ok(true);
    }
    if is_namespace {
        return Ok(selects(&sel, attrs.object.or(attrs.old_object)));
    }
    match lookup.namespace(attrs.namespace) {
        Some(ns) => Ok(selects(&sel, Some(&ns))),
        None => Err(format!("namespaces \"{}\" not found", attrs.namespace)),
    }
}

/// The `matchConditions` of a webhook, then the dryRun check: whether it is called.
fn admitted_by_conditions(hook: &Hook, attrs: &Attributes<'_>) -> Result<bool, ApiError> {
    let conditions: Vec<(String, String)> = list_of(&hook.spec, "matchConditions")
        .iter()
        .map(|c| {
            (
                str_of(c, "name").to_string(),
                str_of(c, "expression").to_string(),
            )
        })
        .collect();
    match match_conditions(&conditions, attrs) {
        Ok(true) => {}
        Ok(false) => return Ok(false),
        Err(_) if !hook.fails_closed() => return Ok(false),
        Err(e) => return Err(forbidden(attrs, &e)),
    }
    if attrs.dry_run && !matches!(str_of(&hook.spec, "sideEffects"), "None" | "NoneOnDryRun") {
        return Err(ApiError::bad_request(format!(
            "admission webhook \"{}\" does not support dry run",
            hook.name
        )));
    }
    Ok(true)
}

/// upstream's `NewForbidden(resource, name, err)`.
fn forbidden(attrs: &Attributes<'_>, why: &str) -> ApiError {
    let mut details = json!({"name": attrs.name, "kind": attrs.resource});
    if !attrs.group.is_empty() {
        details["group"] = Value::from(attrs.group);
    }
    ApiError::new(
        403,
        "Forbidden",
        format!(
            "{} \"{}\" is forbidden: {why}",
            attrs.group_resource(),
            attrs.name
        ),
    )
    .with_details(details)
}

/// The AdmissionReview sent for `attrs` as `inv` sees it. `options` is the request's
/// Create/Update/DeleteOptions.
fn review(
    uid: &str,
    attrs: &Attributes<'_>,
    inv: &Invocation,
    object: Option<&Value>,
    old_object: Option<&Value>,
    options: &Value,
) -> Value {
    let mut req = request_json(attrs);
    let (kind_group, kind_version, kind) = if attrs.subresource == "scale" {
        ("autoscaling", "v1", "Scale")
    } else {
        (attrs.group, inv.version.as_str(), inv.kind.as_str())
    };
    req["kind"] = json!({"group": kind_group, "version": kind_version, "kind": kind});
    req["resource"] =
        json!({"group": attrs.group, "version": inv.version, "resource": attrs.resource});
    if attrs.subresource == "scale" {
        req["requestKind"] = req["kind"].clone();
    } else {
        req["requestKind"] =
            json!({"group": attrs.group, "version": attrs.version, "kind": attrs.kind});
    }
    req["uid"] = Value::from(uid);
    req["object"] = object.cloned().unwrap_or(Value::Null);
    req["oldObject"] = old_object.cloned().unwrap_or(Value::Null);
    req["options"] = options.clone();
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})
}

/// The `options` of a request, as upstream sends them (`meta.k8s.io/v1` Create-, Update- or
/// DeleteOptions).
pub(crate) fn options(
    operation: Operation,
    dry_run: bool,
    field_manager: Option<&str>,
    propagation_policy: Option<&str>,
) -> Value {
    let kind = match operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
    };
    let mut o = json!({"apiVersion": "meta.k8s.io/v1", "kind": kind});
    if dry_run {
        o["dryRun"] = json!(["All"]);
    }
    if let Some(m) = field_manager.filter(|_| operation != Operation::Delete) {
        o["fieldManager"] = Value::from(m);
    }
    if let Some(p) = propagation_policy.filter(|_| operation == Operation::Delete) {
        o["propagationPolicy"] = Value::from(p);
    }
    o
}

/// A webhook's answer, checked.
struct Answer {
    allowed: bool,
    status: Value,
    patch: Option<json_patch::Patch>,
    warnings: Vec<String>,
}

/// Checks an answer as upstream's `VerifyAdmissionResponse`; the error is the reason of an
/// invalid one.
fn verify(uid: &str, mutating: bool, review: &Value) -> Result<Answer, String> {
    let response = review
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("webhook response was absent")?;
    let got = str_of(response, "uid");
    if got != uid {
        return Err(format!("expected response.uid=\"{uid}\", got \"{got}\""));
    }
    let gvk = (str_of(review, "apiVersion"), str_of(review, "kind"));
    if gvk != ("admission.k8s.io/v1", "AdmissionReview") {
        let got = match gvk.0.split_once('/') {
            Some((g, v)) => format!("{g}/{v}, Kind={}", gvk.1),
            None => format!("/{}, Kind={}", gvk.0, gvk.1),
        };
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {got}"
        ));
    }
    let patch_b64 = str_of(response, "patch");
    let patch_type = response.get("patchType").filter(|p| !p.is_null());
    let patch = if mutating {
        match (patch_b64.is_empty(), patch_type) {
            (false, None) => {
                return Err("webhook returned response.patch but not response.patchType".into());
            }
            (true, Some(_)) => {
                return Err("webhook returned response.patchType but not response.patch".into());
            }
            (true, None) => None,
            (false, Some(t)) => {
                if t.as_str() != Some("JSONPatch") {
                    return Err(format!("unsupported patch type {t}"));
                }
                use base64::Engine as _;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(patch_b64)
                    .map_err(|e| format!("illegal base64 data in response.patch: {e}"))?;
                Some(
                    serde_json::from_slice::<json_patch::Patch>(&bytes)
                        .map_err(|e| format!("invalid JSON patch: {e}"))?,
                )
            }
        }
    } else {
        if !patch_b64.is_empty() {
            return Err("validating webhook may not return response.patch".into());
        }
        if patch_type.is_some() {
            return Err("validating webhook may not return response.patchType".into());
        }
        None
    };
    Ok(Answer {
        allowed: response.get("allowed").and_then(Value::as_bool) == Some(true),
        status: response.get("status").cloned().unwrap_or(Value::Null),
        patch,
        warnings: list_of(response, "warnings")
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
    })
}

/// The error of a denial (upstream's `ToStatusErr`): the response's status, its code at
/// least 400, its message prefixed with the webhook's name.
fn denial(name: &str, status: &Value) -> ApiError {
    let code = status
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let denied = format!("admission webhook \"{name}\" denied the request");
    let message = str_of(status, "message");
    let reason = str_of(status, "reason");
    let message = if !message.is_empty() {
        format!("{denied}: {message}")
    } else if !reason.is_empty() {
        format!("{denied}: {reason}")
    } else {
        format!("{denied} without explanation")
    };
    let mut err = ApiError::new(code, reason, message);
    if let Some(details) = status.get("details").filter(|d| d.is_object()) {
        err = err.with_details(details.clone());
    }
    err
}

/// The error of a failed call under `failurePolicy: Fail`: upstream's
/// `NewInternalError(ErrCallingWebhook)`.
fn call_failed(name: &str, why: &str) -> ApiError {
    let err = format!("failed calling webhook \"{name}\": {why}");
    ApiError::internal(format!("Internal error occurred: {err}"))
        .with_details(json!({"causes": [{"message": err}]}))
}

/// What one call came to.
enum Outcome {
    /// Allowed, with a patch (mutating webhooks) and warnings.
    Allowed(Option<json_patch::Patch>, Vec<String>),
    /// Skipped: the call failed under `failurePolicy: Ignore`.
    Ignored,
}

/// Calls one matched webhook.
async fn call(
    hook: &Hook,
    mutating: bool,
    attrs: &Attributes<'_>,
    inv: &Invocation,
    options: &Value,
    lookup: &(dyn Lookup + Sync),
    caller: &dyn Caller,
) -> Result<Outcome, ApiError> {
    let versions = list_of(&hook.spec, "admissionReviewVersions");
    if !versions.is_empty() && !versions.iter().any(|v| v == "v1") {
        // Only v1 reviews are sent (upstream also speaks v1beta1, deprecated).
        let why = "could not create admission objects: webhook does not accept known AdmissionReview versions";
        return if hook.fails_closed() {
            Err(call_failed(&hook.name, why))
        } else {
            Ok(Outcome::Ignored)
        };
    }
    let uid = new_uid();
    let converted = |o: Option<&Value>| {
        o.map(|o| {
            if inv.version == attrs.version {
                o.clone()
            } else {
                let group = attrs.group;
                let api_version = if group.is_empty() {
                    inv.version.clone()
                } else {
                    format!("{group}/{}", inv.version)
                };
                lookup.convert(o, &api_version)
            }
        })
    };
    let object = converted(attrs.object);
    let old = converted(attrs.old_object);
    let body = review(&uid, attrs, inv, object.as_ref(), old.as_ref(), options);
    let no_config = Value::Null;
    let client_config = hook.spec.get("clientConfig").unwrap_or(&no_config);
    let failed = |why: String| {
        if hook.fails_closed() {
            Err(call_failed(&hook.name, &why))
        } else {
            tracing::warn!(webhook = %hook.name, "failed calling webhook, failing open: {why}");
            Ok(Outcome::Ignored)
        }
    };
    let answer = match caller.call(client_config, &body, hook.timeout()).await {
        Ok(a) => a,
        Err(why) => return failed(format!("failed to call webhook: {why}")),
    };
    let answer = match verify(&uid, mutating, &answer) {
        Ok(a) => a,
        Err(why) => return failed(format!("received invalid webhook response: {why}")),
    };
    if !answer.allowed {
        return Err(denial(&hook.name, &answer.status));
    }
    Ok(Outcome::Allowed(answer.patch, answer.warnings))
}

/// A request to admit: what [`Attributes`] describes, minus the objects, which change as
/// mutating webhooks patch them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Request<'a> {
    /// The request; its `object` and `old_object` are ignored (see the arguments).
    pub(crate) attrs: Attributes<'a>,
    /// The request's options ([`options`]).
    pub(crate) options: &'a Value,
}

/// Runs the mutating webhooks on `object` (patched in place). Answers the warnings, and
/// whether the object changed.
pub(crate) async fn mutate(
    hooks: &[Hook],
    req: Request<'_>,
    object: &mut Option<Value>,
    old: Option<&Value>,
    lookup: &(dyn Lookup + Sync),
    caller: &dyn Caller,
) -> Result<(Vec<String>, bool), ApiError> {
    let mut warnings = Vec::new();
    let mut changed_any = false;
    // For each webhook called: the number of changes made when it was last called.
    let mut called: Vec<(usize, usize)> = Vec::new();
    let mut changes = 0usize;
    for pass in 0..2 {
        for (i, hook) in hooks.iter().enumerate() {
            if pass == 1 {
                // Again only when reinvocable, called before, and changed since by another.
                let Some(&(_, seen)) = called.iter().find(|(at, _)| *at == i) else {
                    continue;
                };
                if !hook.reinvoked() || seen == changes {
                    continue;
                }
            }
            let attrs = Attributes {
                object: object.as_ref(),
                old_object: old,
                ..req.attrs
            };
            let Some(inv) = should_call(hook, &attrs, lookup)? else {
                continue;
            };
            if !admitted_by_conditions(hook, &attrs)? {
                continue;
            }
            let outcome = call(hook, true, &attrs, &inv, req.options, lookup, caller).await?;
            let Outcome::Allowed(patch, w) = outcome else {
                continue;
            };
            warnings.extend(w);
            if let (Some(patch), Some(obj)) = (patch, object.as_mut()) {
                let mut patched = if inv.version == req.attrs.version {
                    obj.clone()
                } else {
                    lookup.convert(obj, &api_version(req.attrs.group, &inv.version))
                };
                json_patch::patch(&mut patched, &patch).map_err(|e| {
                    ApiError::internal(format!("Internal error occurred: {e}"))
                        .with_details(json!({"causes": [{"message": e.to_string()}]}))
                })?;
                if inv.version != req.attrs.version {
                    patched =
                        lookup.convert(&patched, &api_version(req.attrs.group, req.attrs.version));
                }
                if patched != *obj {
                    *obj = patched;
                    changes += 1;
                    changed_any = true;
                }
            }
            match called.iter_mut().find(|(at, _)| *at == i) {
                Some(entry) => entry.1 = changes,
                None => called.push((i, changes)),
            }
        }
        if changes == 0 {
            break;
        }
    }
    Ok((warnings, changed_any))
}

/// `group/version`, or `version` for the core group.
fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// Runs the validating webhooks on the final `object` (`None` on delete). Answers the
/// warnings, or the first denial or failure in order.
pub(crate) async fn validate(
    hooks: &[Hook],
    req: Request<'_>,
    object: Option<&Value>,
    old: Option<&Value>,
    lookup: &(dyn Lookup + Sync),
    caller: &dyn Caller,
) -> Result<Vec<String>, ApiError> {
    let attrs = Attributes {
        object,
        old_object: old,
        ..req.attrs
    };
    let mut warnings = Vec::new();
    for hook in hooks {
        let Some(inv) = should_call(hook, &attrs, lookup)? else {
            continue;
        };
        if !admitted_by_conditions(hook, &attrs)? {
            continue;
        }
        if let Outcome::Allowed(_, w) =
            call(hook, false, &attrs, &inv, req.options, lookup, caller).await?
        {
            warnings.extend(w);
        }
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store serving `widgets` of `example.com` at v1 and v2, and namespace `prod`.
    struct Store;

    impl Lookup for Store {
        fn namespace(&self, name: &str) -> Option<Arc<Value>> {
            (name == "prod")
                .then(|| Arc::new(json!({"metadata": {"name": "prod", "labels": {"env": "prod"}}})))
        }
        fn policy(&self, _: &str) -> Option<Arc<Value>> {
            None
        }
        fn kind_scope(&self, _: &str, _: &str) -> Option<bool> {
            None
        }
        fn get(&self, _: &str, _: &str, _: &str, _: &str) -> Option<Arc<Value>> {
            None
        }
        fn list(&self, _: &str, _: &str, _: Option<&str>) -> Vec<Arc<Value>> {
            Vec::new()
        }
        fn equivalents(&self, group: &str, resource: &str) -> Vec<(String, String)> {
            if (group, resource) == ("example.com", "widgets") {
                vec![
                    ("v1".into(), "Widget".into()),
                    ("v2".into(), "Widget".into()),
                ]
            } else {
                Vec::new()
            }
        }
    }

    fn attrs<'a>(obj: &'a Value, namespace: &'a str) -> Attributes<'a> {
        Attributes {
            operation: Operation::Create,
            group: "example.com",
            version: "v1",
            kind: "Widget",
            resource: "widgets",
            subresource: "",
            namespaced: true,
            namespace,
            name: "w",
            object: Some(obj),
            old_object: None,
            dry_run: false,
            user: &crate::admission::ADMIN,
        }
    }

    fn hook(extra: Value) -> Hook {
        let mut spec = json!({"name": "w.example.com", "sideEffects": "None",
            "rules": [{"apiGroups": ["example.com"], "apiVersions": ["v2"],
                       "operations": ["*"], "resources": ["widgets"]}]});
        if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
            s.extend(e.clone());
        }
        Hook {
            name: "w.example.com".into(),
            spec,
        }
    }

    #[test]
    fn equivalent_versions_match_unless_the_policy_is_exact() {
        let obj = json!({"apiVersion": "example.com/v1", "kind": "Widget"});
        let seen = should_call(&hook(json!({})), &attrs(&obj, "default"), &Store).unwrap();
        assert_eq!(
            seen,
            Some(Invocation {
                version: "v2".into(),
                kind: "Widget".into()
            })
        );
        let exact = hook(json!({"matchPolicy": "Exact"}));
        assert_eq!(
            should_call(&exact, &attrs(&obj, "default"), &Store).unwrap(),
            None
        );
    }

    #[test]
    fn selectors_scope_the_webhook() {
        let obj = json!({"metadata": {"labels": {"tier": "gold"}}});
        let ns = hook(json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}}));
        assert!(
            should_call(&ns, &attrs(&obj, "prod"), &Store)
                .unwrap()
                .is_some()
        );
        // A namespace not found is an error only once the rules match.
        let err = should_call(&ns, &attrs(&obj, "gone"), &Store).unwrap_err();
        assert_eq!(err.code, 500);
        assert!(
            err.message.contains("namespaces \"gone\" not found"),
            "{}",
            err.message
        );
        let objects = hook(json!({"objectSelector": {"matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["silver"]}]}}));
        assert!(
            should_call(&objects, &attrs(&obj, "prod"), &Store)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn conditions_and_dry_run_decide_before_the_call() {
        let obj = json!({"metadata": {"name": "w"}, "spec": {"size": 3}});
        let small = hook(json!({"matchConditions": [
            {"name": "small", "expression": "object.spec.size < 2"}]}));
        assert!(!admitted_by_conditions(&small, &attrs(&obj, "prod")).unwrap());
        let broken = hook(json!({"matchConditions": [
            {"name": "broken", "expression": "object.spec.nope == 1"}]}));
        let err = admitted_by_conditions(&broken, &attrs(&obj, "prod")).unwrap_err();
        assert_eq!(err.code, 403);
        assert!(
            err.message.starts_with("widgets.example.com \"w\" is forbidden: matchCondition 'broken': expression 'object.spec.nope == 1' resulted in error"),
            "{}",
            err.message
        );
        let mut ignore = broken.clone();
        ignore.spec["failurePolicy"] = json!("Ignore");
        assert!(!admitted_by_conditions(&ignore, &attrs(&obj, "prod")).unwrap());
        let dry = Attributes {
            dry_run: true,
            ..attrs(&obj, "prod")
        };
        assert!(admitted_by_conditions(&hook(json!({})), &dry).unwrap());
        let err =
            admitted_by_conditions(&hook(json!({"sideEffects": "Unknown"})), &dry).unwrap_err();
        assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
        assert_eq!(
            err.message,
            "admission webhook \"w.example.com\" does not support dry run"
        );
    }

    #[test]
    fn answers_are_checked_and_denials_worded_as_upstream() {
        let review = |response: Value| {
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                   "response": response})
        };
        assert_eq!(
            verify("a", true, &review(json!({"uid": "b", "allowed": true}))).err(),
            Some("expected response.uid=\"a\", got \"b\"".to_string())
        );
        assert_eq!(
            verify(
                "a",
                true,
                &review(json!({"uid": "a", "allowed": true, "patch": "W10="}))
            )
            .err(),
            Some("webhook returned response.patch but not response.patchType".to_string())
        );
        assert_eq!(
            verify(
                "a",
                false,
                &review(json!({"uid": "a", "allowed": true, "patch": "W10="}))
            )
            .err(),
            Some("validating webhook may not return response.patch".to_string())
        );
        assert_eq!(
            verify("a", true, &json!({"apiVersion": "admission.k8s.io/v1beta1",
                "kind": "AdmissionReview", "response": {"uid": "a"}})).err(),
            Some("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview".to_string())
        );
        let ok = verify(
            "a",
            true,
            &review(
                json!({"uid": "a", "allowed": true, "patchType": "JSONPatch",
                "patch": "W3sib3AiOiJhZGQiLCJwYXRoIjoiL3giLCJ2YWx1ZSI6MX1d",
                "warnings": ["w"]}),
            ),
        )
        .unwrap();
        assert!(ok.allowed && ok.patch.is_some());
        assert_eq!(ok.warnings, ["w"]);

        let e = denial("d", &json!({"code": 200, "message": "no"}));
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "admission webhook \"d\" denied the request: no")
        );
        let e = denial("d", &json!({"code": 422, "reason": "Invalid"}));
        assert_eq!(
            (e.code, e.message.as_str()),
            (422, "admission webhook \"d\" denied the request: Invalid")
        );
        assert_eq!(
            denial("d", &Value::Null).message,
            "admission webhook \"d\" denied the request without explanation"
        );
        let e = call_failed("d", "failed to call webhook: boom");
        assert_eq!((e.code, e.reason.as_str()), (500, "InternalError"));
        assert_eq!(
            e.message,
            "Internal error occurred: failed calling webhook \"d\": failed to call webhook: boom"
        );
    }

    #[test]
    fn configurations_are_called_in_name_order() {
        let config = |name: &str, hooks: &[&str]| {
            let hooks: Vec<Value> = hooks.iter().map(|h| json!({"name": h})).collect();
            Arc::new(json!({"metadata": {"name": name}, "webhooks": hooks}))
        };
        let order: Vec<String> = hooks(&[config("b", &["b2", "b1"]), config("a", &["a1"])])
            .into_iter()
            .map(|h| h.name)
            .collect();
        assert_eq!(order, ["a1", "b2", "b1"]);
    }
}
