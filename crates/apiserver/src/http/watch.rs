//! The watch stream: newline-delimited `{"type": ..., "object": ...}` JSON, chunked, ending
//! cleanly when storage ends the watch, after an ERROR event, or at `timeoutSeconds`.
//!
//! Watches use storage's shared events: a plain JSON watch sends the line storage encoded
//! once for every watcher of the change; only Table and metadata watches encode per watcher.
//! A watch at a version its CRD converts through a webhook ([`converted_response`]) converts
//! each event's object on its way out, one event at a time; a failed conversion ends the watch
//! with an ERROR event carrying the 500.

use std::convert::Infallible;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{Response, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::Value;

use super::response::Body;
use crate::error::ApiError;
use crate::json::{FieldOrder, Ordered};
use crate::storage::{Frame as Line, SharedWatch, WatchEvent};

/// Turns each event's object into the form the client asked for (JSON, Table, metadata).
pub type Transform = Box<dyn Fn(Value) -> Value + Send + Sync>;

/// Converts each event's object to the watched version (a CRD's conversion webhook).
pub type Convert = Box<
    dyn Fn(Value) -> futures::future::BoxFuture<'static, Result<Value, ApiError>> + Send + Sync,
>;

/// One event as a line of the stream, its object's fields in `order`.
pub fn encode(event: WatchEvent, transform: &Transform, order: FieldOrder) -> Bytes {
    let (kind, object) = match event {
        WatchEvent::Added(o) => ("ADDED", transform(o)),
        WatchEvent::Modified(o) => ("MODIFIED", transform(o)),
        WatchEvent::Deleted(o) => ("DELETED", transform(o)),
        WatchEvent::Bookmark(o) => ("BOOKMARK", o),
        WatchEvent::Error(o) => ("ERROR", o),
    };
    let mut line = serde_json::to_vec(&Line {
        event_type: kind,
        object: Ordered(&object, order),
    })
    .unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

pub use super::response::Streaming;

/// The streaming response of a watch in protobuf ([`super::protobuf::watch_frame`]s), for a
/// built-in kind.
pub fn protobuf_response(watch: SharedWatch, timeout: Option<Duration>) -> Response<Body> {
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let state = (watch.events, false);
    let stream = futures::stream::unfold(state, move |(mut events, done)| async move {
        if done {
            return None;
        }
        let event = next_event(&mut events, deadline).await?;
        let mut batch = BytesMut::new();
        let mut next = Some(event);
        let mut last = false;
        while let Some(event) = next.take() {
            let (kind, object) = match event.to_watch_event() {
                WatchEvent::Added(o) => ("ADDED", o),
                WatchEvent::Modified(o) => ("MODIFIED", o),
                WatchEvent::Deleted(o) => ("DELETED", o),
                WatchEvent::Bookmark(o) => ("BOOKMARK", o),
                WatchEvent::Error(o) => ("ERROR", o),
            };
            batch.extend_from_slice(&super::protobuf::watch_frame(kind, &object));
            if kind == "ERROR" {
                last = true;
                break;
            }
            if batch.len() < BATCH_BYTES {
                next = events.try_recv().ok();
            }
        }
        Some((
            Ok::<_, Infallible>(Frame::data(batch.freeze())),
            (events, last),
        ))
    });
    let mut resp = Response::new(StreamBody::new(stream).boxed_unsync());
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(super::protobuf::WATCH_MEDIA_TYPE),
    );
    resp.extensions_mut().insert(Streaming);
    resp
}

/// The watch's next event, or `None` once it ends or its deadline (`timeoutSeconds`) passes.
async fn next_event(
    events: &mut tokio::sync::mpsc::Receiver<crate::storage::SharedEvent>,
    deadline: Option<tokio::time::Instant>,
) -> Option<crate::storage::SharedEvent> {
    match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, events.recv())
            .await
            .ok()
            .flatten(),
        None => events.recv().await,
    }
}

/// How many bytes of already-queued events one frame gathers at most.
const BATCH_BYTES: usize = 64 * 1024;

