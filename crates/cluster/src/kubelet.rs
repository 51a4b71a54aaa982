//! The simulated kubelets: one controller runs the pods bound to any simulated node. A pod
//! goes `Pending` (`ContainerCreating`, or its init containers `PodInitializing`) with its
//! `hostIP`, then `Running` with a `podIP` from its node's range (`10.244.<n>.x`), its init
//! containers `Completed`, its containers running, started and ready, and the conditions
//! `PodReadyToStartContainers`, `Initialized`, `Ready`, `ContainersReady` and `PodScheduled`,
//! as 1.33's kubelet writes them. Its annotations can script another course
//! ([`crate::script`]): delays, never ready, exits with a code, crash loops with back-off;
//! a Job's pods (restart policy `Never` or `OnFailure`) run to `Succeeded`.
//!
//! A pod being deleted is deleted for good (grace period 0, its uid as precondition) once it
//! stopped: at once, or after its script's `terminate-after`, at most its grace period.
//!
//! Every status is a function of the time since the kubelet first saw the pod (on the
//! simulation's clock), so recomputing it writes nothing new; the controller asks to be
//! called at the next change. Pods bound to nodes the simulation does not run are left alone.
//!
//! It records the kubelet's Events: `Pulled`, `Created`, `Started`, `BackOff`, `Killing`.
//!
//! Left out: probes, volumes, resource limits, image pulls (every image is present).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::api::Api;
use crate::config::SimNode;
use crate::controller::{self, Key, Reconcile, Watched};
use crate::nodes::kubelet;
use crate::obj;
use crate::script::Script;

/// Upstream's crash-loop back-off: the first wait and the longest.
const BACKOFF: Duration = Duration::from_secs(10);
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// Starts the kubelets of `nodes`.
pub(crate) fn start(api: &Api, nodes: &[SimNode]) -> Vec<JoinHandle<()>> {
    let names: HashSet<String> = nodes.iter().map(|n| n.name.clone()).collect();
    let watches = vec![Watched::mapped(&api.res.pods, move |pod| {
        if names.contains(obj::str_at(pod, "/spec/nodeName")) {
            vec![controller::key_of(pod)]
        } else {
            Vec::new()
        }
    })];
    let kubelets = Kubelets {
        api: api.clone(),
        nodes: nodes.iter().map(|n| (n.name.clone(), n.clone())).collect(),
        runs: HashMap::new(),
        next_ip: HashMap::new(),
    };
    controller::spawn(&api.storage, watches, kubelets)
}

struct Kubelets {
    api: Api,
    nodes: HashMap<String, SimNode>,
    /// The pods seen, by key.
    runs: HashMap<Key, Run>,
    /// The last host number given out, per node.
    next_ip: HashMap<String, u32>,
}

/// What the kubelet remembers of a pod.
struct Run {
    uid: String,
    /// When it first saw the pod.
    since: Instant,
    /// When it first saw the pod being deleted.
    deleting_since: Option<Instant>,
}

