//! `batch/v1` (`pkg/apis/batch/validation/validation.go`): Jobs and CronJobs.
//!
//! The embedded server does not generate a Job's selector as upstream's strategy does; a
//! selector is checked only when the Job sets `manualSelector` (otherwise upstream replaces
//! it with a generated one).

use serde_json::Value;

use super::FieldError;
use super::at::At;
use super::cron;
use super::pod::{
    carry_pod_spec_defaults, go_label_selector, int, invalid_go, label_selector, nonnegative, s,
    selector_parses, selector_selects_template, set, template_spec,
};

/// `maxParallelismForIndexedJob`.
const MAX_PARALLELISM_INDEXED: i64 = 100_000;

/// `validateJobSpec`: counts, completion mode, the pod template and its restart policy.
fn job_spec(spec: &Value, at: &At, errs: &mut Vec<FieldError>) {
    for key in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        nonnegative(spec, key, at, errs);
    }
    if set(spec, "maxFailedIndexes") && !set(spec, "backoffLimitPerIndex") {
        errs.push(FieldError::required(
            at.child("backoffLimitPerIndex").path(),
            "when maxFailedIndexes is specified",
        ));
    }
    let mode = s(spec, "completionMode");
    if set(spec, "completionMode") {
        if !matches!(mode, "NonIndexed" | "Indexed") {
            errs.push(FieldError::not_supported(
                at.child("completionMode").path(),
                &Value::from(mode),
                &["NonIndexed", "Indexed"],
            ));
        }
        if mode == "Indexed" {
            if !set(spec, "completions") {
                errs.push(FieldError::required(
                    at.child("completions").path(),
                    "when completion mode is Indexed",
                ));
            }
            if let Some(p) = int(spec, "parallelism").filter(|p| *p > MAX_PARALLELISM_INDEXED) {
                errs.push(FieldError::invalid(
                    at.child("parallelism").path(),
                    &Value::from(p),
                    "must be less than or equal to 100000 when completion mode is Indexed",
                ));
            }
        }
    }
    if mode != "Indexed" {
        for key in ["backoffLimitPerIndex", "maxFailedIndexes"] {
            if let Some(n) = int(spec, key) {
                errs.push(FieldError::invalid(
                    at.child(key).path(),
                    &Value::from(n),
                    "requires indexed completion mode",
                ));
            }
        }
    }
    static NULL: Value = Value::Null;
    let tpl = spec.get("template").unwrap_or(&NULL);
    let tpl_at = at.child("template");
    template_spec(tpl, &tpl_at, errs);
    let restart = tpl.get("spec").map_or("", |p| s(p, "restartPolicy"));
    let tpl_spec_at = tpl_at.child("spec");
    let restart_at = tpl_spec_at.child("restartPolicy");
    match restart {
        "" | "Always" => errs.push(FieldError::required(
            restart_at.path(),
            "valid values: \"OnFailure\", \"Never\"",
        )),
        "OnFailure" | "Never" => {
            if set(spec, "podFailurePolicy") && restart != "Never" {
                errs.push(FieldError::invalid(
                    restart_at.path(),
                    &Value::from(restart),
                    "only \"Never\" is supported when podFailurePolicy is specified",
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            restart_at.path(),
            &Value::from(other),
            &["OnFailure", "Never"],
        )),
    }
}

/// Whether a Job manages its own selector.
fn manual_selector(spec: &Value) -> bool {
    spec.get("manualSelector").and_then(Value::as_bool) == Some(true)
}

/// `ValidateJob` / `ValidateJobUpdate`.
pub(crate) fn job(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let at = At::root("spec");
    static NULL: Value = Value::Null;
    let spec = obj.get("spec").unwrap_or(&NULL);
    job_spec(spec, &at, errs);
    if manual_selector(spec) {
        let sel = spec.get("selector").filter(|v| !v.is_null());
        let sel_at = at.child("selector");
        match sel {
            None => errs.push(FieldError::required(sel_at.path(), "")),
            Some(sel) => label_selector(sel, &sel_at, errs),
        }
        if sel.is_none_or(selector_parses) {
            let tpl = spec.get("template").unwrap_or(&NULL);
            selector_selects_template(sel, tpl, &at.child("template"), errs);
        }
    }
    let Some(old) = old else {
        // Indexed pods are named <job>-<index>: the last one must still be a DNS label.
        if s(spec, "completionMode") == "Indexed"
            && let Some(n) = int(spec, "completions").filter(|n| *n > 0)
        {
            let name = obj
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let host = format!("{name}-{}", n - 1);
            if !super::is_dns1123_label(&host) {
                errs.push(FieldError::invalid(
                    "metadata.name",
                    &Value::from(name),
                    &format!("will not able to create pod with invalid DNS label: {host}"),
                ));
            }
        }
        return;
    };
    let old_spec = old.get("spec").unwrap_or(&NULL);
    // validateCompletions: immutable, except for an Indexed Job scaled with its parallelism.
    // A field the update leaves out keeps its stored (defaulted) value.
    let given = |key: &str| spec.get(key).is_some_and(|v| !v.is_null());
    let completions = spec.get("completions");
    if given("completions") && completions != old_spec.get("completions") {
        let elastic = s(spec, "completionMode") == "Indexed";
        let in_tandem = completions.is_none_or(Value::is_null)
            || int(spec, "completions") == int(spec, "parallelism");
        if !elastic {
            errs.push(immutable_value(at.child("completions").path(), completions));
        } else if !in_tandem {
            errs.push(FieldError::invalid(
                at.child("completions").path(),
                completions.unwrap_or(&NULL),
                "can only be modified in tandem with spec.parallelism",
            ));
        }
    }
    let (sel, old_sel) = (spec.get("selector"), old_spec.get("selector"));
    if sel != old_sel {
        let rendered = sel
            .filter(|v| !v.is_null())
            .map_or_else(|| "null".to_string(), go_label_selector);
        errs.push(invalid_go(
            at.child("selector").path(),
            &rendered,
            "field is immutable",
        ));
    }
    if template_changed(spec, old_spec) {
        // Upstream prints the whole internal PodTemplateSpec (`%#v`); it is shown as JSON here.
        errs.push(immutable_value(
            at.child("template").path(),
            spec.get("template"),
        ));
    }
    for key in ["completionMode", "backoffLimitPerIndex", "managedBy"] {
        let defaulted = key == "completionMode" && !given(key);
        if !defaulted && spec.get(key) != old_spec.get(key) {
            errs.push(immutable_value(at.child(key).path(), spec.get(key)));
        }
    }
}

/// `Invalid value: <v>: field is immutable` (`null` when unset).
fn immutable_value(field: String, v: Option<&Value>) -> FieldError {
    FieldError::invalid(field, v.unwrap_or(&Value::Null), "field is immutable")
}

/// Whether a Job's template changed beyond what a suspended Job may change (its scheduling
/// directives, labels and annotations: `AllowMutableSchedulingDirectives`).
fn template_changed(spec: &Value, old_spec: &Value) -> bool {
    let (new, old) = (spec.get("template"), old_spec.get("template"));
    if new == old {
        return false;
    }
    let suspended = spec.get("suspend").and_then(Value::as_bool) == Some(true);
    let old_pod = old.and_then(|t| t.get("spec"));
    let strip = |t: Option<&Value>, suspended: bool| {
        let mut t = t.cloned().unwrap_or(Value::Null);
        if let (Some(p), Some(was)) = (t.get_mut("spec"), old_pod) {
            carry_pod_spec_defaults(p, was);
        }
        if !suspended {
            return t;
        }
        if let Some(m) = t.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("labels");
            m.remove("annotations");
        }
        if let Some(p) = t.get_mut("spec").and_then(Value::as_object_mut) {
            for key in ["nodeSelector", "tolerations", "affinity", "schedulingGates"] {
                p.remove(key);
            }
        }
        t
    };
    strip(new, suspended) != strip(old, suspended)
}

