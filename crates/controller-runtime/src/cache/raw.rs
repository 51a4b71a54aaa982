//! Objects kept as the server sent them, for compact stores: an informer whose store is
//! compact ([`Storage::Compact`](super::Storage)) and that has no transform lists and watches
//! [`RawObject`]s, so filling the cache never builds the typed object at all. Only the key and
//! resourceVersion are read out; the JSON is stored as received. An event's metadata is read
//! from it when a handler or predicate asks ([`read_meta`]: `managedFields` skipped, never
//! built), and the typed object is decoded on each typed read, and for an event only if a
//! handler or predicate needs more than the metadata.

use std::collections::BTreeMap;

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta, OwnerReference, Time};
use kube_client::core::{ObjectList, TypeMeta, WatchEvent};
use kube_core::Status;
use serde::de::{Deserialize, Deserializer, Error as _};
use serde_json::value::RawValue;

use crate::ObjectKey;

/// One object as the server sent it: its JSON, with its key and resourceVersion read out.
///
/// The JSON is [`Bytes`]: an informer's list or streaming list keeps each object as a slice of
/// the buffer the response was received in (one allocation per page or per 64 KiB of watch
/// stream, not one per object, and no copy); objects of later watch events get their own.
#[derive(Clone, Debug)]
pub struct RawObject {
    key: ObjectKey,
    resource_version: Option<String>,
    json: Bytes,
}

impl RawObject {
    /// The object's namespace and name.
    pub fn key(&self) -> &ObjectKey {
        &self.key
    }

    /// The object's resourceVersion.
    pub fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    /// The object's metadata, without `managedFields` (which are skipped, never decoded), read
    /// from its JSON on each call.
    pub fn metadata(&self) -> Result<ObjectMeta, serde_json::Error> {
        read_meta(self.json())
    }

    /// The object's JSON, as received.
    pub fn json(&self) -> &[u8] {
        &self.json
    }

    /// The key and the JSON, without a copy.
    pub(crate) fn into_parts(self) -> (ObjectKey, Bytes) {
        (self.key, self.json)
    }

    /// Gives the object a buffer of its own, if it shares one: an object kept from a watch
    /// event must not keep the buffer of its neighbours' events alive (an initial list's
    /// objects share theirs: they are all kept, and go with the next list).
    pub(crate) fn detach(&mut self) {
        self.json = Bytes::copy_from_slice(&self.json);
    }

    /// Hands the resourceVersion over to the caller (the reflector, which resumes from it).
    pub(crate) fn take_resource_version(&mut self) -> Option<String> {
        self.resource_version.take()
    }

    /// The object whose JSON is `raw`, a part of `buffer`: the object keeps a slice of the
    /// buffer, not a copy.
    fn within(buffer: &Bytes, raw: &RawValue) -> Result<Self, serde_json::Error> {
        let KeyMeta {
            name,
            namespace,
            resource_version,
            ..
        } = read_key_meta(raw.get())?;
        Ok(RawObject {
            key: ObjectKey {
                namespace: namespace.filter(|ns| !ns.is_empty()),
                name: name.unwrap_or_default(),
            },
            resource_version,
            json: buffer.slice_ref(raw.get().as_bytes()),
        })
    }
}

/// The parts of an object's JSON a raw object reads.
#[derive(Default)]
struct KeyMeta {
    name: Option<String>,
    namespace: Option<String>,
    resource_version: Option<String>,
    /// All three were read: the reading stopped there.
    complete: bool,
}

/// Reads an object's name, namespace and resourceVersion from its JSON (which the caller has
/// checked is well-formed), stopping as soon as it has the three: the API server writes them
/// first in `metadata`, before `managedFields` and the object's body, so a namespaced object
/// is read no further than its resourceVersion. A cluster-scoped one is read to the end of
/// its `metadata` (a namespace might still follow); nothing after `metadata` is read.
fn read_key_meta(json: &str) -> Result<KeyMeta, serde_json::Error> {
    let mut meta = KeyMeta::default();
    let mut de = serde_json::Deserializer::from_str(json);
    match serde::de::DeserializeSeed::deserialize(TopSeed(&mut meta), &mut de) {
        // Stopped early on purpose, the three at hand.
        Err(_) if meta.complete => Ok(meta),
        Err(error) => Err(error),
        Ok(()) => Ok(meta),
    }
}