impl Reconcile for Kubelets {
    fn reconcile(&mut self, key: &Key) -> Option<Duration> {
        let Some(pod) = self.api.get(&self.api.res.pods, Some(&key.0), &key.1) else {
            self.runs.remove(key);
            return None;
        };
        let node = self.nodes.get(obj::str_at(&pod, "/spec/nodeName"))?.clone();
        let now = Instant::now();
        let run = self.runs.entry(key.clone()).or_insert_with(|| Run {
            uid: obj::uid(&pod).to_string(),
            since: now,
            deleting_since: None,
        });
        if run.uid != obj::uid(&pod) {
            *run = Run {
                uid: obj::uid(&pod).to_string(),
                since: now,
                deleting_since: None,
            };
        }
        let script = Script::of(&pod);
        if obj::is_deleting(&pod) {
            let first = run.deleting_since.is_none();
            let since = *run.deleting_since.get_or_insert(now);
            if first && !obj::pod_terminal(&pod) {
                for c in obj::array(&pod, "/spec/containers") {
                    let note = format!("Stopping container {}", obj::str_at(c, "/name"));
                    self.api.event(
                        &pod,
                        "Normal",
                        "Killing",
                        "Killing",
                        &note,
                        &kubelet(&node.name),
                    );
                }
            }
            let grace = obj::i64_at(&pod, "/metadata/deletionGracePeriodSeconds").unwrap_or(0);
            let stop = script
                .terminate_after
                .min(Duration::from_secs(grace.max(0) as u64));
            if obj::pod_terminal(&pod) || now >= since + stop {
                let who = kubelet(&node.name);
                if let Err(e) = self.api.delete(
                    &self.api.res.pods,
                    Some(&key.0),
                    &key.1,
                    Some(0),
                    Some(obj::uid(&pod)),
                    &who,
                ) {
                    tracing::debug!("deleting pod {}/{}: {e}", key.0, key.1);
                    return Some(Duration::from_millis(100));
                }
                return None;
            }
            return Some(since + stop - now);
        }
        if obj::pod_terminal(&pod) {
            return None;
        }
        let since = run.since;
        let ip = match obj::str_at(&pod, "/status/podIP") {
            "" => None,
            ip => Some(ip.to_string()),
        };
        let mut course = Course {
            clock: &self.api.clock,
            pod: &pod,
            script: &script,
            since,
            now,
            next: None,
        };
        let mut status = course.status(
            &node,
            ip.is_some() || !obj::str_at(&pod, "/status/hostIP").is_empty(),
        );
        let next = course.next;
        if status.get("podIP").is_some_and(Value::is_null) {
            status.remove("podIP");
        } else {
            let ip = ip.unwrap_or_else(|| self.allocate(&node));
            status.insert("podIP".into(), json!(ip));
            status.insert("podIPs".into(), json!([{"ip": ip}]));
        }
        let mut new = pod.clone();
        let current = new
            .as_object_mut()
            .map(|o| o.entry("status").or_insert_with(|| json!({})));
        let Some(Value::Object(current)) = current else {
            return None;
        };
        let before = current.clone();
        current.remove("reason");
        current.remove("message");
        for (k, v) in status {
            current.insert(k, v);
        }
        if *current == before {
            return next;
        }
        match self.api.update(
            &self.api.res.pods,
            Some(&key.0),
            Some("status"),
            new,
            &kubelet(&node.name),
        ) {
            Ok(updated) => {
                self.events(&pod, &updated, &node);
                next
            }
            Err(e) => {
                tracing::debug!("updating pod {}/{} status: {e}", key.0, key.1);
                Some(Duration::from_millis(100))
            }
        }
    }
}

impl Kubelets {
    /// The Events of what a status change says the containers did, as the kubelet records
    /// them: `Pulled`, `Created` and `Started` when a container starts (`Pulled` on its first
    /// start only), `BackOff` when it waits to restart.
    fn events(&self, old: &Value, new: &Value, node: &SimNode) {
        let who = kubelet(&node.name);
        let statuses = |pod: &Value| -> Vec<(String, Value)> {
            obj::array(pod, "/status/containerStatuses")
                .iter()
                .map(|c| (obj::str_at(c, "/name").to_string(), c.clone()))
                .collect()
        };
        let before = statuses(old);
        for (name, c) in statuses(new) {
            let was = before.iter().find(|(n, _)| *n == name).map(|(_, c)| c);
            let restarts = obj::i64_at(&c, "/restartCount").unwrap_or(0);
            let running = c.pointer("/state/running").is_some();
            let was_running = was.is_some_and(|w| {
                w.pointer("/state/running").is_some()
                    && obj::i64_at(w, "/restartCount") == Some(restarts)
            });
            if running && !was_running {
                let image = obj::array(new, "/spec/containers")
                    .iter()
                    .find(|s| obj::str_at(s, "/name") == name)
                    .map(|s| obj::str_at(s, "/image"))
                    .unwrap_or("");
                if restarts == 0 {
                    let note = format!("Container image \"{image}\" already present on machine");
                    self.api
                        .event(new, "Normal", "Pulled", "Pulled", &note, &who);
                }
                let created = format!("Created container: {name}");
                self.api
                    .event(new, "Normal", "Created", "Created", &created, &who);
                let started = format!("Started container {name}");
                self.api
                    .event(new, "Normal", "Started", "Started", &started, &who);
            }
            let backoff = obj::str_at(&c, "/state/waiting/reason") == "CrashLoopBackOff";
            let was_backoff = was.is_some_and(|w| {
                obj::str_at(w, "/state/waiting/reason") == "CrashLoopBackOff"
                    && obj::i64_at(w, "/restartCount") == Some(restarts)
            });
            if backoff && !was_backoff {
                let note = format!(
                    "Back-off restarting failed container {name} in pod {}_{}({})",
                    obj::name(new),
                    obj::namespace(new),
                    obj::uid(new)
                );
                self.api
                    .event(new, "Warning", "BackOff", "Backoff", &note, &who);
            }
        }
    }

