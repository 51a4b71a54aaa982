//! How a [`Store`](super::Store) holds its objects: [`Storage`], the [`Codec`] of compact
//! stores, and [`CachedObject`], an object as held, as informers hand it to their handlers.

use std::fmt;
use std::sync::{Arc, OnceLock};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::ObjectKey;
use crate::event::Object;

/// How a [`Store`](super::Store) holds its objects: as shared typed objects, or compactly, as
/// their JSON encoding plus their metadata, decoded on each typed read. A [`Cache`](super::Cache)
/// holds every type compactly unless told otherwise
/// ([`CacheOptions::with_default_compact`](super::CacheOptions::with_default_compact),
/// [`ByObject::with_compact`](super::ByObject::with_compact)); a bare
/// [`InformerConfig`](super::InformerConfig)
/// defaults to [`Storage::Shared`] (it needs no serde bounds).
///
/// A typed Kubernetes object takes two to four times its JSON size in memory: every
/// `BTreeMap` (labels, annotations, a ConfigMap's data) reserves a 544-byte node for up to
/// eleven `(String, String)` pairs even for one, `ObjectMeta` is mostly empty `Option`s, and
/// `managedFields` decode into nested `serde_json::Value` maps. A 1.1 KB ConfigMap held as
/// `Arc<ConfigMap>` costs about 3 KB, and 6.5 KB with one managedFields entry.
///
/// [`Storage::Compact`] keeps the JSON: about a quarter of the heap. What needs only metadata
/// never decodes the object: the informer hands its handlers [`CachedObject`]s, whose
/// metadata is read from the JSON on demand (skipping the rest, `managedFields` included), and
/// the Kind source asks the built-in handlers (enqueue the object, its owner) and metadata
/// predicates (generation, labels, annotations, resourceVersion changed, label selectors) to
/// decide from the metadata; an event is decoded, once, only for a handler or predicate that
/// reads the typed object. A typed get or list decodes (a few microseconds for a 1 KB
/// object); controller-runtime (Go) deep-copies every object on every read by default, which
/// costs about as much. [`Storage::Shared`] suits objects read far more often than they change.
///
/// A compact informer without a transform never builds the typed object to store it: it lists
/// and watches [`RawObject`](super::RawObject)s, reads their key and resourceVersion, and
/// stores the JSON as the server sent it. With a transform, objects are decoded,
/// transformed and encoded again.
///
/// With compact storage:
/// - a get or list returns decoded objects, not the stored allocation; the store keeps the
///   objects it decoded for its last reads in a bounded memo ([`ReadMemo`]), so reading an
///   object a third time before it changes shares the object the second read decoded (as
///   shared storage does) instead of decoding it again: tens of nanoseconds instead of
///   several microseconds. A changed object is always decoded afresh;
/// - handlers of typed objects get them decoded for them (an event's object, the replaced
///   object of an update, a deleted one found on a relist, the replay a late handler or a
///   resync gets), each object of an event once however many handlers ask;
/// - field indexes decode the objects they index;
/// - an object whose JSON no longer decodes into `K` (which a type that cannot read its own
///   output, or a raw object the type does not fit, would cause) is logged and left out of
///   reads and typed events rather than failing them all.
///
/// ```
/// use controller_runtime::cache::{InformerConfig, Storage};
/// use k8s_openapi::api::core::v1::Secret;
///
/// let storage = Storage::<Secret>::compact();
/// assert!(storage.is_compact());
/// let config = InformerConfig::<Secret>::default().with_storage(storage);
/// # let _ = config;
/// ```
pub enum Storage<K> {
    /// Each object as an `Arc<K>`, shared by every reader: reads copy nothing.
    Shared,
    /// Each object encoded by the codec; decoded on every typed read.
    Compact(Codec<K>),
}

impl<K> Storage<K> {
    /// Whether objects are held encoded.
    pub fn is_compact(&self) -> bool {
        matches!(self, Storage::Compact(_))
    }

    /// The same storage with reads memoized within `memo` (see [`ReadMemo`]); shared storage
    /// needs none and is returned as it is.
    pub fn with_read_memo(self, memo: ReadMemo) -> Self {
        match self {
            Storage::Shared => Storage::Shared,
            Storage::Compact(codec) => Storage::Compact(codec.with_read_memo(memo)),
        }
    }

