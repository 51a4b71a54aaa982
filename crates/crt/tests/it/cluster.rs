//! `crt serve`'s simulated cluster, driven by the real kubectl: a Deployment rolls out to
//! Running, Ready pods on the nodes, scales, updates through a new ReplicaSet, shows its
//! history, undoes, gets a Service with endpoints, and is deleted with its ReplicaSets and
//! pods; a pod that fits no node stays Pending with the scheduler's event; a Job completes.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// `crt serve` in the background, killed on drop.
struct Serve {
    child: Child,
    kubeconfig: PathBuf,
    cache: PathBuf,
    _dir: tempfile::TempDir,
}

impl Serve {
    fn start(extra: &[&str]) -> Serve {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let mut child = Command::new(env!("CARGO_BIN_EXE_crt"))
            .args(["serve", "--kubeconfig-out"])
            .arg(&kubeconfig)
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .expect("crt starts");
        let (_, lines) = crate::until_serving(&mut child);
        // Keeps reading, so the child never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Serve {
            child,
            cache: dir.path().join("kubectl-cache"),
            kubeconfig,
            _dir: dir,
        }
    }

    /// Runs kubectl; answers its stdout, or its stderr as the error.
    fn try_kubectl(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(["--request-timeout", "30s"])
            .args(args)
            .output()
            .expect("kubectl runs");
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    fn kubectl(&self, args: &[&str]) -> String {
        self.try_kubectl(args)
            .unwrap_or_else(|e| panic!("kubectl {args:?}: {e}"))
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.extend(["-o", "json"]);
        serde_json::from_str(&self.kubectl(&args)).unwrap()
    }

    /// Polls `check` until it answers `Some` (at most 30 s).
    fn until<T>(&self, what: &str, mut check: impl FnMut(&Serve) -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(v) = check(self) {
                return v;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn items(&self, args: &[&str]) -> Vec<Value> {
        self.json(args)["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok()
}

fn images(pods: &[Value]) -> Vec<&str> {
    pods.iter()
        .map(|p| p["spec"]["containers"][0]["image"].as_str().unwrap_or(""))
        .collect()
}

#[test]
fn kubectl_rolls_out_scales_updates_undoes_exposes_and_deletes_a_deployment() {
    if !kubectl_available() && std::env::var_os("CRT_SKIP_KUBECTL").is_some() {
        return;
    }
    let s = Serve::start(&[]);
    let nodes = s.items(&["get", "nodes"]);
    assert_eq!(nodes.len(), 3);
    for n in &nodes {
        let ready = n["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Ready")
            .unwrap();
        assert_eq!(ready["status"], "True");
    }

    s.kubectl(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=3",
    ]);
    let out = s.kubectl(&["rollout", "status", "deployment/web", "--timeout=30s"]);
    assert!(out.contains("successfully rolled out"), "{out}");

    let wide = s.kubectl(&["get", "pods", "-l", "app=web", "-o", "wide"]);
    let rows: Vec<&str> = wide.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{wide}");
    for row in &rows {
        let cols: Vec<&str> = row.split_whitespace().collect();
        // NAME READY STATUS RESTARTS AGE IP NODE NOMINATED-NODE READINESS-GATES
        assert_eq!(cols[1], "1/1", "{wide}");
        assert_eq!(cols[2], "Running", "{wide}");
        assert!(cols[5].starts_with("10.244."), "{wide}");
        assert!(cols[6].starts_with("node-"), "{wide}");
    }
    let out = s.kubectl(&[
        "wait",
        "--for=condition=Ready",
        "pod",
        "-l",
        "app=web",
        "--timeout=30s",
    ]);
    assert_eq!(
        out.lines().filter(|l| l.contains("condition met")).count(),
        3,
        "{out}"
    );

    s.kubectl(&["scale", "deployment", "web", "--replicas=5"]);
    s.kubectl(&["rollout", "status", "deployment/web", "--timeout=30s"]);
    s.until("5 pods", |s| {
        (s.items(&["get", "pods", "-l", "app=web"]).len() == 5).then_some(())
    });

    s.kubectl(&["set", "image", "deployment/web", "nginx=nginx:1.27"]);
    s.kubectl(&["rollout", "status", "deployment/web", "--timeout=30s"]);
    let rss = s.items(&["get", "replicasets", "-l", "app=web"]);
    assert_eq!(rss.len(), 2, "a new ReplicaSet for the new template");
    let pods = s.until("the old pods gone", |s| {
        let pods = s.items(&["get", "pods", "-l", "app=web"]);
        (pods.len() == 5 && images(&pods).iter().all(|i| *i == "nginx:1.27")).then_some(pods)
    });
    assert!(pods.iter().all(|p| p["status"]["phase"] == "Running"));
    let history = s.kubectl(&["rollout", "history", "deployment/web"]);
    let revisions: Vec<&str> = history
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.parse::<u32>().is_ok())
        .collect();
    assert_eq!(revisions, ["1", "2"], "{history}");

    s.kubectl(&["rollout", "undo", "deployment/web"]);
    s.kubectl(&["rollout", "status", "deployment/web", "--timeout=30s"]);
    s.until("the undone pods", |s| {
        let pods = s.items(&["get", "pods", "-l", "app=web"]);
        (pods.len() == 5 && images(&pods).iter().all(|i| *i == "nginx")).then_some(())
    });
    let history = s.kubectl(&["rollout", "history", "deployment/web"]);
    assert!(
        history.contains("\n2 ") && history.contains("\n3 "),
        "{history}"
    );

    s.kubectl(&["expose", "deployment", "web", "--port=80"]);
    let ips: Vec<String> = s
        .items(&["get", "pods", "-l", "app=web"])
        .iter()
        .map(|p| p["status"]["podIP"].as_str().unwrap().to_string())
        .collect();
    let slice = s.until("the endpoint slice", |s| {
        let slices = s.items(&[
            "get",
            "endpointslices",
            "-l",
            "kubernetes.io/service-name=web",
        ]);
        let slice = slices.first()?.clone();
        (slice["endpoints"].as_array()?.len() == 5).then_some(slice)
    });
    let mut listed: Vec<String> = slice["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert_eq!(e["conditions"]["ready"], true);
            e["addresses"][0].as_str().unwrap().to_string()
        })
        .collect();
    let mut ips = ips;
    listed.sort();
    ips.sort();
    assert_eq!(listed, ips);
    assert_eq!(slice["ports"][0]["port"], 80);

    s.kubectl(&["delete", "deployment", "web"]);
    s.until("the ReplicaSets and pods collected", |s| {
        let left = s.kubectl(&["get", "replicasets,pods", "-l", "app=web", "-o", "name"]);
        left.trim().is_empty().then_some(())
    });
}

#[test]
fn kubectl_sees_an_unschedulable_pod_pending_with_the_schedulers_event() {
    if !kubectl_available() && std::env::var_os("CRT_SKIP_KUBECTL").is_some() {
        return;
    }
    let s = Serve::start(&["--nodes", "2"]);
    s.kubectl(&[
        "run",
        "picky",
        "--image=nginx",
        r#"--overrides={"spec": {"nodeSelector": {"disk": "ssd"}}}"#,
    ]);
    let message = "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. \
                   preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.";
    let event = s.until("the FailedScheduling event", |s| {
        s.items(&["get", "events"])
            .into_iter()
            .find(|e| e["reason"] == "FailedScheduling")
    });
    assert_eq!(event["message"], message);
    assert_eq!(event["type"], "Warning");
    assert_eq!(event["involvedObject"]["name"], "picky");
    let pod = s.json(&["get", "pod", "picky"]);
    assert_eq!(pod["status"]["phase"], "Pending");
    let scheduled = pod["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "PodScheduled")
        .unwrap();
    assert_eq!(scheduled["status"], "False");
    assert_eq!(scheduled["reason"], "Unschedulable");
    assert_eq!(scheduled["message"], message);
    // Labelling a node lets it schedule.
    s.kubectl(&["label", "node", "node-2", "disk=ssd"]);
    s.kubectl(&[
        "wait",
        "--for=condition=Ready",
        "pod/picky",
        "--timeout=30s",
    ]);
    assert_eq!(
        s.json(&["get", "pod", "picky"])["spec"]["nodeName"],
        "node-2"
    );
}

/// kube-rs's `pod_can_await_conditions`, step by step with kubectl: a busybox pod runs,
/// turns ContainersReady, and a delete with its 1 s grace period completes.
#[test]
fn a_pod_runs_turns_ready_and_its_graceful_delete_completes() {
    if !kubectl_available() && std::env::var_os("CRT_SKIP_KUBECTL").is_some() {
        return;
    }
    let s = Serve::start(&[]);
    let manifest = s._dir.path().join("pod.json");
    let pod = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "busybox-kube4", "labels": {"app": "kube-rs-test"}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "restartPolicy": "Never",
            "containers": [{"name": "busybox", "image": "busybox:stable",
                "command": ["sh", "-c", "sleep 20"]}],
        },
    });
    std::fs::write(&manifest, pod.to_string()).unwrap();
    s.kubectl(&["create", "-f", manifest.to_str().unwrap()]);
    s.kubectl(&[
        "wait",
        "--for=jsonpath={.status.phase}=Running",
        "pod/busybox-kube4",
        "--timeout=15s",
    ]);
    s.kubectl(&[
        "wait",
        "--for=condition=ContainersReady",
        "pod/busybox-kube4",
        "--timeout=10s",
    ]);
    s.kubectl(&["delete", "pod", "busybox-kube4", "--timeout=20s"]);
    assert!(s.try_kubectl(&["get", "pod", "busybox-kube4"]).is_err());
}

