//! The HTTP layer: authentication, fault injection, routing to discovery or to storage, and
//! response encoding. Answers are JSON, or protobuf or YAML when the client asks; every failure
//! is a `metav1.Status`.
//!
//! - [`request`]: path and query parsing, the options storage takes.
//! - [`response`]: JSON and `Status` responses, body size limits.
//! - [`objects`]: resource requests (get, list, create, update, patch, delete, watch).
//! - [`watch`]: the newline-delimited JSON watch stream.
//! - `component_statuses`: `componentstatuses`, answered on every read, never stored.
//! - `converted`: requests at a version a CRD converts through its conversion webhook.
//! - [`openapi`]: the OpenAPI documents (with the served kinds' schemas) kubectl reads.
//! - [`reviews`]: `kubectl auth can-i` / `whoami` (self access and subject reviews).
//! - `flowcontrol`: API priority and fairness: the bootstrap configuration, each request's
//!   classification (its response headers) and the FlowSchemas' `Dangling` condition.
//! - [`token_request`]: `serviceaccounts/NAME/token` (`kubectl create token`).
//! - [`yaml`]: YAML request bodies and answers.

use std::sync::Arc;

use http::{Method, Request, Response, header};
use serde_json::Value;

use crate::auth::UserInfo;
use crate::auth::authn::Authenticator;
use crate::auth::authz::{self, Authorizer, RequestAttributes, ResourceTarget};
use crate::auth::impersonate::{self, Refusal};
use crate::discovery;
use crate::error::ApiError;
use crate::faults::Faults;
use crate::storage::Storage;

mod component_statuses;
mod converted;
mod duplicates;
pub(crate) mod flowcontrol;
mod health;
pub mod objects;
pub mod openapi;
mod pretty;
pub mod protobuf;
pub mod request;
pub mod response;
pub mod reviews;
pub mod token_request;
pub mod watch;
pub mod yaml;

pub use flowcontrol::{Classification, PriorityAndFairness};
pub use request::{Route, parse_path};
pub use response::Body;

/// What every request handler shares.
pub struct AppState {
    /// The object store.
    pub storage: Storage,
    /// Who a request is from.
    pub authn: Authenticator,
    /// Whether they may do what it asks.
    pub authz: Authorizer,
    /// Injected faults.
    pub faults: Faults,
    /// The largest request body accepted (413 beyond).
    pub max_body_bytes: usize,
    /// `host:port` as clients reach the server, for `/api`.
    pub server_address: String,
    /// The API priority and fairness classifier.
    pub apf: PriorityAndFairness,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("server_address", &self.server_address)
            .finish_non_exhaustive()
    }
}

/// Answers one request. Never panics on bad input: every failure becomes a `Status`.
///
/// The request is authenticated (401 when its credentials authenticate no one; none at all is
/// the anonymous user), its impersonation headers honoured when the user may impersonate,
/// authorized (upstream's 403 when refused), and then carries its user as an
/// `Arc<UserInfo>` extension to the handlers.
///
/// Every answer carries the headers kube-apiserver's filters add: `Audit-Id` (the request's
/// own when it sent one, else a new UUID) and `Cache-Control: no-cache, private`; and every
/// request classified by API priority and fairness (authenticated and, when impersonating,
/// allowed to: upstream's filter runs after those and before authorization, so a 403 carries
/// them and a 401 does not) the uids of its FlowSchema and priority level,
/// `X-Kubernetes-PF-FlowSchema-UID` and `X-Kubernetes-PF-PriorityLevel-UID`.
///
/// With a durable store ([`Storage::open`]) every request but a read is answered only once
/// what was committed before its answer is synced to disk (500 when it cannot be).
pub async fn handle<B>(state: Arc<AppState>, req: Request<B>) -> Response<Body>
where
    B: hyper::body::Body + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let audit_id = req
        .headers()
        .get("audit-id")
        .filter(|v| !v.is_empty())
        .cloned()
        .or_else(|| http::HeaderValue::from_str(&crate::uid::new_uid()).ok());
    let flowcontrol_write = !matches!(*req.method(), Method::GET | Method::HEAD)
        && req
            .uri()
            .path()
            .starts_with("/apis/flowcontrol.apiserver.k8s.io/");
    let write = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let mut classified = None;
    let mut resp = handle_request(&state, req, &mut classified).await;
    if flowcontrol_write {
        // The config controller's status sync, run inside the write that makes it due.
        state.apf.refresh(&state.storage);
    }
    if write && let Err(err) = state.storage.synced().await {
        // A durable store answers a write once it is on disk, or not at all.
        resp = response::error(&err);
    }
    let headers = resp.headers_mut();
    if let Some(c) = classified {
        for (name, uid) in [
            (flowcontrol::FLOW_SCHEMA_HEADER, c.flow_schema_uid),
            (flowcontrol::PRIORITY_LEVEL_HEADER, c.priority_level_uid),
        ] {
            if let Ok(v) = http::HeaderValue::from_str(&uid) {
                headers.insert(name, v);
            }
        }
    }
    if let Some(id) = audit_id {
        headers.insert("audit-id", id);
    }
    headers.insert(
        header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-cache, private"),
    );
    resp
}

