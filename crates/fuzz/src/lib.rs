//! # crt-fuzz
//!
//! Fuzz targets for what parses untrusted input in controller-runtime-rs: each is a
//! `pub fn(data: &[u8])` that must never panic, whatever `data` is (an error answered is fine;
//! a panic is a bug in the crate the input reached).
//!
//! | target | what it reaches |
//! | --- | --- |
//! | [`request()`] | the API server's routing and query parsing, and a `GET` of any URI through its handler |
//! | [`selectors`] | label and field selectors (`crt-labels`), and the server's selection of a list |
//! | [`json_body`] | create bodies (JSON, YAML, protobuf by content type) and the typed decoding of built-in kinds, and a dry-run create |
//! | [`patch`] | JSON patch, JSON merge patch and strategic merge patch, directly and as a dry-run `PATCH` |
//! | [`apply`] | server-side apply (field ownership, conflicts, list merging), directly and as a dry-run apply |
//! | [`protobuf`] | protobuf request bodies (the Kubernetes envelope) |
//! | [`crd_schema`] | CRD structural schemas: the structural check and CEL rule compilation of any schema, then defaulting, pruning and validation (CEL rules included) of any object |
//! | [`watch_lines`] | the runtime's watch-response decoder, over any split into chunks |
//!
//! Inputs made of several parts (an object and a patch, a schema and an object) separate them
//! with a NUL byte (`\0`); a missing part is empty.
//!
//! Two ways to run them:
//! - Stable, bounded, in the test suite (`tests/fuzz.rs`, part of `cargo test --workspace`):
//!   [`driver::run`] replays the committed corpus (`corpus/<target>/`) and then mutates it for a
//!   bounded number of iterations; `CRT_FUZZ_ITERS` and `CRT_FUZZ_SECS` run it longer.
//! - Coverage-guided, with cargo-fuzz on nightly: `crates/fuzz/fuzz/` has one libFuzzer target per
//!   function here (see the README).

pub mod driver;
pub mod server;

use bytes::Bytes;
use crt_apiserver::fieldmanager::{self, Writer, shape::Shape};
use crt_apiserver::http::request;
use crt_apiserver::patch::{MergeKeys, PatchKind, apply_patch};
use crt_apiserver::schema::StructuralSchema;
use crt_labels::{FieldSelector, LabelSelector};
use serde_json::Value;

/// A fuzz target: never panics, whatever the input.
pub type Target = fn(&[u8]);

/// Every target, by the name of its corpus directory and cargo-fuzz target.
pub const TARGETS: &[(&str, Target)] = &[
    ("request", request),
    ("selectors", selectors),
    ("json_body", json_body),
    ("patch", patch),
    ("apply", apply),
    ("protobuf", protobuf),
    ("crd_schema", crd_schema),
    ("watch_lines", watch_lines),
];

/// The `n` first NUL-separated parts of `data` (the last holds the rest; missing parts are
/// empty).
fn parts(data: &[u8], n: usize) -> Vec<&[u8]> {
    let mut out: Vec<&[u8]> = data.splitn(n, |b| *b == 0).collect();
    out.resize(n, &[]);
    out
}

/// `data` as text (invalid UTF-8 replaced, as a server reading bytes as text would see it).
fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// The built-in kinds the object targets pick from: group, version, kind, and the path of the
/// seeded object of that kind (`server::OBJECTS`).
const KINDS: &[(&str, &str, &str, &str)] = &[
    ("", "v1", "Pod", server::OBJECTS[0]),
    ("apps", "v1", "Deployment", server::OBJECTS[1]),
    ("", "v1", "ConfigMap", server::OBJECTS[2]),
];

fn kind_of(byte: u8) -> (&'static str, &'static str, &'static str, &'static str) {
    KINDS[usize::from(byte) % KINDS.len()]
}