    /// The next pod IP of `node`.
    fn allocate(&mut self, node: &SimNode) -> String {
        let n = self.next_ip.entry(node.name.clone()).or_insert(1);
        *n = if *n >= 254 { 2 } else { *n + 1 };
        format!("10.244.{}.{}", node.subnet, n)
    }
}

/// The state of one container at a moment of its course.
enum State {
    Waiting(&'static str, String),
    Running {
        started: Instant,
    },
    Terminated {
        code: i64,
        started: Instant,
        finished: Instant,
    },
}

/// Computes a pod's status at `now`; `next` is when it changes next.
struct Course<'a> {
    clock: &'a crate::clock::Clock,
    pod: &'a Value,
    script: &'a Script,
    since: Instant,
    now: Instant,
    next: Option<Duration>,
}

impl Course<'_> {
    /// Records that the status changes at `at`.
    fn change_at(&mut self, at: Instant) {
        let d = at.saturating_duration_since(self.now);
        self.next = Some(self.next.map_or(d, |n| n.min(d)));
    }

    fn time(&self, at: Instant) -> String {
        crate::clock::time(self.clock.at(at))
    }

    /// The status fields the kubelet owns; `podIP` is present (as any value) once the
    /// sandbox is up, and `null` before.
    fn status(&mut self, node: &SimNode, written: bool) -> Map<String, Value> {
        let start = self.since + self.script.start_after;
        let creating = self.now < start || !written;
        if self.now < start {
            self.change_at(start);
        } else if creating {
            // The first write shows the pod being created; the next one starts it.
            self.change_at(self.now);
        }
        let containers = obj::array(self.pod, "/spec/containers");
        let inits = obj::array(self.pod, "/spec/initContainers");
        let mut init_statuses = Vec::new();
        let mut statuses = Vec::new();
        let (mut phase, mut initialized) = ("Pending", inits.is_empty());
        let mut unready: Vec<&str> = Vec::new();
        let mut incomplete: Vec<&str> = Vec::new();
        let mut terminal_codes: Vec<i64> = Vec::new();
        if creating {
            let waiting = if inits.is_empty() {
                "ContainerCreating"
            } else {
                "PodInitializing"
            };
            for c in inits {
                init_statuses.push(self.container(
                    c,
                    &State::Waiting("PodInitializing", String::new()),
                    0,
                    None,
                    false,
                ));
                incomplete.push(obj::str_at(c, "/name"));
            }
            for c in containers {
                statuses.push(self.container(
                    c,
                    &State::Waiting(waiting, String::new()),
                    0,
                    None,
                    false,
                ));
                unready.push(obj::str_at(c, "/name"));
            }
        } else {
            initialized = true;
            for c in inits {
                let sidecar = obj::str_at(c, "/restartPolicy") == "Always";
                let state = if sidecar {
                    State::Running { started: start }
                } else {
                    State::Terminated {
                        code: 0,
                        started: start,
                        finished: start,
                    }
                };
                init_statuses.push(self.container(c, &state, 0, None, true));
            }
            phase = "Running";
            let mut all_exited = true;
            for c in containers {
                let (state, restarts, last, ready) = self.course(start);
                if let State::Terminated { code, .. } = state {
                    terminal_codes.push(code);
                } else {
                    all_exited = false;
                }
                if !ready {
                    unready.push(obj::str_at(c, "/name"));
                }
                statuses.push(self.container(c, &state, restarts, last.as_ref(), ready));
            }
            if all_exited && !containers.is_empty() {
                phase = if terminal_codes.iter().all(|c| *c == 0) {
                    "Succeeded"
                } else {
                    "Failed"
                };
            }
        }
        let terminal = phase == "Succeeded" || phase == "Failed";
        let now = self.time(self.now);
        let existing = |type_: &str, status: &str| {
            obj::condition(self.pod, type_)
                .filter(|c| obj::str_at(c, "/status") == status)
                .map(|c| obj::str_at(c, "/lastTransitionTime").to_string())
                .unwrap_or_else(|| now.clone())
        };
        let condition = |type_: &str, ok: bool, reason: &str, message: String| {
            let status = if ok { "True" } else { "False" };
            let mut c = json!({"type": type_, "status": status, "lastProbeTime": null,
                "lastTransitionTime": existing(type_, status)});
            if !ok && !reason.is_empty() {
                c["reason"] = json!(reason);
                if !message.is_empty() {
                    c["message"] = json!(message);
                }
            }
            c
        };
        let list = |names: &[&str]| format!("[{}]", names.join(" "));
        let (ready_reason, ready_message) = if terminal {
            ("PodCompleted", String::new())
        } else {
            (
                "ContainersNotReady",
                format!("containers with unready status: {}", list(&unready)),
            )
        };
        let ready = !terminal && unready.is_empty();
        let conditions = [
            condition(
                "PodReadyToStartContainers",
                !creating && !terminal,
                "",
                String::new(),
            ),
            condition(
                "Initialized",
                initialized,
                if terminal {
                    "PodCompleted"
                } else {
                    "ContainersNotInitialized"
                },
                format!("containers with incomplete status: {}", list(&incomplete)),
            ),
            condition("Ready", ready, ready_reason, ready_message.clone()),
            condition("ContainersReady", ready, ready_reason, ready_message),
            condition("PodScheduled", true, "", String::new()),
        ];
        // Conditions of other types (set by other controllers or users: `DisruptionTarget`,
        // readiness gates, a test's own) are kept, as the kubelet's status manager keeps them.
        let kubelet_owned: Vec<&str> = conditions.iter().map(|c| obj::str_at(c, "/type")).collect();
        let others: Vec<Value> = obj::array(self.pod, "/status/conditions")
            .iter()
            .filter(|c| !kubelet_owned.contains(&obj::str_at(c, "/type")))
            .cloned()
            .collect();
        let conditions: Vec<Value> = conditions.iter().cloned().chain(others).collect();
        let mut status = Map::new();
        status.insert("phase".into(), json!(phase));
        status.insert("conditions".into(), json!(conditions));
        status.insert("hostIP".into(), json!(node.ip));
        status.insert("hostIPs".into(), json!([{"ip": node.ip}]));
        status.insert("startTime".into(), json!(self.time(self.since)));
        if !inits.is_empty() {
            status.insert("initContainerStatuses".into(), json!(init_statuses));
        }
        status.insert("containerStatuses".into(), json!(statuses));
        status.insert(
            "podIP".into(),
            if creating { Value::Null } else { json!("") },
        );
        status
    }

    /// A container's course from `start`: its state now, restart count, last termination,
    /// and whether it is ready.
    fn course(&mut self, start: Instant) -> (State, i64, Option<State>, bool) {
        let policy = obj::str_at(self.pod, "/spec/restartPolicy");
        let ready_at = |from: Instant| self.script.ready_after.map(|d| from + d);
        let mut from = start;
        let mut restarts = 0i64;
        let mut last = None;
        loop {
            let Some(run_for) = self.script.run_for else {
                let ready = ready_at(from);
                if let Some(at) = ready.filter(|at| *at > self.now) {
                    self.change_at(at);
                }
                let ready = ready.is_some_and(|at| at <= self.now);
                return (State::Running { started: from }, restarts, last, ready);
            };
            let end = from + run_for;
            if self.now < end {
                let ready = ready_at(from).filter(|at| *at < end);
                let mut next = end;
                if let Some(at) = ready.filter(|at| *at > self.now) {
                    next = next.min(at);
                }
                self.change_at(next);
                let ready = ready.is_some_and(|at| at <= self.now);
                return (State::Running { started: from }, restarts, last, ready);
            }
            let code = self.script.exit_code;
            let exited = State::Terminated {
                code,
                started: from,
                finished: end,
            };
            let restart = match policy {
                "Never" => false,
                "OnFailure" => code != 0,
                _ => true,
            };
            if !restart {
                return (exited, restarts, last, false);
            }
            let backoff = BACKOFF
                .saturating_mul(1u32 << restarts.min(10) as u32)
                .min(MAX_BACKOFF);
            if self.now < end + backoff {
                self.change_at(end + backoff);
                let message = format!("back-off {}s restarting failed", backoff.as_secs());
                return (
                    State::Waiting("CrashLoopBackOff", message),
                    restarts,
                    Some(exited),
                    false,
                );
            }
            restarts += 1;
            last = Some(exited);
            from = end + backoff;
        }
    }

    /// A container's status.
    fn container(
        &self,
        c: &Value,
        state: &State,
        restarts: i64,
        last: Option<&State>,
        ready: bool,
    ) -> Value {
        let name = obj::str_at(c, "/name");
        let image = normalize_image(obj::str_at(c, "/image"));
        let repo = image
            .rsplit_once(':')
            .filter(|(r, _)| !r.contains('@'))
            .map(|(r, _)| r)
            .unwrap_or(&image);
        let id = |n: i64| {
            format!(
                "containerd://{}",
                hex64(&format!("{}/{name}/{n}", obj::uid(self.pod)))
            )
        };
        let state_json = |s: &State, n: i64| match s {
            State::Waiting(reason, message) => {
                let mut w = json!({"reason": reason});
                if !message.is_empty() {
                    w["message"] = json!(format!(
                        "{message} container={name} pod={}_{}({})",
                        obj::name(self.pod),
                        obj::namespace(self.pod),
                        obj::uid(self.pod)
                    ));
                }
                json!({"waiting": w})
            }
            State::Running { started } => json!({"running": {"startedAt": self.time(*started)}}),
            State::Terminated {
                code,
                started,
                finished,
            } => json!({"terminated": {
                "exitCode": code,
                "reason": if *code == 0 { "Completed" } else { "Error" },
                "startedAt": self.time(*started),
                "finishedAt": self.time(*finished),
                "containerID": id(n),
            }}),
        };
        let mut status = json!({
            "name": name,
            "image": image,
            "imageID": format!("{repo}@sha256:{}", hex64(&image)),
            "ready": ready,
            "restartCount": restarts,
            "started": matches!(state, State::Running { .. }),
            "state": state_json(state, restarts),
            "lastState": last.map(|l| state_json(l, restarts - 1)).unwrap_or_else(|| json!({})),
        });
        match state {
            State::Waiting(reason, _) if *reason != "CrashLoopBackOff" => {
                status.as_object_mut().map(|s| s.remove("imageID"));
            }
            State::Waiting(..) => {
                status["containerID"] = json!(id(restarts - 1));
            }
            _ => status["containerID"] = json!(id(restarts)),
        }
        status
    }
}

