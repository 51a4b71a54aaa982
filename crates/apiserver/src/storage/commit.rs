//! The commit library under the write verbs: the checks and preparation every create and
//! update shares (body, names, namespace, metadata, defaults, managed fields,
//! preconditions), and the commits themselves ([`commit_create`], [`commit_update`]), which
//! validate the whole object, store it through the store's `put`/`remove`, and run the
//! follow-ups (garbage collection, namespace and CRD re-checks). Nothing is stored until every
//! check passed.
//!
//! The verbs build on this module and not on each other: `write` (create, update, patch),
//! `apply` (server-side apply), `scale` (the Scale subresource) and `read` (get).

use std::sync::Arc;

use serde_json::{Value, json};

use super::convert::{self, to_version};
use super::gc::{self, Task};
use super::options::WriteOptions;
use super::store::{ObjKey, State, obj_key, res_key};
use super::{admit, crd, meta, rules};
use crate::admission::Operation;
use crate::error::ApiError;
use crate::fieldmanager::{self, shape::Shape};
use crate::kinds;
use crate::resource::{ResourceInfo, names};
use crate::schema::decode::Decoder;
use crate::validation::{self, FieldError, invalid};

/// Checks a request body: a JSON object whose `apiVersion` and `kind` (when given) are the
/// resource's, decoded as its kind (see [`decode_builtin`]); answers it with both set.
pub(crate) fn check_body(
    res: &ResourceInfo,
    body: Value,
    opts: &WriteOptions,
) -> Result<Value, ApiError> {
    let Value::Object(mut map) = body else {
        return Err(ApiError::bad_request(format!(
            "the body of the request was not a JSON object: cannot be handled as a {}",
            res.kind
        )));
    };
    let api_version = res.api_version();
    match map.get("apiVersion").and_then(Value::as_str) {
        Some(v) if !v.is_empty() && v != api_version => {
            let group_of = |v: &str| {
                v.rsplit_once('/')
                    .map(|(g, _)| g.to_string())
                    .unwrap_or_default()
            };
            if group_of(v) != res.group || !crate_version_known(v) {
                return Err(ApiError::bad_request(format!(
                    "the API version in the data ({v}) does not match the expected API version ({api_version})"
                )));
            }
        }
        _ => {}
    }
    match map.get("kind").and_then(Value::as_str) {
        Some(k) if !k.is_empty() && k != res.kind => {
            return Err(ApiError::bad_request(format!(
                "{k} in version \"{}\" cannot be handled as a {}: the kind in the data ({k}) does not match the expected kind ({})",
                res.version, res.kind, res.kind
            )));
        }
        _ => {}
    }
    // Set unless the body already names them as they are (the usual case).
    if map.get("apiVersion").and_then(Value::as_str) != Some(api_version.as_str()) {
        map.insert("apiVersion".into(), Value::from(api_version.clone()));
    }
    if map.get("kind").and_then(Value::as_str) != Some(res.kind.as_str()) {
        map.insert("kind".into(), Value::from(res.kind.clone()));
    }
    if !map
        .get("metadata")
        .is_none_or(|m| m.is_object() || m.is_null())
    {
        return Err(ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: metadata must be an object",
            res.kind, res.version, res.kind
        )));
    }
    let mut obj = Value::Object(map);
    decode_builtin(res, &mut obj, opts)?;
    convert::to_storage(&mut obj, &api_version);
    Ok(obj)
}

/// Decodes a built-in object as the real server's JSON decoder does (custom objects are their
/// CRD schema's, in [`crd::validate_custom`]): a value of the wrong JSON type is a 400 worded
/// as Go's `encoding/json` words it; fields the kind does not declare are dropped, and follow
/// `opts.field_validation` (a 400 under `Strict`, a warning each under `Warn`).
fn decode_builtin(
    res: &ResourceInfo,
    obj: &mut Value,
    opts: &WriteOptions,
) -> Result<(), ApiError> {
    if res.custom {
        return Ok(());
    }
    let Some(decoder) = Decoder::for_kind(&res.group, &res.version, &res.kind) else {
        return crd::check_unknown(res, &[], opts);
    };
    match decoder.decode(obj) {
        Ok(unknown) => crd::check_unknown(res, &unknown, opts),
        Err(message) => Err(ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: {message}",
            kind = res.kind,
            version = res.version,
        ))),
    }
}

