//! Resource requests: the verb from the method, the path and `?watch`, dispatched to
//! [`crate::storage::Storage`], the answer encoded as JSON, a Table or metadata.
//!
//! Creates, updates, patches (apply, `status` and `scale` included), deletes and delete
//! collections take the storage's async path through admission webhooks
//! (`Storage::write_hooked`, `Storage::delete_hooked`, `Storage::delete_collection_hooked`) when a Mutating or ValidatingWebhookConfiguration is stored,
//! and the synchronous calls otherwise. Warnings of either path become `Warning` headers.

use std::time::Duration;

use http::{Method, Request, Response, header};
use serde_json::Value;

use super::request::{Accept, Query, ResourcePath, accept, decode_object, parse_query, patch_type};
use super::response::{self, Body, builtin_json, json, method_not_allowed, not_found, read_body};
use super::{AppState, converted, watch};
use crate::error::ApiError;
use crate::resource::{ResourceInfo, names};
use crate::storage::Write;
use crate::table::{self, IncludeObject};

/// Serves a request on a resource path.
pub async fn serve<B>(
    state: &AppState,
    req: Request<B>,
    path: ResourcePath,
) -> Result<Response<Body>, ApiError>
where
    B: hyper::body::Body + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let storage = &state.storage;
    if crate::discovery::is_review_group(&path.group) {
        return serve_review(state, req, &path).await;
    }
    let res = storage
        .resolve_shared(&path.group, &path.version, &path.plural)
        .ok_or_else(not_found)?;
    check_scope(&res, &path)?;
    if path.subresource.as_deref() == Some("token") {
        return super::token_request::serve(state, req, &path).await;
    }
    // A version its CRD converts through a webhook: the storage is called at the storage
    // version (`stored`), and objects are converted on their way in and out. At the storage
    // version itself only a body of another version is converted.
    let conversion = storage.conversion(&res)?;
    let body_conversion = conversion.as_ref();
    let conversion = body_conversion.filter(|c| c.storage.version != res.version);
    let stored = conversion.map_or(&*res, |c| &*c.storage);
    let (parts, body) = req.into_parts();
    let user = parts
        .extensions
        .get::<std::sync::Arc<crate::auth::UserInfo>>()
        .cloned();
    let req_query = parts.uri.query();
    let query = parse_query(req_query)?;
    let header = |name: header::HeaderName| parts.headers.get(name).and_then(|v| v.to_str().ok());
    let accept = accept(header(header::ACCEPT));
    let content_type = header(header::CONTENT_TYPE);
    let content_length = header(header::CONTENT_LENGTH).and_then(|l| l.parse::<u64>().ok());
    let user_agent = header(header::USER_AGENT);
    let method = &parts.method;
    let ns = path.namespace.as_deref();
    let name = path.name.as_deref();
    let sub = path.subresource.as_deref();

    let watching = path.legacy_watch || query.watch;
    if sub.is_none()
        && !res
            .verbs()
            .contains(&crate::auth::attributes::resource_verb(
                method,
                name.is_some(),
                watching,
            ))
    {
        // e.g. `bindings` are create only, `componentstatuses` get and list only.
        return Err(method_not_allowed());
    }
    if method == Method::GET && watching && sub.is_none() {
        let w = storage.watch_shared(stored, ns, &query.watch_options(name))?;
        let transform = transform_for(state, &res, accept, &query);
        if accept == Accept::Json
            && conversion.is_none()
            && super::protobuf::wants(header(header::ACCEPT))
            && super::protobuf::has_kind(&res.api_version(), &res.kind)
        {
            return Ok(watch::protobuf_response(
                w,
                query.timeout_seconds.map(Duration::from_secs),
            ));
        }
        if let Some(conversion) = conversion {
            let webhook = conversion.webhook.clone();
            let api_version = res.api_version();
            let to = api_version.clone();
            let convert: watch::Convert = Box::new(move |obj| {
                let (webhook, to) = (webhook.clone(), to.clone());
                Box::pin(async move { webhook.convert_object(obj, &to).await })
            });
            return Ok(watch::converted_response(
                w,
                query.timeout_seconds.map(Duration::from_secs),
                transform,
                convert,
                api_version,
            ));
        }
        return Ok(watch::response(
            w,
            query.timeout_seconds.map(Duration::from_secs),
            transform,
        ));
    }
    if path.legacy_watch {
        return Err(method_not_allowed());
    }
    let single = match *method {
        Method::GET | Method::HEAD => Some(name.is_some()),
        Method::POST | Method::PUT | Method::PATCH => Some(true),
        _ => None,
    };
    if let Some(single) = single
        && let Some(err) = metadata_shape_mismatch(&res, header(header::ACCEPT), single)
    {
        return Err(err);
    }
    if res.is(names::COMPONENT_STATUSES) {
        let answer = super::component_statuses::answer(name)?;
        let answer = match transform_for(state, &res, accept, &query) {
            Some(transform) => transform(answer),
            None => answer,
        };
        return Ok(builtin_json(200, &answer));
    }
    let needs_body = matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    );
    let body = if needs_body {
        read_body(body, content_length, state.max_body_bytes).await?
    } else {
        Default::default()
    };
    let mut write = query.write_options();
    // Admission sees who writes (the user `handle` authenticated; none: the admin).
    write.user = user.clone();
    if let Some(m) = &write.field_manager
        && m.len() > 128
    {
        return Err(field_manager_too_long(method));
    }
    if matches!(*method, Method::POST | Method::PUT | Method::PATCH) {
        write.field_validation = query.field_validation(options_kind(method))?;
    }
    let patch_kind = (method == Method::PATCH)
        .then(|| patch_type(content_type))
        .transpose()?;
    if patch_kind != Some(crate::storage::PatchType::Apply) {
        if patch_kind.is_some() && force_given(req_query) {
            return Err(force_forbidden());
        }
        // Writes other than apply default their field manager to the user agent's prefix.
        if write.field_manager.is_none() {
            write.field_manager = Some(crate::fieldmanager::manager_from_user_agent(
                user_agent.unwrap_or(""),
            ));
        }
    }
    if let Some(answer) = pod_action(storage, &res, &path, method, content_type, &body, &write)? {
        return Ok(builtin_json(201, &answer));
    }
    // What a write answers: the object, or its metadata alone when `Accept` asks for it.
    let answer_with = |code: u16, obj: &Value| written(&res, accept, code, obj);
    let transform = transform_for(state, &res, accept, &query);
    let transform_none = transform.is_none();
    let (code, answer) = match (method, name) {
        (&Method::GET | &Method::HEAD, Some(name))
            if transform.is_none() && conversion.is_none() =>
        {
            // Plain JSON: the stored object is encoded as it is, not copied.
            let found = storage.get_shared(&res, ns, name, sub)?;
            return Ok(answer_with(200, found.as_ref()));
        }
        (&Method::GET | &Method::HEAD, Some(name)) => {
            let found = storage.get(stored, ns, name, sub)?;
            (200, converted::answer(conversion, &res, found).await?)
        }
        (&Method::GET | &Method::HEAD, None) => {
            let list = storage.list(stored, ns, &query.list_options())?;
            (200, converted::answer(conversion, &res, list).await?)
        }
        (&Method::POST, None) if ns.is_some() || !res.namespaced => {
            let obj = decode_write_body(content_type, &body, &write)?;
            check_body_namespace(&res, ns, &obj)?;
            let obj = converted::body(body_conversion, &res, obj).await?;
            if storage.has_webhooks() {
                let created = storage
                    .write_hooked(stored, ns, Write::Create(&obj), &write)
                    .await?;
                let created = converted::answer(conversion, &res, created).await?;
                return Ok(with_warnings(answer_with(201, &created), &write.warnings));
            }
            if body_conversion.is_some() {
                let created = storage.create(stored, ns, obj, &write)?;
                let created = converted::answer(conversion, &res, created).await?;
                return Ok(with_warnings(answer_with(201, &created), &write.warnings));
            }
            // The stored object is encoded as it is, not copied.
            let created = storage.create_shared(&res, ns, obj, &write)?;
            return Ok(with_warnings(
                answer_with(201, created.as_ref()),
                &write.warnings,
            ));
        }
        (&Method::PUT, Some(name)) => {
            let obj = decode_write_body(content_type, &body, &write)?;
            check_body_name(name, &obj)?;
            check_body_namespace(&res, ns, &obj)?;
            let obj = converted::body(body_conversion, &res, obj).await?;
            let updated = if storage.has_webhooks() {
                let w = Write::Update(name, sub, &obj);
                storage.write_hooked(stored, ns, w, &write).await?
            } else {
                storage.update(stored, ns, name, sub, obj, &write)?
            };
            (200, converted::answer(conversion, &res, updated).await?)
        }
        (&Method::PATCH, Some(name)) => {
            let patch = patch_kind.ok_or_else(method_not_allowed)?;
            if res.custom && patch == crate::storage::PatchType::Strategic {
                return Err(ApiError::unsupported_media_type(content_type.unwrap_or("")));
            }
            check_patch_body(patch, &body, &write)?;
            match conversion {
                // The Scale subresource reads the stored object at the storage version's paths.
                Some(conversion) if sub != Some("scale") => {
                    let patched = converted::patch(
                        storage, conversion, &res, ns, name, sub, patch, &body, &write,
                    )
                    .await?;
                    (200, patched)
                }
                _ if storage.has_webhooks() => {
                    let w = Write::Patch(name, sub, patch, &body);
                    (200, storage.write_hooked(stored, ns, w, &write).await?)
                }
                _ => (
                    200,
                    storage.patch(stored, ns, name, sub, patch, &body, &write)?,
                ),
            }
        }
        (&Method::DELETE, Some(name)) if sub.is_none() => {
            let mut opts = query.delete_options(content_type, &body)?;
            opts.user = user.clone();
            let deleted = if storage.has_webhooks() {
                storage.delete_hooked(stored, ns, name, &opts).await?
            } else {
                storage.delete(stored, ns, name, &opts)?
            };
            let deleted = converted::answer(conversion, &res, deleted).await?;
            return Ok(with_warnings(answer_with(200, &deleted), &opts.warnings));
        }
        (&Method::DELETE, None) if ns.is_some() || !res.namespaced => {
            let mut opts = query.delete_options(content_type, &body)?;
            opts.user = user.clone();
            let list = query.list_options();
            let deleted = if storage.has_webhooks() {
                storage
                    .delete_collection_hooked(stored, ns, &list, &opts)
                    .await?
            } else {
                storage.delete_collection(stored, ns, &list, &opts)?
            };
            let deleted = converted::answer(conversion, &res, deleted).await?;
            return Ok(with_warnings(answer_with(200, &deleted), &opts.warnings));
        }
        _ => return Err(method_not_allowed()),
    };
    let answer = match transform {
        Some(transform) if method == Method::GET && sub.is_none() => transform(answer),
        // A write answers its metadata alone, as a get does.
        _ if method != Method::GET && accept == Accept::Metadata => {
            return Ok(with_warnings(answer_with(code, &answer), &write.warnings));
        }
        _ => answer,
    };
    Ok(with_warnings(
        if res.custom && transform_none {
            json(code, &answer)
        } else {
            builtin_json(code, &answer)
        },
        &write.warnings,
    ))
}

