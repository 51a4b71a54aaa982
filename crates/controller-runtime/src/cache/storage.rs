//! How a [`Store`](super::Store) holds its objects: as shared typed objects (the default), or
//! compactly, as their JSON encoding, decoded on each read.
//!
//! A typed Kubernetes object takes two to four times its JSON size in memory: every
//! `BTreeMap` (labels, annotations, a ConfigMap's data) reserves a 544-byte node for up to
//! eleven `(String, String)` pairs even for one, `ObjectMeta` is mostly empty `Option`s, and
//! `managedFields` decode into nested `serde_json::Value` maps. A 1.1 KB ConfigMap held as
//! `Arc<ConfigMap>` costs about 3 KB, and 6.5 KB with one managedFields entry.
//!
//! [`Storage::Compact`] keeps the JSON instead (after the informer's transform), and decodes
//! it again for every read: about a third of the heap, for a few microseconds of CPU per
//! object read. It suits large caches that reconcilers read from now and then (Secrets,
//! ConfigMaps, Pods of a big cluster); [`Storage::Shared`] suits objects read on every event.
//! controller-runtime (Go) deep-copies every object on every read by default, which costs
//! about what a compact read does.
//!
//! With compact storage:
//! - a get or list returns freshly decoded objects, not the stored allocation, so two reads
//!   of one object are two objects;
//! - handlers still get each event's typed object as the server sent it (transformed); the
//!   replaced object of an update, a deleted one found on a relist, and the replay a late
//!   handler or a resync gets, are decoded from the store;
//! - while a list or a streaming list is in progress, its objects are held typed until the
//!   list is complete, as with shared storage: the saving is in what stays cached.
//!
//! ```
//! use controller_runtime::cache::{InformerConfig, Storage};
//! use k8s_openapi::api::core::v1::Secret;
//!
//! let config = InformerConfig::<Secret> {
//!     storage: Storage::compact(),
//!     ..Default::default()
//! };
//! assert!(config.storage.is_compact());
//! ```

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// How a store holds its objects; see the [module docs](self).
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
