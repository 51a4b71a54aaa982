//! How a [`Store`](super::Store) holds its objects: [`Storage`], and the [`Codec`] of compact
//! stores.

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// How a [`Store`](super::Store) holds its objects: as shared typed objects (the default), or
/// compactly, as their JSON encoding, decoded on each read.
///
/// A typed Kubernetes object takes two to four times its JSON size in memory: every
/// `BTreeMap` (labels, annotations, a ConfigMap's data) reserves a 544-byte node for up to
/// eleven `(String, String)` pairs even for one, `ObjectMeta` is mostly empty `Option`s, and
/// `managedFields` decode into nested `serde_json::Value` maps. A 1.1 KB ConfigMap held as
/// `Arc<ConfigMap>` costs about 3 KB, and 6.5 KB with one managedFields entry.
///
/// [`Storage::Compact`] keeps the JSON instead, and decodes it again for every read: about a
/// quarter to a half of the heap, for a few microseconds of CPU per object read. It suits
/// large caches that reconcilers read now and then (Secrets, ConfigMaps, the Pods of a big
/// cluster); [`Storage::Shared`] suits objects read on every event. controller-runtime (Go)
/// deep-copies every object on every read by default, which costs about what a compact read
/// does.
///
/// A compact informer without a transform never builds the typed object to store it: it lists
/// and watches [`RawObject`](super::RawObject)s, reads their key and resourceVersion, and
/// stores the JSON as the server sent it (so filling the cache costs less CPU than a shared
/// one). With a transform, objects are decoded, transformed and encoded again.
///
/// With compact storage:
/// - a get or list returns freshly decoded objects, not the stored allocation, so two reads
///   of one object are two objects;
/// - handlers get typed objects as with shared storage, decoded for them (an event's object,
///   the replaced object of an update, a deleted one found on a relist, the replay a late
///   handler or a resync gets): an informer with handlers decodes every event once;
/// - field indexes decode the objects they index;
/// - an object whose JSON no longer decodes into `K` (which a type that cannot read its own
///   output, or a raw object the type does not fit, would cause) is logged and left out of
///   reads rather than failing them all.
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
    /// Each object encoded by the codec, decoded on every read.
    Compact(Codec<K>),
}

impl<K> Storage<K> {
    /// Whether objects are held encoded.
    pub fn is_compact(&self) -> bool {
        matches!(self, Storage::Compact(_))
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

/// Turns objects into bytes and back, for [`Storage::Compact`].
pub struct Codec<K> {
    encode: fn(&K) -> Result<Vec<u8>, serde_json::Error>,
    decode: fn(&[u8]) -> Result<K, serde_json::Error>,
}

impl<K: Serialize + DeserializeOwned> Codec<K> {
    /// The object's JSON, as the API server would send it.
    pub fn json() -> Self {
        Codec {
            encode: |obj| serde_json::to_vec(obj),
            decode: |bytes| serde_json::from_slice(bytes),
        }
    }
}

impl<K> Codec<K> {
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
