//! Decoding a watch response: one JSON event per line, decoded straight from the received
//! bytes.
//!
//! kube-client's `request_events` copies each line into a fresh `String` (a second UTF-8 pass
//! and an allocation per event) before decoding it. An informer's streaming list is one event
//! per object, so that copy is paid once per cached object; here a line is decoded in place
//! from the buffer the body's chunks are gathered in. Errors are classified as kube-client does:
//! an `ERROR`-shaped line is a [`Status`], a connection cut mid-stream (unexpected EOF) ends the
//! stream so the informer resumes, anything else is an error.

use bytes::{Buf, Bytes, BytesMut};
use futures::Stream;
use http_body_util::BodyExt;
use hyper::body::Body;
use kube_client::core::WatchEvent;
use kube_core::Status;
use serde::de::DeserializeOwned;

/// The events of a watch response body (kube-client's `Body`, or any body of the same shape).
pub(super) fn events<K, B>(body: B) -> impl Stream<Item = Result<WatchEvent<K>, kube_client::Error>>
where
    K: DeserializeOwned,
    B: Body<Data = Bytes, Error = kube_client::Error> + Unpin,
{
    let lines = Lines {
        body,
        buf: BytesMut::new(),
        scanned: 0,
        done: false,
    };
    futures::stream::unfold(lines, |mut lines| async move {
        let event = lines.next().await?;
        Some((event, lines))
    })
}

struct Lines<B> {
    body: B,
    buf: BytesMut,
    /// How much of `buf` is known to hold no newline.
    scanned: usize,
    /// The body has ended (or failed): what is in `buf` is all there is.
    done: bool,
}

impl<B: Body<Data = Bytes, Error = kube_client::Error> + Unpin> Lines<B> {
    async fn next<K: DeserializeOwned>(
        &mut self,
    ) -> Option<Result<WatchEvent<K>, kube_client::Error>> {
        loop {
            if let Some(at) = memchr::memchr(b'\n', &self.buf[self.scanned..]) {
                let end = self.scanned + at;
                let event = decode_line(&self.buf[..end]);
                self.buf.advance(end + 1);
                self.scanned = 0;
                match event {
                    Some(event) => return Some(event),
                    None => continue,
                }
            }
            self.scanned = self.buf.len();
            if self.done {
                // A last line without a newline: decoded if whole, dropped if cut short.
                let rest = self.buf.split();
                self.scanned = 0;
                return if rest.is_empty() {
                    None
                } else {
                    decode_line(&rest)
                };
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
                Some(Err(e)) if cut_short(&e) => {
                    tracing::debug!(error = %e, "watch connection cut; ending the stream");
                    self.done = true;
                }
                Some(Err(e)) => {
                    self.done = true;
                    self.buf.clear();
                    return Some(Err(e));
                }
                None => self.done = true,
            }
        }
    }
}

/// One line's event; `None` for a blank line or one cut short (as kube-client, which ignores
/// an incomplete last line).
fn decode_line<K: DeserializeOwned>(
    line: &[u8],
) -> Option<Result<WatchEvent<K>, kube_client::Error>> {
    if line.trim_ascii().is_empty() {
        return None;
    }
    match serde_json::from_slice::<WatchEvent<K>>(line) {
        Ok(event) => Some(Ok(event)),
        Err(e) if e.is_eof() => None,
        Err(e) => Some(Err(match serde_json::from_slice::<Status>(line) {
            Ok(status) => kube_client::Error::Api(status.boxed()),
            Err(_) => kube_client::Error::SerdeError(e),
        })),
    }
}

/// Decodes `chunks`, received in that order, as the body of one watch response, as an
/// informer's watch does (into [`DynamicObject`](kube_core::DynamicObject)s, and into the raw
/// form a compact informer keeps): answers how many events and how many errors each form
/// gave. The entry point of the fuzz target `watch_lines` (crates/fuzz); not part of the API.
pub fn decode_chunks(chunks: &[Bytes]) -> [(usize, usize); 2] {
    fn count<K: DeserializeOwned>(chunks: &[Bytes]) -> (usize, usize) {
        let frames = chunks
            .iter()
            .map(|c| Ok::<_, kube_client::Error>(hyper::body::Frame::data(c.clone())));
        let body = http_body_util::StreamBody::new(futures::stream::iter(frames));
        let stream = std::pin::pin!(events::<K, _>(body));
        futures::executor::block_on(futures::StreamExt::fold(
            stream,
            (0, 0),
            |(ok, err), event| async move {
                match event {
                    Ok(_) => (ok + 1, err),
                    Err(_) => (ok, err + 1),
                }
            },
        ))
    }
    [
        count::<kube_core::DynamicObject>(chunks),
        count::<super::RawObject>(chunks),
    ]
}

/// Whether a body error is the connection ending mid-stream (an unexpected EOF somewhere in
/// its source chain, or hyper's "unexpected EOF during chunk"): the watch just ended.
fn cut_short(e: &kube_client::Error) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    for _ in 0..16 {
        let Some(err) = current else {
            return false;
        };
        if err
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::UnexpectedEof)
            || err.to_string().contains("unexpected EOF during chunk")
        {
            return true;
        }
        current = err.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;

    async fn decode(chunks: &[&str]) -> Vec<String> {
        let stream = futures::stream::iter(
            chunks
                .iter()
                .map(|c| {
                    Ok::<_, kube_client::Error>(hyper::body::Frame::data(Bytes::from(
                        c.to_string(),
                    )))
                })
                .collect::<Vec<_>>(),
        );
        events::<ConfigMap, _>(http_body_util::StreamBody::new(stream))
            .map(|e| match e {
                Ok(WatchEvent::Added(cm)) => format!("added {}", cm.metadata.name.unwrap()),
                Ok(WatchEvent::Bookmark(b)) => format!("bookmark {}", b.metadata.resource_version),
                Ok(other) => format!("{other:?}"),
                Err(kube_client::Error::Api(s)) => format!("status {}", s.code),
                Err(e) => format!("error {e}"),
            })
            .collect()
            .await
    }

    #[tokio::test]
    async fn lines_split_across_chunks_and_chunks_holding_several_lines() {
        let a = r#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}}"#;
        let b = r#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}}"#;
        let bookmark = r#"{"type":"BOOKMARK","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"7"}}}"#;
        let all = format!("{a}\n{b}\n\n{bookmark}\n");
        let (head, tail) = all.split_at(30);
        assert_eq!(
            decode(&[head, tail]).await,
            ["added a", "added b", "bookmark 7"]
        );
        // A last line without its newline still counts; one cut short does not.
        assert_eq!(decode(&[a]).await, ["added a"]);
        assert_eq!(decode(&[&format!("{a}\n{}", &b[..20])]).await, ["added a"]);
    }

    #[tokio::test]
    async fn error_lines_are_statuses_and_garbage_is_an_error() {
        let status = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old","reason":"Expired","code":410}}"#;
        assert_eq!(
            decode(&[status, "\n"]).await,
            [
                "Error event: Status { status: Some(Failure), code: 410, message: \"too old\", metadata: None, reason: \"Expired\", details: None }"
            ]
        );
        let bare = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"boom","reason":"InternalError","code":500}"#;
        assert_eq!(decode(&[bare, "\n"]).await, ["status 500"]);
        let out = decode(&["not json\n"]).await;
        assert!(out[0].starts_with("error "), "{out:?}");
    }
}