/// A quota's usage follows the namespace's pods (measured by the quota controller, charged
/// by admission, given back on delete) and refuses what goes past it; a budget reports its
/// allowed disruptions.
#[test]
fn kubectl_sees_quota_usage_refusals_and_a_budgets_allowed_disruptions() {
    if !kubectl_available() && std::env::var_os("CRT_SKIP_KUBECTL").is_some() {
        return;
    }
    let s = Serve::start(&[]);
    s.kubectl(&["create", "namespace", "q"]);
    s.kubectl(&[
        "create",
        "quota",
        "counts",
        "-n",
        "q",
        "--hard=pods=3,configmaps=5",
    ]);
    s.kubectl(&[
        "create",
        "deployment",
        "web",
        "-n",
        "q",
        "--image=nginx",
        "--replicas=2",
    ]);
    s.kubectl(&[
        "rollout",
        "status",
        "-n",
        "q",
        "deployment/web",
        "--timeout=30s",
    ]);
    let used = |s: &Serve| s.json(&["get", "quota", "counts", "-n", "q"])["status"]["used"].clone();
    s.until("two pods used", |s| (used(s)["pods"] == "2").then_some(()));
    let out = s.kubectl(&["describe", "quota", "counts", "-n", "q"]);
    let row = |name: &str| {
        out.lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|cols| cols.first() == Some(&name))
            .unwrap_or_default()
    };
    assert_eq!(row("pods"), ["pods", "2", "3"], "{out}");
    assert_eq!(row("configmaps"), ["configmaps", "0", "5"], "{out}");
    let out = s.kubectl(&["get", "quota", "-n", "q"]);
    assert!(out.contains("configmaps: 0/5, pods: 2/3"), "{out}");

    s.kubectl(&["run", "extra", "-n", "q", "--image=nginx"]);
    s.until("three pods used", |s| {
        (used(s)["pods"] == "3").then_some(())
    });
    let refused = s
        .try_kubectl(&["run", "one-too-many", "-n", "q", "--image=nginx"])
        .unwrap_err();
    assert!(
        refused.contains(r#"pods "one-too-many" is forbidden: exceeded quota: counts, requested: pods=1, used: pods=3, limited: pods=3"#),
        "{refused}"
    );
    s.kubectl(&[
        "delete",
        "pod",
        "extra",
        "-n",
        "q",
        "--grace-period=1",
        "--timeout=20s",
    ]);
    s.until("the usage given back", |s| {
        (used(s)["pods"] == "2").then_some(())
    });

    s.kubectl(&[
        "create",
        "poddisruptionbudget",
        "web",
        "-n",
        "q",
        "--selector=app=web",
        "--min-available=1",
    ]);
    let pdb = s.until("the budget's status", |s| {
        let pdb = s.json(&["get", "pdb", "web", "-n", "q"]);
        (pdb["status"]["disruptionsAllowed"] == 1).then_some(pdb)
    });
    assert_eq!(pdb["status"]["currentHealthy"], 2, "{pdb}");
    assert_eq!(pdb["status"]["expectedPods"], 2, "{pdb}");
    let out = s.kubectl(&["get", "pdb", "web", "-n", "q"]);
    let cols: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    // NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE
    assert_eq!(cols[..4], ["web", "1", "N/A", "1"], "{out}");
}