/// Another version of the same group is accepted (the real server converts; versions of one
/// resource share their stored form here).
fn crate_version_known(v: &str) -> bool {
    !v.is_empty()
}

/// Checks the body's namespace against the request's and sets it (removes it for cluster-scoped
/// resources).
fn scope_namespace(
    res: &ResourceInfo,
    namespace: Option<&str>,
    obj: &mut Value,
) -> Result<String, ApiError> {
    if !res.namespaced {
        meta::set_meta(obj, "namespace", Value::Null);
        return Ok(String::new());
    }
    let Some(ns) = namespace.filter(|n| !n.is_empty()) else {
        return Err(ApiError::bad_request(
            "the server could not find the requested resource: a namespace is required",
        ));
    };
    if let Some(body_ns) = meta::meta_str(obj, "namespace")
        && !body_ns.is_empty()
        && body_ns != ns
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    meta::set_meta(obj, "namespace", Value::from(ns));
    Ok(ns.to_string())
}

/// `metadata.<field>` when set to something other than `null`, taken out of `obj`.
fn take_meta(obj: &mut Value, field: &str) -> Option<Value> {
    obj.get_mut("metadata")?
        .as_object_mut()?
        .get_mut(field)
        .map(Value::take)
        .filter(|v| !v.is_null())
}

/// A create whose `managedFields` are `managed` (a create through server-side apply), or, when
/// `None`, an `Update` entry for the request's field manager.
pub(crate) fn create_with(
    st: &mut State,
    res: &ResourceInfo,
    namespace: Option<&str>,
    body: Value,
    opts: &WriteOptions,
    managed: Option<Value>,
) -> Result<Arc<Value>, ApiError> {
    let prepared = prepare_create(Some(st), res, namespace, body, opts, managed)?;
    commit_create(st, res, prepared, opts)
}

/// Whether a create of `res` reads nothing from the store before its commit, so that
/// [`prepare_create`] can run without the store's lock: built-in kinds other than Services
/// (which take their ClusterIP from the store). Custom resources need their CRD's schema.
pub(crate) fn prepares_without_state(res: &ResourceInfo) -> bool {
    !res.custom && !res.is(names::SERVICES)
}

/// A create checked and completed (system metadata, defaults, managedFields), not yet stored.
pub(crate) struct PreparedCreate {
    obj: Value,
    ns: String,
    name: String,
    /// The next ClusterIP to hand out, when the create read the store's.
    next_ip: Option<u32>,
}