    /// The bound of the read memo, for compact storage.
    pub fn read_memo(&self) -> Option<ReadMemo> {
        self.codec().map(Codec::read_memo)
    }

    /// The codec, for compact storage.
    pub(crate) fn codec(&self) -> Option<&Codec<K>> {
        match self {
            Storage::Shared => None,
            Storage::Compact(codec) => Some(codec),
        }
    }
}

impl<K: Serialize + DeserializeOwned> Storage<K> {
    /// Compact storage as JSON.
    pub fn compact() -> Self {
        Storage::Compact(Codec::json())
    }
}

// Not derived: the derive would require `K: Default`, which `DynamicObject` is not.
#[allow(clippy::derivable_impls)]
impl<K> Default for Storage<K> {
    fn default() -> Self {
        Storage::Shared
    }
}

impl<K> Clone for Storage<K> {
    fn clone(&self) -> Self {
        match self {
            Storage::Shared => Storage::Shared,
            Storage::Compact(codec) => Storage::Compact(*codec),
        }
    }
}

impl<K> fmt::Debug for Storage<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Storage::Shared => "Shared",
            Storage::Compact(_) => "Compact",
        })
    }
}

/// How many decoded objects a compact store keeps for reads that come again before the object
/// changes: a typed get or list of an object read recently, and not changed since, shares the
/// object an earlier read decoded instead of decoding it again. An object is kept from its
/// second read on (of the same version): most objects are read once per change (a cold start
/// reads each once), and keeping those would cost memory and time for nothing.
///
/// Bounded by a number of objects and by the bytes of their JSON (a decoded object takes two to
/// five times that: about 7 KB for a 1.5 KB ConfigMap with managedFields). The default,
/// 2,048 objects or 8 MiB of JSON, costs at most about 14 MB of such ConfigMaps, whatever the
/// number of objects cached, and makes a repeated read of a 1.5 KB object take tens of
/// nanoseconds instead of the decode's several microseconds. A memo smaller than the set of
/// objects read again between their changes (a reconcile's parent and siblings) helps less:
/// size it to that set with [`ReadMemo::new`]; [`ReadMemo::disabled`] keeps nothing.
///
/// ```
/// use controller_runtime::cache::{ReadMemo, Storage};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let storage = Storage::<ConfigMap>::compact().with_read_memo(ReadMemo::new(512, 1 << 20));
/// assert_eq!(storage.read_memo(), Some(ReadMemo::new(512, 1 << 20)));
/// assert_eq!(ReadMemo::disabled().objects(), 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadMemo {
    pub(crate) objects: usize,
    pub(crate) bytes: usize,
    /// Keep objects from their first read on.
    pub(crate) first_read: bool,
}

impl ReadMemo {
    /// At most `objects` decoded objects, whose JSON takes at most `bytes`.
    pub const fn new(objects: usize, bytes: usize) -> Self {
        ReadMemo {
            objects,
            bytes,
            first_read: false,
        }
    }

    /// The same bound, keeping each object from its first read on rather than its second: a
    /// reconciler that reads each object twice (once at start-up, once after a change of a
    /// related object) then finds the second read memoized, if the memo holds every object
    /// read in between; but every object read once (a cold start reads each) is kept until
    /// evicted, so the memo fills up to its bound and stays full.
    pub const fn from_first_read(mut self) -> Self {
        self.first_read = true;
        self
    }

    /// No memo: every typed read decodes.
    pub const fn disabled() -> Self {
        ReadMemo::new(0, 0)
    }

    /// The most objects kept.
    pub fn objects(&self) -> usize {
        self.objects
    }

    /// The most bytes of JSON the kept objects may have.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Default for ReadMemo {
    /// 2,048 objects, 8 MiB of JSON.
    fn default() -> Self {
        ReadMemo::new(2048, 8 << 20)
    }
}

