//! Response encoding: JSON bodies, `Status` errors, and reading request bodies under the size
//! limit.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited, combinators::UnsyncBoxBody};
use serde_json::Value;

use crate::error::ApiError;

/// The body of every response: a whole JSON document or a watch stream.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// A response with `body`, `Content-Type: application/json`.
pub fn json(status: u16, body: &Value) -> Response<Body> {
    // Most answers are one object of a few hundred bytes to a few KiB: start there rather
    // than growing from nothing.
    let mut bytes = Vec::with_capacity(1024);
    if serde_json::to_writer(&mut bytes, body).is_err() {
        bytes.clear();
    }
    bytes_response(status, "application/json", Bytes::from(bytes))
}

/// A response with the given content type.
pub fn bytes_response(status: u16, content_type: &str, body: Bytes) -> Response<Body> {
    let mut resp = Response::new(Full::new(body).boxed_unsync());
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let json = || HeaderValue::from_static("application/json");
    let ct = match content_type {
        // The usual answer: no copy of the value.
        "application/json" => json(),
        other => HeaderValue::from_str(other).unwrap_or_else(|_| json()),
    };
    resp.headers_mut().insert(header::CONTENT_TYPE, ct);
    resp
}

/// A plain-text response (health endpoints).
pub fn text(status: u16, body: &'static str) -> Response<Body> {
    bytes_response(
        status,
        "text/plain; charset=utf-8",
        Bytes::from_static(body.as_bytes()),
    )
}

/// The `Status` answer for an error.
pub fn error(err: &ApiError) -> Response<Body> {
    json(err.code, &err.to_status())
}

/// 404 for a path nothing is served at, worded as the real server words it.
pub fn not_found() -> ApiError {
    ApiError::new(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
    .with_details(serde_json::json!({}))
}

/// 405 for a method the path does not take.
pub fn method_not_allowed() -> ApiError {
    ApiError::method_not_allowed("the server does not allow this method on the requested resource")
}

/// 413 for a body over `limit` bytes.
pub fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        413,
        "RequestEntityTooLarge",
        format!("Request entity too large: limit is {limit}"),
    )
}

/// Reads a whole request body, failing with 413 past `limit` bytes (checked against
/// `Content-Length` first, then while reading).
pub async fn read_body<B>(
    body: B,
    content_length: Option<u64>,
    limit: usize,
) -> Result<Bytes, ApiError>
where
    B: hyper::body::Body,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    if content_length.is_some_and(|len| len > limit as u64) {
        return Err(too_large(limit));
    }
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large(limit)),
        Err(e) => Err(ApiError::bad_request(format!(
            "reading the request body: {e}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bodies_over_the_limit_are_413() {
        let err = read_body(Full::new(Bytes::from(vec![b'x'; 11])), None, 10)
            .await
            .unwrap_err();
        assert_eq!(
            (err.code, err.reason.as_str()),
            (413, "RequestEntityTooLarge")
        );
        let err = read_body(Full::new(Bytes::new()), Some(11), 10)
            .await
            .unwrap_err();
        assert_eq!(err.code, 413);
        let ok = read_body(Full::new(Bytes::from_static(b"0123456789")), Some(10), 10)
            .await
            .unwrap();
        assert_eq!(ok.len(), 10);
    }

    #[tokio::test]
    async fn errors_are_status_json() {
        let resp = error(&not_found());
        assert_eq!(resp.status(), 404);
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        let status: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["reason"], "NotFound");
        assert_eq!(
            status["message"],
            "the server could not find the requested resource"
        );
    }
}