/// The streaming response of a watch; `transform` is `None` for plain JSON.
pub fn response(
    watch: SharedWatch,
    timeout: Option<Duration>,
    transform: Option<Transform>,
) -> Response<Body> {
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let state = (watch.events, transform, false);
    let stream = futures::stream::unfold(state, move |(mut events, transform, done)| async move {
        if done {
            return None;
        }
        let event = next_event(&mut events, deadline).await?;
        // Everything already queued goes out in one frame (one HTTP chunk, one TLS record
        // run, one socket write), as the real server flushes only once its channel is empty:
        // a streaming list's initial events cost a write per batch, not one per object.
        let mut batch = BytesMut::new();
        let mut next = Some(event);
        while let Some(event) = next.take() {
            let last = event.event_type() == "ERROR";
            match &transform {
                None => event.write_json_line(&mut batch),
                // A Table or PartialObjectMetadata: Go structs.
                Some(t) => {
                    batch.extend_from_slice(&encode(event.to_watch_event(), t, FieldOrder::Go))
                }
            }
            if last {
                let data = Frame::data(batch.freeze());
                return Some((Ok::<_, Infallible>(data), (events, transform, true)));
            }
            if batch.len() < BATCH_BYTES {
                next = events.try_recv().ok();
            }
        }
        Some((
            Ok::<_, Infallible>(Frame::data(batch.freeze())),
            (events, transform, false),
        ))
    });
    let mut resp = Response::new(StreamBody::new(stream).boxed_unsync());
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    resp.extensions_mut().insert(Streaming);
    resp
}

