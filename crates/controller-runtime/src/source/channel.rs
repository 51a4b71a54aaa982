//! [`Channel`]: events from outside the cluster.
//!
//! One distributor task reads the user's channel and copies each event to every destination
//! (one per [`Source::start`], i.e. per watch); each destination has its own buffer and task
//! calling its [`EventDispatcher`]. A slow destination slows the distributor once its buffer is
//! full (back-pressure, as controller-runtime's channel source), it never drops events.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::EventDispatcher;
use super::interface::{Error, Source, short_type_name};
use crate::event::{Event, GenericEvent};
use crate::workqueue::QueueItem;

/// The buffer of each destination unless set: controller-runtime's `DestBufferSize` default.
pub(crate) const DEFAULT_BUFFER_SIZE: usize = 1024;

/// A source of [`GenericEvent`]s that your code sends: webhooks, timers, other systems
/// (controller-runtime's `source.Channel`).
///
/// Clones share the channel: start it in several watches (or controllers) and every one of them
/// gets every event. Each watch gets a buffer of 1024 events
/// ([`buffer_size`](Self::buffer_size) changes it). Events sent before any watch started wait in
/// the channel; the source stops when every sender is dropped.
///
/// ```
/// use std::sync::Arc;
/// use controller_runtime::event::GenericEvent;
/// use controller_runtime::source::Channel;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let (tx, rx) = tokio::sync::mpsc::channel::<GenericEvent<ConfigMap>>(64);
/// let source = Channel::new(rx).buffer_size(16);
/// let shared = source.clone(); // same events, for a second controller
/// # drop((tx, shared));
/// ```
pub struct Channel<K> {
    shared: Arc<Shared<K>>,
    buffer_size: usize,
}

struct Shared<K> {
    state: Mutex<State<K>>,
}

struct State<K> {
    /// The user's receiver while no distributor runs (before the first start, or after every
    /// destination went away); `None` while a distributor owns it or once it is closed.
    rx: Option<mpsc::Receiver<GenericEvent<K>>>,
    /// An event read but not delivered because every destination had gone.
    pending: Option<GenericEvent<K>>,
    /// One sender per started destination.
    dests: Vec<mpsc::Sender<GenericEvent<K>>>,
    /// The user's channel closed.
    closed: bool,
}

/// A sender and the [`Channel`] source reading what it sends, with `capacity` events of room.
pub fn channel<K>(capacity: usize) -> (mpsc::Sender<GenericEvent<K>>, Channel<K>) {
    let (tx, rx) = mpsc::channel(capacity);
    (tx, Channel::new(rx))
}

impl<K> Channel<K> {
    /// A source reading `rx`.
    pub fn new(rx: mpsc::Receiver<GenericEvent<K>>) -> Self {
        let state = State {
            rx: Some(rx),
            pending: None,
            dests: Vec::new(),
            closed: false,
        };
        Channel {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
            }),
            buffer_size: DEFAULT_BUFFER_SIZE,
        }
    }

    /// The buffer of each destination started from this handle (at least 1).
    pub fn buffer_size(mut self, size: usize) -> Self {
        self.buffer_size = size.max(1);
        self
    }
}

impl<K> Clone for Channel<K> {
    fn clone(&self) -> Self {
        Channel {
            shared: self.shared.clone(),
            buffer_size: self.buffer_size,
        }
    }
}

impl<K> fmt::Debug for Channel<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Channel")
            .field("type", &short_type_name::<K>())
            .finish()
    }
}

impl<K: Send + Sync + 'static> Shared<K> {
    /// Reads the user's channel and copies each event to every destination.
    async fn distribute(self: Arc<Self>, mut rx: mpsc::Receiver<GenericEvent<K>>) {
        let mut next = self.state.lock().pending.take();
        loop {
            let event = match next.take() {
                Some(e) => e,
                None => match rx.recv().await {
                    Some(e) => e,
                    None => {
                        // Closing the destinations' senders ends their tasks once drained.
                        let mut st = self.state.lock();
                        st.closed = true;
                        st.dests.clear();
                        return;
                    }
                },
            };
            let dests = self.state.lock().dests.clone();
            let mut delivered = false;
            for dest in &dests {
                if dest.send(event.clone()).await.is_ok() {
                    delivered = true;
                } else {
                    self.state.lock().dests.retain(|d| !d.same_channel(dest));
                }
            }
            if !delivered {
                let mut st = self.state.lock();
                if st.dests.is_empty() {
                    // Nobody listens: park, keeping the event, until the next start.
                    st.pending = Some(event);
                    st.rx = Some(rx);
                    return;
                }
                next = Some(event); // a destination arrived meanwhile
            }
        }
    }
}

impl<K: Send + Sync + 'static, T: QueueItem> Source<K, T> for Channel<K> {
    fn start(
        &self,
        ctx: CancellationToken,
        dispatcher: EventDispatcher<K, T>,
    ) -> BoxFuture<'_, Result<(), Error>> {
        let (tx, mut rx) = mpsc::channel::<GenericEvent<K>>(self.buffer_size);
        {
            let mut st = self.shared.state.lock();
            if st.closed {
                tracing::debug!(source = %self.describe_k(), "channel already closed: no events");
            } else {
                st.dests.push(tx);
                if let Some(src) = st.rx.take() {
                    tokio::spawn(self.shared.clone().distribute(src));
                }
            }
        }
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    biased;
                    _ = ctx.cancelled() => break,
                    event = rx.recv() => match event {
                        Some(event) => {
                            dispatcher.dispatch(&Event::Generic(event));
                        }
                        None => break,
                    },
                }
            }
        });
        Box::pin(async { Ok(()) })
    }

    fn describe(&self) -> String {
        self.describe_k()
    }
}

impl<K> Channel<K> {
    fn describe_k(&self) -> String {
        format!("channel source: {}", short_type_name::<K>())
    }
}