/// Turns objects into bytes and back, for [`Storage::Compact`]; with the bound of the store's
/// [`ReadMemo`].
pub struct Codec<K> {
    encode: fn(&K) -> Result<Vec<u8>, serde_json::Error>,
    decode: fn(&[u8]) -> Result<K, serde_json::Error>,
    memo: ReadMemo,
}

impl<K: Serialize + DeserializeOwned> Codec<K> {
    /// The object's JSON, as the API server would send it; the default [`ReadMemo`].
    pub fn json() -> Self {
        Codec {
            encode: |obj| serde_json::to_vec(obj),
            decode: |bytes| serde_json::from_slice(bytes),
            memo: ReadMemo::default(),
        }
    }
}

impl<K> Codec<K> {
    /// A codec of the given functions, for tests that count decodes; no read memo.
    #[cfg(test)]
    pub(crate) fn counted(
        encode: fn(&K) -> Result<Vec<u8>, serde_json::Error>,
        decode: fn(&[u8]) -> Result<K, serde_json::Error>,
    ) -> Self {
        Codec {
            encode,
            decode,
            memo: ReadMemo::disabled(),
        }
    }

    /// The same codec with a store's reads memoized within `memo`.
    pub fn with_read_memo(mut self, memo: ReadMemo) -> Self {
        self.memo = memo;
        self
    }

    /// The bound of the read memo.
    pub fn read_memo(&self) -> ReadMemo {
        self.memo
    }

    /// Encodes an object.
    pub fn encode(&self, obj: &K) -> Result<Vec<u8>, serde_json::Error> {
        (self.encode)(obj)
    }

    /// Decodes what [`Codec::encode`] produced.
    pub fn decode(&self, bytes: &[u8]) -> Result<K, serde_json::Error> {
        (self.decode)(bytes)
    }
}

impl<K> Clone for Codec<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Codec<K> {}

/// One object of a compact store: its encoding, shared behind an `Arc` by the store, the
/// events about it and reads in progress. The bytes may be a slice of a larger buffer (an
/// informer's list keeps its objects in the buffers they were received in, see
/// [`RawObject`](super::RawObject)).
pub(crate) struct Encoded {
    pub(crate) bytes: bytes::Bytes,
}

impl Encoded {
    /// What the store is charged for this object: the encoding and its `Arc`.
    pub(crate) fn size(&self) -> usize {
        2 * std::mem::size_of::<usize>() + std::mem::size_of::<Self>() + self.bytes.len()
    }
}

/// An object of a compact store seen as an [`Object`]: its key as filed, and its metadata read
/// from its encoding on first use (empty, logged, if it does not read). The metadata is boxed:
/// an initial list hands every object to the handlers at once, most of which need only the
/// key, and an inline `ObjectMeta` would make each of them a 500-byte allocation.
struct LazyMeta {
    entry: Arc<Encoded>,
    key: ObjectKey,
    meta: OnceLock<Box<ObjectMeta>>,
}

impl Object for LazyMeta {
    fn metadata(&self) -> &ObjectMeta {
        self.meta.get_or_init(|| {
            Box::new(super::raw::read_meta(&self.entry.bytes).unwrap_or_else(|error| {
                tracing::error!(%error, object = %self.key, "a cached object's metadata does not read");
                ObjectMeta::default()
            }))
        })
    }

    fn namespace_and_name(&self) -> (Option<&str>, &str) {
        (self.key.namespace.as_deref(), &self.key.name)
    }
}

/// An object as the cache holds it, as handed to [`ResourceEventHandler`]s: its metadata and
/// the typed object, each read from the cache's compact encoding the first time it is asked
/// for and then kept for the object's other readers (every handler told about one event shares
/// one `CachedObject`, so the event is decoded at most once; its metadata alone costs a read
/// that skips everything else, `managedFields` included).
///
/// A shared store ([`Storage::Shared`]) hands its typed objects, so nothing is decoded.
///
/// [`ResourceEventHandler`]: super::ResourceEventHandler
pub struct CachedObject<K> {
    repr: Repr<K>,
}

enum Repr<K> {
    Typed(Arc<K>),
    Encoded {
        view: Arc<LazyMeta>,
        /// `None` only for an encoding no codec of this store made: it never decodes.
        codec: Option<Codec<K>>,
        typed: OnceLock<Option<Arc<K>>>,
    },
}