/// Every check and change of a create that does not depend on what is stored: the body, the
/// names, the metadata, defaults, validation and managedFields. `st` may be `None` only when
/// [`prepares_without_state`] holds for `res`.
pub(crate) fn prepare_create(
    st: Option<&State>,
    res: &ResourceInfo,
    namespace: Option<&str>,
    body: Value,
    opts: &WriteOptions,
    managed: Option<Value>,
) -> Result<PreparedCreate, ApiError> {
    if st.is_none() && !prepares_without_state(res) {
        return Err(ApiError::internal(
            "create: this kind needs the store to prepare",
        ));
    }
    let mut obj = check_body(res, body, opts)?;
    // Taken, not copied: `managedFields` is removed below anyway.
    let provided = take_meta(&mut obj, "managedFields");
    let ns = scope_namespace(res, namespace, &mut obj)?;
    if !meta::resource_version(&obj).is_empty() {
        return Err(ApiError::bad_request(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    let mut errs = Vec::new();
    if meta::name(&obj).is_empty() {
        match meta::meta_str(&obj, "generateName").filter(|g| !g.is_empty()) {
            Some(prefix) => {
                let name = meta::generate_name(prefix);
                meta::set_meta(&mut obj, "name", Value::from(name));
            }
            None => errs.push(FieldError::required(
                "metadata.name",
                "name or generateName is required",
            )),
        }
    }
    let name = meta::name(&obj).to_string();
    errs.extend(validation::validate_object_meta(
        res,
        kinds::name_format(res),
        &obj,
    )?);
    // System fields: whatever the client sent is replaced (one lookup of `metadata` for all).
    let m = meta::meta_mut(&mut obj);
    m.insert("uid".into(), Value::from(meta::new_uid()));
    m.insert("creationTimestamp".into(), Value::from(meta::now()));
    for f in [
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    ] {
        m.remove(f);
    }
    if res.generation {
        m.insert("generation".into(), Value::from(1));
    } else {
        m.remove("generation");
    }
    if res.status_subresource
        && let Some(map) = obj.as_object_mut()
    {
        map.remove("status");
        if let Some(status) = rules::initial_status(res) {
            map.insert("status".into(), status);
        }
    }
    let mut next_ip = st.map_or(0, |st| st.next_cluster_ip);
    match st {
        Some(st) if res.custom => errs.extend(crd::validate_custom(st, res, &mut obj, None, opts)?),
        _ => {
            rules::normalize(res, &mut obj)?;
            rules::apply_defaults(res, &mut obj, &mut next_ip);
            if let Some(st) = st
                && is_service(res)
            {
                let used = node_ports_used(st, None);
                errs.extend(rules::allocate_node_ports(&mut obj, None, &used));
            }
            errs.extend(kinds::validate(res, &obj, None));
        }
    }
    match res.gr() {
        names::NAMESPACES => rules::namespace_on_create(&mut obj),
        names::CUSTOM_RESOURCE_DEFINITIONS => errs.extend(crd::prepare_create(&mut obj)),
        _ => errs.extend(admit::validate_config(res, &obj)),
    }
    if !errs.is_empty() {
        return Err(invalid(res, &name, &errs));
    }
    let shape = || match st {
        Some(st) => shape_of(st, res),
        None => Shape::builtin(&res.group, &res.kind),
    };
    set_managed_with(shape, res, None, &mut obj, provided, opts, None, managed);
    Ok(PreparedCreate {
        obj,
        ns,
        name,
        next_ip: st.map(|_| next_ip),
    })
}

/// The part of a create that reads and writes the store: the namespace must be open, the
/// CRD not terminating, the name free; then the object is stored (unless `dry_run`).
pub(crate) fn commit_create(
    st: &mut State,
    res: &ResourceInfo,
    prepared: PreparedCreate,
    opts: &WriteOptions,
) -> Result<Arc<Value>, ApiError> {
    let PreparedCreate {
        obj,
        ns,
        name,
        next_ip,
    } = prepared;
    if res.custom
        && st
            .get(gc::CRD_KEY, &(String::new(), res_key(res)))
            .is_some_and(|crd| meta::is_deleting(crd))
    {
        return Err(ApiError::method_not_allowed(
            "create not allowed while custom resource definition is terminating",
        ));
    }
    let charges = admit::admit(
        st,
        res,
        Operation::Create,
        None,
        Some(&obj),
        None,
        opts.dry_run,
        &opts.warnings,
        opts.user.as_deref(),
    )?;
    let key = (ns, name.clone());
    let rk = res_key(res);
    if st.get(&rk, &key).is_some() {
        return Err(ApiError::already_exists(&res.group_resource(), &name));
    }
    if opts.dry_run {
        // Answered at the request's version, as the stored create below is.
        return Ok(super::convert::to_version_shared(
            &Arc::new(obj),
            &res.api_version(),
        ));
    }
    if let Some(ip) = next_ip {
        st.next_cluster_ip = ip;
    }
    let stored = st.put(&rk, key, obj);
    store_quota_charges(st, charges);
    if res.is(names::CUSTOM_RESOURCE_DEFINITIONS) {
        crd::register(st, &stored);
    }
    if res.is(names::NAMESPACES) {
        create_default_service_account(st, &name);
    }
    if meta::has_owner_refs(&stored) {
        // The garbage collector collects an object created for an owner that is gone.
        gc::run(st, vec![Task::Owners(meta::uid(&stored).to_string())]);
    }
    Ok(super::convert::to_version_shared(
        &stored,
        &res.api_version(),
    ))
}

/// The ServiceAccount controller's part clients rely on: a new namespace (the system ones at
/// start included) gets its `default` ServiceAccount in the same write, created as
/// kube-controller-manager creates it. One deleted later is not recreated (the real controller
/// would, on its next pass).
fn create_default_service_account(st: &mut State, ns: &str) {
    let Some(res) = st
        .registry
        .resolve_gr(names::SERVICE_ACCOUNTS, "v1")
        .cloned()
    else {
        return;
    };
    let opts = WriteOptions {
        field_manager: Some("kube-controller-manager".into()),
        ..Default::default()
    };
    let body = json!({
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"},
    });
    if let Err(e) = create_with(st, &res, Some(ns), body, &opts, None)
        && e.code != 409
    {
        tracing::debug!(namespace = ns, error = %e.message, "creating the default ServiceAccount");
    }
}

/// An update of the object or its `status` whose `managedFields` are `managed` (server-side
/// apply), or, when `None`, updated for the request's field manager.
#[allow(clippy::too_many_arguments)]
pub(crate) fn update_with(
    st: &mut State,
    res: &ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    subresource: Option<&str>,
    body: Value,
    opts: &WriteOptions,
    managed: Option<Value>,
) -> Result<Value, ApiError> {
    let mut body = check_body(res, body, opts)?;
    let provided = body
        .pointer("/metadata/managedFields")
        .cloned()
        .filter(|m| !m.is_null());
    if meta::name(&body) != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            meta::name(&body)
        )));
    }
    scope_namespace(res, namespace, &mut body)?;
    let key = obj_key(res, namespace, name);
    let old = current(st, res, &key, subresource)?;
    check_precondition(res, &old, &body)?;
    let mut new = match subresource {
        // A namespace's `finalize` writes all but the status, as its strategy's
        // `PrepareForUpdate` says: the main update's preparation.
        None | Some("finalize") => prepare_main_update(res, &old, body),
        Some(sub @ ("approval" | "ephemeralcontainers" | "resize")) => {
            prepare_subresource_update(sub, &old, body)
        }
        Some(_) => prepare_status_update(res, &old, body),
    };
    rules::normalize(res, &mut new)?;
    if !res.custom && matches!(subresource, None | Some("ephemeralcontainers" | "finalize")) {
        // Upstream defaults every decoded object, so an update that leaves out a defaulted
        // field reads it as its default, not as a change.
        let mut next_ip = st.next_cluster_ip;
        rules::apply_defaults(res, &mut new, &mut next_ip);
        st.next_cluster_ip = next_ip;
        if is_service(res) {
            let used = node_ports_used(st, Some(&key));
            let errs = rules::allocate_node_ports(&mut new, Some(&old), &used);
            if !errs.is_empty() {
                return Err(invalid(res, name, &errs));
            }
        }
    }
    set_managed(
        st,
        res,
        Some(&old),
        &mut new,
        provided,
        opts,
        subresource,
        managed,
    );
    commit_update(st, res, key, old, new, subresource, opts)
}