/// The answer of a write (or of a plain get): `PartialObjectMetadata` when `Accept` asks for
/// metadata (a `Status` stays one), else the object, encoded as upstream encodes its kind.
fn written(res: &ResourceInfo, accept: Accept, code: u16, obj: &Value) -> Response<Body> {
    let is_status = obj.get("kind").and_then(Value::as_str) == Some("Status");
    if accept == Accept::Metadata && !is_status {
        builtin_json(code, &table::to_metadata(obj))
    } else if res.custom && !is_status {
        json(code, obj)
    } else {
        builtin_json(code, obj)
    }
}

/// The writes that act on a pod rather than store what they are sent: a `Binding` (to
/// `bindings` or `pods/NAME/binding`) and an `Eviction` (`pods/NAME/eviction`). `None` for
/// any other request.
fn pod_action(
    storage: &crate::storage::Storage,
    res: &ResourceInfo,
    path: &ResourcePath,
    method: &Method,
    content_type: Option<&str>,
    body: &[u8],
    write: &crate::storage::WriteOptions,
) -> Result<Option<Value>, ApiError> {
    if method != Method::POST || !res.group.is_empty() {
        return Ok(None);
    }
    let ns = path.namespace.as_deref().unwrap_or("");
    let name = path.name.as_deref();
    let answer = match (res.plural.as_str(), name, path.subresource.as_deref()) {
        ("bindings", None, None) => {
            storage.bind(ns, None, &decode_object(content_type, body)?, write)?
        }
        ("pods", Some(pod), Some("binding")) => {
            storage.bind(ns, Some(pod), &decode_object(content_type, body)?, write)?
        }
        ("pods", Some(pod), Some("eviction")) => {
            storage.evict(ns, pod, &decode_object(content_type, body)?, write)?
        }
        _ => return Ok(None),
    };
    Ok(Some(answer))
}

