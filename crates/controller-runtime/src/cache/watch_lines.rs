//! Decoding a watch response: one JSON event per line, decoded straight from the received
//! bytes.
//!
//! kube-client's `request_events` copies each line into a fresh `String` (a second UTF-8 pass
//! and an allocation per event) before decoding it. An informer's streaming list is one event
//! per object, so that copy is paid once per cached object; here a line is decoded in place
//! from the buffer the body's chunks are gathered in. A [`Decoder::Shared`] gets the line as a
//! [`Bytes`] slice of that buffer, which what it decodes may keep (a compact informer's raw
//! objects do: the buffer is then never reused, a new one is started when it is full, each
//! twice the size of the one before, from [`FIRST_BUFFER`] to [`LAST_BUFFER`] bytes, so a
//! streaming list of small objects costs one allocation per buffer instead of one per object,
//! a small list a small buffer, and a large one mostly buffers large enough for the allocator
//! to map them apart from its heap, where they would otherwise sit between the short-lived
//! allocations of every object decoded meanwhile). Errors are classified as kube-client does:
//! an `ERROR`-shaped line is a [`Status`], a connection cut mid-stream (unexpected EOF) ends the
//! stream so the informer resumes, anything else is an error.

use bytes::{Buf, Bytes, BytesMut};
use futures::Stream;
use http_body_util::BodyExt;
use hyper::body::Body;
use kube_client::core::WatchEvent;
use kube_core::Status;
use serde::de::DeserializeOwned;

/// The size of the first buffer a [`Decoder::Shared`]'s lines are cut from.
pub(super) const FIRST_BUFFER: usize = 16 << 10;
/// The size the buffers a [`Decoder::Shared`]'s lines are cut from grow to.
pub(super) const LAST_BUFFER: usize = 1 << 20;

/// How a line becomes an event.
pub(super) enum Decoder<K> {
    /// Decoded from the line in place; the buffer is reused.
    Borrowed(fn(&[u8]) -> Result<WatchEvent<K>, serde_json::Error>),
    /// Decoded from the line cut out of the buffer, which the event may keep a part of.
    Shared(fn(&Bytes) -> Result<WatchEvent<K>, serde_json::Error>),
}

impl<K: DeserializeOwned> Decoder<K> {
    /// serde's decoding of `WatchEvent<K>`, in place.
    pub(super) fn serde() -> Self {
        Decoder::Borrowed(|line| serde_json::from_slice(line))
    }
}

/// The events of a watch response body (kube-client's `Body`, or any body of the same shape),
/// each line decoded by `decoder`.
pub(super) fn events<K, B>(
    body: B,
    decoder: Decoder<K>,
) -> impl Stream<Item = Result<WatchEvent<K>, kube_client::Error>>
where
    B: Body<Data = Bytes, Error = kube_client::Error> + Unpin,
{
    events_in_buffers(body, decoder, FIRST_BUFFER, LAST_BUFFER)
}

/// [`events`], with a [`Decoder::Shared`]'s buffers growing from `first` to `last` bytes.
fn events_in_buffers<K, B>(
    body: B,
    decoder: Decoder<K>,
    first: usize,
    last: usize,
) -> impl Stream<Item = Result<WatchEvent<K>, kube_client::Error>>
where
    B: Body<Data = Bytes, Error = kube_client::Error> + Unpin,
{
    let lines = Lines {
        body,
        buf: BytesMut::new(),
        pending: Bytes::new(),
        next_buffer: first,
        last_buffer: last,
        scanned: 0,
        done: false,
        decoder,
    };
    futures::stream::unfold(lines, |mut lines| async move {
        let event = lines.next().await?;
        Some((event, lines))
    })
}