/// Routing and query parsing: `data` is a request URI (path and query), then after a newline a
/// `DeleteOptions` body. The path and query go through the server's parsers, then as a `GET`
/// (lists, watches, discovery, OpenAPI, health, anything) through its handler.
pub fn request(data: &[u8]) {
    let (uri, body) = match data.iter().position(|b| *b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let uri_text = text(uri);
    let (path, query) = match uri_text.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (uri_text.as_str(), None),
    };
    std::hint::black_box(request::parse_path(path));
    if let Ok(q) = request::parse_query(query) {
        std::hint::black_box((
            q.list_options(),
            q.watch_options(Some(path)),
            q.write_options(),
        ));
        let _ = q.field_validation("CreateOptions");
        let _ = q.delete_options(None, body);
        let _ = q.delete_options(Some("application/vnd.kubernetes.protobuf"), body);
    }
    let _ = request::patch_type(Some(&uri_text));
    std::hint::black_box(request::accept(Some(&uri_text)));
    std::hint::black_box(request::percent_decode(&uri_text));
    server::send("GET", uri, &[("accept", body)], Vec::new());
}

/// Label and field selectors: a label selector, `\0`, a field selector, `\0`, then labels
/// (`key=value` lines) to match them against. A selector that parses must print as one that
/// parses back to itself. Both then select a list of Pods and of Events on the server.
pub fn selectors(data: &[u8]) {
    let p = parts(data, 3);
    let (labels_text, fields_text) = (text(p[0]), text(p[1]));
    let set: std::collections::BTreeMap<String, String> = text(p[2])
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if let Ok(sel) = labels_text.parse::<LabelSelector>() {
        let printed = sel.to_string();
        let again = printed.parse::<LabelSelector>();
        assert!(
            again.as_ref() == Ok(&sel),
            "label selector {labels_text:?} printed as {printed:?}, which parses as {again:?}"
        );
        std::hint::black_box(sel.matches(&set));
    }
    if let Ok(sel) = fields_text.parse::<FieldSelector>() {
        let printed = sel.to_string();
        let again = printed.parse::<FieldSelector>();
        assert!(
            again.as_ref() == Ok(&sel),
            "field selector {fields_text:?} printed as {printed:?}, which parses as {again:?}"
        );
        std::hint::black_box(sel.matches(&set));
    }
    let query = format!(
        "labelSelector={}&fieldSelector={}",
        server::encode_query_value(&labels_text),
        server::encode_query_value(&fields_text)
    );
    for path in ["/api/v1/namespaces/default/pods", "/api/v1/events"] {
        server::send("GET", format!("{path}?{query}").as_bytes(), &[], Vec::new());
    }
}

/// The content types a body target picks from (by its first byte).
const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json; charset=utf-8",
    "text/plain",
];

/// Create bodies: the first byte picks a content type and a built-in kind, the rest is the
/// body. Decoded by the server's body decoder (also reporting duplicate fields) and by the
/// typed decoding of each built-in kind, then created with `dryRun=All` through the handler.
pub fn json_body(data: &[u8]) {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let content_type = CONTENT_TYPES[usize::from(pick) % CONTENT_TYPES.len()];
    let _ = request::decode_object(Some(content_type), body);
    let _ = request::decode_object_reporting_duplicates(Some(content_type), body);
    if let Ok(obj) = request::parse_object(body) {
        for (group, version, kind, _) in KINDS {
            let mut copy = obj.clone();
            if let Some(decoder) =
                crt_apiserver::schema::decode::Decoder::for_kind(group, version, kind)
            {
                let _ = decoder.decode(&mut copy);
            }
        }
    }
    let (_, _, _, object) = kind_of(pick / 8);
    let collection = object.rsplit_once('/').map_or(object, |(c, _)| c);
    server::send(
        "POST",
        format!("{collection}?dryRun=All&fieldValidation=Strict").as_bytes(),
        &[("content-type", content_type.as_bytes())],
        body.to_vec(),
    );
}

