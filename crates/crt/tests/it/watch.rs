//! `crt watch configmaps` against `crt serve` prints the events kubectl causes, and the queue
//! items they produce.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A child process killed on drop, with its stdout lines on a channel.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Running {
    fn spawn(args: &[&str]) -> Running {
        let mut child = Command::new(env!("CARGO_BIN_EXE_crt"))
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("crt starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Running { child, lines }
    }

    /// Reads lines until one contains `needle` (at most 30 s); returns the lines read.
    fn wait_for(&self, needle: &str, seen: &mut Vec<String>) {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !seen.iter().any(|l| l.contains(needle)) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => seen.push(line),
                Err(_) => panic!("no line containing {needle:?}; saw {seen:#?}"),
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn kubectl(kubeconfig: &Path, cache: &Path, args: &[&str]) {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(["--request-timeout", "20s"])
        .args(args)
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn crt_watch_prints_the_events_kubectl_causes() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let serve = Running::spawn(&["serve", "--kubeconfig-out", kubeconfig.to_str().unwrap()]);
    serve.wait_for("kubeconfig written to", &mut Vec::new());

    let watch = Running::spawn(&[
        "watch",
        "configmaps",
        "-n",
        "default",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
    ]);
    let mut seen = Vec::new();
    watch.wait_for("synced", &mut seen);

    let cache = dir.path().join("kubectl-cache");
    kubectl(
        &kubeconfig,
        &cache,
        &[
            "create",
            "configmap",
            "demo",
            "-n",
            "default",
            "--from-literal=a=b",
        ],
    );
    watch.wait_for("event: Create default/demo", &mut seen);
    watch.wait_for("queue: default/demo", &mut seen);
    kubectl(
        &kubeconfig,
        &cache,
        &["label", "configmap", "demo", "-n", "default", "tier=web"],
    );
    watch.wait_for("event: Update default/demo", &mut seen);
    // Another namespace is outside the watch.
    kubectl(
        &kubeconfig,
        &cache,
        &["create", "configmap", "elsewhere", "-n", "kube-system"],
    );
    kubectl(
        &kubeconfig,
        &cache,
        &["delete", "configmap", "demo", "-n", "default"],
    );
    watch.wait_for("event: Delete default/demo", &mut seen);
    assert!(!seen.iter().any(|l| l.contains("elsewhere")), "{seen:#?}");
}