/// The error that stops a reading once it has what it wants; never seen by a caller.
fn stop<E: serde::de::Error>() -> E {
    E::custom("stop")
}

#[derive(serde::Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum TopKey {
    Metadata,
    #[serde(other)]
    Other,
}

#[derive(serde::Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum MetaKey {
    Name,
    Namespace,
    ResourceVersion,
    #[serde(other)]
    Other,
}

struct TopSeed<'a>(&'a mut KeyMeta);

impl<'de> serde::de::DeserializeSeed<'de> for TopSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for TopSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<TopKey>()? {
            match key {
                TopKey::Metadata => {
                    map.next_value_seed(MetaSeed(&mut *self.0))?;
                    // Nothing else is wanted: stop (unless the metadata stopped already).
                    self.0.complete = true;
                    return Err(stop());
                }
                TopKey::Other => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct MetaSeed<'a>(&'a mut KeyMeta);

impl<'de> serde::de::DeserializeSeed<'de> for MetaSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> serde::de::Visitor<'de> for MetaSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("object metadata")
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let meta = self.0;
        while let Some(key) = map.next_key::<MetaKey>()? {
            match key {
                MetaKey::Name => meta.name = map.next_value()?,
                MetaKey::Namespace => meta.namespace = map.next_value()?,
                MetaKey::ResourceVersion => meta.resource_version = map.next_value()?,
                MetaKey::Other => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
            if meta.name.is_some() && meta.namespace.is_some() && meta.resource_version.is_some() {
                meta.complete = true;
                return Err(stop());
            }
        }
        Ok(())
    }
}

/// An object's metadata, read from its JSON: [`HeadMeta`] under `metadata`, everything else
/// skipped without being built.
#[derive(serde::Deserialize)]
struct MetaHead {
    #[serde(default)]
    metadata: HeadMeta,
}

/// The metadata of an object's JSON, less `managedFields`.
pub(crate) fn read_meta(json: &[u8]) -> Result<ObjectMeta, serde_json::Error> {
    let head: MetaHead = serde_json::from_slice(json)?;
    Ok(head.metadata.into())
}

/// `ObjectMeta` less `managedFields`: serde skips that field's JSON (and any other unknown
/// one) without building it, where `ObjectMeta` would build a `serde_json::Value` tree for
/// each entry's `fieldsV1`.
#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct HeadMeta {
    annotations: Option<BTreeMap<String, String>>,
    creation_timestamp: Option<Time>,
    deletion_grace_period_seconds: Option<i64>,
    deletion_timestamp: Option<Time>,
    finalizers: Option<Vec<String>>,
    generate_name: Option<String>,
    generation: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    name: Option<String>,
    namespace: Option<String>,
    owner_references: Option<Vec<OwnerReference>>,
    resource_version: Option<String>,
    self_link: Option<String>,
    uid: Option<String>,
}

impl From<HeadMeta> for ObjectMeta {
    fn from(m: HeadMeta) -> Self {
        ObjectMeta {
            annotations: m.annotations,
            creation_timestamp: m.creation_timestamp,
            deletion_grace_period_seconds: m.deletion_grace_period_seconds,
            deletion_timestamp: m.deletion_timestamp,
            finalizers: m.finalizers,
            generate_name: m.generate_name,
            generation: m.generation,
            labels: m.labels,
            managed_fields: None,
            name: m.name,
            namespace: m.namespace,
            owner_references: m.owner_references,
            resource_version: m.resource_version,
            self_link: m.self_link,
            uid: m.uid,
        }
    }
}

impl RawObject {
    /// Drops `metadata.managedFields` from the JSON (see [`without_managed_fields`]); the
    /// object then has a buffer of its own. Nothing changes for an object without them.
    pub(crate) fn strip_managed_fields(&mut self) {
        if let Some(json) = without_managed_fields(&self.json) {
            self.json = Bytes::from(json);
        }
    }
}

