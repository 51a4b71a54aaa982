//! Create, update and patch of an object or its `status` (the `scale` subresource is
//! `scale.rs`'s, server-side apply `apply.rs`'s): each reads the request, then goes through the
//! commit library (`commit.rs`). Nothing is stored until every check passed.

use std::sync::Arc;

use serde_json::{Value, json};

use super::commit::{create_with, current, update_with};
use super::convert::to_version;
use super::crd;
use super::options::{PatchType, WriteOptions, apply_patch};
use super::rules::SYSTEM_NAMESPACES;
use super::store::{State, obj_key, res_key};
use crate::error::ApiError;
use crate::resource::{ResourceInfo, names};

/// Creates the system namespaces of a new store.
pub(crate) fn create_system_namespaces(st: &mut State) {
    let res = st
        .registry
        .resolve_gr(names::NAMESPACES, "v1")
        .cloned()
        .expect("namespaces are built in");
    for name in SYSTEM_NAMESPACES {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        if let Err(e) = create(st, &res, None, body, &WriteOptions::default()) {
            tracing::error!("creating namespace {name}: {e}");
        }
    }
}

/// Creates what kube-apiserver's bootstrap controller keeps in the `default` namespace: the
/// `kubernetes` Service (ClusterIP, the first address of the service range, port 443 `https` to
/// the server's port) and its endpoints at `addr` (an unspecified address is named as the
/// loopback one), as an Endpoints (`endpointslice.kubernetes.io/skip-mirror`) and the
/// EndpointSlice upstream's endpoints adapter derives from it.
pub(crate) fn create_kubernetes_service(st: &mut State, addr: std::net::SocketAddr) {
    let ip = match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => std::net::Ipv4Addr::LOCALHOST.into(),
        ip if ip.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    let (ip, port) = (ip.to_string(), addr.port());
    let address_type = if addr.is_ipv4() { "IPv4" } else { "IPv6" };
    let objects = [
        (
            ("", "v1", "services"),
            json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {
                    "name": "kubernetes", "namespace": "default",
                    "labels": {"component": "apiserver", "provider": "kubernetes"},
                },
                "spec": {
                    "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}],
                    "ipFamilyPolicy": "SingleStack",
                    "sessionAffinity": "None",
                    "type": "ClusterIP",
                },
            }),
        ),
        (
            ("", "v1", "endpoints"),
            json!({
                "apiVersion": "v1", "kind": "Endpoints",
                "metadata": {
                    "name": "kubernetes", "namespace": "default",
                    "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
                },
                "subsets": [{
                    "addresses": [{"ip": ip}],
                    "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
                }],
            }),
        ),
        (
            ("discovery.k8s.io", "v1", "endpointslices"),
            json!({
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {
                    "name": "kubernetes", "namespace": "default",
                    "labels": {"kubernetes.io/service-name": "kubernetes"},
                },
                "addressType": address_type,
                "endpoints": [{"addresses": [ip], "conditions": {"ready": true}}],
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
            }),
        ),
    ];
    let opts = WriteOptions {
        field_manager: Some("kube-apiserver".into()),
        ..WriteOptions::default()
    };
    for ((group, version, plural), body) in objects {
        let Some(res) = st.registry.resolve(group, version, plural).cloned() else {
            continue;
        };
        let key = obj_key(&res, Some("default"), "kubernetes");
        let done = if st.get(&res_key(&res), &key).is_some() {
            // Restored from a data directory: only the address (the port may have changed)
            // is brought up to date, as the bootstrap controller reconciles it.
            let fields: &[&str] = match plural {
                "services" => &["spec"],
                "endpoints" => &["subsets"],
                _ => &["endpoints", "ports"],
            };
            let mut doc = json!({});
            for f in fields {
                doc[*f] = if *f == "spec" {
                    json!({"ports": body["spec"]["ports"]})
                } else {
                    body[*f].clone()
                };
            }
            let body = serde_json::to_vec(&doc).unwrap_or_default();
            let merge = PatchType::Merge;
            patch(
                st,
                &res,
                Some("default"),
                "kubernetes",
                None,
                merge,
                &body,
                &opts,
            )
        } else {
            create(st, &res, Some("default"), body, &opts)
        };
        if let Err(e) = done {
            tracing::error!("creating the default/kubernetes {plural}: {e}");
        }
    }
}