/// Decodes a create or update body. A field the JSON repeats is reported as the real
/// server's strict decoder reports it, per `fieldValidation` (`Strict` refuses the write
/// with a 400, `Warn` adds a warning, `Ignore` keeps the last value silently, as every
/// directive does with the value), together with the object's unknown fields: the storage
/// words both (`WriteOptions::body_findings`).
fn decode_write_body(
    content_type: Option<&str>,
    body: &[u8],
    write: &crate::storage::WriteOptions,
) -> Result<Value, ApiError> {
    use crate::storage::FieldValidation;
    if write.field_validation == FieldValidation::Ignore {
        return decode_object(content_type, body);
    }
    let (obj, dups) = super::request::decode_object_reporting_duplicates(content_type, body)?;
    if !dups.is_empty() {
        write.body_findings.set(super::duplicates::findings(body));
    }
    Ok(obj)
}

/// What `fieldValidation` makes of a patch document itself, as upstream's patcher checks it
/// before patching: a merge or strategic merge patch's repeated fields (`duplicate field
/// "spec.a"`) and a JSON patch's operations with unknown or repeated fields (`json patch
/// unknown field "[0].foo"`) are reported with the patched object's unknown fields; an apply
/// configuration's repeated keys are refused under `Strict` as its YAML decoder words them
/// (`error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:`, then
/// `line 9: key "foo" already set in map`, a line each), a warning each under `Warn`.
fn check_patch_body(
    patch: crate::storage::PatchType,
    body: &[u8],
    write: &crate::storage::WriteOptions,
) -> Result<(), ApiError> {
    use crate::storage::{FieldValidation, Findings, PatchType};
    if write.field_validation == FieldValidation::Ignore {
        return Ok(());
    }
    let errors = match patch {
        PatchType::Apply => {
            let lines = super::duplicates::yaml_repeated_keys(body);
            if lines.is_empty() {
                return Ok(());
            }
            if write.field_validation == FieldValidation::Strict {
                return Err(ApiError::bad_request(format!(
                    "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  {}",
                    lines.join("\n  ")
                )));
            }
            lines.into_iter().for_each(|w| write.warnings.push(w));
            return Ok(());
        }
        PatchType::Json => super::duplicates::json_patch_errors(body),
        PatchType::Merge | PatchType::Strategic => match super::duplicates::parse(body) {
            Ok((_, dups)) => dups
                .iter()
                .map(|p| format!("duplicate field {p:?}"))
                .collect(),
            // The patch itself answers a body that is not JSON.
            Err(_) => Vec::new(),
        },
    };
    if !errors.is_empty() {
        write.body_findings.set(Findings {
            patch: errors,
            ..Findings::default()
        });
    }
    Ok(())
}