async fn handle_request<B>(
    state: &Arc<AppState>,
    mut req: Request<B>,
    classified: &mut Option<Classification>,
) -> Response<Body>
where
    B: hyper::body::Body + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let route = parse_path(req.uri().path());
    let peer = req
        .extensions()
        .get::<crate::auth::x509::PeerCertificates>();
    let user = match state.authn.authenticate(req.headers(), peer) {
        Ok(user) => user,
        Err(err) => return response::error(&err),
    };
    let uri = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let user = match impersonate::impersonate(req.headers(), user, &state.authz, uri) {
        Ok(user) => user,
        Err(Refusal::Forbidden(err)) => return response::error(&err),
        Err(Refusal::Malformed(text)) => {
            let body = format!("{text}\n");
            return response::bytes_response(500, "text/plain; charset=utf-8", body.into());
        }
    };
    let attrs = request_attributes(req.method(), req.uri(), &route);
    *classified = state.apf.classify(&state.storage, &user, &attrs);
    if let authz::Decision::Deny(reason) = state.authz.authorize_request(&user, &attrs) {
        return response::error(&authz::forbidden(&user, &attrs, &reason));
    }
    let public = matches!(route, Route::Health | Route::Version);
    if !public && let Some(err) = state.faults.take_failure() {
        return response::error(&err);
    }
    if let Some(err) = invalid_timeout(&attrs, req.uri().query()) {
        // Upstream's deadline filter answers before priority and fairness classifies.
        *classified = None;
        return response::error(&err);
    }
    req.extensions_mut().insert(Arc::new(user));
    // A deprecated built-in resource warns on every request, answered or refused, as upstream's
    // handler chain does.
    let deprecation = match &route {
        Route::Resource(res) => crate::kinds::deprecation(&res.group, &res.version, &res.plural)
            .map(str::to_string)
            .or_else(|| {
                // A CRD's deprecated version warns the same way (no CRD serves the core group).
                (!res.group.is_empty())
                    .then(|| {
                        state
                            .storage
                            .resolve_shared(&res.group, &res.version, &res.plural)
                    })
                    .flatten()
                    .and_then(|r| r.deprecation_warning.clone())
            }),
        _ => None,
    };
    // Objects, lists and errors of a resource request in protobuf when the client asks for it
    // first (the answer is built as JSON, and encoded here).
    let proto = matches!(route, Route::Resource(_))
        && protobuf::wants(
            req.headers()
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok()),
        );
    let pretty = pretty::wanted(req.uri().query(), req.headers());
    let yaml = matches!(route, Route::Resource(_))
        && yaml::wants(
            req.headers()
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok()),
        );
    let mut resp = match dispatch(state, route, req).await {
        Ok(resp) => resp,
        Err(err) => response::error(&err),
    };
    if proto {
        resp = protobuf_answer(resp).await;
    } else if yaml {
        resp = yaml::answer(resp).await;
    } else if pretty {
        resp = pretty::answer(resp).await;
    }
    if let Some(warning) = deprecation {
        response::add_warning(&mut resp, &warning);
    }
    resp
}

/// A `timeout` query parameter that is not a Go duration is a 400 before any handler runs, on
/// every request that is not long-running (watches, logs, exec, attach, port-forward and
/// proxy are), as upstream's `WithRequestDeadline` filter answers it.
fn invalid_timeout(attrs: &RequestAttributes, query: Option<&str>) -> Option<ApiError> {
    let long_running = attrs.verb == "watch"
        || matches!(
            attrs.subresource.as_str(),
            "log" | "exec" | "attach" | "portforward" | "proxy"
        );
    if long_running {
        return None;
    }
    let value = query?
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .find(|(k, _)| *k == "timeout")
        .map(|(_, v)| request::percent_decode(v))
        .filter(|v| !v.is_empty())?;
    let why = crate::validation::cron::duration(&value).err()?;
    Some(ApiError::bad_request(format!(
        "invalid timeout specified in the request URL - {why}"
    )))
}

/// A whole JSON answer re-encoded in protobuf; any other (a watch stream, a custom resource,
/// a Table) is left as it is.
async fn protobuf_answer(resp: Response<Body>) -> Response<Body> {
    response::reencode_json(resp, |bytes| {
        let value = serde_json::from_slice::<serde_json::Value>(bytes).ok()?;
        Some((protobuf::encode(&value)?, protobuf::MEDIA_TYPE))
    })
    .await
}