/// The streaming response of a watch whose objects `convert` turns into the watched version
/// (`api_version`, which BOOKMARKs are relabelled with); `transform` is `None` for plain JSON.
pub fn converted_response(
    watch: SharedWatch,
    timeout: Option<Duration>,
    transform: Option<Transform>,
    convert: Convert,
    api_version: String,
) -> Response<Body> {
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    // Converted objects are custom ones (sorted maps); a Table or metadata is a Go struct.
    let order = match transform {
        Some(_) => FieldOrder::Go,
        None => FieldOrder::Sorted,
    };
    let transform = transform.unwrap_or_else(|| Box::new(|v| v));
    let shared = std::sync::Arc::new((transform, convert, api_version));
    let state = (watch.events, false);
    let stream = futures::stream::unfold(state, move |(mut events, done)| {
        let shared = shared.clone();
        async move {
            let (transform, convert, api_version) = &*shared;
            if done {
                return None;
            }
            let event = next_event(&mut events, deadline).await?;
            let converted = match event.to_watch_event() {
                WatchEvent::Added(o) => convert(o).await.map(WatchEvent::Added),
                WatchEvent::Modified(o) => convert(o).await.map(WatchEvent::Modified),
                WatchEvent::Deleted(o) => convert(o).await.map(WatchEvent::Deleted),
                WatchEvent::Bookmark(mut o) => {
                    if let Some(m) = o.as_object_mut() {
                        m.insert("apiVersion".into(), Value::from(api_version.as_str()));
                    }
                    Ok(WatchEvent::Bookmark(o))
                }
                other => Ok(other),
            };
            let event = converted.unwrap_or_else(|e| WatchEvent::Error(e.to_status()));
            let last = matches!(event, WatchEvent::Error(_));
            let line = encode(event, transform, order);
            Some((Ok::<_, Infallible>(Frame::data(line)), (events, last)))
        }
    });
    let mut resp = Response::new(StreamBody::new(stream).boxed_unsync());
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    resp.extensions_mut().insert(Streaming);
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::SharedEvent;
    use http_body_util::BodyExt;
    use serde_json::json;
    use tokio::sync::mpsc;

    #[test]
    fn transformed_events_name_their_type_before_their_object() {
        let identity: Transform = Box::new(|v| v);
        let object =
            json!({"metadata": {"uid": "u", "name": "a"}, "apiVersion": "v1", "kind": "Table"});
        let line = encode(
            WatchEvent::Modified(object.clone()),
            &identity,
            FieldOrder::Go,
        );
        assert_eq!(
            std::str::from_utf8(&line).unwrap(),
            "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Table\",\"apiVersion\":\"v1\",\
             \"metadata\":{\"name\":\"a\",\"uid\":\"u\"}}}\n",
            "a Go struct's order"
        );
        let line = encode(WatchEvent::Modified(object), &identity, FieldOrder::Sorted);
        assert!(
            line.starts_with(br#"{"type":"MODIFIED","object":{"apiVersion":"v1","kind""#),
            "a map's sorted keys: {line:?}"
        );
    }

    #[tokio::test]
    async fn streams_events_until_the_watch_ends() {
        let (tx, rx) = mpsc::channel(8);
        tx.send(SharedEvent::from(WatchEvent::Added(
            json!({"metadata": {"name": "a"}}),
        )))
        .await
        .unwrap();
        tx.send(SharedEvent::from(WatchEvent::Deleted(
            json!({"metadata": {"name": "a"}}),
        )))
        .await
        .unwrap();
        drop(tx);
        let resp = response(SharedWatch { events: rx }, None, None);
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        let lines: Vec<Value> = body
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["type"], "ADDED");
        assert_eq!(lines[1]["type"], "DELETED");
        assert_eq!(lines[1]["object"]["metadata"]["name"], "a");
    }

    #[tokio::test]
    async fn transformed_watches_encode_the_transformed_object() {
        let (tx, rx) = mpsc::channel(8);
        tx.send(SharedEvent::from(WatchEvent::Added(json!({"a": 1}))))
            .await
            .unwrap();
        drop(tx);
        let t: Transform = Box::new(|v| json!({"wrapped": v}));
        let body = response(SharedWatch { events: rx }, None, Some(t))
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes();
        assert_eq!(
            &body[..],
            b"{\"type\":\"ADDED\",\"object\":{\"wrapped\":{\"a\":1}}}\n"
        );
    }

    #[tokio::test]
    async fn queued_events_share_a_frame_and_an_error_ends_the_batch() {
        let (tx, rx) = mpsc::channel(8);
        for name in ["a", "b", "c"] {
            tx.send(SharedEvent::from(WatchEvent::Added(
                json!({"metadata": {"name": name}}),
            )))
            .await
            .unwrap();
        }
        tx.send(SharedEvent::from(WatchEvent::Error(json!({"code": 410}))))
            .await
            .unwrap();
        tx.send(SharedEvent::from(WatchEvent::Added(json!({}))))
            .await
            .unwrap();
        let mut body = response(SharedWatch { events: rx }, None, None).into_body();
        let frame = body.frame().await.unwrap().unwrap().into_data().unwrap();
        let types: Vec<String> = frame
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice::<Value>(l).unwrap()["type"].to_string())
            .collect();
        assert_eq!(types, ["\"ADDED\"", "\"ADDED\"", "\"ADDED\"", "\"ERROR\""]);
        // Nothing follows the ERROR event, though one more was queued.
        assert!(body.frame().await.is_none());
        drop(tx);
    }

    #[tokio::test(start_paused = true)]
    async fn timeout_ends_the_stream() {
        let (tx, rx) = mpsc::channel(8);
        let resp = response(
            SharedWatch { events: rx },
            Some(Duration::from_secs(5)),
            None,
        );
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert!(body.is_empty());
        drop(tx);
    }

    #[tokio::test]
    async fn an_error_event_is_the_last() {
        let (tx, rx) = mpsc::channel(8);
        tx.send(SharedEvent::from(WatchEvent::Error(
            json!({"kind": "Status", "code": 410}),
        )))
        .await
        .unwrap();
        tx.send(SharedEvent::from(WatchEvent::Added(json!({}))))
            .await
            .unwrap();
        let resp = response(SharedWatch { events: rx }, None, None);
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body.iter().filter(|b| **b == b'\n').count(), 1);
        drop(tx);
    }
}