/// Sets `new`'s `managedFields`: `managed` when server-side apply computed them; otherwise
/// the ones the request `provided` (honoured on the main resource, as upstream, so clients can
/// edit or reset them) or else `old`'s, updated with an `Update` entry for the request's field
/// manager writing through `subresource`; `[{}]` strips them all. Without a field manager (direct storage use: the
/// HTTP layer always names one) nothing is recorded and those managed fields are kept as is.
#[allow(clippy::too_many_arguments)]
pub(crate) fn set_managed(
    st: &State,
    res: &ResourceInfo,
    old: Option<&Value>,
    new: &mut Value,
    provided: Option<Value>,
    opts: &WriteOptions,
    subresource: Option<&str>,
    managed: Option<Value>,
) {
    let shape = || shape_of(st, res);
    set_managed_with(shape, res, old, new, provided, opts, subresource, managed);
}

/// [`set_managed`] with the resource's merge shape from `shape` (only called when an update
/// entry is recorded).
#[allow(clippy::too_many_arguments)]
fn set_managed_with(
    shape: impl FnOnce() -> Shape,
    res: &ResourceInfo,
    old: Option<&Value>,
    new: &mut Value,
    provided: Option<Value>,
    opts: &WriteOptions,
    subresource: Option<&str>,
    managed: Option<Value>,
) {
    if let Some(m) = managed {
        meta::set_meta(new, "managedFields", m);
        return;
    }
    let provided =
        provided.filter(|p| subresource.is_none() && p.as_array().is_some_and(|a| !a.is_empty()));
    let reset = |p: &Value| {
        p.as_array()
            .is_some_and(|a| matches!(a.as_slice(), [Value::Object(m)] if m.is_empty()))
    };
    if provided.as_ref().is_some_and(reset) {
        // The documented reset: a single empty entry strips every entry, none recorded.
        meta::set_meta(new, "managedFields", Value::Null);
        return;
    }
    let base = provided
        .or_else(|| {
            old.and_then(|o| o.get("metadata")?.get("managedFields"))
                .cloned()
        })
        .unwrap_or(Value::Null);
    meta::set_meta(new, "managedFields", base);
    if opts.field_manager.is_some() {
        let w = writer(res, opts, subresource);
        fieldmanager::record_update(old, new, &shape(), &w.get());
    }
}

