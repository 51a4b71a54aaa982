//! Upstream's validation of built-in objects: what `ValidateObjectMeta` and each group's
//! `pkg/apis/<group>/validation/validation.go` check on create and update, answered with the
//! same 422 `Invalid` Status — code, reason, message and field paths — a kube-apiserver 1.33
//! gives.
//!
//! # Layout
//! - `field.rs`: [`FieldError`], upstream's `field.Error` (`Required value`, `Invalid value:
//!   ...`, ...), the 422 Status built from a list of them ([`invalid`]), and name formats.
//! - `path.rs`: [`Path`], a field path printed as `field.Path` prints it (`spec.ports[0]`).
//! - `objectmeta.rs`: the metadata checks every object gets.
//! - One file per API group with the rules of its kinds (`core.rs`, `apps.rs`, `batch.rs`,
//!   `rbac.rs`, `coordination.rs`, `events.rs`, ...); `pod.rs` holds the pod spec and pod
//!   template rules every workload shares (Pods, PodTemplates, ReplicationControllers, apps,
//!   batch), with `quantity.rs` (resource quantities: parsing, comparing, canonical printing)
//!   and `cron.rs` (CronJob schedules as robfig/cron parses them); `quota.rs` holds
//!   ResourceQuotas' (resource names, quantities, scopes and scope selectors).
//! - `at.rs`: [`At`](at::At), a field path kept on the stack and printed only when an error is
//!   reported, so that valid objects cost no path allocations.
//!
//! A kind's strategy (`kinds::Strategy`) names its [`Validator`] and [`NameFormat`];
//! `kinds::validate` runs the validator, and the storage passes the name format to
//! [`validate_object_meta`]. Adding a kind's validation is adding a function here and naming
//! it in the kind's strategy; nothing here names the kinds.
//!
//! # Invariants
//! - Validators only read: defaulting happened before (as upstream, validation sees the
//!   defaulted object), and they never mutate.
//! - A validator reports every error it finds, in upstream's order, rather than stopping at
//!   the first; the Status lists them all.
//! - Values of the wrong JSON type never reach a validator for built-in kinds: the decoder
//!   (`schema::decode`) answered 400 before. Validators still treat a missing or odd value as
//!   absent rather than panicking.
//! - No module here imports `storage`: the storage verbs call validation, not the reverse.

pub(crate) mod apps;
mod at;
pub(crate) mod batch;
pub(crate) mod certificates;
pub(crate) mod coordination;
pub(crate) mod core;
pub(crate) mod cron;
pub(crate) mod events;
mod field;
mod objectmeta;
mod path;
pub(crate) mod pod;
mod quantity;
pub(crate) mod quota;
pub(crate) mod rbac;

use serde_json::Value;

pub(crate) use field::{
    FieldError, NameFormat, invalid, invalid_kind, is_dns1123_label, is_dns1123_subdomain,
    validate_name,
};
pub(crate) use objectmeta::validate as validate_object_meta;
pub(crate) use objectmeta::validate_embedded as validate_embedded_object_meta;
#[allow(unused_imports)]
pub(crate) use path::Path;
pub(crate) use quantity::Quantity;

pub(crate) use crate::json::{array_at, at, has, str_at};

/// A kind's validation: the proposed object and, on update, the stored one. Errors are pushed
/// to the list in upstream's order.
pub(crate) type Validator = fn(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>);

/// `Invalid value: <new value>: field is immutable` when `path` differs between `old` and
/// `obj` (`ValidateImmutableField`).
pub(crate) fn immutable(obj: &Value, old: &Value, path: &[&str], errs: &mut Vec<FieldError>) {
    let new = at(obj, path);
    if new != at(old, path) {
        errs.push(FieldError::invalid(
            path.join("."),
            new.unwrap_or(&Value::Null),
            "field is immutable",
        ));
    }
}
