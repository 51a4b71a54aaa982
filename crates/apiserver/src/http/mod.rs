//! The HTTP layer: authentication, fault injection, routing to discovery or to storage, and
//! response encoding. Every answer is JSON; every failure is a `metav1.Status`.
//!
//! - [`request`]: path and query parsing, the options storage takes.
//! - [`response`]: JSON and `Status` responses, body size limits.
//! - [`objects`]: resource requests (get, list, create, update, patch, delete, watch).
//! - [`watch`]: the newline-delimited JSON watch stream.
//! - `converted`: requests at a version a CRD converts through its conversion webhook.
//! - [`openapi`]: the OpenAPI documents (with the served kinds' schemas) kubectl reads.
//! - [`reviews`]: `kubectl auth can-i` / `whoami` (self access and subject reviews).

use std::sync::Arc;

use http::{Method, Request, Response, header};
use serde_json::Value;

use crate::discovery;
use crate::error::ApiError;
use crate::faults::Faults;
use crate::storage::Storage;

mod converted;
mod duplicates;
pub mod objects;
pub mod openapi;
pub mod protobuf;
pub mod request;
pub mod response;
pub mod reviews;
pub mod watch;

pub use request::{Route, parse_path};
pub use response::Body;

/// What every request handler shares.
pub struct AppState {
    /// The object store.
    pub storage: Storage,
    /// The bearer token every request but the public-info ones must carry.
    pub token: String,
    /// Injected faults.
    pub faults: Faults,
    /// The largest request body accepted (413 beyond).
    pub max_body_bytes: usize,
    /// `host:port` as clients reach the server, for `/api`.
    pub server_address: String,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("server_address", &self.server_address)
            .finish_non_exhaustive()
    }
}

/// 401, as the real server answers an unauthenticated request.
pub fn unauthorized() -> ApiError {
    ApiError::new(401, "Unauthorized", "Unauthorized")
}

/// Whether the request carries the bearer token, read as the real server's bearer-token
/// authenticator reads it: the header trimmed, split at spaces, the scheme compared without
/// case, the token the second part (an empty one never matches).
fn authorized<B>(req: &Request<B>, token: &str) -> bool {
    let Some(auth) = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let mut parts = auth.trim().split(' ');
    let scheme = parts.next().unwrap_or("");
    scheme.eq_ignore_ascii_case("bearer")
        && parts.next().is_some_and(|t| !t.is_empty() && t == token)
}

/// Answers one request. Never panics on bad input: every failure becomes a `Status`.
///
/// `/healthz`, `/readyz`, `/livez` and `/version` are open to anonymous requests, as the real
/// server's `system:public-info-viewer` role allows; everything else needs the bearer token.
pub async fn handle<B>(state: Arc<AppState>, req: Request<B>) -> Response<Body>
where
    B: hyper::body::Body + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let route = parse_path(req.uri().path());
    let public = matches!(route, Route::Health | Route::Version);
    if !public {
        if !authorized(&req, &state.token) {
            return response::error(&unauthorized());
        }
        if let Some(err) = state.faults.take_failure() {
            return response::error(&err);
        }
    }
    match dispatch(&state, route, req).await {
        Ok(resp) => resp,
        Err(err) => response::error(&err),
    }
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
        Route::Health => return Ok(response::text(200, "ok")),
        Route::Version => discovery::version(),
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
    let Some(res) =
        state
            .storage
            .resolve("apiextensions.k8s.io", "v1", "customresourcedefinitions")
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

#[cfg(test)]
mod tests {
    use super::*;

    fn with_auth(value: Option<&str>) -> Request<()> {
        let mut req = Request::builder().uri("/api/v1/namespaces");
        if let Some(v) = value {
            req = req.header(header::AUTHORIZATION, v);
        }
        req.body(()).unwrap()
    }

    #[test]
    fn bearer_scheme_is_read_as_the_real_server_reads_it() {
        for accepted in [
            "Bearer tok",
            "bearer tok",
            "BEARER tok",
            "  Bearer tok  ",
            "Bearer tok more",
        ] {
            assert!(
                authorized(&with_auth(Some(accepted)), "tok"),
                "{accepted:?}"
            );
        }
        for refused in [
            None,
            Some("Bearer"),
            Some("Bearer "),
            Some("Bearer  tok"),
            Some("Basic tok"),
            Some("Bearer wrong"),
            Some("Bearertok"),
        ] {
            assert!(!authorized(&with_auth(refused), "tok"), "{refused:?}");
        }
    }
}