/// The merge shape of a resource's objects: the built-in kind's, or its CRD's schema.
pub(crate) fn shape_of(st: &State, res: &ResourceInfo) -> Shape {
    if !res.custom {
        return Shape::builtin(&res.group, &res.kind);
    }
    match st.get(gc::CRD_KEY, &(String::new(), res_key(res))) {
        Some(crd) => Shape::from_crd(crd.clone(), &res.version),
        None => Shape::Untyped,
    }
}

/// Who writes: the request's field manager (`""` when none was given or derived), through
/// `subresource`, in the resource's version, now.
pub(crate) fn writer<'a>(
    res: &ResourceInfo,
    opts: &'a WriteOptions,
    subresource: Option<&'a str>,
) -> OwnedWriter<'a> {
    OwnedWriter {
        manager: opts.field_manager.as_deref().unwrap_or(""),
        subresource,
        api_version: res.api_version(),
        now: meta::now(),
    }
}

/// A [`fieldmanager::Writer`] that owns its version and time strings.
pub(crate) struct OwnedWriter<'a> {
    manager: &'a str,
    subresource: Option<&'a str>,
    api_version: String,
    now: String,
}

impl OwnedWriter<'_> {
    /// The borrowed form the field manager takes.
    pub(crate) fn get(&self) -> fieldmanager::Writer<'_> {
        fieldmanager::Writer {
            manager: self.manager,
            subresource: self.subresource,
            api_version: &self.api_version,
            now: &self.now,
        }
    }
}

/// The stored object for an update of `subresource`, or 404.
pub(crate) fn current(
    st: &State,
    res: &ResourceInfo,
    key: &ObjKey,
    subresource: Option<&str>,
) -> Result<Arc<Value>, ApiError> {
    match subresource {
        None => {}
        Some("status") if res.status_subresource => {}
        Some("scale") if res.scale.is_some() => {}
        Some(sub) if rules::own_update_subresource(res, sub) => {}
        Some(_) => return Err(super::options::not_served()),
    }
    st.get(&res_key(res), key)
        .cloned()
        .ok_or_else(|| ApiError::not_found(&res.group_resource(), &key.1))
}

/// 409 Conflict when the body names a resourceVersion other than the stored one.
pub(crate) fn check_precondition(
    res: &ResourceInfo,
    old: &Value,
    body: &Value,
) -> Result<(), ApiError> {
    let wanted = meta::resource_version(body);
    if !wanted.is_empty() && wanted != meta::resource_version(old) {
        return Err(ApiError::conflict(
            &res.group_resource(),
            meta::name(old),
            "the object has been modified; please apply your changes to the latest version and try again",
        ));
    }
    Ok(())
}

/// The proposed object of a main-resource update: the body, with the system fields of the
/// stored object and (for resources with a status subresource) its status.
fn prepare_main_update(res: &ResourceInfo, old: &Value, mut new: Value) -> Value {
    keep_system_fields(old, &mut new);
    if res.status_subresource
        && let Some(map) = new.as_object_mut()
    {
        match old.get("status") {
            Some(s) => map.insert("status".into(), s.clone()),
            None => map.remove("status"),
        };
    }
    rules::carry_over(res, old, &mut new);
    new
}

/// What every update keeps of the stored object whatever the body says (upstream's
/// `rest.BeforeUpdate`): creation and deletion timestamps, the deletion grace period,
/// generation, the uid when the body has none, the resourceVersion; managed fields are
/// recomputed.
fn keep_system_fields(old: &Value, new: &mut Value) {
    for f in [
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        let v = old
            .get("metadata")
            .and_then(|m| m.get(f))
            .cloned()
            .unwrap_or(Value::Null);
        meta::set_meta(new, f, v);
    }
    if meta::uid(new).is_empty() {
        meta::set_meta(new, "uid", Value::from(meta::uid(old)));
    }
    meta::set_meta(
        new,
        "resourceVersion",
        Value::from(meta::resource_version(old)),
    );
    meta::set_meta(new, "managedFields", Value::Null);
}

