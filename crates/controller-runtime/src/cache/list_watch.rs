//! [`ListWatch`]: how an informer lists and watches one resource.
//!
//! The informer's loop is written once against this trait. [`ApiListWatch`] talks to the API
//! server through a kube-client [`Client`]: typed, dynamic, or metadata-only (for
//! `PartialObjectMeta<K>` it lists and watches metadata only). Tests script a fake.

use std::fmt::Debug;

use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt};
use std::marker::PhantomData;

use kube_client::Client;
use kube_client::api::{ListParams, WatchParams};
use kube_client::core::{ObjectList, WatchEvent};
use kube_core::Resource;

use serde::de::DeserializeOwned;

use super::raw::{self, RawObject};
use super::watch_lines;

/// A stream of watch events.
pub type WatchStream<K> = BoxStream<'static, Result<WatchEvent<K>, kube_client::Error>>;

/// Lists and watches objects of one type.
pub trait ListWatch<K: Clone>: Send + Sync + 'static {
    /// One page of a list.
    fn list(
        &self,
        params: ListParams,
    ) -> BoxFuture<'static, Result<ObjectList<K>, kube_client::Error>>;
    /// A watch from `resource_version` (exclusive).
    fn watch(
        &self,
        params: WatchParams,
        resource_version: String,
    ) -> BoxFuture<'static, Result<WatchStream<K>, kube_client::Error>>;

    /// The same list and watch yielding [`RawObject`]s (the JSON as received), if this
    /// list-watch can: a compact informer without a transform then never decodes objects it
    /// only stores. `None` by default.
    fn raw(&self) -> Option<Box<dyn ListWatch<RawObject>>> {
        None
    }
}

/// Lists and watches through a kube-client [`Client`], at the URL of `K` (all namespaces or
/// one). Works for typed, dynamic and metadata-only (`PartialObjectMeta<K>`) objects, whatever
/// their scope.
pub struct ApiListWatch<K> {
    client: Client,
    request: kube_core::Request,
    _object: PhantomData<fn() -> K>,
}

impl<K: Resource> ApiListWatch<K> {
    /// Lists and watches objects of `K` (with dynamic type `dt`) in `namespace`, or in every
    /// namespace (and for cluster-scoped types) when `None`.
    pub fn new(client: Client, dt: &K::DynamicType, namespace: Option<&str>) -> Self {
        ApiListWatch {
            client,
            request: kube_core::Request::new(K::url_path(dt, namespace)),
            _object: PhantomData,
        }
    }
}

impl<K> ListWatch<K> for ApiListWatch<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    fn list(
        &self,
        params: ListParams,
    ) -> BoxFuture<'static, Result<ObjectList<K>, kube_client::Error>> {
        let built = list_request::<K>(&self.request, &params);
        let client = self.client.clone();
        Box::pin(async move { client.request::<ObjectList<K>>(built?).await })
    }

    fn watch(
        &self,
        params: WatchParams,
        resource_version: String,
    ) -> BoxFuture<'static, Result<WatchStream<K>, kube_client::Error>> {
        let decoder = watch_lines::Decoder::serde();
        watch_events::<K, K>(
            &self.client,
            &self.request,
            &params,
            &resource_version,
            decoder,
        )
    }

    fn raw(&self) -> Option<Box<dyn ListWatch<RawObject>>> {
        Some(Box::new(RawListWatch::<K> {
            client: self.client.clone(),
            request: kube_core::Request::new(self.request.url_path.clone()),
            _object: PhantomData,
        }))
    }
}

/// Lists and watches the objects of `K` as [`RawObject`]s: [`ApiListWatch::raw`].
struct RawListWatch<K> {
    client: Client,
    request: kube_core::Request,
    _object: PhantomData<fn() -> K>,
}

