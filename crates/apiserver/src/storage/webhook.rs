//! Which requests go through a CRD's conversion webhook: those at a served version other than
//! the storage version of a CRD whose `spec.conversion.strategy` is `Webhook`, and request
//! bodies of another version than the storage one. The storage
//! only answers the question (the storage version's resource and the webhook, resolved under
//! the lock); the HTTP layer converts, outside the lock, since a webhook call is async.

use std::sync::Arc;

use serde_json::Value;

use super::store::{State, res_key};
use super::{admit, gc};
use crate::conversion::Webhook;
use crate::error::ApiError;
use crate::resource::ResourceInfo;

/// How the objects of a resource served at a version other than the stored one are converted.
#[derive(Clone, Debug)]
pub(crate) struct Conversion {
    /// The resource at the storage version: what the storage is called with.
    pub(crate) storage: Arc<ResourceInfo>,
    /// The CRD's conversion webhook.
    pub(crate) webhook: Webhook,
}

/// The conversion `res` needs: `None` for built-in kinds and CRDs of strategy `None`. At the
/// storage version itself, `storage` is `res`: stored objects need no call (the fast path),
/// only a request body of another version does.
pub(crate) fn conversion(st: &State, res: &ResourceInfo) -> Result<Option<Conversion>, ApiError> {
    if !res.custom {
        return Ok(None);
    }
    let Some(crd) = st.get(gc::CRD_KEY, &(String::new(), res_key(res))) else {
        return Ok(None);
    };
    let Some(storage_version) = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").and_then(Value::as_str))
    else {
        return Ok(None);
    };
    let Some(webhook) = Webhook::from_crd(crd, &admit::lookup(st)) else {
        return Ok(None);
    };
    let storage = st
        .registry
        .resolve(&res.group, storage_version, &res.plural)
        .cloned()
        .ok_or_else(|| {
            ApiError::internal(format!(
                "the storage version {storage_version} of {} is not served: this server converts through it",
                res.group_resource()
            ))
        })?;
    Ok(Some(Conversion { storage, webhook }))
}