/// The proposed object of a status update: the body with what the kind's status strategy
/// keeps of the stored object (`spec`, and for some kinds metadata; see `storage::status`),
/// and the system fields every update keeps.
fn prepare_status_update(res: &ResourceInfo, old: &Value, body: Value) -> Value {
    let mut new = super::status::prepare(res, old, body);
    if !res.custom {
        keep_system_fields(old, &mut new);
    }
    new
}

/// The proposed object of a subresource update: the stored object with the part of the body
/// the subresource writes, as upstream's strategy for it prepares the update: `status` the
/// status; a CertificateSigningRequest's `approval` the status' conditions; a pod's
/// `ephemeralcontainers` its `spec.ephemeralContainers`, and its `resize` the `resources` and
/// `resizePolicy` of the containers and sidecars (matched by name; unknown names are ignored).
fn prepare_subresource_update(sub: &str, old: &Value, body: Value) -> Value {
    /// Sets the field at `path` (dotted, from `obj`) to `value`, or removes it.
    fn replace(obj: &mut Value, path: &str, value: Option<&Value>) {
        match value {
            Some(v) => meta::set_path(obj, path, v.clone()),
            None => {
                let (parent, key) = path.rsplit_once('.').unwrap_or(("", path));
                let parent = match parent {
                    "" => Some(obj),
                    p => obj.pointer_mut(&p.replace('.', "/")),
                };
                if let Some(map) = parent.and_then(Value::as_object_mut) {
                    map.remove(key);
                }
            }
        }
    }
    let mut new = old.clone();
    match sub {
        "approval" => replace(
            &mut new,
            ".status.conditions",
            body.pointer("/status/conditions"),
        ),
        "ephemeralcontainers" => replace(
            &mut new,
            ".spec.ephemeralContainers",
            body.pointer("/spec/ephemeralContainers"),
        ),
        "resize" => {
            for key in ["containers", "initContainers"] {
                let wanted = body
                    .pointer(&format!("/spec/{key}"))
                    .and_then(Value::as_array);
                let Some(containers) = new
                    .pointer_mut(&format!("/spec/{key}"))
                    .and_then(Value::as_array_mut)
                else {
                    continue;
                };
                for c in containers.iter_mut() {
                    // Of the init containers, only sidecars run long enough to be resized.
                    if key == "initContainers"
                        && c.get("restartPolicy").and_then(Value::as_str) != Some("Always")
                    {
                        continue;
                    }
                    let name = c.get("name").cloned();
                    let Some(w) = wanted
                        .into_iter()
                        .flatten()
                        .find(|w| w.get("name") == name.as_ref())
                    else {
                        continue;
                    };
                    for field in ["resources", "resizePolicy"] {
                        replace(c, field, w.get(field));
                    }
                }
            }
        }
        _ => replace(&mut new, ".status", body.get("status")),
    }
    new
}