/// `json`, an object's JSON, less its `metadata.managedFields` member, cut out of the text as
/// it is (every other byte kept, in order); `None` when there is none to cut (or the text is
/// not an object with one `metadata` object holding one `managedFields`).
pub(crate) fn without_managed_fields(json: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(json).ok()?;
    let metadata = only_wanted(&members(text, "metadata")?)?;
    let meta = &text[metadata.clone()];
    if !meta.starts_with('{') {
        return None;
    }
    let inner = members(meta, "managedFields")?;
    let at = inner.iter().position(|m| m.wanted)?;
    only_wanted(&inner)?;
    // A member after the first goes with the comma before it; the first, with the one after.
    let cut = if at > 0 {
        inner[at - 1].value.end..inner[at].value.end
    } else {
        let end = inner[0].value.end;
        let rest = &meta[end..];
        let comma = (rest.find(|c: char| !c.is_ascii_whitespace()))
            .filter(|&i| rest.as_bytes()[i] == b',')
            .map_or(end, |i| end + i + 1);
        1..comma
    };
    let cut = metadata.start + cut.start..metadata.start + cut.end;
    let mut out = Vec::with_capacity(json.len() - cut.len());
    out.extend_from_slice(&json[..cut.start]);
    out.extend_from_slice(&json[cut.end..]);
    Some(out)
}

/// One member of a JSON object, as [`members`] finds it.
struct Member {
    /// Its key is the one sought.
    wanted: bool,
    /// Where its value is in the object's text.
    value: std::ops::Range<usize>,
}

/// The value's range of the one wanted member, if exactly one is.
fn only_wanted(members: &[Member]) -> Option<std::ops::Range<usize>> {
    let mut wanted = members.iter().filter(|m| m.wanted);
    match (wanted.next(), wanted.next()) {
        (Some(m), None) => Some(m.value.clone()),
        _ => None,
    }
}

/// The members of the JSON object `json`, in order, those keyed `name` marked; `None` if
/// `json` is not an object.
fn members(json: &str, name: &str) -> Option<Vec<Member>> {
    let mut de = serde_json::Deserializer::from_str(json);
    let visitor = Members {
        base: json.as_ptr() as usize,
        name,
    };
    let members = (&mut de).deserialize_map(visitor).ok()?;
    de.end().ok()?;
    Some(members)
}

/// Reads an object's members as raw values, noting where each is (`base`: the text's start).
struct Members<'n> {
    base: usize,
    name: &'n str,
}

impl<'de> serde::de::Visitor<'de> for Members<'_> {
    type Value = Vec<Member>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Vec<Member>, A::Error> {
        let mut out = Vec::new();
        while let Some(wanted) = map.next_key_seed(KeyIs(self.name))? {
            let value: &'de RawValue = map.next_value()?;
            let start = value.get().as_ptr() as usize - self.base;
            out.push(Member {
                wanted,
                value: start..start + value.get().len(),
            });
        }
        Ok(out)
    }
}

/// Reads a key, answering whether it is the one named (escaped or not).
struct KeyIs<'n>(&'n str);

impl<'de> serde::de::DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> serde::de::Visitor<'de> for KeyIs<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, key: &str) -> Result<bool, E> {
        Ok(key == self.0)
    }
}

impl<'de> Deserialize<'de> for RawObject {
    /// Only from serde_json, and not from inside a buffered (flattened or untagged) value:
    /// the JSON is captured as it is in the input.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let json = Box::<RawValue>::deserialize(deserializer)?;
        let KeyMeta {
            name,
            namespace,
            resource_version,
            ..
        } = read_key_meta(json.get()).map_err(D::Error::custom)?;
        let json: Box<str> = json.into();
        Ok(RawObject {
            key: ObjectKey {
                namespace: namespace.filter(|ns| !ns.is_empty()),
                name: name.unwrap_or_default(),
            },
            resource_version,
            json: Bytes::from(json.into_boxed_bytes()),
        })
    }
}

/// A list response with its items kept raw, borrowed from the body (kube's `ObjectList`
/// flattens its type fields, which buffers the whole body and loses the raw items).
#[derive(serde::Deserialize)]
struct RawList<'a> {
    #[serde(default)]
    metadata: ListMeta,
    #[serde(default, borrow, deserialize_with = "null_as_empty")]
    items: Vec<&'a RawValue>,
}

fn null_as_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<&'de RawValue>, D::Error> {
    Ok(Option::<Vec<&'de RawValue>>::deserialize(d)?.unwrap_or_default())
}

/// A list response's body as an [`ObjectList`] of [`RawObject`]s, each a slice of `body`.
pub(super) fn decode_list(body: &Bytes) -> Result<ObjectList<RawObject>, serde_json::Error> {
    let list: RawList = serde_json::from_slice(body)?;
    let items = (list.items.into_iter())
        .map(|raw| RawObject::within(body, raw))
        .collect::<Result<_, _>>()?;
    Ok(ObjectList {
        types: TypeMeta {
            api_version: "v1".into(),
            kind: "List".into(),
        },
        metadata: list.metadata,
        items,
    })
}