/// `validateTimeZone`: an IANA name (its characters checked as upstream does; the zone
/// database itself is not carried here).
fn time_zone(tz: &str, at: &At, errs: &mut Vec<FieldError>) {
    let value = Value::from(tz);
    if tz.is_empty() {
        errs.push(FieldError::invalid(
            at.path(),
            &value,
            "timeZone must be nil or non-empty string",
        ));
        return;
    }
    let part_ok = |p: &str| {
        p != "."
            && p != ".."
            && !p.starts_with('-')
            && (1..=14).contains(&p.len())
            && p.bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_' | b'+'))
    };
    if !tz.split('/').all(part_ok) {
        errs.push(FieldError::invalid(
            at.path(),
            &value,
            &format!("unknown time zone {tz}"),
        ));
        return;
    }
    if tz.eq_ignore_ascii_case("Local") {
        errs.push(FieldError::invalid(
            at.path(),
            &value,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    }
}

/// `ValidateCronJobCreate` / `ValidateCronJobUpdate`.
pub(crate) fn cron_job(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let at = At::root("spec");
    static NULL: Value = Value::Null;
    let spec = obj.get("spec").unwrap_or(&NULL);
    let old_spec = old.map(|o| o.get("spec").unwrap_or(&NULL));
    let schedule = s(spec, "schedule");
    let sched_at = at.child("schedule");
    if schedule.is_empty() {
        errs.push(FieldError::required(sched_at.path(), ""));
    } else {
        let value = Value::from(schedule);
        if let Err(msg) = cron::parse_standard(schedule) {
            errs.push(FieldError::invalid(sched_at.path(), &value, &msg));
        }
        let allow_tz = old_spec.is_some_and(|o| s(o, "schedule").contains("TZ"));
        let has_tz = schedule.contains("TZ");
        if allow_tz && has_tz && set(spec, "timeZone") {
            errs.push(FieldError::invalid(
                sched_at.path(),
                &value,
                "cannot use both timeZone field and TZ or CRON_TZ in schedule",
            ));
        } else if !allow_tz && has_tz {
            errs.push(FieldError::invalid(
                sched_at.path(),
                &value,
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            ));
        }
    }
    nonnegative(spec, "startingDeadlineSeconds", &at, errs);
    if let Some(tz) = spec.get("timeZone").and_then(Value::as_str)
        && old_spec.is_none_or(|o| o.get("timeZone") != spec.get("timeZone"))
    {
        time_zone(tz, &at.child("timeZone"), errs);
    }
    let policy = s(spec, "concurrencyPolicy");
    if !matches!(policy, "" | "Allow" | "Forbid" | "Replace") {
        errs.push(FieldError::not_supported(
            at.child("concurrencyPolicy").path(),
            &Value::from(policy),
            &["Allow", "Forbid", "Replace"],
        ));
    }
    // ValidateJobTemplateSpec
    let jt_at = at.child("jobTemplate");
    let jt_spec_at = jt_at.child("spec");
    let job = spec
        .get("jobTemplate")
        .and_then(|t| t.get("spec"))
        .unwrap_or(&NULL);
    job_spec(job, &jt_spec_at, errs);
    if let Some(sel) = job.get("selector").filter(|v| !v.is_null()) {
        errs.push(invalid_go(
            jt_spec_at.child("selector").path(),
            &go_label_selector(sel),
            "`selector` will be auto-generated",
        ));
    }
    if manual_selector(job) {
        errs.push(FieldError::not_supported(
            jt_spec_at.child("manualSelector").path(),
            &Value::Bool(true),
            &["nil", "false"],
        ));
    }
    nonnegative(spec, "successfulJobsHistoryLimit", &at, errs);
    nonnegative(spec, "failedJobsHistoryLimit", &at, errs);
    if old.is_none() {
        let name = obj
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if name.len() > 52 {
            errs.push(FieldError::invalid(
                "metadata.name",
                &Value::from(name),
                "must be no more than 52 characters",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn template(restart: &str) -> Value {
        json!({"spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "busybox"}]}})
    }

    #[test]
    fn valid_jobs_and_cron_jobs_pass() {
        let job_obj = json!({"metadata": {"name": "j"}, "spec": {"template": template("Never")}});
        let mut errs = Vec::new();
        job(&job_obj, None, &mut errs);
        job(&job_obj, Some(&job_obj), &mut errs);
        let cj = json!({"metadata": {"name": "c"}, "spec": {"schedule": "*/5 * * * *",
            "timeZone": "Europe/Paris", "jobTemplate": {"spec": {"template": template("OnFailure")}}}});
        cron_job(&cj, None, &mut errs);
        cron_job(&cj, Some(&cj), &mut errs);
        assert!(errs.is_empty(), "{errs:?}");
    }

    #[test]
    fn a_job_that_restarts_always_is_refused() {
        let mut errs = Vec::new();
        job(
            &json!({"spec": {"template": template("Always")}}),
            None,
            &mut errs,
        );
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec.template.spec.restartPolicy");
        assert_eq!(
            errs[0].message,
            "Required value: valid values: \"OnFailure\", \"Never\""
        );
    }
}