#[test]
fn serve_without_the_cluster_has_no_nodes() {
    if !kubectl_available() && std::env::var_os("CRT_SKIP_KUBECTL").is_some() {
        return;
    }
    let s = Serve::start(&["--no-cluster"]);
    assert!(s.items(&["get", "nodes"]).is_empty());
}

/// A StatefulSet's pods come up in order with their claims bound by the default class, a
/// DaemonSet has one pod per node, and a Job made from a CronJob's template completes.
#[test]
fn kubectl_rolls_out_a_statefulset_with_claims_a_daemonset_and_a_cronjobs_job() {
    if !kubectl_available() && std::env::var_os("CRT_SKIP_KUBECTL").is_some() {
        return;
    }
    let s = Serve::start(&[]);
    let manifest = s._dir.path().join("workloads.json");
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
        {
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db"},
            "spec": {
                "replicas": 2,
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {"containers": [{"name": "db", "image": "postgres",
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]},
                },
                "volumeClaimTemplates": [{
                    "metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}}},
                }],
            },
        },
        {
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent"},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {
                    "metadata": {"labels": {"app": "agent"}},
                    "spec": {"containers": [{"name": "agent", "image": "busybox"}]},
                },
            },
        },
    ]});
    std::fs::write(&manifest, list.to_string()).unwrap();
    s.kubectl(&["apply", "-f", manifest.to_str().unwrap()]);

    let out = s.kubectl(&["rollout", "status", "statefulset/db", "--timeout=30s"]);
    // The server defaults `rollingUpdate.partition` to 0, so kubectl reports a partitioned one.
    assert!(
        out.contains("partitioned roll out complete: 2 new pods have been updated"),
        "{out}"
    );
    let pods = s.items(&["get", "pods", "-l", "app=db"]);
    let mut names: Vec<&str> = pods
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["db-0", "db-1"]);
    let claims = s.items(&["get", "pvc", "-l", "app=db"]);
    assert_eq!(claims.len(), 2);
    for claim in &claims {
        assert_eq!(claim["status"]["phase"], "Bound", "{claim}");
        assert_eq!(claim["spec"]["storageClassName"], "standard");
    }

    let out = s.kubectl(&["rollout", "status", "daemonset/agent", "--timeout=30s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    let mut nodes: Vec<String> = s
        .items(&["get", "pods", "-l", "app=agent"])
        .iter()
        .map(|p| p["spec"]["nodeName"].as_str().unwrap().to_string())
        .collect();
    nodes.sort();
    assert_eq!(nodes, ["node-1", "node-2", "node-3"]);

    s.kubectl(&[
        "create",
        "cronjob",
        "tick",
        "--image=busybox",
        "--schedule=*/5 * * * *",
        "--",
        "date",
    ]);
    s.kubectl(&["create", "job", "tick-now", "--from=cronjob/tick"]);
    s.kubectl(&[
        "wait",
        "--for=condition=Complete",
        "job/tick-now",
        "--timeout=30s",
    ]);
}