/// Adds the warnings a write (or a delete) collected as `Warning` headers.
fn with_warnings(mut resp: Response<Body>, warnings: &crate::storage::Warnings) -> Response<Body> {
    for w in warnings.take() {
        response::add_warning(&mut resp, &w);
    }
    resp
}

/// The options kind of a write: what its option errors name.
fn options_kind(method: &Method) -> &'static str {
    match *method {
        Method::POST => "CreateOptions",
        Method::PUT => "UpdateOptions",
        _ => "PatchOptions",
    }
}

/// 422 for a `fieldManager` over 128 bytes, as `ValidateFieldManager` words it.
fn field_manager_too_long(method: &Method) -> ApiError {
    let kind = options_kind(method);
    ApiError::new(
        422,
        "Invalid",
        format!(
            "{kind}.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes"
        ),
    )
    .with_details(serde_json::json!({
        "group": "meta.k8s.io",
        "kind": kind,
        "causes": [{
            "reason": "FieldValueTooLong",
            "message": "Too long: may not be more than 128 bytes",
            "field": "fieldManager",
        }],
    }))
}

/// Whether the query names `force` (any value): only apply may.
fn force_given(query: Option<&str>) -> bool {
    query
        .unwrap_or("")
        .split('&')
        .any(|p| p.split('=').next() == Some("force"))
}

