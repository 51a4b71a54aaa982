//! Watches whose events are shared between watchers: one object and one encoded frame per
//! change, however many watchers receive it (the real server's cacher does the same with its
//! cached serializations). [`Storage::watch_shared`](super::Storage::watch_shared) is the
//! cheap form of [`Storage::watch`](super::Storage::watch) for fan-out to many watchers.

use std::sync::{Arc, OnceLock};

use bytes::{BufMut, Bytes, BytesMut};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;

use super::options::WatchEvent;
use crate::json::{FieldOrder, Ordered};

/// One event of a shared watch: cheap to clone (an `Arc`), encoded at most once.
#[derive(Clone, Debug)]
pub struct SharedEvent(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    event_type: &'static str,
    /// Shared with the store when the event carries a stored object as it is (a watch's
    /// initial events): no copy per watcher.
    object: Arc<Value>,
    /// How the object is written: as upstream encodes its kind.
    order: FieldOrder,
    line: OnceLock<Bytes>,
}

/// One line of a JSON watch stream: a struct, so that `type` comes before `object` as the
/// real server writes it (clients that decode an adjacently tagged event without buffering
/// the object, kube's `WatchEvent<RawValue>` among them, need that order).
#[derive(Serialize)]
pub(crate) struct Frame<'a> {
    #[serde(rename = "type")]
    pub(crate) event_type: &'a str,
    pub(crate) object: Ordered<'a>,
}

impl SharedEvent {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    pub fn event_type(&self) -> &'static str {
        self.0.event_type
    }

    /// The object (or the `Status` of an `ERROR`).
    pub fn object(&self) -> &Value {
        &self.0.object
    }

    /// The event as one line of a JSON watch stream, `{"type":...,"object":...}\n`, encoded
    /// once for every watcher that receives it, the object's fields in its field order
    /// (keys sorted for an event made from a [`WatchEvent`]; a built-in kind's watch events
    /// in Go's order).
    ///
    /// ```
    /// use crt_apiserver::storage::{SharedEvent, WatchEvent};
    /// let ev = SharedEvent::from(WatchEvent::Added(serde_json::json!({"kind": "ConfigMap"})));
    /// assert_eq!(&ev.to_json_line()[..], b"{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\"}}\n");
    /// ```
    pub fn to_json_line(&self) -> Bytes {
        self.0
            .line
            .get_or_init(|| {
                let frame = Frame {
                    event_type: self.0.event_type,
                    object: Ordered(&self.0.object, self.0.order),
                };
                let mut out = serde_json::to_vec(&frame).unwrap_or_default();
                out.push(b'\n');
                Bytes::from(out)
            })
            .clone()
    }

    /// Appends the event's line to `out`. An event no other watcher holds (a watch's
    /// initial events) is encoded straight into `out`; a shared one is encoded once and
    /// copied.
    pub fn write_json_line(&self, out: &mut BytesMut) {
        if let Some(line) = self.0.line.get() {
            out.extend_from_slice(line);
            return;
        }
        if Arc::strong_count(&self.0) > 1 {
            out.extend_from_slice(&self.to_json_line());
            return;
        }
        let frame = Frame {
            event_type: self.0.event_type,
            object: Ordered(&self.0.object, self.0.order),
        };
        let start = out.len();
        if serde_json::to_writer((&mut *out).writer(), &frame).is_err() {
            // A Value always encodes; should it not, the watcher gets nothing for this event
            // rather than half a line.
            out.truncate(start);
            return;
        }
        out.put_u8(b'\n');
    }

    /// The event as an owned [`WatchEvent`] (copies the object).
    pub fn to_watch_event(&self) -> WatchEvent {
        let obj = Value::clone(&self.0.object);
        match self.0.event_type {
            "ADDED" => WatchEvent::Added(obj),
            "MODIFIED" => WatchEvent::Modified(obj),
            "DELETED" => WatchEvent::Deleted(obj),
            "BOOKMARK" => WatchEvent::Bookmark(obj),
            _ => WatchEvent::Error(obj),
        }
    }
}

impl From<WatchEvent> for SharedEvent {
    fn from(ev: WatchEvent) -> Self {
        SharedEvent::ordered(ev, FieldOrder::Sorted)
    }
}