struct Lines<B, K> {
    body: B,
    buf: BytesMut,
    /// What was received and not yet moved into `buf` (a [`Decoder::Shared`]'s buffer takes
    /// what fits, and its lines are cut out, before a new buffer is started).
    pending: Bytes,
    /// The size of the next buffer a [`Decoder::Shared`] starts, and the most it grows to.
    next_buffer: usize,
    last_buffer: usize,
    /// How much of `buf` is known to hold no newline.
    scanned: usize,
    /// The body has ended (or failed): what is in `buf` is all there is.
    done: bool,
    decoder: Decoder<K>,
}

impl<B: Body<Data = Bytes, Error = kube_client::Error> + Unpin, K> Lines<B, K> {
    async fn next(&mut self) -> Option<Result<WatchEvent<K>, kube_client::Error>> {
        loop {
            if let Some(at) = memchr::memchr(b'\n', &self.buf[self.scanned..]) {
                let end = self.scanned + at;
                let event = match self.decoder {
                    Decoder::Borrowed(decode) => {
                        let line = &self.buf[..end];
                        let event = decode_line(line, || decode(line));
                        self.buf.advance(end + 1);
                        event
                    }
                    Decoder::Shared(decode) => {
                        let line = self.buf.split_to(end + 1).freeze().slice(..end);
                        decode_line(&line, || decode(&line))
                    }
                };
                self.scanned = 0;
                match event {
                    Some(event) => return Some(event),
                    None => continue,
                }
            }
            self.scanned = self.buf.len();
            if !self.pending.is_empty() {
                self.fill();
                continue;
            }
            if self.done {
                // A last line without a newline: decoded if whole, dropped if cut short.
                let rest = self.buf.split().freeze();
                self.scanned = 0;
                return if rest.is_empty() {
                    None
                } else {
                    match self.decoder {
                        Decoder::Borrowed(decode) => decode_line(&rest, || decode(&rest)),
                        Decoder::Shared(decode) => decode_line(&rest, || decode(&rest)),
                    }
                };
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.pending = data;
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

impl<B, K> Lines<B, K> {
    /// Moves received data into the buffer: all of it for a [`Decoder::Borrowed`] (whose
    /// buffer is reused in place); for a [`Decoder::Shared`], what fits in the buffer (whose
    /// lines are cut out and kept, so it never grows in place), and once it is full, the line
    /// in progress into a new buffer (twice the size of the one before, up to [`LAST_BUFFER`];
    /// twice the line, for a line that outgrows it), so that each buffer is used up to its last
    /// line.
    fn fill(&mut self) {
        if matches!(self.decoder, Decoder::Borrowed(_)) {
            self.buf.extend_from_slice(&self.pending);
            self.pending.clear();
            return;
        }
        if self.buf.capacity() == self.buf.len() {
            let len = self.buf.len();
            let size = self.next_buffer;
            self.next_buffer = (2 * size).min(self.last_buffer);
            let capacity = size.max(2 * len).max(len + self.pending.len().min(size));
            let mut fresh = BytesMut::with_capacity(capacity);
            fresh.extend_from_slice(&self.buf);
            self.buf = fresh;
        }
        let take = (self.buf.capacity() - self.buf.len()).min(self.pending.len());
        self.buf.extend_from_slice(&self.pending[..take]);
        self.pending.advance(take);
    }
}

/// One line's event; `None` for a blank line or one cut short (as kube-client, which ignores
/// an incomplete last line).
fn decode_line<K>(
    line: &[u8],
    decode: impl FnOnce() -> Result<WatchEvent<K>, serde_json::Error>,
) -> Option<Result<WatchEvent<K>, kube_client::Error>> {
    if line.trim_ascii().is_empty() {
        return None;
    }
    match decode() {
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
    fn count<K>(chunks: &[Bytes], decoder: Decoder<K>) -> (usize, usize) {
        let frames = chunks
            .iter()
            .map(|c| Ok::<_, kube_client::Error>(hyper::body::Frame::data(c.clone())));
        let body = http_body_util::StreamBody::new(futures::stream::iter(frames));
        let stream = std::pin::pin!(events::<K, _>(body, decoder));
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
        count::<kube_core::DynamicObject>(chunks, Decoder::serde()),
        count::<super::RawObject>(chunks, Decoder::Shared(super::raw::decode_event)),
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
        events::<ConfigMap, _>(http_body_util::StreamBody::new(stream), Decoder::serde())
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

    /// The raw events of `body`'s frames, decoded as a compact informer decodes them, its
    /// buffers all of `buffer` bytes.
    async fn raw_events(frames: Vec<Bytes>, buffer: usize) -> Vec<super::super::RawObject> {
        let stream = futures::stream::iter(
            frames
                .into_iter()
                .map(|f| Ok::<_, kube_client::Error>(hyper::body::Frame::data(f))),
        );
        let decoder = Decoder::Shared(super::super::raw::decode_event);
        events_in_buffers(
            http_body_util::StreamBody::new(stream),
            decoder,
            buffer,
            buffer,
        )
        .map(|e| match e {
            Ok(WatchEvent::Added(obj)) => obj,
            other => panic!("{other:?}"),
        })
        .collect()
        .await
    }

    /// A streaming list of 3,000 objects of about 1.3 KB, received in frames of odd sizes:
    /// every object comes out whole and in order, each a slice of a shared buffer, and the
    /// buffers are used to their last line (as many buffers as the bytes need, one more at
    /// most), so an informer keeps its list in a few large allocations with little waste.
    #[tokio::test]
    async fn shared_lines_fill_each_buffer_before_the_next() {
        let padding = "x".repeat(1200);
        let body: String = (0..3000)
            .map(|i| {
                format!(
                    r#"{{"type":"ADDED","object":{{"metadata":{{"name":"cm-{i}","namespace":"ns"}},"data":{{"k":"{padding}"}}}}}}"#
                ) + "\n"
            })
            .collect();
        let body = Bytes::from(body);
        let mut frames = Vec::new();
        let (mut at, mut size) = (0, 7);
        while at < body.len() {
            let end = (at + size).min(body.len());
            frames.push(body.slice(at..end));
            at = end;
            size = size * 7 % 20011 + 1;
        }
        const BUFFER: usize = 64 << 10;
        let objects = raw_events(frames, BUFFER).await;
        assert_eq!(objects.len(), 3000);
        let mut buffers = 1;
        for (i, pair) in objects.windows(2).enumerate() {
            assert_eq!(pair[0].key().name, format!("cm-{i}"));
            let (end, next) = (pair[0].json().as_ptr_range().end, pair[1].json().as_ptr());
            // The next object's line follows in the same buffer, or starts another.
            if !(next > end && (next as usize) - (end as usize) < 64) {
                buffers += 1;
            }
        }
        let needed = body.len().div_ceil(BUFFER);
        assert!(
            buffers <= needed + 1,
            "{buffers} buffers for {} bytes ({needed} needed)",
            body.len()
        );
        assert!(objects.iter().all(|o| o.json().ends_with(b"}}")));
    }

    /// A line longer than a buffer (a 300 KB object), between two small ones, split in
    /// small frames: decoded whole.
    #[tokio::test]
    async fn a_line_longer_than_a_buffer_is_decoded_whole() {
        let big = "y".repeat(300_000);
        let body = format!(
            "{}\n{}\n{}\n",
            r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#,
            format_args!(
                r#"{{"type":"ADDED","object":{{"metadata":{{"name":"big"}},"data":{{"k":"{big}"}}}}}}"#
            ),
            r#"{"type":"ADDED","object":{"metadata":{"name":"c"}}}"#,
        );
        let body = Bytes::from(body);
        let frames = (0..body.len())
            .step_by(1000)
            .map(|at| body.slice(at..(at + 1000).min(body.len())))
            .collect();
        let objects = raw_events(frames, 64 << 10).await;
        let names: Vec<_> = objects.iter().map(|o| o.key().name.as_str()).collect();
        assert_eq!(names, ["a", "big", "c"]);
        assert_eq!(objects[1].json().len(), big.len() + 43);
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
