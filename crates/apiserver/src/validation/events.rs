//! `events.k8s.io/v1` (`pkg/apis/core/validation/events.go`, `ValidateEventCreate` and
//! `ValidateEventUpdate` for the new API): the legacy rules every Event meets, then the strict
//! ones of the new API. Validation sees the stored (core) shape both Event APIs share
//! (`involvedObject`, `message`, `source`, `count`, `reportingComponent`), and the error paths
//! are upstream's internal names (`involvedObject`, `message`, `reportingController`...), not
//! the v1 ones (`regarding`, `note`...), as upstream's are.

use serde_json::Value;

use super::core::legacy_event;
use super::{FieldError, at, has, str_at};

/// `ValidateEventCreate` / `ValidateEventUpdate` for `events.k8s.io/v1`.
pub(crate) fn event(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    legacy_event(obj, errs);
    match old {
        None => {
            series(obj, errs);
            if str_at(obj, &["eventTime"]).is_empty() {
                errs.push(FieldError::required("eventTime", ""));
            }
            let ty = str_at(obj, &["type"]);
            if ty != "Normal" && ty != "Warning" {
                errs.push(FieldError::invalid(
                    "type",
                    &Value::from(""),
                    &format!("has invalid value: {ty}"),
                ));
            }
            let unset = |errs: &mut Vec<FieldError>, path: &str, set: bool| {
                if set {
                    errs.push(FieldError::invalid(
                        path,
                        &Value::from(""),
                        "needs to be unset",
                    ));
                }
            };
            unset(errs, "firstTimestamp", has(obj, &["firstTimestamp"]));
            unset(errs, "lastTimestamp", has(obj, &["lastTimestamp"]));
            let count = at(obj, &["count"]).and_then(Value::as_i64);
            unset(errs, "count", count.is_some_and(|c| c != 0));
            let source = !str_at(obj, &["source", "component"]).is_empty()
                || !str_at(obj, &["source", "host"]).is_empty();
            unset(errs, "source", source);
        }
        Some(old) => {
            if at(obj, &["series"]) != at(old, &["series"]) {
                series(obj, errs);
            }
            // `ValidateImmutableField` of the scalar fields, in upstream's order (`reason`
            // twice, as upstream checks it twice).
            for (path, field) in [
                ("reason", "reason"),
                ("message", "message"),
                ("count", "count"),
                ("reason", "reason"),
                ("type", "type"),
                ("action", "action"),
                ("reportingController", "reportingComponent"),
                ("reportingInstance", "reportingInstance"),
            ] {
                let (new, before) = (at(obj, &[field]), at(old, &[field]));
                if new != before {
                    let shown = match new {
                        Some(v) if !v.is_null() => v.clone(),
                        _ if field == "count" => Value::from(0),
                        _ => Value::from(""),
                    };
                    errs.push(FieldError::invalid(path, &shown, "field is immutable"));
                }
            }
        }
    }
}

/// `validateV1EventSeries`.
fn series(obj: &Value, errs: &mut Vec<FieldError>) {
    let Some(series) = at(obj, &["series"]).filter(|s| !s.is_null()) else {
        return;
    };
    if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
        errs.push(FieldError::invalid(
            "series.count",
            &Value::from(""),
            "should be at least 2",
        ));
    }
    if str_at(series, &["lastObservedTime"]).is_empty() {
        errs.push(FieldError::required("series.lastObservedTime", ""));
    }
}
