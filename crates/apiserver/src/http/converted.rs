//! Requests at a version that a CRD converts through its conversion webhook (strategy
//! `Webhook`, a version other than the storage version): the storage is called at the storage
//! version, and this module converts on the way in (request bodies, a patched object) and on
//! the way out (objects, lists, watch events), outside the store's lock, as the real server's
//! codec converts between the request's version and the stored one.
//!
//! Where this differs from upstream, which works on the request's version and converts only
//! when it encodes for etcd:
//! - defaulting, pruning, validation (and its field paths) and admission run on the storage
//!   version's form, and `managedFields` entries name the storage version;
//! - the `scale` subresource reads and writes the storage version's replica paths;
//! - the storage version must be served (a 500 says so otherwise);
//! - objects are taken to be stored at the storage version: objects written before the CRD
//!   switched to `Webhook` (or to another storage version) are read as if they were;
//! - a server-side apply configuration is converted as an object (upstream converts the live
//!   object to the configuration's version and merges there).

use serde_json::Value;

use crate::error::ApiError;
use crate::resource::ResourceInfo;
use crate::storage::{Conversion, PatchType, Storage, Write, WriteOptions};

/// How often a patch is retried when the object changed between its read and its write (the
/// real server's `GuaranteedUpdate` retries likewise).
const PATCH_ATTEMPTS: usize = 5;

/// An answer of the storage (at the storage version) as a client of `res` sees it: an object
/// of the kind or a list of them converted, anything else (a `Status`, a `Scale`) as is.
pub(super) async fn answer(
    conversion: Option<&Conversion>,
    res: &ResourceInfo,
    value: Value,
) -> Result<Value, ApiError> {
    let Some(conversion) = conversion else {
        return Ok(value);
    };
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind == res.list_kind {
        conversion
            .webhook
            .convert_list(value, &res.api_version())
            .await
    } else if kind == res.kind {
        conversion
            .webhook
            .convert_object(value, &res.api_version())
            .await
    } else {
        Ok(value)
    }
}

/// A request body of `res` in the storage version's form. A body the storage will refuse
/// anyway (not an object, another kind or group) is handed on as it is, for the storage's
/// answer.
pub(super) async fn body(
    conversion: Option<&Conversion>,
    res: &ResourceInfo,
    mut body: Value,
) -> Result<Value, ApiError> {
    let Some(conversion) = conversion else {
        return Ok(body);
    };
    let Some(map) = body.as_object_mut() else {
        return Ok(body);
    };
    let api_version = res.api_version();
    let given = |f: &str| {
        map.get(f)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let (given_version, given_kind) = (given("apiVersion"), given("kind"));
    let group_of = |v: &str| v.rsplit_once('/').map_or("", |(g, _)| g).to_string();
    if given_kind.as_ref().is_some_and(|k| *k != res.kind)
        || given_version
            .as_ref()
            .is_some_and(|v| group_of(v) != res.group)
    {
        return Ok(body);
    }
    // As the storage's checks would: a body that names neither is of the request's version.
    map.insert(
        "apiVersion".into(),
        Value::from(given_version.unwrap_or(api_version)),
    );
    map.insert("kind".into(), Value::from(res.kind.clone()));
    conversion
        .webhook
        .convert_object(body, &conversion.storage.api_version())
        .await
}

/// A PATCH of the object (or its `status`) at `res`: merge and JSON patches apply to the
/// object converted to `res`'s version, and the result is converted back and written under
/// the read resourceVersion (retried when the object changed meanwhile, unless the patch
/// itself names a resourceVersion); a server-side apply configuration is converted as an
/// object and applied at the storage version.
#[allow(clippy::too_many_arguments)]
pub(super) async fn patch(
    storage: &Storage,
    conversion: &Conversion,
    res: &ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    subresource: Option<&str>,
    patch_type: PatchType,
    patch: &[u8],
    opts: &WriteOptions,
) -> Result<Value, ApiError> {
    let stored = &conversion.storage;
    if patch_type == PatchType::Apply {
        let Ok(config) = crate::fieldmanager::parse_config(patch) else {
            // The storage words the parse error.
            let answer = storage.patch(
                stored,
                namespace,
                name,
                subresource,
                patch_type,
                patch,
                opts,
            )?;
            return self::answer(Some(conversion), res, answer).await;
        };
        let config = body(Some(conversion), res, config).await?;
        let bytes = serde_json::to_vec(&config).unwrap_or_default();
        let answer = if storage.has_webhooks() {
            let w = Write::Patch(name, subresource, patch_type, &bytes);
            storage.write_hooked(stored, namespace, w, opts).await?
        } else {
            storage.patch(
                stored,
                namespace,
                name,
                subresource,
                patch_type,
                &bytes,
                opts,
            )?
        };
        return self::answer(Some(conversion), res, answer).await;
    }
    let mut attempt = 0;
    loop {
        attempt += 1;
        let old = storage.get(stored, namespace, name, None)?;
        let read_version = old.pointer("/metadata/resourceVersion").cloned();
        let old = answer(Some(conversion), res, old).await?;
        let patched = crate::storage::apply_patch(res, &old, patch_type, patch)?;
        let pinned = patched.pointer("/metadata/resourceVersion").cloned() != read_version;
        let patched = body(Some(conversion), res, patched).await?;
        let result = if storage.has_webhooks() {
            // Admission webhooks see the patched object as an update at the storage version.
            let w = Write::Update(name, subresource, &patched);
            storage.write_hooked(stored, namespace, w, opts).await
        } else {
            storage.update_patched(stored, namespace, name, subresource, patched, opts)
        };
        match result {
            Err(e) if e.code == 409 && !pinned && attempt < PATCH_ATTEMPTS => continue,
            result => return answer(Some(conversion), res, result?).await,
        }
    }
}