impl<K> Clone for CachedObject<K> {
    fn clone(&self) -> Self {
        CachedObject {
            repr: match &self.repr {
                Repr::Typed(obj) => Repr::Typed(obj.clone()),
                Repr::Encoded { view, codec, typed } => Repr::Encoded {
                    view: view.clone(),
                    codec: *codec,
                    typed: typed.clone(),
                },
            },
        }
    }
}

impl<K> fmt::Debug for CachedObject<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedObject")
            .field("decoded", &self.is_decoded())
            .finish_non_exhaustive()
    }
}

impl<K: Resource> CachedObject<K> {
    /// A typed object, already decoded.
    pub fn typed(obj: Arc<K>) -> Self {
        CachedObject {
            repr: Repr::Typed(obj),
        }
    }

    /// The object's metadata. For an object of a compact store not decoded yet, read from its
    /// encoding on the first call, without `managedFields` (the typed object has them).
    pub fn metadata(&self) -> &ObjectMeta {
        match &self.repr {
            Repr::Typed(obj) => obj.meta(),
            Repr::Encoded { typed, view, .. } => match typed.get() {
                Some(Some(obj)) => obj.meta(),
                _ => view.metadata(),
            },
        }
    }
}

impl<K: Resource + 'static> CachedObject<K> {
    /// The object seen through its metadata, shared, not copied or decoded.
    pub fn as_object(&self) -> Arc<dyn Object> {
        match &self.repr {
            Repr::Typed(obj) => obj.clone() as Arc<dyn Object>,
            Repr::Encoded { typed, view, .. } => match typed.get() {
                Some(Some(obj)) => obj.clone() as Arc<dyn Object>,
                _ => view.clone() as Arc<dyn Object>,
            },
        }
    }
}

impl<K> CachedObject<K> {
    /// The typed object: decoded on the first call (for every holder of this object), then
    /// shared. `None`, logged, when its encoding does not decode into `K`.
    pub fn object(&self) -> Option<Arc<K>> {
        match &self.repr {
            Repr::Typed(obj) => Some(obj.clone()),
            Repr::Encoded { view, codec, typed } => typed
                .get_or_init(|| match codec.map(|c| c.decode(&view.entry.bytes)) {
                    Some(Ok(obj)) => Some(Arc::new(obj)),
                    None => None,
                    Some(Err(error)) => {
                        tracing::error!(%error, "a cached object does not decode; skipped");
                        None
                    }
                })
                .clone(),
        }
    }

    /// Whether the typed object is at hand (held typed, or decoded already).
    pub fn is_decoded(&self) -> bool {
        match &self.repr {
            Repr::Typed(_) => true,
            Repr::Encoded { typed, .. } => typed.get().is_some(),
        }
    }

    /// An object of a compact store, decoded by `codec` when first asked for (unless `typed`
    /// gives the object already).
    pub(crate) fn encoded(
        entry: Arc<Encoded>,
        key: ObjectKey,
        codec: Option<Codec<K>>,
        typed: Option<Arc<K>>,
    ) -> Self {
        let once = OnceLock::new();
        if let Some(obj) = typed {
            let _ = once.set(Some(obj));
        }
        CachedObject {
            repr: Repr::Encoded {
                view: Arc::new(LazyMeta {
                    entry,
                    key,
                    meta: OnceLock::new(),
                }),
                codec,
                typed: once,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube_core::ObjectMeta;

    #[test]
    fn json_codec_round_trips_and_reports_bad_bytes() {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some("a".into()),
                labels: Some([("k".to_string(), "v".to_string())].into()),
                ..Default::default()
            },
            data: Some([("x".to_string(), "y".to_string())].into()),
            ..Default::default()
        };
        let codec = Codec::<ConfigMap>::json();
        let bytes = codec.encode(&cm).unwrap();
        assert_eq!(codec.decode(&bytes).unwrap(), cm);
        assert!(codec.decode(b"{\"data\": 7}").is_err());
        assert!(Storage::<ConfigMap>::compact().is_compact());
        assert!(!Storage::<ConfigMap>::default().is_compact());
    }
}