/// The authorization attributes of a request (upstream's `RequestInfoFactory`): a resource
/// request's verb from its method, name and `watch`; a `list` or `watch` selecting one
/// `metadata.name` is named by it.
pub(crate) fn request_attributes(
    method: &Method,
    uri: &http::Uri,
    route: &Route,
) -> RequestAttributes {
    let Route::Resource(res) = route else {
        return RequestAttributes::non_resource(method, uri.path());
    };
    let query = request::parse_query(uri.query()).ok();
    let watch = res.legacy_watch || query.as_ref().is_some_and(|q| q.watch);
    let field_name = query
        .as_ref()
        .and_then(|q| q.field_selector.as_deref())
        .and_then(|s| s.parse::<crt_labels::FieldSelector>().ok())
        .and_then(|sel| sel.requires_exact_match("metadata.name").map(String::from))
        .filter(|n| !matches!(n.as_str(), "." | "..") && !n.contains(['/', '%']));
    let name = res.name.as_deref().unwrap_or("");
    // `namespaces/NAME` (and its subresources) is in the namespace NAME, as upstream has it:
    // a RoleBinding there may grant reading its own Namespace.
    let namespace = match res.namespace.as_deref() {
        None if res.is(crate::resource::names::NAMESPACES) => name,
        ns => ns.unwrap_or(""),
    };
    let target = ResourceTarget {
        group: &res.group,
        version: &res.version,
        resource: &res.plural,
        subresource: res.subresource.as_deref().unwrap_or(""),
        namespace,
        name,
    };
    RequestAttributes::resource(method, uri.path(), target, watch, field_name.as_deref())
}

/// The user a request is from (set by [`handle`]; the admin for requests built elsewhere, as
/// in tests calling handlers directly).
pub fn user_of<B>(req: &Request<B>) -> Arc<UserInfo> {
    req.extensions()
        .get::<Arc<UserInfo>>()
        .cloned()
        .unwrap_or_else(|| Arc::new(UserInfo::admin()))
}

async fn dispatch<B>(
    state: &AppState,
    route: Route,
    req: Request<B>,
) -> Result<Response<Body>, ApiError>
where
    B: hyper::body::Body + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    if let Route::Resource(path) = route {
        return objects::serve(state, req, path).await;
    }
    if route == Route::NotFound {
        return Err(response::not_found());
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return Err(response::method_not_allowed());
    }
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let resources = || {
        let mut served = state.storage.served_resources();
        served.extend(reviews::resources());
        served
    };
    let doc = match route {
        Route::Health => {
            let (code, body) = health::answer(req.uri().path(), req.uri().query())?;
            let mut resp = response::bytes_response(code, "text/plain; charset=utf-8", body.into());
            resp.headers_mut().insert(
                header::X_CONTENT_TYPE_OPTIONS,
                http::HeaderValue::from_static("nosniff"),
            );
            return Ok(resp);
        }
        Route::Version => {
            let body = discovery::version_body();
            return Ok(response::bytes_response(
                200,
                "application/json",
                body.into(),
            ));
        }
        Route::CoreApi | Route::Apis => {
            if let Some(v) = discovery::wants_aggregated(accept) {
                let doc = discovery::aggregated(&resources(), route == Route::CoreApi, v);
                let body = serde_json::to_vec(&doc).unwrap_or_default();
                return Ok(response::bytes_response(
                    200,
                    &discovery::aggregated_content_type(v),
                    body.into(),
                ));
            }
            if route == Route::CoreApi {
                discovery::api_versions(&state.server_address)
            } else {
                discovery::group_list(&resources())
            }
        }
        Route::Group(g) => discovery::group(&resources(), &g).ok_or_else(response::not_found)?,
        Route::GroupVersion(g, v) => {
            discovery::resource_list(&resources(), &g, &v).ok_or_else(response::not_found)?
        }
        Route::OpenApiV2 => {
            let doc = openapi::v2(&resources(), &crds(state));
            if openapi::proto::wants_protobuf(accept) {
                return Ok(response::bytes_response(
                    200,
                    openapi::proto::CONTENT_TYPE,
                    openapi::proto::encode(&doc).into(),
                ));
            }
            doc
        }
        Route::OpenApiV3Root => openapi::v3_root(&resources(), &crds(state)),
        Route::OpenApiV3(g, v) => openapi::v3_group_version(&resources(), &crds(state), &g, &v)
            .ok_or_else(response::not_found)?,
        Route::Resource(_) | Route::NotFound => return Err(response::not_found()),
    };
    Ok(response::json(200, &doc))
}

/// The stored CustomResourceDefinitions, whose schemas the OpenAPI documents carry.
fn crds(state: &AppState) -> Vec<Value> {
    let Some(res) = state
        .storage
        .resolve_gr(crate::resource::names::CUSTOM_RESOURCE_DEFINITIONS, "v1")
    else {
        return Vec::new();
    };
    match state.storage.list(&res, None, &Default::default()) {
        Ok(Value::Object(mut list)) => match list.remove("items") {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}
