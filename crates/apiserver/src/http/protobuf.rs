//! The Kubernetes protobuf encoding (`application/vnd.kubernetes.protobuf`) of every built-in
//! kind, for request bodies, responses, lists, watch events and option bodies
//! (`DeleteOptions`).
//!
//! An encoded object is the magic `k8s\0` followed by a `runtime.Unknown` message: `typeMeta`
//! (`apiVersion`, `kind`), `raw` (the kind's message), `contentEncoding` and `contentType`
//! (both empty). The kinds' messages are described by upstream's `generated.proto` files,
//! compiled at build time into a descriptor set (`build.rs`); one walk over those descriptors
//! converts the JSON the rest of the server works with to and from the wire format
//! ([`to_json`], [`from_json`]), as upstream's field names are the JSON field names.
//!
//! A watch in protobuf is a stream of frames, each a 4-byte big-endian length and a
//! `meta.v1.WatchEvent` (`type`, and `object`: a `RawExtension` whose bytes are the event's
//! object encoded as above).
//!
//! The kind of a body is found by its `apiVersion` and `kind`: group `apps` version `v1` is
//! the package `api.apps.v1`, the core group `api.core.v1`; the meta kinds every group version
//! carries (`DeleteOptions`, `Status`, `WatchEvent`...) are apimachinery's `meta.v1`. Custom
//! resources have no protobuf form, as upstream: their bodies are refused with a 415 and their
//! answers are JSON.

use serde_json::Value;

use crate::error::ApiError;

mod convert;
mod descriptors;
pub mod duration;

use convert::bad_body;
pub use convert::{from_json, to_json};
pub use descriptors::message_for;

/// The media type of the encoding.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The `Content-Type` of a watch stream in protobuf.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// Whether objects of `kind` in `api_version` have a protobuf form.
pub fn has_kind(api_version: &str, kind: &str) -> bool {
    message_for(api_version, kind).is_some()
}

/// Whether a `Content-Type` is the protobuf encoding.
pub fn is_protobuf(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|ct| {
        ct.split(';')
            .next()
            .is_some_and(|m| m.trim().eq_ignore_ascii_case(MEDIA_TYPE))
    })
}

/// Whether an `Accept` header asks for protobuf objects first: its first media type is the
/// protobuf encoding, with no `as=` (Tables and metadata are answered in JSON, the next type
/// every such client lists).
pub fn wants(accept: Option<&str>) -> bool {
    let Some(first) = accept.and_then(|a| a.split(',').next()) else {
        return false;
    };
    let mut params = first.split(';').map(str::trim);
    params
        .next()
        .is_some_and(|m| m.eq_ignore_ascii_case(MEDIA_TYPE))
        && !params.any(|p| p.starts_with("as="))
}

/// A length-delimited field of a message.
fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    convert::put_varint(out, u64::from(number) << 3 | 2);
    convert::put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Decodes a protobuf body (`k8s\0` + `runtime.Unknown`) into the object's JSON, with its
/// `apiVersion` and `kind`.
pub fn decode(body: &[u8]) -> Result<Value, ApiError> {
    convert::decode_at(body, 0)
}

/// Encodes an object (with its `apiVersion` and `kind`) in protobuf; `None` when its kind has
/// no protobuf form (a custom resource).
pub fn encode(obj: &Value) -> Option<Vec<u8>> {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let desc = message_for(api_version, kind)?;
    let raw = from_json(obj, &desc, None);
    let mut type_meta = Vec::new();
    put_bytes(&mut type_meta, 1, api_version.as_bytes());
    put_bytes(&mut type_meta, 2, kind.as_bytes());
    let mut out = Vec::with_capacity(raw.len() + type_meta.len() + 16);
    out.extend_from_slice(convert::MAGIC);
    put_bytes(&mut out, 1, &type_meta);
    put_bytes(&mut out, 2, &raw);
    put_bytes(&mut out, 3, b"");
    put_bytes(&mut out, 4, b"");
    Some(out)
}

/// One watch event as a frame of a protobuf watch stream: the length, then the
/// `meta.v1.WatchEvent`. An object with no protobuf form is carried as its JSON, as upstream
/// carries a `RawExtension` of JSON.
pub fn watch_frame(event_type: &str, object: &Value) -> Vec<u8> {
    let embedded = encode(object).unwrap_or_else(|| serde_json::to_vec(object).unwrap_or_default());
    let mut raw_ext = Vec::with_capacity(embedded.len() + 8);
    put_bytes(&mut raw_ext, 1, &embedded);
    let mut event = Vec::with_capacity(raw_ext.len() + 24);
    put_bytes(&mut event, 1, event_type.as_bytes());
    put_bytes(&mut event, 2, &raw_ext);
    let mut frame = Vec::with_capacity(event.len() + 4);
    frame.extend_from_slice(&(event.len() as u32).to_be_bytes());
    frame.extend_from_slice(&event);
    frame
}

/// Reads the frames of a protobuf watch stream back into `(type, object)` pairs (the client
/// side of [`watch_frame`]).
pub fn read_watch_frames(mut stream: &[u8]) -> Result<Vec<(String, Value)>, ApiError> {
    let mut events = Vec::new();
    while !stream.is_empty() {
        let (len, rest) = stream
            .split_first_chunk::<4>()
            .ok_or_else(|| bad_body("truncated frame length"))?;
        let len = u32::from_be_bytes(*len) as usize;
        if rest.len() < len {
            return Err(bad_body("truncated frame"));
        }
        let (frame, rest) = rest.split_at(len);
        stream = rest;
        let mut r = convert::Reader::new(frame);
        let (mut kind, mut object) = (String::new(), Value::Null);
        while !r.is_empty() {
            match r.key()? {
                (1, 2) => kind = r.string()?,
                (2, 2) => {
                    let mut ext = convert::Reader::new(r.bytes()?);
                    while !ext.is_empty() {
                        match ext.key()? {
                            (1, 2) => object = convert::decode_embedded(ext.bytes()?, 0)?,
                            (_, wire) => ext.skip(wire)?,
                        }
                    }
                }
                (_, wire) => r.skip(wire)?,
            }
        }
        events.push((kind, object));
    }
    Ok(events)
}

#[cfg(test)]
mod tests;
