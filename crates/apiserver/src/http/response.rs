//! Response encoding: JSON bodies, `Status` errors, and reading request bodies under the size
//! limit.
//!
//! A body refused for its size is still read, and discarded, after the 413 is answered (up to
//! [`DRAIN_BYTES`], for at most [`DRAIN_TIME`]): an HTTP/2 client that is still sending would
//! otherwise see its stream reset (`RST_STREAM`) before it reads the answer, and report a
//! framing error instead of the `Status`.

use std::convert::Infallible;
use std::pin::Pin;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use serde_json::Value;

use crate::error::ApiError;
use crate::json::GoOrder;

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

/// A response with a built-in object (or a list of them) in `body`, its fields in the order
/// kube-apiserver encodes its Go structs: `kind`, `apiVersion`, `metadata` (its own fields in
/// `ObjectMeta`'s order), then `spec`, `status` and a list's `items` (each item likewise), then
/// the other fields by name. Custom
/// objects are unstructured maps upstream, which encode with their keys sorted: [`json`].
pub fn builtin_json(status: u16, body: &Value) -> Response<Body> {
    let mut bytes = Vec::with_capacity(1024);
    if serde_json::to_writer(&mut bytes, &GoOrder(body)).is_err() {
        bytes.clear();
    }
    bytes_response(status, "application/json", Bytes::from(bytes))
}

/// Marks a streaming response (a watch), whose body is never read whole to re-encode it.
#[derive(Clone, Copy, Debug)]
pub struct Streaming;

/// A whole JSON answer re-encoded by `encode` (protobuf, YAML, indented JSON), which gives the
/// new body and its media type, or `None` to keep the JSON. Streams and answers of any other
/// type are left as they are.
pub async fn reencode_json(
    resp: Response<Body>,
    encode: impl FnOnce(&[u8]) -> Option<(Vec<u8>, &'static str)>,
) -> Response<Body> {
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|ct| ct == "application/json");
    if !is_json || resp.extensions().get::<Streaming>().is_some() {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(collected) = body.collect().await;
    let bytes = collected.to_bytes();
    let body = match encode(&bytes) {
        Some((encoded, media_type)) => {
            parts.headers.insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static(media_type),
            );
            parts.headers.remove(header::CONTENT_LENGTH);
            Bytes::from(encoded)
        }
        None => bytes,
    };
    Response::from_parts(parts, http_body_util::Full::new(body).boxed_unsync())
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

/// Adds a `Warning` header as the real server sends it: `299 - "text"`, the text quoted as an
/// HTTP quoted-string. kubectl prints each as `Warning: text`.
pub fn add_warning(resp: &mut Response<Body>, text: &str) {
    let quoted = text.replace('\\', "\\\\").replace('"', "\\\"");
    if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{quoted}\"")) {
        resp.headers_mut().append(header::WARNING, v);
    }
}