impl SharedEvent {
    /// The event, its object to be written in `order`.
    pub(crate) fn ordered(ev: WatchEvent, order: FieldOrder) -> Self {
        let (event_type, object) = match ev {
            WatchEvent::Added(o) => ("ADDED", o),
            WatchEvent::Modified(o) => ("MODIFIED", o),
            WatchEvent::Deleted(o) => ("DELETED", o),
            WatchEvent::Bookmark(o) => ("BOOKMARK", o),
            WatchEvent::Error(o) => ("ERROR", o),
        };
        SharedEvent::new(event_type, Arc::new(object), order)
    }

    fn new(event_type: &'static str, object: Arc<Value>, order: FieldOrder) -> Self {
        SharedEvent(Arc::new(Inner {
            event_type,
            object,
            order,
            line: OnceLock::new(),
        }))
    }
}

/// A running shared watch: as [`Watch`](super::options::Watch), with [`SharedEvent`]s.
#[derive(Debug)]
pub struct SharedWatch {
    /// The events; the stream ends when the server closes the watch.
    pub events: mpsc::Receiver<SharedEvent>,
}

/// Where a watcher's events go.
#[derive(Clone, Debug)]
pub(crate) enum Sink {
    /// Each event copied for this watcher.
    Owned(mpsc::Sender<WatchEvent>),
    /// Events shared with the other shared watchers, their objects written in this order.
    Shared(mpsc::Sender<SharedEvent>, FieldOrder),
}

impl Sink {
    /// Queues an event without waiting; false when full or closed.
    pub(crate) fn try_send(&self, ev: WatchEvent) -> bool {
        match self {
            Sink::Owned(tx) => tx.try_send(ev).is_ok(),
            Sink::Shared(tx, order) => tx.try_send(SharedEvent::ordered(ev, *order)).is_ok(),
        }
    }

    /// Queues an ADDED event for a stored object without waiting; false when full or closed.
    /// A shared watcher gets the object itself, not a copy.
    pub(crate) fn try_send_added(&self, object: Arc<Value>) -> bool {
        match self {
            Sink::Owned(tx) => tx
                .try_send(WatchEvent::Added(Value::clone(&object)))
                .is_ok(),
            Sink::Shared(tx, order) => tx
                .try_send(SharedEvent::new("ADDED", object, *order))
                .is_ok(),
        }
    }

    /// Whether the receiver is gone.
    pub(crate) fn is_closed(&self) -> bool {
        match self {
            Sink::Owned(tx) => tx.is_closed(),
            Sink::Shared(tx, _) => tx.is_closed(),
        }
    }

    /// Resolves when the receiver is gone.
    pub(crate) async fn closed(&self) {
        match self {
            Sink::Owned(tx) => tx.closed().await,
            Sink::Shared(tx, _) => tx.closed().await,
        }
    }
}

/// A new watch channel of `capacity` of the given form: the sink and the caller's end. A
/// shared watch's objects are written in `order`.
pub(crate) fn channel(shared: bool, capacity: usize, order: FieldOrder) -> (Sink, Receiver) {
    if shared {
        let (tx, rx) = mpsc::channel(capacity);
        (Sink::Shared(tx, order), Receiver::Shared(rx))
    } else {
        let (tx, rx) = mpsc::channel(capacity);
        (Sink::Owned(tx), Receiver::Owned(rx))
    }
}

/// The caller's end of a watch channel.
pub(crate) enum Receiver {
    /// For [`super::options::Watch`].
    Owned(mpsc::Receiver<WatchEvent>),
    /// For [`SharedWatch`].
    Shared(mpsc::Receiver<SharedEvent>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_line_is_the_same_whether_written_in_place_shared_or_cached() {
        let object = json!({"kind": "ConfigMap", "metadata": {"name": "a\"b"}});
        let expected = b"{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\\\"b\"}}}\n";
        // Held by this watcher alone: encoded straight into the buffer, after what is there.
        let mut out = BytesMut::from(&b"x"[..]);
        SharedEvent::new("ADDED", Arc::new(object.clone()), FieldOrder::Sorted)
            .write_json_line(&mut out);
        assert_eq!(&out[1..], expected);
        // Held by two watchers: encoded once, cached, copied.
        let shared = SharedEvent::new("ADDED", Arc::new(object), FieldOrder::Sorted);
        let other = shared.clone();
        let mut out = BytesMut::new();
        shared.write_json_line(&mut out);
        assert_eq!(&out[..], expected);
        assert_eq!(&other.to_json_line()[..], expected);
        drop(shared);
        let mut out = BytesMut::new();
        other.write_json_line(&mut out);
        assert_eq!(&out[..], expected, "the cached line once alone");
    }
}
