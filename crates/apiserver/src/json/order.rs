//! The order in which an object's fields are written. Go API structs encode their fields in
//! declaration order; unstructured maps (custom objects) with their keys sorted. Objects are
//! held as `serde_json::Value`s with sorted keys, so the Go order is applied while writing,
//! without a copy: [`GoOrder`].

use serde_json::Value;

/// How an object's fields are ordered when it is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FieldOrder {
    /// Keys sorted, as upstream writes unstructured maps (custom objects).
    #[default]
    Sorted,
    /// As upstream encodes its Go structs (built-in kinds, `Table`, `PartialObjectMetadata`):
    /// `kind`, `apiVersion`, `metadata` (in `ObjectMeta`'s order), `spec`, `status`, a
    /// list's `items`, then the other fields by name.
    Go,
}

/// `value` written in `order`.
pub(crate) struct Ordered<'a>(pub(crate) &'a Value, pub(crate) FieldOrder);

impl serde::Serialize for Ordered<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.1 {
            FieldOrder::Sorted => self.0.serialize(s),
            FieldOrder::Go => GoOrder(self.0).serialize(s),
        }
    }
}

/// The fields a Go API struct encodes first, in its order: the embedded `TypeMeta`, then
/// `ObjectMeta` (or `ListMeta`), then `Spec`, `Status` or a list's `Items`.
const GO_LEADING: [&str; 6] = ["kind", "apiVersion", "metadata", "spec", "status", "items"];

/// Serializes an object with [`GO_LEADING`] first (a list's items likewise), without a copy.
pub(crate) struct GoOrder<'a>(pub(crate) &'a Value);

impl serde::Serialize for GoOrder<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Value::Object(map) = self.0 else {
            return self.0.serialize(s);
        };
        let mut out = s.serialize_map(Some(map.len()))?;
        for key in GO_LEADING {
            match map.get(key) {
                Some(Value::Array(items)) if key == "items" => {
                    let items: Vec<GoOrder<'_>> = items.iter().map(GoOrder).collect();
                    out.serialize_entry(key, &items)?;
                }
                Some(v) if key == "metadata" => out.serialize_entry(key, &MetaOrder(v))?,
                Some(v) => out.serialize_entry(key, v)?,
                None => {}
            }
        }
        for (k, v) in map
            .iter()
            .filter(|(k, _)| !GO_LEADING.contains(&k.as_str()))
        {
            out.serialize_entry(k, v)?;
        }
        out.end()
    }
}

/// The fields of `ObjectMeta` and `ListMeta` in their Go structs' order (the two share
/// `selfLink` and `resourceVersion`, in the same relative order).
const META_ORDER: [&str; 17] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "continue",
    "remainingItemCount",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Serializes an object's `metadata` in [`META_ORDER`], any other field after them by name.
struct MetaOrder<'a>(&'a Value);

impl serde::Serialize for MetaOrder<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Value::Object(map) = self.0 else {
            return self.0.serialize(s);
        };
        let mut out = s.serialize_map(Some(map.len()))?;
        for key in META_ORDER {
            if let Some(v) = map.get(key) {
                out.serialize_entry(key, v)?;
            }
        }
        for (k, v) in map
            .iter()
            .filter(|(k, _)| !META_ORDER.contains(&k.as_str()))
        {
            out.serialize_entry(k, v)?;
        }
        out.end()
    }
}