/// Creates the default ServiceCIDR `kubernetes` (the service range, `10.96.0.0/12`) and marks it
/// Ready, as kube-apiserver's `kubernetes-service-cidr-controller` does at start.
pub(crate) fn create_default_service_cidr(st: &mut State) {
    let Some(res) = st.registry.resolve_gr(names::SERVICE_CIDRS, "v1").cloned() else {
        return;
    };
    let opts = WriteOptions {
        field_manager: Some("kubernetes-service-cidr-controller".into()),
        ..WriteOptions::default()
    };
    if st
        .get(&res_key(&res), &obj_key(&res, None, "kubernetes"))
        .is_some()
    {
        // Restored from a data directory.
        return;
    }
    let body = json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
        "metadata": {"name": "kubernetes"},
        "spec": {"cidrs": ["10.96.0.0/12"]},
    });
    let created = create(st, &res, None, body, &opts).and_then(|mut obj| {
        obj["status"] = json!({"conditions": [{
            "type": "Ready", "status": "True", "reason": "",
            "message": "Kubernetes default Service CIDR is ready",
            "lastTransitionTime": super::meta::now(),
        }]});
        update(st, &res, None, "kubernetes", Some("status"), obj, &opts)
    });
    if let Err(e) = created {
        tracing::error!("creating the default ServiceCIDR: {e}");
    }
}

/// POST.
pub(crate) fn create(
    st: &mut State,
    res: &ResourceInfo,
    namespace: Option<&str>,
    body: Value,
    opts: &WriteOptions,
) -> Result<Value, ApiError> {
    create_shared(st, res, namespace, body, opts).map(Arc::unwrap_or_clone)
}

/// POST, answering the stored object itself (not a copy) when the request speaks the stored
/// version: the HTTP layer only encodes it.
pub(crate) fn create_shared(
    st: &mut State,
    res: &ResourceInfo,
    namespace: Option<&str>,
    body: Value,
    opts: &WriteOptions,
) -> Result<Arc<Value>, ApiError> {
    create_with(st, res, namespace, body, opts, None)
}

/// PUT, on the object or its `status` (`scale` is [`super::scale::update`]).
pub(crate) fn update(
    st: &mut State,
    res: &ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    subresource: Option<&str>,
    body: Value,
    opts: &WriteOptions,
) -> Result<Value, ApiError> {
    update_with(st, res, namespace, name, subresource, body, opts, None)
}

/// PATCH with a patch document (merge, JSON or strategic), on the object or its `status`
/// (`scale` is [`super::scale::patch`], server-side apply [`super::apply::apply`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn patch(
    st: &mut State,
    res: &ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    subresource: Option<&str>,
    patch_type: PatchType,
    body: &[u8],
    opts: &WriteOptions,
) -> Result<Value, ApiError> {
    let key = obj_key(res, namespace, name);
    let old = current(st, res, &key, subresource)?;
    let base = to_version(&old, &res.api_version());
    let patched = apply_patch(res, &base, patch_type, body)?;
    update(st, res, namespace, name, subresource, patched, opts)
        .map_err(strict_patch_error)
        .map_err(|e| {
            // Patching again is deterministic: the failed write's object, without a copy of
            // every patched object on the path that succeeds.
            let again = || apply_patch(res, &base, patch_type, body).ok();
            patched_type_error(e, again)
        })
}

/// A patched built-in object whose values have the wrong JSON type is a 422 on the field
/// `patch`, its value the patched object, as upstream's patcher words it (its create and update
/// answer the same decoding error 400).
fn patched_type_error(e: ApiError, patched: impl FnOnce() -> Option<Value>) -> ApiError {
    const DECODE: &str = ": json: cannot unmarshal ";
    let Some(at) = e.message.find(DECODE).filter(|_| e.code == 400) else {
        return e;
    };
    let Some(patched) = patched() else {
        return e;
    };
    let json = serde_json::to_string(&patched).unwrap_or_default();
    let detail = &e.message[at + 2..];
    let message = format!("Invalid value: {}: {detail}", crate::schema::quote(&json));
    ApiError::invalid("", "", "", &[("patch".to_string(), message)])
}

/// A patch's strict decoding error is worded without the create/update "cannot be handled
/// as" prefix, as upstream's patcher answers it.
pub(crate) fn strict_patch_error(mut e: ApiError) -> ApiError {
    if e.code == 400
        && let Some(at) = e.message.find(crd::STRICT_PREFIX)
    {
        e.message = e.message[at..].to_string();
    }
    e
}