/// Patches: the first byte picks the patch type and a built-in kind, then the original object,
/// `\0`, the patch. Applied directly, then as a dry-run `PATCH` of the seeded object of that
/// kind.
pub fn patch(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let p = parts(rest, 2);
    let (kind, content_type) = match pick % 3 {
        0 => (PatchKind::Json, "application/json-patch+json"),
        1 => (PatchKind::Merge, "application/merge-patch+json"),
        _ => (
            PatchKind::StrategicMerge,
            "application/strategic-merge-patch+json",
        ),
    };
    let (group, _, kind_name, object) = kind_of(pick / 3);
    let original = serde_json::from_slice::<Value>(p[0]).unwrap_or(Value::Null);
    let keys = MergeKeys::builtin(group, kind_name);
    let _ = apply_patch(kind, &original, p[1], Some(&keys));
    server::send(
        "PATCH",
        format!("{object}?dryRun=All").as_bytes(),
        &[("content-type", content_type.as_bytes())],
        p[1].to_vec(),
    );
}

/// Server-side apply: the first byte picks a built-in kind and `force`, then the live object,
/// `\0`, the applied configuration (YAML or JSON). Applied by one manager and then by another
/// over the result (ownership, conflicts, list merging), then as a dry-run apply of the seeded
/// object of that kind.
pub fn apply(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let p = parts(rest, 2);
    let force = pick & 1 == 1;
    let (group, version, kind_name, object) = kind_of(pick / 2);
    let shape = Shape::builtin(group, kind_name);
    let api_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let writer = |manager| Writer {
        manager,
        subresource: None,
        api_version: &api_version,
        now: "2026-01-01T00:00:00Z",
    };
    let live = serde_json::from_slice::<Value>(p[0]).ok();
    if let Ok(config) = fieldmanager::parse_config(p[1])
        && let Ok(first) = fieldmanager::apply(live.as_ref(), &config, &shape, &writer("a"), force)
    {
        let _ = fieldmanager::apply(Some(&first), &config, &shape, &writer("b"), force);
        let mut updated = config.clone();
        fieldmanager::record_update(Some(&first), &mut updated, &shape, &writer("c"));
    }
    let force = if force { "&force=true" } else { "" };
    server::send(
        "PATCH",
        format!("{object}?dryRun=All&fieldManager=fuzz{force}").as_bytes(),
        &[("content-type", b"application/apply-patch+yaml".as_slice())],
        p[1].to_vec(),
    );
}

/// Protobuf request bodies: `data` is the body, decoded directly and created with `dryRun=All`
/// as a ConfigMap through the handler.
pub fn protobuf(data: &[u8]) {
    let _ = crt_apiserver::http::protobuf::decode(data);
    server::send(
        "POST",
        b"/api/v1/namespaces/default/configmaps?dryRun=All",
        &[(
            "content-type",
            b"application/vnd.kubernetes.protobuf".as_slice(),
        )],
        data.to_vec(),
    );
}

/// CRD schema validation: an `openAPIV3Schema` (JSON), `\0`, an object, `\0`, an old object.
/// The schema is checked and compiled (its CEL rules too); when it is structural, the object
/// is defaulted, pruned and validated, and validated as an update from the old one.
pub fn crd_schema(data: &[u8]) {
    let p = parts(data, 3);
    let Ok(schema) = serde_json::from_slice::<Value>(p[0]) else {
        return;
    };
    let Ok(schema) = StructuralSchema::from_value(&schema) else {
        return;
    };
    let Ok(mut obj) = serde_json::from_slice::<Value>(p[1]) else {
        return;
    };
    let old = serde_json::from_slice::<Value>(p[2]).ok();
    std::hint::black_box(schema.validate(&obj));
    schema.apply_defaults(&mut obj);
    schema.prune_reporting(&mut obj);
    std::hint::black_box(schema.validate(&obj));
    if let Some(old) = old {
        std::hint::black_box(schema.validate_update(&obj, &old));
    }
}

/// The runtime's watch-line decoder: the first byte sets a chunk size, the rest is a watch
/// response body received in chunks of that size (so lines split across chunks anywhere).
pub fn watch_lines(data: &[u8]) {
    let Some((&size, body)) = data.split_first() else {
        return;
    };
    let size = usize::from(size % 64) + 1;
    let chunks: Vec<Bytes> = body.chunks(size).map(Bytes::copy_from_slice).collect();
    std::hint::black_box(controller_runtime::cache::fuzz_watch_lines(&chunks));
}
