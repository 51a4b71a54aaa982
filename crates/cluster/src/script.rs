//! Scripted pod behaviour, in the way kwok's stages script it: annotations on a pod tell its
//! simulated kubelet how the pod's containers behave. Every duration is Go's syntax (`500ms`,
//! `10s`, `1m30s`) on the simulation's clock.
//!
//! | annotation | default | effect |
//! | --- | --- | --- |
//! | `sim.crt.dev/start-after` | `0s` | the pod stays `ContainerCreating` (its init containers pending) this long |
//! | `sim.crt.dev/ready-after` | `0s` | a started container turns ready this long after it starts; `never`: never ready |
//! | `sim.crt.dev/run-for` | forever (`0s` for a Job's pods) | each container exits this long after it starts |
//! | `sim.crt.dev/exit-code` | `0` | the code it exits with |
//! | `sim.crt.dev/terminate-after` | `0s` | a deleted pod takes this long to stop (at most its grace period) |
//!
//! An exited container restarts as its pod's `restartPolicy` says (`Always`; `OnFailure` for
//! a non-zero code), after upstream's crash-loop back-off (10 s, doubling, at most 5 minutes):
//! meanwhile it waits in `CrashLoopBackOff` with its `restartCount` and `lastState`. A pod
//! whose containers all exited for good ends `Succeeded` (every code 0) or `Failed`.

use std::time::Duration;

use serde_json::Value;

use crate::obj;

/// How long a pod stays `ContainerCreating`.
pub const START_AFTER: &str = "sim.crt.dev/start-after";
/// How long a started container takes to turn ready (`never`: never).
pub const READY_AFTER: &str = "sim.crt.dev/ready-after";
/// How long a container runs before it exits.
pub const RUN_FOR: &str = "sim.crt.dev/run-for";
/// The code an exiting container exits with.
pub const EXIT_CODE: &str = "sim.crt.dev/exit-code";
/// How long a deleted pod takes to stop (at most its grace period).
pub const TERMINATE_AFTER: &str = "sim.crt.dev/terminate-after";

/// A pod's script, read from its annotations (an unreadable value is the default).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Script {
    pub(crate) start_after: Duration,
    /// `None`: never ready.
    pub(crate) ready_after: Option<Duration>,
    /// `None`: runs until deleted.
    pub(crate) run_for: Option<Duration>,
    pub(crate) exit_code: i64,
    pub(crate) terminate_after: Duration,
}

impl Script {
    /// The script of `pod`.
    pub(crate) fn of(pod: &Value) -> Script {
        let duration = |key| obj::annotation(pod, key).and_then(parse_duration);
        let job = obj::controller_of(pod).is_some_and(|(kind, _, _)| kind == "Job")
            && obj::str_at(pod, "/spec/restartPolicy") != "Always";
        Script {
            start_after: duration(START_AFTER).unwrap_or_default(),
            ready_after: match obj::annotation(pod, READY_AFTER) {
                Some("never") => None,
                Some(d) => Some(parse_duration(d).unwrap_or_default()),
                None => Some(Duration::ZERO),
            },
            run_for: duration(RUN_FOR).or(job.then_some(Duration::ZERO)),
            exit_code: obj::annotation(pod, EXIT_CODE)
                .and_then(|c| c.trim().parse().ok())
                .unwrap_or(0),
            terminate_after: duration(TERMINATE_AFTER).unwrap_or_default(),
        }
    }
}

/// Parses a Go duration (`1h2m3.5s`, `250ms`, `0`).
pub(crate) fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if s == "0" {
        return Some(Duration::ZERO);
    }
    let mut rest = s;
    let mut total = 0f64;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let u = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..u] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += value * seconds;
        rest = &rest[u..];
    }
    Some(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn durations_parse_as_go_does() {
        assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_duration("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration(""), None);
    }

    #[test]
    fn annotations_script_the_pod() {
        let pod = json!({"metadata": {"annotations": {
            READY_AFTER: "never", RUN_FOR: "3s", EXIT_CODE: "2", START_AFTER: "1s"}}});
        let s = Script::of(&pod);
        assert_eq!(s.ready_after, None);
        assert_eq!(s.run_for, Some(Duration::from_secs(3)));
        assert_eq!(s.exit_code, 2);
        assert_eq!(s.start_after, Duration::from_secs(1));
        let job_pod = json!({"metadata": {"ownerReferences": [
            {"kind": "Job", "name": "j", "uid": "u", "controller": true}]},
            "spec": {"restartPolicy": "Never"}});
        assert_eq!(Script::of(&job_pod).run_for, Some(Duration::ZERO));
        assert_eq!(Script::of(&json!({})).run_for, None);
    }
}