/// 422 for `force` on a patch other than apply, as `ValidatePatchOptions` words it.
fn force_forbidden() -> ApiError {
    ApiError::new(
        422,
        "Invalid",
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch",
    )
    .with_details(serde_json::json!({
        "group": "meta.k8s.io",
        "kind": "PatchOptions",
        "causes": [{
            "reason": "FieldValueForbidden",
            "message": "Forbidden: may not be specified for non-apply patch",
            "field": "force",
        }],
    }))
}

/// 404 for a path whose scope does not fit the resource, or a subresource it does not serve.
fn check_scope(res: &ResourceInfo, path: &ResourcePath) -> Result<(), ApiError> {
    if !res.namespaced && path.namespace.is_some() {
        return Err(not_found());
    }
    if res.namespaced && path.namespace.is_none() && path.name.is_some() {
        return Err(not_found());
    }
    match path.subresource.as_deref() {
        None => Ok(()),
        Some("status") if res.status_subresource => Ok(()),
        Some("scale") if res.scale.is_some() => Ok(()),
        Some(sub) if crate::kinds::strategy_of(&res.group, &res.plural).serves(sub) => Ok(()),
        Some(_) => Err(not_found()),
    }
}

fn check_body_namespace(res: &ResourceInfo, ns: Option<&str>, obj: &Value) -> Result<(), ApiError> {
    let in_body = obj
        .get("metadata")
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    match (res.namespaced, ns, in_body) {
        (true, Some(ns), Some(body_ns)) if ns != body_ns => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        _ => Ok(()),
    }
}

fn check_body_name(name: &str, obj: &Value) -> Result<(), ApiError> {
    match obj
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
    {
        Some(n) if n != name => Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        ))),
        _ => Ok(()),
    }
}

/// How answers (and watch event objects) are turned into what `Accept` asks for; `None` for
/// plain JSON.
fn transform_for(
    state: &AppState,
    res: &ResourceInfo,
    accept: Accept,
    query: &Query,
) -> Option<watch::Transform> {
    Some(match accept {
        Accept::Json => return None,
        Accept::Metadata => Box::new(|v| table::to_metadata(&v)),
        Accept::Table => {
            let printer_columns = if res.custom {
                crd_printer_columns(state, res)
            } else {
                None
            };
            let printer = crate::kinds::printer(res);
            let cols = table::columns_for(res, printer_columns.as_ref(), &printer);
            let include = IncludeObject::parse(query.include_object.as_deref());
            Box::new(move |mut v| {
                if v.get("kind") == Some(&Value::from("Status")) {
                    v
                } else {
                    printer.sort_rows(&mut v);
                    table::to_table(&cols, &v, include)
                }
            })
        }
    })
}