/// An image reference as the runtime reports it: `nginx` -> `docker.io/library/nginx:latest`.
fn normalize_image(image: &str) -> String {
    let (name, tagged) = match image.rsplit_once('@') {
        Some(_) => (image.to_string(), true),
        None => {
            let last = image.rsplit('/').next().unwrap_or(image);
            (image.to_string(), last.contains(':'))
        }
    };
    let first = name.split('/').next().unwrap_or("");
    let has_registry =
        name.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    let full = if has_registry {
        name
    } else if name.contains('/') {
        format!("docker.io/{name}")
    } else {
        format!("docker.io/library/{name}")
    };
    if tagged {
        full
    } else {
        format!("{full}:latest")
    }
}

/// 64 hex digits derived from `s` (FNV-1a, stretched): stable ids for containers and images.
fn hex64(s: &str) -> String {
    let mut out = String::with_capacity(64);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for round in 0u8..4 {
        for b in s.bytes().chain([round]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        out.push_str(&format!("{h:016x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_named_as_the_runtime_names_them() {
        assert_eq!(normalize_image("nginx"), "docker.io/library/nginx:latest");
        assert_eq!(
            normalize_image("nginx:1.27"),
            "docker.io/library/nginx:1.27"
        );
        assert_eq!(
            normalize_image("bitnami/redis"),
            "docker.io/bitnami/redis:latest"
        );
        assert_eq!(
            normalize_image("registry.k8s.io/pause:3.10"),
            "registry.k8s.io/pause:3.10"
        );
        assert_eq!(
            normalize_image("localhost:5000/app"),
            "localhost:5000/app:latest"
        );
        assert_eq!(hex64("a").len(), 64);
        assert_ne!(hex64("a"), hex64("b"));
    }
}