/// The type of a watch event, as its line names it.
#[derive(serde::Deserialize)]
#[serde(rename_all = "UPPERCASE")]
enum EventType {
    Added,
    Modified,
    Deleted,
    Bookmark,
    Error,
}

/// A watch event's line, its object left raw and borrowed.
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type")]
    kind: EventType,
    #[serde(borrow)]
    object: &'a RawValue,
}

/// One watch event's line (`line`, a whole line of a watch response) as a [`WatchEvent`] of a
/// [`RawObject`] that keeps a slice of the line's buffer; the same events, and the same
/// errors, as decoding the line into `WatchEvent<RawObject>`.
pub(super) fn decode_event(line: &Bytes) -> Result<WatchEvent<RawObject>, serde_json::Error> {
    let Envelope { kind, object } = serde_json::from_slice(line)?;
    let raw = || RawObject::within(line, object);
    Ok(match kind {
        EventType::Added => WatchEvent::Added(raw()?),
        EventType::Modified => WatchEvent::Modified(raw()?),
        EventType::Deleted => WatchEvent::Deleted(raw()?),
        EventType::Bookmark => WatchEvent::Bookmark(serde_json::from_str(object.get())?),
        EventType::Error => {
            WatchEvent::Error(Box::new(serde_json::from_str::<Status>(object.get())?))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_client::core::WatchEvent;

    /// The JSON `text` less `metadata.managedFields`, as a value.
    fn stripped_value(text: &str) -> serde_json::Value {
        let mut value: serde_json::Value = serde_json::from_str(text).unwrap();
        value["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        value
    }

    /// managedFields go, wherever they stand among the metadata's members and however the
    /// text is spaced or escaped; every other byte stays; an object without them, or whose
    /// metadata is not an object, is left alone.
    #[test]
    fn managed_fields_are_cut_out_of_the_json_as_it_is() {
        let mf = r#"[{"manager":"kubectl","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}}}}]"#;
        let cases = [
            format!(
                r#"{{"metadata":{{"name":"a","namespace":"ns","managedFields":{mf},"uid":"u"}},"data":{{"a":"1"}}}}"#
            ),
            format!(r#"{{"metadata":{{"managedFields":{mf},"name":"a"}}}}"#),
            format!(r#"{{"metadata":{{"name":"a","managedFields":{mf}}}}}"#),
            format!(r#"{{"metadata":{{"managedFields":{mf}}},"kind":"ConfigMap"}}"#),
            format!(r#"{{ "metadata" : {{ "managedFields" : {mf} , "name" : "a" }} }}"#),
            format!(
                r#"{{"kind":"X","metadata":{{"name":"a","managedFields":{mf}}},"spec":{{"managedFields":1}}}}"#
            ),
            r#"{"metadata":{"name":"a","managedFields":null}}"#.to_string(),
        ];
        for text in cases {
            let out = without_managed_fields(text.as_bytes()).unwrap_or_else(|| panic!("{text}"));
            let out = std::str::from_utf8(&out).unwrap();
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(out).unwrap(),
                stripped_value(&text),
                "{text} -> {out}"
            );
            assert!(!out.contains("kubectl"), "{out}");
        }
        // The bytes around the cut are the original's.
        let text = format!(
            r#"{{"metadata":{{"name":"a","managedFields":{mf},"uid":"u"}},"data":{{"a":"1"}}}}"#
        );
        assert_eq!(
            without_managed_fields(text.as_bytes()).unwrap(),
            br#"{"metadata":{"name":"a","uid":"u"},"data":{"a":"1"}}"#
        );
        for untouched in [
            r#"{"metadata":{"name":"a"},"data":{"managedFields":"x"}}"#,
            r#"{"metadata":null}"#,
            r#"{"kind":"X"}"#,
            r#"[1,2]"#,
            r#"{"metadata":{"managedFields":[],"managedFields":[]}}"#,
            r#"{"metadata":{"managedFields":[]}"#,
        ] {
            assert_eq!(
                without_managed_fields(untouched.as_bytes()),
                None,
                "{untouched}"
            );
        }
    }

    #[test]
    fn raw_objects_keep_the_json_and_read_the_key() {
        let text = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"7","labels":{"x":"y"}},"data":{"k":"v"}}"#;
        let raw: RawObject = serde_json::from_str(text).unwrap();
        assert_eq!(raw.key(), &ObjectKey::new("ns", "a"));
        assert_eq!(raw.resource_version(), Some("7"));
        assert_eq!(raw.json(), text.as_bytes());
        // Cluster-scoped: no namespace.
        let raw: RawObject = serde_json::from_str(r#"{"metadata":{"name":"n"}}"#).unwrap();
        assert_eq!(raw.key(), &ObjectKey::cluster_scoped("n"));
        // Its metadata, read on request; managedFields skipped.
        let text = r#"{"metadata":{"name":"a","uid":"u","generation":3,"labels":{"x":"y"},"managedFields":[{"manager":"m","fieldsV1":{"f:data":{}}}],"ownerReferences":[{"apiVersion":"v1","kind":"K","name":"o","uid":"ou","controller":true}],"finalizers":["f"],"deletionTimestamp":"2026-01-01T00:00:00Z"}}"#;
        let meta = serde_json::from_str::<RawObject>(text)
            .unwrap()
            .metadata()
            .unwrap();
        assert_eq!(meta.uid.as_deref(), Some("u"));
        assert_eq!(meta.generation, Some(3));
        assert_eq!(meta.labels.unwrap()["x"], "y");
        assert!(meta.managed_fields.is_none());
        assert_eq!(meta.owner_references.unwrap()[0].name, "o");
        assert_eq!(meta.finalizers.unwrap(), ["f"]);
        assert!(meta.deletion_timestamp.is_some());
        // Not an object: an error, not a panic.
        assert!(serde_json::from_str::<RawObject>(r#"{"metadata":7}"#).is_err());
    }

    #[test]
    fn the_key_reads_the_same_in_any_order_and_stops_early() {
        let cases = [
            (
                r#"{"metadata":{"name":"a","namespace":"ns","resourceVersion":"7"},"data":{"k":"v"}}"#,
                Some("ns"),
                "a",
                Some("7"),
            ),
            // Another order, the body first, managedFields before the version.
            (
                r#"{"data":{"k":"v"},"metadata":{"managedFields":[{"fieldsV1":{"f:data":{}}}],"resourceVersion":"8","namespace":"ns","name":"b"}}"#,
                Some("ns"),
                "b",
                Some("8"),
            ),
            // Cluster-scoped: read to the end of metadata.
            (
                r#"{"apiVersion":"v1","metadata":{"name":"n","uid":"u","labels":{"a":"b"}},"spec":{}}"#,
                None,
                "n",
                None,
            ),
            (r#"{"metadata":null}"#, None, "", None),
            (r#"{"kind":"X"}"#, None, "", None),
            (
                r#"{"metadata":{"name":"a","namespace":"","resourceVersion":"1"}}"#,
                None,
                "a",
                Some("1"),
            ),
        ];
        for (json, ns, name, rv) in cases {
            let raw: RawObject = serde_json::from_str(json).unwrap();
            assert_eq!(raw.key().namespace.as_deref(), ns, "{json}");
            assert_eq!(raw.key().name, name, "{json}");
            assert_eq!(raw.resource_version(), rv, "{json}");
            assert_eq!(raw.json(), json.as_bytes());
        }
        // Stopped at the version: the rest (here not even valid for the type) is not read.
        let meta = read_key_meta(
            r#"{"metadata":{"name":"a","namespace":"ns","resourceVersion":"7","labels":7}}"#,
        )
        .unwrap();
        assert!(meta.complete);
        // Errors before the key is complete are errors.
        assert!(read_key_meta(r#"{"metadata":{"name":7}}"#).is_err());
        assert!(read_key_meta(r#"[1]"#).is_err());
    }

    #[test]
    fn watch_events_and_lists_decode_around_raw_objects() {
        let line = r#"{"type":"MODIFIED","object":{"metadata":{"name":"a","namespace":"ns","resourceVersion":"9"}}}"#;
        match serde_json::from_str::<WatchEvent<RawObject>>(line).unwrap() {
            WatchEvent::Modified(raw) => assert_eq!(raw.resource_version(), Some("9")),
            other => panic!("{other:?}"),
        }
        let list = r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"12","continue":"c"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}"#;
        let list = decode_list(&Bytes::from(list)).unwrap();
        assert_eq!(list.metadata.resource_version.as_deref(), Some("12"));
        assert_eq!(list.metadata.continue_.as_deref(), Some("c"));
        let names: Vec<_> = list.items.iter().map(|o| o.key().name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(list.items[1].json(), br#"{"metadata":{"name":"b"}}"#);
        let empty = decode_list(&Bytes::from_static(br#"{"items":null}"#)).unwrap();
        assert!(empty.items.is_empty());
        assert!(decode_list(&Bytes::from_static(br#"{"items":[{"metadata":7}]}"#)).is_err());
    }

    /// The shared decoding of a watch line gives what the generic decoding of the same line
    /// gives, for every type of event, and fails where it fails.
    #[test]
    fn a_shared_line_decodes_as_the_generic_decoding_does() {
        let lines = [
            r#"{"type":"ADDED","object":{"metadata":{"name":"a","namespace":"ns","resourceVersion":"7"},"data":{"k":"v"}}}"#,
            r#"{"type":"MODIFIED","object":{"metadata":{"name":"n","resourceVersion":"8"}}}"#,
            r#"{"type":"DELETED","object":{"metadata":{"name":"a","namespace":"ns","resourceVersion":"9"}}}"#,
            r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"10","annotations":{"k8s.io/initial-events-end":"true"}}}}"#,
            r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old","reason":"Expired","code":410}}"#,
        ];
        let describe = |event: WatchEvent<RawObject>| match event {
            WatchEvent::Added(o) => format!(
                "added {:?} {:?} {:?}",
                o.key(),
                o.resource_version(),
                o.json()
            ),
            WatchEvent::Modified(o) => format!("modified {:?} {:?}", o.key(), o.json()),
            WatchEvent::Deleted(o) => format!("deleted {:?} {:?}", o.key(), o.json()),
            WatchEvent::Bookmark(b) => format!(
                "bookmark {} {:?}",
                b.metadata.resource_version, b.metadata.annotations
            ),
            WatchEvent::Error(s) => format!("error {} {}", s.code, s.message),
        };
        for line in lines {
            let generic = serde_json::from_str::<WatchEvent<RawObject>>(line).unwrap();
            let shared = decode_event(&Bytes::from(line)).unwrap();
            assert_eq!(describe(shared), describe(generic), "{line}");
        }
        // The object before the type (no API server writes it so): the generic decoding of an
        // adjacently tagged enum buffers the object then, and a raw value cannot be read from
        // a buffer; the shared one reads it in place.
        let late = r#"{"object":{"metadata":{"name":"a","namespace":"ns"}},"type":"DELETED"}"#;
        assert!(serde_json::from_str::<WatchEvent<RawObject>>(late).is_err());
        match decode_event(&Bytes::from(late)).unwrap() {
            WatchEvent::Deleted(o) => assert_eq!(o.key(), &ObjectKey::new("ns", "a")),
            other => panic!("{other:?}"),
        }
        for bad in [
            r#"{"type":"ADDED","object":{"metadata":{"name":7}}}"#,
            r#"{"type":"RENAMED","object":{}}"#,
            r#"{"type":"ADDED"}"#,
            r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}"#,
        ] {
            assert!(
                serde_json::from_str::<WatchEvent<RawObject>>(bad).is_err(),
                "{bad}"
            );
            assert!(decode_event(&Bytes::from(bad)).is_err(), "{bad}");
        }
    }

    /// An object decoded from a line keeps a slice of the line's buffer; detached, a copy of
    /// its own with the same bytes.
    #[test]
    fn objects_share_their_lines_buffer_until_detached() {
        let line = Bytes::from_static(
            br#"{"type":"ADDED","object":{"metadata":{"name":"a","namespace":"ns"}}}"#,
        );
        let WatchEvent::Added(mut obj) = decode_event(&line).unwrap() else {
            panic!("not an add");
        };
        let within = line.as_ptr_range();
        assert!(within.contains(&obj.json().as_ptr()));
        assert_eq!(obj.json(), br#"{"metadata":{"name":"a","namespace":"ns"}}"#);
        obj.detach();
        assert!(!within.contains(&obj.json().as_ptr()));
        assert_eq!(obj.json(), br#"{"metadata":{"name":"a","namespace":"ns"}}"#);
    }
}