/// The `Status` answer for an error.
pub fn error(err: &ApiError) -> Response<Body> {
    let mut resp = json(err.code, &err.to_status());
    // Upstream's `ErrorNegotiated`: a Status asking for a retry delay also says so in the
    // `Retry-After` header, which clients (client-go, kube-client's retry policy) read.
    if let Some(secs) = err.retry_after_seconds() {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    resp
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

/// How many bytes of a refused body are read and discarded after the 413 (see the module
/// docs); past this the stream is dropped.
pub const DRAIN_BYTES: usize = 64 * 1024 * 1024;

/// How long a refused body is read and discarded after the 413.
pub const DRAIN_TIME: Duration = Duration::from_secs(10);

/// Reads a whole request body, failing with 413 past `limit` bytes (checked against
/// `Content-Length` first, then while reading); a refused body is drained in the background.
pub async fn read_body<B>(
    body: B,
    content_length: Option<u64>,
    limit: usize,
) -> Result<Bytes, ApiError>
where
    B: hyper::body::Body + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let mut body = Box::pin(body);
    if content_length.is_some_and(|len| len > limit as u64) {
        drain(body);
        return Err(too_large(limit));
    }
    // One chunk (the usual case for small bodies) is answered as is; more are joined.
    let mut first: Option<Bytes> = None;
    let mut joined: Option<BytesMut> = None;
    let mut len = 0usize;
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|e| ApiError::bad_request(format!("reading the request body: {e}")))?;
        let Ok(mut data) = frame.into_data() else {
            continue;
        };
        len += data.remaining();
        if len > limit {
            drain(body);
            return Err(too_large(limit));
        }
        let chunk = data.copy_to_bytes(data.remaining());
        match (&mut first, &mut joined) {
            (None, _) => first = Some(chunk),
            (Some(f), None) => {
                let mut all = BytesMut::with_capacity(f.len() + chunk.len());
                all.extend_from_slice(f);
                all.extend_from_slice(&chunk);
                joined = Some(all);
            }
            (Some(_), Some(all)) => all.extend_from_slice(&chunk),
        }
    }
    Ok(match (first, joined) {
        (_, Some(all)) => all.freeze(),
        (Some(f), None) => f,
        (None, None) => Bytes::new(),
    })
}

/// Reads and discards what is left of a refused body, in the background, so that the client
/// finishes sending and reads the answer (see the module docs).
fn drain<B>(mut body: Pin<Box<B>>)
where
    B: hyper::body::Body + Send + 'static,
{
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        let read = async {
            let mut seen = 0usize;
            while let Some(Ok(frame)) = body.frame().await {
                seen += frame.data_ref().map_or(0, |d| d.remaining());
                if seen > DRAIN_BYTES {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(DRAIN_TIME, read).await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_asking_for_a_delay_sends_retry_after() {
        let resp = error(&ApiError::too_many_requests("slow down", 2));
        assert_eq!(resp.status(), 429);
        assert_eq!(resp.headers()[header::RETRY_AFTER], "2");
        let resp = error(&ApiError::internal("boom"));
        assert!(!resp.headers().contains_key(header::RETRY_AFTER));
    }

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

    /// A body of `chunks`, sent through a channel of one slot: a send only completes once
    /// the previous chunk was read.
    fn channel_body() -> (
        tokio::sync::mpsc::Sender<Bytes>,
        impl hyper::body::Body<Data = Bytes, Error = std::io::Error> + Send + 'static,
    ) {
        let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(1);
        let stream = futures::stream::unfold(rx, |mut rx| async move {
            let chunk = rx.recv().await?;
            Some((Ok(hyper::body::Frame::data(chunk)), rx))
        });
        (tx, http_body_util::StreamBody::new(stream))
    }

    #[tokio::test]
    async fn chunks_are_joined_and_refused_bodies_drained() {
        let (tx, body) = channel_body();
        let sending = tokio::spawn(async move {
            for part in ["ab", "cd", "e"] {
                tx.send(Bytes::from(part)).await.unwrap();
            }
        });
        assert_eq!(read_body(body, None, 5).await.unwrap(), "abcde");
        sending.await.unwrap();

        // Refused by Content-Length: the client can still send the whole body.
        let (tx, body) = channel_body();
        let err = read_body(body, Some(1000), 10).await.unwrap_err();
        assert_eq!(err.code, 413);
        for _ in 0..10 {
            tx.send(Bytes::from(vec![b'x'; 100]))
                .await
                .expect("drained");
        }
        // Refused while reading.
        let (tx, body) = channel_body();
        let reading = tokio::spawn(read_body(body, None, 10));
        tx.send(Bytes::from(vec![b'x'; 6])).await.unwrap();
        tx.send(Bytes::from(vec![b'x'; 6])).await.unwrap();
        assert_eq!(reading.await.unwrap().unwrap_err().code, 413);
        for _ in 0..10 {
            tx.send(Bytes::from(vec![b'x'; 100]))
                .await
                .expect("drained");
        }
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