/// Validates a proposed update of the object or its `subresource`, runs admission on it, and
/// commits it: generation, no-op detection, finalizer removal of a deleting object, then the
/// follow-ups (GC, namespace and CRD re-checks).
pub(crate) fn commit_update(
    st: &mut State,
    res: &ResourceInfo,
    key: ObjKey,
    old: Arc<Value>,
    mut new: Value,
    subresource: Option<&str>,
    opts: &WriteOptions,
) -> Result<Value, ApiError> {
    let name = key.1.clone();
    let mut errs = validation::validate_object_meta(res, kinds::name_format(res), &new)?;
    if meta::uid(&new) != meta::uid(&old) {
        errs.push(FieldError::invalid(
            "metadata.uid",
            &Value::from(meta::uid(&new)),
            "field is immutable",
        ));
    }
    if meta::is_deleting(&old) {
        let before = meta::finalizers(&old);
        let added: Vec<String> = meta::finalizers(&new)
            .into_iter()
            .filter(|f| !before.contains(f))
            .collect();
        if !added.is_empty() {
            errs.push(FieldError::forbidden(
                "metadata.finalizers",
                &format!("no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"),
            ));
        }
    }
    if res.custom {
        errs.extend(crd::validate_custom(st, res, &mut new, Some(&old), opts)?);
    } else if let Some(sub_errs) = kinds::validate_subresource(res, subresource, &new, &old) {
        errs.extend(sub_errs);
    } else if subresource != Some("binding") {
        // A binding sets the node of a pod, which the pod's update rules forbid: upstream's
        // binding strategy does not run them either.
        errs.extend(kinds::validate(res, &new, Some(&old)));
    }
    if res.is(names::CUSTOM_RESOURCE_DEFINITIONS) {
        errs.extend(crd::prepare_update(&old, &mut new));
        crd::track_stored_versions(&mut new);
    }
    errs.extend(admit::validate_config(res, &new));
    if !errs.is_empty() {
        return Err(invalid(res, &name, &errs));
    }
    let charges = admit::admit(
        st,
        res,
        Operation::Update,
        subresource,
        Some(&new),
        Some(&old),
        opts.dry_run,
        &opts.warnings,
        opts.user.as_deref(),
    )?;
    let spec_changed = if res.custom && !res.status_subresource {
        !meta::same_outside_metadata(&old, &new)
    } else {
        !meta::same_spec(&old, &new)
    };
    if res.generation && spec_changed {
        let g = old
            .get("metadata")
            .and_then(|m| m.get("generation"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        meta::set_meta(&mut new, "generation", Value::from(g + 1));
    }
    if meta::same_content(&old, &new)
        && old.pointer("/metadata/managedFields") == new.pointer("/metadata/managedFields")
    {
        return Ok(to_version(&old, &res.api_version()));
    }
    if opts.dry_run {
        return Ok(to_version(&new, &res.api_version()));
    }
    let rk = res_key(res);
    let deleting_done =
        meta::is_deleting(&new) && meta::finalizers(&new).is_empty() && !gc::held_by_spec(&new);
    if deleting_done {
        // The last finalizer is gone: the object goes (watchers see only the deletion, with the
        // last stored state, as etcd's delete event carries it).
        let last = gc::remove_now(st, &rk, &key)
            .ok_or_else(|| ApiError::not_found(&res.group_resource(), &name))?;
        return Ok(to_version(&last, &res.api_version()));
    }
    let stored = st.put(&rk, key, new);
    store_quota_charges(st, charges);
    let mut tasks = Vec::new();
    for owner in meta::owner_uids(&old) {
        tasks.push(Task::Recheck(owner));
    }
    tasks.push(Task::Recheck(meta::uid(&stored).to_string()));
    if meta::owner_refs(&stored) != meta::owner_refs(&old) {
        tasks.push(Task::Owners(meta::uid(&stored).to_string()));
    }
    if res.is(names::CUSTOM_RESOURCE_DEFINITIONS) && !meta::is_deleting(&stored) {
        crd::register(st, &stored);
    }
    gc::run(st, tasks);
    Ok(to_version(&stored, &res.api_version()))
}

/// Stores the `status.used` the ResourceQuota admission charged a write with, once the write
/// is stored, in the same locked step: a status update of each quota as kube-apiserver's
/// own (field manager `kube-apiserver`), with the resourceVersion admission read, which
/// nothing can have changed since.
fn store_quota_charges(st: &mut State, charges: Vec<Value>) {
    if charges.is_empty() {
        return;
    }
    let Some(res) = st
        .registry
        .resolve_gr(names::RESOURCE_QUOTAS, "v1")
        .cloned()
    else {
        return;
    };
    let opts = WriteOptions {
        field_manager: Some("kube-apiserver".into()),
        ..Default::default()
    };
    for quota in charges {
        let ns = meta::meta_str(&quota, "namespace")
            .unwrap_or("")
            .to_string();
        let name = meta::name(&quota).to_string();
        if let Err(e) = update_with(
            st,
            &res,
            Some(&ns),
            &name,
            Some("status"),
            quota,
            &opts,
            None,
        ) {
            tracing::warn!(namespace = ns, quota = name, error = %e.message, "charging a quota");
        }
    }
}

/// Whether a resource is the core Services.
fn is_service(res: &ResourceInfo) -> bool {
    res.is(names::SERVICES)
}

/// The node ports every stored Service holds, but the one at `except`.
fn node_ports_used(st: &State, except: Option<&ObjKey>) -> std::collections::BTreeSet<i64> {
    st.data
        .get("services")
        .into_iter()
        .flat_map(|objs| objs.iter())
        .filter(|(k, _)| Some(*k) != except)
        .flat_map(|(_, svc)| {
            svc.pointer("/spec/ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
        })
        .collect()
}