impl<K: Resource + 'static> ListWatch<RawObject> for RawListWatch<K> {
    fn list(
        &self,
        params: ListParams,
    ) -> BoxFuture<'static, Result<ObjectList<RawObject>, kube_client::Error>> {
        let built = list_request::<K>(&self.request, &params);
        let client = self.client.clone();
        Box::pin(async move {
            use http_body_util::BodyExt;
            let response = client
                .send(built?.map(kube_client::client::Body::from))
                .await?;
            let body = api_error(response)
                .await?
                .into_body()
                .collect()
                .await?
                .to_bytes();
            raw::decode_list(&body).map_err(kube_client::Error::SerdeError)
        })
    }

    fn watch(
        &self,
        params: WatchParams,
        resource_version: String,
    ) -> BoxFuture<'static, Result<WatchStream<RawObject>, kube_client::Error>> {
        // Each object keeps a slice of the buffer its line came in: no copy, no allocation.
        let decoder = watch_lines::Decoder::Shared(raw::decode_event);
        watch_events::<K, RawObject>(
            &self.client,
            &self.request,
            &params,
            &resource_version,
            decoder,
        )
    }
}

/// The list request for objects of `K` (their metadata only for `PartialObjectMeta`) at
/// `request`'s URL.
fn list_request<K: Resource>(
    request: &kube_core::Request,
    params: &ListParams,
) -> Result<http::Request<Vec<u8>>, kube_client::Error> {
    let built = if K::metadata_api() {
        request.list_metadata(params)
    } else {
        request.list(params)
    };
    let mut request = built.map_err(kube_client::Error::BuildRequest)?;
    request.extensions_mut().insert("list");
    Ok(request)
}

/// A watch of the objects of `K` at `request`'s URL, its events decoded as `T` (`K`, or
/// [`RawObject`]) by `decoder`.
fn watch_events<K: Resource, T: Send + 'static>(
    client: &Client,
    request: &kube_core::Request,
    params: &WatchParams,
    resource_version: &str,
    decoder: watch_lines::Decoder<T>,
) -> BoxFuture<'static, Result<WatchStream<T>, kube_client::Error>> {
    let built = watch_request::<K>(request, params, resource_version);
    let client = client.clone();
    Box::pin(async move {
        let response = client
            .send(built?.map(kube_client::client::Body::from))
            .await?;
        let response = api_error(response).await?;
        Ok(watch_lines::events::<T, _>(response.into_body(), decoder).boxed())
    })
}

/// The watch request for objects of `K` at `request`'s URL.
fn watch_request<K: Resource>(
    request: &kube_core::Request,
    params: &WatchParams,
    resource_version: &str,
) -> Result<http::Request<Vec<u8>>, kube_client::Error> {
    let built = if K::metadata_api() {
        request.watch_metadata(params, resource_version)
    } else {
        request.watch(params, resource_version)
    };
    let mut request = built.map_err(kube_client::Error::BuildRequest)?;
    request.extensions_mut().insert("watch");
    // As kube-client does for watches: one gzip member per event is not decoded well.
    request
        .headers_mut()
        .entry(http::header::ACCEPT_ENCODING)
        .or_insert(http::HeaderValue::from_static("identity"));
    Ok(request)
}

/// The response itself, or its error as [`kube_client::Error::Api`] (a `Status` body, or one
/// made from a body that is not one), as kube-client answers failed requests.
async fn api_error(
    response: http::Response<kube_client::client::Body>,
) -> Result<http::Response<kube_client::client::Body>, kube_client::Error> {
    use http_body_util::BodyExt;
    let code = response.status();
    if !code.is_client_error() && !code.is_server_error() {
        return Ok(response);
    }
    let body = response.into_body().collect().await?.to_bytes();
    let status = serde_json::from_slice::<kube_core::Status>(&body).unwrap_or_else(|_| {
        let text = String::from_utf8_lossy(&body);
        kube_core::Status::failure(text.trim(), "Failed to parse error data")
            .with_code(code.as_u16())
    });
    Err(kube_client::Error::Api(status.boxed()))
}