/// The `additionalPrinterColumns` of the CRD version serving `res`.
fn crd_printer_columns(state: &AppState, res: &ResourceInfo) -> Option<Value> {
    let crds = state
        .storage
        .resolve_gr(names::CUSTOM_RESOURCE_DEFINITIONS, "v1")?;
    let crd = state
        .storage
        .get(&crds, None, &format!("{}.{}", res.plural, res.group), None)
        .ok()?;
    crd.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(res.version.as_str()))?
        .get("additionalPrinterColumns")
        .cloned()
}

/// A 406 when the metadata conversion `Accept` asks for does not fit the answer's shape:
/// `PartialObjectMetadataList` for a single object, or `PartialObjectMetadata` for a list (a
/// watch streams single objects, and takes either). The Go type upstream names is the stored
/// (internal) one.
fn metadata_shape_mismatch(
    res: &ResourceInfo,
    accept: Option<&str>,
    single: bool,
) -> Option<ApiError> {
    let wanted = accept?
        .split(',')
        .flat_map(|range| range.split(';').map(str::trim))
        .find_map(|p| {
            p.strip_prefix("as=")
                .filter(|k| *k == "PartialObjectMetadata" || *k == "PartialObjectMetadataList")
        })?;
    let go_type = |list: &str| {
        if res.custom {
            return format!("*unstructured.Unstructured{list}");
        }
        let package = match res.group.as_str() {
            "" | "events.k8s.io" => "core",
            "rbac.authorization.k8s.io" => "rbac",
            "internal.apiserver.k8s.io" => "apiserverinternal",
            group => group.split('.').next().unwrap_or(group),
        };
        format!("*{package}.{}{list}", res.kind)
    };
    let message = match (wanted, single) {
        ("PartialObjectMetadataList", true) => format!(
            "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
            go_type("")
        ),
        ("PartialObjectMetadata", false) => format!(
            "you requested PartialObjectMetadata, but the requested object is a list ({})",
            go_type("List")
        ),
        _ => return None,
    };
    Some(ApiError::new(406, "NotAcceptable", message))
}

/// Whether every media range of `Accept` asks for a `Table` (`as=Table`), leaving a resource
/// that has no table form nothing to answer with.
fn only_tables(accept: Option<&str>) -> bool {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return false;
    };
    accept
        .split(',')
        .all(|range| range.split(';').any(|p| p.trim() == "as=Table"))
}

/// `POST` of a self review (the only verb those resources take).
async fn serve_review<B>(
    state: &AppState,
    req: Request<B>,
    path: &ResourcePath,
) -> Result<Response<Body>, ApiError>
where
    B: hyper::body::Body + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let served = super::reviews::resources();
    let scoped = path.name.is_none() && !path.legacy_watch;
    let known = served
        .iter()
        .find(|r| r.group == path.group && r.version == path.version && r.plural == path.plural)
        .is_some_and(|r| scoped && r.namespaced == path.namespace.is_some());
    if !known {
        return Err(not_found());
    }
    if req.method() != Method::POST {
        return Err(method_not_allowed());
    }
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    if only_tables(accept) {
        // The reviews convert to no Table: upstream's negotiation finds nothing it can answer.
        return Err(ApiError::new(
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json, application/yaml, \
             application/vnd.kubernetes.protobuf",
        ));
    }
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let user = super::user_of(&req);
    let body = read_body(req.into_body(), None, state.max_body_bytes).await?;
    // JSON, or protobuf as kubectl's typed clients send it.
    let review = decode_object(content_type.as_deref(), &body)?;
    let reviewer = super::reviews::Reviewer {
        user: &user,
        authn: &state.authn,
        authz: &state.authz,
        namespace: path.namespace.as_deref(),
    };
    Ok(json(
        201,
        &super::reviews::answer(&path.plural, review, &reviewer)?,
    ))
}
