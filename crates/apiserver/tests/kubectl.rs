//! The embedded API server driven by external client programs: the real `kubectl` and the
//! official Kubernetes Python client.
//!
//! kubectl must be on PATH (it is on every machine this project targets): without it the kubectl
//! tests fail, unless `CRT_SKIP_KUBECTL=1` asks to skip them explicitly. Each kubectl gets its own
//! discovery cache and a timeout; children are killed on timeout and on drop.
//!
//! The Python test runs `tests/python/client.py` with `python3` when it imports `kubernetes`,
//! else installs `tests/python/requirements.txt` into a venv under the target's tmp dir (once)
//! and runs that. It has no skip: without python3, or if the install fails, it fails.

mod common;
#[path = "kubectl/crd_corpus.rs"]
mod crd_corpus;
#[path = "kubectl/rbac.rs"]
mod rbac;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use crt_apiserver::Server;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

struct Kubectl {
    /// The program: `kubectl` from PATH, or one version of it (see [`kubectl_versions`]).
    binary: PathBuf,
    kubeconfig: PathBuf,
    dir: tempfile::TempDir,
}

struct Out {
    ok: bool,
    /// The exit code (`None` when killed by a signal).
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Kubectl {
    fn new(server: &Server) -> Option<Kubectl> {
        // Looked up once per test binary, not once per test.
        static ON_PATH: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let on_path = *ON_PATH.get_or_init(|| {
            std::process::Command::new("kubectl")
                .arg("version")
                .arg("--client")
                .output()
                .is_ok()
        });
        if !on_path {
            if std::env::var_os("CRT_SKIP_KUBECTL").is_some() {
                eprintln!("kubectl not found on PATH: skipped, as CRT_SKIP_KUBECTL asks");
                return None;
            }
            panic!(
                "kubectl is not on PATH: these tests drive the server with the real kubectl \
                 (install kubectl, or set CRT_SKIP_KUBECTL=1 to skip them explicitly)"
            );
        }
        Some(Kubectl::with_binary(server, "kubectl".into()))
    }

    /// A kubectl of this program (one of [`kubectl_versions`]) on `server`.
    fn with_binary(server: &Server, binary: PathBuf) -> Kubectl {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).unwrap();
        Kubectl {
            binary,
            kubeconfig,
            dir,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.binary);
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .env("KUBECACHEDIR", self.dir.path().join("cache"))
            .env_remove("KUBECONFIG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    async fn run(&self, args: &[&str], stdin: Option<&str>) -> Out {
        let mut child = self.command(args).spawn().expect("kubectl starts");
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).await.unwrap();
        }
        drop(input);
        // A bound against a hang, not a speed check: a loaded 2-core machine running several
        // kubectl tests at once takes seconds for one apply of every kind.
        let output = tokio::time::timeout(Duration::from_secs(90), child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} timed out"))
            .unwrap();
        Out {
            ok: output.status.success(),
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into(),
            stderr: String::from_utf8_lossy(&output.stderr).into(),
        }
    }

    /// Runs kubectl and asserts success; the stdout.
    async fn ok(&self, args: &[&str]) -> String {
        self.ok_with(args, None).await
    }

    async fn ok_with(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.run(args, stdin).await;
        assert!(
            out.ok,
            "kubectl {args:?} failed: {}{}",
            out.stdout, out.stderr
        );
        out.stdout
    }

    /// Runs kubectl, asserts failure; the stderr.
    async fn fails(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.run(args, stdin).await;
        assert!(!out.ok, "kubectl {args:?} should fail: {}", out.stdout);
        out.stderr
    }

    async fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&all).await).unwrap()
    }

    /// Starts a long-running kubectl whose stdout accumulates in the returned buffer.
    fn spawn(&self, args: &[&str]) -> (Child, Arc<Mutex<String>>) {
        let mut child = self.command(args).spawn().expect("kubectl starts");
        let mut stdout = child.stdout.take().unwrap();
        let buf = Arc::new(Mutex::new(String::new()));
        let sink = buf.clone();
        tokio::spawn(async move {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                sink.lock().push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        });
        (child, buf)
    }
}

fn configmap(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n{extra}data:\n  a: \"1\"\n"
    )
}

async fn wait_for(what: &str, buf: &Mutex<String>, needle: &str) {
    for _ in 0..500 {
        if buf.lock().contains(needle) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for {what}: {needle:?} in {}", buf.lock());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_apply_get_label_annotate_patch_replace() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    assert!(
        k.ok_with(&["create", "-f", "-"], Some(&configmap("c1", "")))
            .await
            .contains("configmap/c1 created")
    );
    assert!(
        k.ok_with(&["apply", "-f", "-"], Some(&configmap("c2", "")))
            .await
            .contains("created")
    );
    let changed = configmap("c2", "").replace("a: \"1\"", "a: \"2\"");
    assert!(
        k.ok_with(&["apply", "-f", "-"], Some(&changed))
            .await
            .contains("configured")
    );
    assert_eq!(k.json(&["get", "cm", "c2"]).await["data"]["a"], "2");

    let table = k.ok(&["get", "configmaps"]).await;
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "DATA", "AGE"]);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("c1 ") && l.split_whitespace().nth(1) == Some("1"))
    );

    k.ok(&["label", "cm", "c1", "tier=web"]).await;
    k.ok(&["annotate", "cm", "c1", "note=hi"]).await;
    k.ok(&[
        "patch",
        "cm",
        "c1",
        "--type",
        "strategic",
        "-p",
        r#"{"data":{"s":"1"}}"#,
    ])
    .await;
    k.ok(&[
        "patch",
        "cm",
        "c1",
        "--type",
        "json",
        "-p",
        r#"[{"op":"add","path":"/data/j","value":"2"}]"#,
    ])
    .await;
    k.ok(&[
        "patch",
        "cm",
        "c1",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"m":"3"}}"#,
    ])
    .await;
    let c1 = k.json(&["get", "cm", "c1"]).await;
    assert_eq!(c1["metadata"]["labels"]["tier"], "web");
    assert_eq!(c1["metadata"]["annotations"]["note"], "hi");
    assert_eq!(c1["data"].as_object().unwrap().len(), 4);
    assert_eq!(
        k.ok(&["get", "cm", "-l", "tier=web", "-o", "name"])
            .await
            .trim(),
        "configmap/c1"
    );

    let stale = serde_json::to_string(&c1).unwrap();
    k.ok(&[
        "patch",
        "cm",
        "c1",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"m":"4"}}"#,
    ])
    .await;
    let err = k.fails(&["replace", "-f", "-"], Some(&stale)).await;
    assert!(err.contains("Conflict"), "{err}");

    let dry = k
        .ok_with(
            &["create", "--dry-run=server", "-f", "-"],
            Some(&configmap("dry", "")),
        )
        .await;
    assert!(dry.contains("server dry run"), "{dry}");
    assert!(
        k.fails(&["get", "cm", "dry"], None)
            .await
            .contains("NotFound")
    );

    // kubectl's typed clients send protobuf bodies.
    k.ok(&["create", "namespace", "team"]).await;
    k.ok(&[
        "create",
        "configmap",
        "typed",
        "-n",
        "team",
        "--from-literal=x=y",
    ])
    .await;
    assert_eq!(
        k.json(&["get", "cm", "typed", "-n", "team"]).await["data"]["x"],
        "y"
    );
    k.ok(&["create", "secret", "generic", "s1", "--from-literal=p=q"])
        .await;
    assert_eq!(k.json(&["get", "secret", "s1"]).await["data"]["p"], "cQ==");

    for i in 0..5 {
        k.ok_with(
            &["create", "-f", "-"],
            Some(&configmap(&format!("page{i}"), "")),
        )
        .await;
    }
    let out = k
        .run(&["get", "cm", "--chunk-size=2", "-o", "name", "-v=6"], None)
        .await;
    assert!(out.ok);
    assert_eq!(
        out.stdout
            .lines()
            .filter(|l| l.starts_with("configmap/page"))
            .count(),
        5
    );
    assert!(
        out.stderr.matches("limit=2").count() >= 3,
        "paged requests: {}",
        out.stderr
    );

    assert_eq!(
        k.ok(&["auth", "can-i", "create", "pods"]).await.trim(),
        "yes"
    );
    assert!(k.ok(&["auth", "whoami"]).await.contains("crt-admin"));

    let bad = k.dir.path().join("bad");
    std::fs::write(&bad, server.kubeconfig().replace(server.token(), "nope")).unwrap();
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&bad)
        .args(["get", "cm"])
        .env("KUBECACHEDIR", k.dir.path().join("cache-bad"))
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(20), out)
        .await
        .unwrap()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("provide credentials") || stderr.contains("Unauthorized"),
        "{stderr}"
    );
}

const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  \
selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      \
containers:\n      - {name: c, image: nginx}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployments_scale_and_status() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    k.ok_with(&["apply", "-f", "-"], Some(DEPLOYMENT)).await;
    k.ok(&["scale", "deployment", "web", "--replicas=4"]).await;
    assert_eq!(
        k.json(&["get", "deploy", "web"]).await["spec"]["replicas"],
        4
    );
    let status =
        r#"{"status":{"replicas":4,"readyReplicas":3,"updatedReplicas":4,"availableReplicas":3}}"#;
    k.ok(&[
        "patch",
        "deploy",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        status,
    ])
    .await;
    let table = k.ok(&["get", "deployments"]).await;
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(&row[..4], ["web", "3/4", "4", "3"]);
    // A status patch through the main resource is ignored.
    k.ok(&[
        "patch",
        "deploy",
        "web",
        "--type=merge",
        "-p",
        r#"{"status":{"readyReplicas":0}}"#,
    ])
    .await;
    assert_eq!(
        k.json(&["get", "deploy", "web"]).await["status"]["readyReplicas"],
        3
    );
    // `kubectl create deployment` sends protobuf.
    k.ok(&[
        "create",
        "deployment",
        "typed",
        "--image=nginx",
        "--replicas=2",
        "--port=80",
    ])
    .await;
    let typed = k.json(&["get", "deploy", "typed"]).await;
    assert_eq!(typed["spec"]["replicas"], 2);
    assert_eq!(typed["spec"]["selector"]["matchLabels"]["app"], "typed");
    let container = &typed["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        (container["name"].as_str(), container["image"].as_str()),
        (Some("nginx"), Some("nginx"))
    );
    assert_eq!(
        container["ports"][0],
        serde_json::json!({"containerPort": 80, "protocol": "TCP"})
    );
    let ns = k.ok(&["get", "namespaces"]).await;
    assert!(
        ns.lines()
            .any(|l| l.starts_with("kube-system ") && l.contains("Active")),
        "{ns}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_shows_added_modified_deleted() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    k.ok_with(&["create", "-f", "-"], Some(&configmap("w0", "")))
        .await;
    let (mut child, buf) = k.spawn(&["get", "cm", "-w", "--output-watch-events", "-o", "json"]);
    wait_for("the initial list", &buf, "\"w0\"").await;
    k.ok_with(&["create", "-f", "-"], Some(&configmap("w1", "")))
        .await;
    k.ok(&["label", "cm", "w1", "x=y"]).await;
    k.ok(&["delete", "cm", "w1"]).await;
    wait_for("the deletion", &buf, "\"DELETED\"").await;
    child.kill().await.unwrap();
    let text = buf.lock().clone();
    let events: Vec<Value> = serde_json::Deserializer::from_str(&text)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .collect();
    let w1: Vec<&str> = events
        .iter()
        .filter(|e| e["object"]["metadata"]["name"] == "w1")
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(w1, ["ADDED", "MODIFIED", "DELETED"]);

    // The table form of `get -w` streams Table rows.
    let (mut child, buf) = k.spawn(&["get", "cm", "-w"]);
    wait_for("the table header", &buf, "w0").await;
    k.ok_with(&["create", "-f", "-"], Some(&configmap("w2", "")))
        .await;
    wait_for("the new row", &buf, "w2").await;
    child.kill().await.unwrap();
}

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  \
name: widgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: widgets, \
singular: widget, kind: Widget, shortNames: [wd]}\n  versions:\n  - name: v1\n    served: true\n    \
storage: true\n    subresources: {status: {}}\n    additionalPrinterColumns:\n    - {name: Size, type: \
integer, jsonPath: .spec.size}\n    schema:\n      openAPIV3Schema:\n        type: object\n        \
properties:\n          spec:\n            type: object\n            required: [size]\n            \
properties:\n              size: {type: integer}\n              color: {type: string, enum: [red, blue]}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    k.ok_with(&["create", "-f", "-"], Some(CRD)).await;
    k.ok(&[
        "wait",
        "--for=condition=established",
        "crd/widgets.example.com",
        "--timeout=10s",
    ])
    .await;
    let widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3, color: red}\n";
    k.ok_with(&["create", "-f", "-"], Some(widget)).await;
    let table = k.ok(&["get", "wd"]).await;
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "SIZE"]);
    assert_eq!(
        table
            .lines()
            .nth(1)
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["w1", "3"]
    );
    assert_eq!(
        k.json(&["get", "widgets.example.com", "w1"]).await["spec"]["size"],
        3
    );
    k.ok_with(
        &["apply", "-f", "-"],
        Some(&widget.replace("size: 3", "size: 5")),
    )
    .await;
    assert_eq!(k.json(&["get", "widget", "w1"]).await["spec"]["size"], 5);

    let invalid = widget.replace("w1", "bad").replace("size: 3, ", "");
    let err = k.fails(&["create", "-f", "-"], Some(&invalid)).await;
    assert!(err.contains("Invalid") || err.contains("invalid"), "{err}");
    assert!(
        k.fails(&["get", "wd", "bad"], None)
            .await
            .contains("NotFound")
    );
}

/// A CRD as controller-gen writes it: `metadata: {type: object}` at the root and in an
/// embedded pod template. kubectl creates and applies (client- and server-side) with strict
/// validation, and the objects keep their metadata.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_gen_crd_keeps_object_metadata() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    let crd = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: jobsets.batch.example.com
spec:
  group: batch.example.com
  names: {kind: JobSet, listKind: JobSetList, plural: jobsets, singular: jobset}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        description: JobSet is the Schema for the jobsets API.
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            properties:
              template:
                type: object
                properties:
                  metadata: {type: object}
                  spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status:
            type: object
            properties:
              ready: {type: integer, format: int32}
"#;
    k.ok_with(&["apply", "-f", "-"], Some(crd)).await;
    k.ok(&[
        "wait",
        "--for=condition=established",
        "crd/jobsets.batch.example.com",
        "--timeout=10s",
    ])
    .await;
    let object = |name: &str| {
        format!(
            "apiVersion: batch.example.com/v1\nkind: JobSet\nmetadata:\n  name: {name}\n  \
             labels: {{app: demo}}\n  annotations: {{team: a}}\n  finalizers: [batch.example.com/cleanup]\n\
             spec:\n  template:\n    metadata: {{}}\n    spec: {{containers: []}}\n"
        )
    };
    k.ok_with(
        &["create", "--validate=strict", "-f", "-"],
        Some(&object("created")),
    )
    .await;
    k.ok_with(
        &["apply", "--validate=strict", "-f", "-"],
        Some(&object("applied")),
    )
    .await;
    k.ok_with(
        &["apply", "--server-side", "--validate=strict", "-f", "-"],
        Some(&object("server-side")),
    )
    .await;
    for name in ["created", "applied", "server-side"] {
        let got = k.json(&["get", "jobset", name]).await;
        let meta = &got["metadata"];
        assert_eq!(meta["name"], name);
        assert_eq!(meta["labels"], json!({"app": "demo"}), "{got}");
        assert_eq!(meta["annotations"]["team"], "a", "{got}");
        assert_eq!(meta["finalizers"], json!(["batch.example.com/cleanup"]));
        assert!(meta["uid"].is_string() && meta["creationTimestamp"].is_string());
        assert_eq!(got["spec"]["template"]["metadata"], json!({}));
    }
    // A template that is not an embedded resource has a plain `metadata: {type: object}`:
    // upstream prunes what is under it (kubebuilder's `generateEmbeddedObjectMeta` exists for
    // this), and says so.
    let labelled = object("labelled").replace("metadata: {}", "metadata: {labels: {role: worker}}");
    let out = k
        .run(&["create", "--validate=warn", "-f", "-"], Some(&labelled))
        .await;
    assert!(out.ok, "{}", out.stderr);
    assert!(
        out.stderr
            .contains(r#"unknown field "spec.template.metadata.labels""#),
        "{}",
        out.stderr
    );
    let got = k.json(&["get", "jobset", "labelled"]).await;
    assert_eq!(got["spec"]["template"]["metadata"], json!({}));
    assert_eq!(got["metadata"]["labels"], json!({"app": "demo"}));
    // A field ObjectMeta does not have is refused under strict validation, named in full.
    let odd = object("odd").replace("  labels: {app: demo}", "  colour: red");
    let err = k
        .fails(&["create", "--validate=strict", "-f", "-"], Some(&odd))
        .await;
    assert!(err.contains(r#"unknown field "metadata.colour""#), "{err}");
}

/// A CRD converted by a webhook (`v1`'s `spec.size` is the stored `v2`'s `spec.replicas`):
/// kubectl reads, lists, edits and watches at either version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_converted_by_a_webhook() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    let webhook = common::conversion::ConversionWebhook::start().await;
    k.ok_with(&["create", "-f", "-"], Some(&webhook.crd().to_string()))
        .await;
    k.ok(&[
        "wait",
        "--for=condition=established",
        "crd/gadgets.conv.example.com",
        "--timeout=10s",
    ])
    .await;
    let gadget =
        "apiVersion: conv.example.com/v1\nkind: Gadget\nmetadata: {name: g1}\nspec: {size: 3}\n";
    k.ok_with(&["create", "-f", "-"], Some(gadget)).await;
    let at_v1 = k.json(&["get", "gadgets.v1.conv.example.com", "g1"]).await;
    assert_eq!(at_v1["apiVersion"], "conv.example.com/v1");
    assert_eq!(at_v1["spec"], json!({"size": 3}));
    let at_v2 = k.json(&["get", "gadgets.v2.conv.example.com", "g1"]).await;
    assert_eq!(at_v2["apiVersion"], "conv.example.com/v2");
    assert_eq!(at_v2["spec"], json!({"replicas": 3}));
    let list = k.json(&["get", "gadgets.v1.conv.example.com"]).await;
    assert_eq!(list["items"][0]["spec"], json!({"size": 3}));
    let table = k.ok(&["get", "gadgets.v1.conv.example.com"]).await;
    assert!(table.contains("g1"), "{table}");

    let (mut child, buf) = k.spawn(&[
        "get",
        "gadgets.v1.conv.example.com",
        "--watch",
        "-o",
        "jsonpath={.metadata.name}={.spec.size}{\"\\n\"}",
    ]);
    wait_for("the listed gadget", &buf, "g1=3").await;
    k.ok_with(
        &["apply", "-f", "-"],
        Some(&gadget.replace("size: 3", "size: 5")),
    )
    .await;
    wait_for("the watched change at v1", &buf, "g1=5").await;
    child.kill().await.unwrap();
    assert_eq!(
        k.json(&["get", "gadgets.v2.conv.example.com", "g1"]).await["spec"],
        json!({"replicas": 5})
    );
    k.ok(&[
        "patch",
        "gadgets.v1.conv.example.com",
        "g1",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":6}}"#,
    ])
    .await;
    assert_eq!(
        k.json(&["get", "gadgets.v2.conv.example.com", "g1"]).await["spec"],
        json!({"replicas": 6})
    );

    webhook.stop().await;
    let err = k
        .fails(&["get", "gadgets.v1.conv.example.com", "g1"], None)
        .await;
    assert!(
        err.contains("conversion webhook for conv.example.com/v2, Kind=Gadget failed"),
        "{err}"
    );
    k.ok(&["get", "gadgets.v2.conv.example.com", "g1"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizers_garbage_collection_and_namespace_deletion() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    k.ok_with(
        &["create", "-f", "-"],
        Some(&configmap("held", "  finalizers: [example.com/hold]\n")),
    )
    .await;
    k.ok(&["delete", "cm", "held", "--wait=false"]).await;
    assert!(k.json(&["get", "cm", "held"]).await["metadata"]["deletionTimestamp"].is_string());
    k.ok(&[
        "patch",
        "cm",
        "held",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ])
    .await;
    assert!(
        k.fails(&["get", "cm", "held"], None)
            .await
            .contains("NotFound")
    );

    k.ok_with(&["create", "-f", "-"], Some(&configmap("owner", "")))
        .await;
    let uid = k.json(&["get", "cm", "owner"]).await["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let owner_ref = format!(
        "  ownerReferences:\n  - {{apiVersion: v1, kind: ConfigMap, name: owner, uid: {uid}}}\n"
    );
    k.ok_with(
        &["create", "-f", "-"],
        Some(&configmap("owned", &owner_ref)),
    )
    .await;
    k.ok(&["delete", "cm", "owner"]).await;
    k.ok(&["wait", "--for=delete", "cm/owned", "--timeout=10s"])
        .await;

    let ns = "apiVersion: v1\nkind: Namespace\nmetadata: {name: doomed}\n";
    k.ok_with(&["create", "-f", "-"], Some(ns)).await;
    k.ok_with(
        &["create", "-n", "doomed", "-f", "-"],
        Some(&configmap("inside", "")),
    )
    .await;
    k.ok(&["delete", "namespace", "doomed", "--timeout=10s"])
        .await;
    assert!(
        k.fails(&["get", "namespace", "doomed"], None)
            .await
            .contains("NotFound")
    );
    assert!(
        k.ok(&["get", "cm", "-n", "doomed", "-o", "name"])
            .await
            .trim()
            .is_empty()
    );
}

fn applied_cm(name: &str, data: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n{data}")
}

const APPLIED_DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: CONTAINER
        image: IMAGE
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_managers_conflicts_and_force() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    let ssa = ["apply", "--server-side", "-f", "-"];
    let out = k
        .ok_with(&ssa, Some(&applied_cm("s", "  a: \"1\"\n  gone: x\n")))
        .await;
    assert!(out.contains("configmap/s serverside-applied"), "{out}");
    // kubectl's applier owns what it applied; managedFields are there, as FieldsV1.
    let got = k.json(&["get", "cm", "s", "--show-managed-fields"]).await;
    let entry = &got["metadata"]["managedFields"][0];
    assert_eq!(entry["manager"], "kubectl");
    assert_eq!(entry["operation"], "Apply");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert_eq!(
        entry["fieldsV1"],
        serde_json::json!({"f:data": {"f:a": {}, "f:gone": {}}})
    );

    // Re-applying without `gone` removes it: nobody else owns it.
    k.ok_with(&ssa, Some(&applied_cm("s", "  a: \"1\"\n")))
        .await;
    assert_eq!(
        k.json(&["get", "cm", "s"]).await["data"],
        serde_json::json!({"a": "1"})
    );

    // A second manager applying the same value shares it, and adds its own field.
    let other = [
        "apply",
        "--server-side",
        "--field-manager",
        "other",
        "-f",
        "-",
    ];
    k.ok_with(&other, Some(&applied_cm("s", "  a: \"1\"\n  b: \"2\"\n")))
        .await;
    // A different value is a conflict that names the owner and the field.
    let err = k
        .fails(&other, Some(&applied_cm("s", "  a: \"3\"\n  b: \"2\"\n")))
        .await;
    assert!(
        err.contains(r#"Apply failed with 1 conflict: conflict with "kubectl": .data.a"#),
        "{err}"
    );
    // --force-conflicts takes it over.
    let forced = [
        "apply",
        "--server-side",
        "--field-manager",
        "other",
        "--force-conflicts",
        "-f",
        "-",
    ];
    k.ok_with(&forced, Some(&applied_cm("s", "  a: \"3\"\n  b: \"2\"\n")))
        .await;
    let got = k.json(&["get", "cm", "s", "--show-managed-fields"]).await;
    assert_eq!(got["data"], serde_json::json!({"a": "3", "b": "2"}));
    let managers: Vec<&str> = got["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(managers, ["other"], "kubectl lost its only field");

    // Containers merge by name: a second manager's sidecar sits beside kubectl's container.
    let app = APPLIED_DEPLOYMENT
        .replace("CONTAINER", "app")
        .replace("IMAGE", "nginx:1");
    k.ok_with(&ssa, Some(&app)).await;
    let sidecar = APPLIED_DEPLOYMENT
        .replace("CONTAINER", "log")
        .replace("IMAGE", "busybox");
    k.ok_with(&other, Some(&sidecar)).await;
    let d = k.json(&["get", "deployment", "web"]).await;
    let names: Vec<&str> = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["app", "log"]);
    // An update (kubectl set image) owns the image it set: kubectl's apply of another
    // image conflicts with it.
    k.ok(&["set", "image", "deployment/web", "app=nginx:2"])
        .await;
    let err = k
        .fails(&ssa, Some(&app.replace("nginx:1", "nginx:3")))
        .await;
    assert!(
        err.contains(r#"conflict with "kubectl-set" using apps/v1"#)
            && err.contains(r#".spec.template.spec.containers[name="app"].image"#),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_side_apply_then_server_side_apply() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    k.ok_with(
        &["apply", "-f", "-"],
        Some(&applied_cm("m", "  a: \"1\"\n")),
    )
    .await;
    let got = k.json(&["get", "cm", "m", "--show-managed-fields"]).await;
    assert_eq!(
        got["metadata"]["managedFields"][0]["manager"],
        "kubectl-client-side-apply"
    );
    // kubectl moves the client-side applier's fields to its server-side manager, so the
    // switch to --server-side is not a conflict.
    let out = k
        .ok_with(
            &["apply", "--server-side", "-f", "-"],
            Some(&applied_cm("m", "  a: \"2\"\n")),
        )
        .await;
    assert!(out.contains("serverside-applied"), "{out}");
    let got = k.json(&["get", "cm", "m", "--show-managed-fields"]).await;
    assert_eq!(got["data"]["a"], "2");
    let entries = got["metadata"]["managedFields"].as_array().unwrap();
    let kubectl = entries.iter().find(|e| e["manager"] == "kubectl").unwrap();
    assert_eq!(kubectl["operation"], "Apply");
    assert_eq!(
        kubectl["fieldsV1"],
        serde_json::json!({"f:data": {"f:a": {}}})
    );
    assert!(
        entries
            .iter()
            .all(|e| e["manager"] != "kubectl-client-side-apply"),
        "{entries:?}"
    );
    // Another manager is not upgraded: its change of a kubectl-owned value conflicts.
    let err = k
        .fails(
            &["apply", "--server-side", "--field-manager", "x", "-f", "-"],
            Some(&applied_cm("m", "  a: \"3\"\n")),
        )
        .await;
    assert!(err.contains(r#"conflict with "kubectl": .data.a"#), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_service_job_cronjob() {
    // These typed `kubectl create` commands send protobuf bodies.
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    k.ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"])
        .await;
    let web = k.json(&["get", "service", "web"]).await;
    assert_eq!(web["spec"]["type"], "ClusterIP");
    assert_eq!(web["spec"]["selector"], serde_json::json!({"app": "web"}));
    assert_eq!(
        web["spec"]["ports"],
        serde_json::json!([{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}])
    );
    assert!(
        web["spec"]["clusterIP"]
            .as_str()
            .is_some_and(|ip| !ip.is_empty()),
        "{web}"
    );

    k.ok(&["create", "service", "nodeport", "np", "--tcp=5678:8080"])
        .await;
    let np = k.json(&["get", "svc", "np"]).await;
    assert_eq!(np["spec"]["type"], "NodePort");
    assert_eq!(np["spec"]["ports"][0]["port"], 5678);
    assert_eq!(np["spec"]["ports"][0]["targetPort"], 8080);

    k.ok(&[
        "create",
        "service",
        "nodeport",
        "fixed",
        "--tcp=80",
        "--node-port=30080",
    ])
    .await;
    let fixed = k.json(&["get", "svc", "fixed"]).await;
    assert_eq!(fixed["spec"]["ports"][0]["nodePort"], 30080);
    assert_eq!(
        fixed["spec"]["ports"][0]["targetPort"], 80,
        "defaulted to port"
    );

    k.ok(&["create", "service", "loadbalancer", "lb", "--tcp=443:https"])
        .await;
    let lb = k.json(&["get", "svc", "lb"]).await;
    assert_eq!(lb["spec"]["type"], "LoadBalancer");
    assert_eq!(lb["spec"]["ports"][0]["targetPort"], "https");

    k.ok(&[
        "create",
        "service",
        "clusterip",
        "headless",
        "--clusterip=None",
    ])
    .await;
    let headless = k.json(&["get", "svc", "headless"]).await;
    assert_eq!(headless["spec"]["clusterIP"], "None");

    k.ok(&[
        "create",
        "service",
        "externalname",
        "ext",
        "--external-name=example.com",
    ])
    .await;
    let ext = k.json(&["get", "svc", "ext"]).await;
    assert_eq!(ext["spec"]["type"], "ExternalName");
    assert_eq!(ext["spec"]["externalName"], "example.com");
    assert!(ext["spec"].get("clusterIP").is_none(), "{ext}");

    k.ok(&[
        "create",
        "cronjob",
        "tick",
        "--image=busybox",
        "--schedule=*/1 * * * *",
    ])
    .await;
    let tick = k.json(&["get", "cronjob", "tick"]).await;
    assert_eq!(tick["spec"]["schedule"], "*/1 * * * *");
    let pod = &tick["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "OnFailure");
    assert_eq!(pod["containers"][0]["image"], "busybox");
    assert_eq!(pod["containers"][0]["name"], "tick");

    k.ok(&["create", "job", "once", "--image=busybox"]).await;
    let once = k.json(&["get", "job", "once"]).await;
    let pod = &once["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    assert_eq!(pod["containers"][0]["image"], "busybox");
    assert_eq!(once["spec"]["backoffLimit"], 6, "defaulted by the server");

    k.ok(&["create", "job", "from-cron", "--from=cronjob/tick"])
        .await;
    let from = k.json(&["get", "job", "from-cron"]).await;
    assert_eq!(
        from["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"],
        "manual"
    );
    let owner = &from["metadata"]["ownerReferences"][0];
    assert_eq!(
        (owner["kind"].as_str(), owner["name"].as_str()),
        (Some("CronJob"), Some("tick"))
    );
    assert_eq!(owner["uid"], tick["metadata"]["uid"]);
    assert_eq!(owner["controller"], true);
    let pod = &from["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "OnFailure");
    assert_eq!(pod["containers"][0]["image"], "busybox");
}

#[tokio::test]
async fn kubectl_create_quota_and_ingress() {
    // Both typed generators send protobuf bodies: quantities in a map, an inlined rule value.
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    k.ok(&[
        "create",
        "quota",
        "compute",
        "--hard=cpu=1,memory=1Gi,pods=4",
    ])
    .await;
    let compute = k.json(&["get", "resourcequota", "compute"]).await;
    assert_eq!(
        compute["spec"],
        json!({"hard": {"cpu": "1", "memory": "1Gi", "pods": "4"}}),
        "{compute}"
    );
    k.ok(&[
        "create",
        "quota",
        "best-effort",
        "--hard=pods=2",
        "--scopes=BestEffort",
    ])
    .await;
    let best = k.json(&["get", "quota", "best-effort"]).await;
    assert_eq!(
        best["spec"],
        json!({"hard": {"pods": "2"}, "scopes": ["BestEffort"]})
    );

    k.ok(&[
        "create",
        "ingress",
        "web",
        "--class=nginx",
        "--rule=foo.com/bar=svc1:8080,tls=foo-cert",
        "--rule=/api*=svc2:http",
        "--default-backend=fallback:80",
    ])
    .await;
    let web = k.json(&["get", "ingress", "web"]).await;
    assert_eq!(web["spec"]["ingressClassName"], "nginx", "{web}");
    assert_eq!(
        web["spec"]["defaultBackend"],
        json!({"service": {"name": "fallback", "port": {"number": 80}}})
    );
    assert_eq!(
        web["spec"]["tls"],
        json!([{"hosts": ["foo.com"], "secretName": "foo-cert"}])
    );
    assert_eq!(
        web["spec"]["rules"],
        json!([
            {"host": "foo.com", "http": {"paths": [{"path": "/bar", "pathType": "Exact",
                "backend": {"service": {"name": "svc1", "port": {"number": 8080}}}}]}},
            {"http": {"paths": [{"path": "/api", "pathType": "Prefix",
                "backend": {"service": {"name": "svc2", "port": {"name": "http"}}}}]}},
        ])
    );

    // `kubectl get` prints the server's Table: upstream's columns for both kinds.
    let table = k.ok(&["get", "ingress", "web"]).await;
    let lines: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"],
        "{table}"
    );
    // ADDRESS is empty (no load balancer), so the row has one field fewer.
    assert_eq!(lines[1][..4], ["web", "nginx", "foo.com", "80,"], "{table}");
    assert_eq!(lines[1][4], "443", "{table}");

    let table = k.ok(&["get", "quota", "compute"]).await;
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "AGE", "REQUEST", "LIMIT"], "{table}");
    let row = table.lines().nth(1).unwrap();
    assert!(row.starts_with("compute "), "{table}");
    // No quota controller fills `status` here (as under a bare kube-apiserver): 0/0 each.
    assert!(row.contains(" cpu: 0/0, memory: 0/0, pods: 0/0"), "{table}");
}

/// The directory of the Python client script and its pinned requirements.
fn python_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python")
}

/// Runs `python -c CODE`: whether it exited 0, or the error starting it.
fn python_runs(python: &Path, code: &str) -> std::io::Result<bool> {
    std::process::Command::new(python)
        .args(["-c", code])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|status| status.success())
}

/// Runs a setup command and panics with its output unless it succeeds.
fn setup_step(what: &str, cmd: &mut std::process::Command) {
    let output = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    assert!(
        output.status.success(),
        "{what} failed ({}): {cmd:?}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A Python interpreter that imports the official `kubernetes` client: `python3` when it
/// does, else a venv under this test target's tmp dir with `tests/python/requirements.txt`
/// installed (made once, under a file lock so parallel test runs do not race, and remade when
/// the requirements change). Panics with the reason when neither works: the test never
/// passes without running the client.
fn python_with_kubernetes() -> PathBuf {
    let system = PathBuf::from("python3");
    match python_runs(&system, "import kubernetes") {
        Ok(true) => return system,
        Ok(false) => {}
        Err(e) => panic!(
            "python3 is not on PATH ({e}): the official Python client test needs python3 with \
             venv and pip (the `kubernetes` package is installed from tests/python/requirements.txt)"
        ),
    }
    let requirements_path = python_dir().join("requirements.txt");
    let requirements = std::fs::read_to_string(&requirements_path).unwrap();
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(tmp).unwrap();
    let lock = std::fs::File::create(tmp.join("python-venv.lock")).unwrap();
    lock.lock().unwrap();
    let venv = tmp.join("python-venv");
    let python = if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    };
    let stamp = venv.join("crt-requirements.txt");
    let installed = std::fs::read_to_string(&stamp).is_ok_and(|s| s == requirements);
    if installed && python_runs(&python, "import kubernetes").unwrap_or(false) {
        return python;
    }
    eprintln!(
        "python3 lacks the `kubernetes` package: installing {} into {}",
        requirements_path.display(),
        venv.display()
    );
    if venv.exists() {
        std::fs::remove_dir_all(&venv).unwrap();
    }
    setup_step(
        "creating a Python venv for the official client",
        std::process::Command::new(&system)
            .args(["-m", "venv"])
            .arg(&venv),
    );
    setup_step(
        "installing the official Python client (pip install -r tests/python/requirements.txt)",
        std::process::Command::new(&python)
            .args(["-m", "pip", "install", "--disable-pip-version-check", "-r"])
            .arg(&requirements_path),
    );
    assert!(
        python_runs(&python, "import kubernetes").unwrap_or(false),
        "{} cannot import kubernetes after installing {}",
        python.display(),
        requirements_path.display()
    );
    std::fs::write(&stamp, &requirements).unwrap();
    python
}

/// `kubeconfig` with the certificate-authority-data of `other`: the same server and token,
/// but a CA that did not sign the server's certificate.
fn with_ca_of(kubeconfig: &str, other: &str) -> String {
    let ca = |yaml: &str| {
        yaml.lines()
            .find(|l| l.trim_start().starts_with("certificate-authority-data:"))
            .expect("the kubeconfig has certificate-authority-data")
            .to_string()
    };
    let (ours, theirs) = (ca(kubeconfig), ca(other));
    assert_ne!(ours, theirs, "two servers got the same CA");
    kubeconfig.replace(&ours, &theirs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_python_client_uses_the_kubeconfig() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube_client::Api;

    let python = tokio::task::spawn_blocking(python_with_kubernetes)
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    let server = common::server().await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let wrong_ca = dir.path().join("wrong-ca-kubeconfig");
    let other = common::server().await;
    std::fs::write(
        &wrong_ca,
        with_ca_of(&server.kubeconfig(), &other.kubeconfig()),
    )
    .unwrap();
    drop(other);

    let cms: Api<ConfigMap> = Api::namespaced(common::client(&server).await, "default");
    let from_rust = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "from-rust"},
        "data": {"x": "y"},
    }))
    .unwrap();
    cms.create(&Default::default(), &from_rust).await.unwrap();

    let mut cmd = Command::new(&python);
    cmd.arg(python_dir().join("client.py"))
        .arg(&kubeconfig)
        .args(["default", "py-made"])
        .arg(&wrong_ca)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // The client would send requests to 127.0.0.1 through a proxy from the environment.
    for var in [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        cmd.env_remove(var);
    }
    let output = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("the Python client timed out")
        .expect("the Python client starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{} client.py failed ({}): {stdout}{}",
        python.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let out: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("client.py printed no JSON ({e}): {stdout}"));

    assert_eq!(out["host"], server.url());
    assert_eq!(
        out["namespaces"],
        serde_json::json!(["default", "kube-node-lease", "kube-public", "kube-system"])
    );
    assert_eq!(out["created"]["data"], serde_json::json!({"a": "1"}));
    assert_eq!(out["read"]["uid"], out["created"]["uid"]);
    assert_eq!(out["read"]["data"], serde_json::json!({"a": "1"}));
    assert_eq!(
        out["patched"]["data"],
        serde_json::json!({"a": "3", "b": "2"}),
        "a strategic merge patch, then a JSON patch"
    );
    let watched: Vec<(&str, &Value)> = out["watch"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["type"].as_str().unwrap(), &e["data"]))
        .collect();
    assert_eq!(
        watched,
        [
            ("MODIFIED", &serde_json::json!({"a": "1", "b": "2"})),
            ("MODIFIED", &serde_json::json!({"a": "3", "b": "2"})),
        ],
        "a watch from the created resourceVersion replays both patches"
    );
    assert_eq!(out["labelled"], serde_json::json!(["py-made"]));
    assert_eq!(out["from_rust"], serde_json::json!({"x": "y"}));
    let wrong_ca_error = out["wrong_ca"].as_str().unwrap();
    assert!(
        wrong_ca_error.contains("CERTIFICATE_VERIFY_FAILED"),
        "{wrong_ca_error}"
    );

    // What Python made is what kube-client sees.
    let made = cms.get("py-made").await.unwrap();
    assert_eq!(made.metadata.uid.as_deref(), out["created"]["uid"].as_str());
    assert_eq!(
        made.metadata.resource_version.as_deref(),
        out["patched"]["resourceVersion"].as_str()
    );
    assert_eq!(
        made.metadata.labels.unwrap_or_default()["made-by"],
        "python"
    );
    assert_eq!(
        serde_json::to_value(made.data).unwrap(),
        serde_json::json!({"a": "3", "b": "2"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_and_validated_apply_read_the_openapi_schemas() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    let replicas = k.ok(&["explain", "deployment.spec.replicas"]).await;
    assert!(replicas.contains("FIELD: replicas <integer>"), "{replicas}");
    assert!(replicas.contains("Number of desired pods"), "{replicas}");
    let cm = k.ok(&["explain", "configmap"]).await;
    assert!(cm.contains("KIND:       ConfigMap"), "{cm}");
    assert!(cm.contains("binaryData"), "{cm}");
    let containers = k.ok(&["explain", "pods.spec.containers"]).await;
    assert!(containers.contains("<[]Container>"), "{containers}");
    // The same from `/openapi/v2`, which kubectl reads in protobuf.
    let v2 = k
        .ok(&[
            "explain",
            "--output",
            "plaintext-openapiv2",
            "deployments.spec.replicas",
        ])
        .await;
    assert!(v2.contains("replicas <integer>"), "{v2}");
    assert!(v2.contains("Number of desired pods"), "{v2}");

    let crd = CRD.replace(
        "size: {type: integer}",
        "size: {type: integer, description: How big the widget is.}",
    );
    k.ok_with(&["create", "-f", "-"], Some(&crd)).await;
    k.ok(&[
        "wait",
        "--for=condition=established",
        "crd/widgets.example.com",
        "--timeout=10s",
    ])
    .await;
    let spec = k.ok(&["explain", "widget.spec"]).await;
    assert!(spec.contains("How big the widget is."), "{spec}");
    let size = k.ok(&["explain", "widgets.spec.size"]).await;
    assert!(size.contains("<integer>"), "{size}");
    let v2 = k
        .ok(&[
            "explain",
            "--output",
            "plaintext-openapiv2",
            "widgets.spec.size",
        ])
        .await;
    assert!(v2.contains("size <integer>"), "{v2}");

    // Client-side apply with kubectl's default validation, for built-in and custom kinds.
    k.ok_with(&["apply", "-f", "-"], Some(&configmap("applied", "")))
        .await;
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  \
        replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: \
        {app: web}}\n    spec:\n      containers:\n      - {name: app, image: nginx}\n";
    k.ok_with(&["apply", "-f", "-"], Some(deployment)).await;
    k.ok_with(
        &["apply", "-f", "-"],
        Some(&deployment.replace("image: nginx", "image: nginx:2")),
    )
    .await;
    let d = k.json(&["get", "deployment", "web"]).await;
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:2"
    );
    let widget =
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\n";
    k.ok_with(&["apply", "-f", "-"], Some(widget)).await;
    // An unknown field: rejected by the server under kubectl's default (strict) validation.
    let unknown = widget.replace("size: 3", "size: 3, bogus: 1");
    let err = k.fails(&["apply", "-f", "-"], Some(&unknown)).await;
    assert!(
        err.contains("unknown field") && err.contains("bogus"),
        "{err}"
    );
    // Only warned about under --validate=warn.
    let out = k
        .run(&["apply", "--validate=warn", "-f", "-"], Some(&unknown))
        .await;
    assert!(out.ok, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("bogus"), "{}", out.stderr);
}

/// kubectl speaks HTTP/2: a body over the limit gets the 413 `Status` there too, which kubectl
/// prints as the real server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_limit_is_refused_with_413() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    let big = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  x: {}\n",
        "x".repeat(3 * 1024 * 1024 + 1)
    );
    let stderr = k.fails(&["create", "-f", "-"], Some(&big)).await;
    assert_eq!(
        stderr.trim(),
        "Error from server (RequestEntityTooLarge): error when creating \"STDIN\": \
         Request entity too large: limit is 3145728"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_resources_and_the_kinds_beyond_workloads() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    let wide = k.ok(&["api-resources", "-o", "wide"]).await;
    let row = |name: &str, api_version: &str| {
        wide.lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|cols| cols[0] == name && cols.contains(&api_version))
            .unwrap_or_else(|| panic!("no {name} {api_version} in:\n{wide}"))
    };
    assert_eq!(
        row("roles", "rbac.authorization.k8s.io/v1")[1],
        "rbac.authorization.k8s.io/v1"
    );
    assert_eq!(row("networkpolicies", "networking.k8s.io/v1")[1], "netpol");
    assert_eq!(row("ingresses", "networking.k8s.io/v1")[1], "ing");
    assert_eq!(row("poddisruptionbudgets", "policy/v1")[1], "pdb");
    assert_eq!(row("priorityclasses", "scheduling.k8s.io/v1")[1], "pc");
    assert_eq!(row("horizontalpodautoscalers", "autoscaling/v2")[1], "hpa");
    let verbs = |name: &str, api_version: &str| row(name, api_version)[4..].join(" ");
    assert!(
        verbs("tokenreviews", "authentication.k8s.io/v1").contains("create"),
        "{wide}"
    );
    assert!(
        !verbs("tokenreviews", "authentication.k8s.io/v1").contains("get"),
        "{wide}"
    );
    let cs = verbs("componentstatuses", "v1");
    assert!(
        cs.contains("get") && cs.contains("list") && !cs.contains("create"),
        "{wide}"
    );

    let role = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: reader\n\
                rules:\n- apiGroups: [\"\"]\n  resources: [pods]\n  verbs: [get, list]\n";
    k.ok_with(&["create", "-f", "-"], Some(role)).await;
    let got = k.json(&["get", "role", "reader"]).await;
    assert_eq!(got["rules"][0]["verbs"], serde_json::json!(["get", "list"]));
    let pc = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: high\n\
              value: 1000\ndescription: important\n";
    k.ok_with(&["create", "-f", "-"], Some(pc)).await;
    let got = k.json(&["get", "pc", "high"]).await;
    assert_eq!(got["value"], 1000);
    assert!(k.ok(&["get", "priorityclasses"]).await.contains("high"));
    // `kubectl auth can-i` asks a SelfSubjectAccessReview.
    assert_eq!(
        k.ok(&["auth", "can-i", "delete", "roles"]).await.trim(),
        "yes"
    );
}

/// An operator's install manifests beyond workloads (RBAC, network policy, ingress, PDB, HPA,
/// storage and priority classes, webhook configurations, quotas...) apply with kubectl's
/// validation on, as on a real cluster, read back with their kind, and each kind is explained.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_manifests_beyond_workloads_apply_and_explain() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    let manifests = include_str!("manifests/beyond-workloads.yaml");
    let out = k.ok_with(&["apply", "-f", "-"], Some(manifests)).await;
    let kinds: Vec<(String, String)> = manifests
        .split("\n---\n")
        .map(|doc| {
            let field = |key: &str| {
                doc.lines()
                    .find_map(|l| l.strip_prefix(key))
                    .unwrap_or_else(|| panic!("no {key} in {doc}"))
                    .trim()
                    .to_string()
            };
            (field("kind: "), field("apiVersion: "))
        })
        .collect();
    assert_eq!(kinds.len(), 19);
    for (kind, api_version) in &kinds {
        let resource = kind.to_ascii_lowercase();
        assert!(
            out.lines().any(|l| l.starts_with(&format!("{resource}."))
                || l.starts_with(&format!("{resource}/")))
                && out.lines().all(|l| l.ends_with(" created")),
            "{kind} not created:\n{out}"
        );
        let explained = k
            .ok(&["explain", &resource, "--api-version", api_version])
            .await;
        assert!(
            explained.contains(&format!("KIND:       {kind}")),
            "{kind}: {explained}"
        );
    }
    // A second apply of the same manifests changes nothing.
    let again = k.ok_with(&["apply", "-f", "-"], Some(manifests)).await;
    assert_eq!(again.matches("unchanged").count(), 19, "{again}");
    let pdb = k.json(&["get", "pdb", "web"]).await;
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    let hpa = k.json(&["get", "hpa.v2.autoscaling", "web"]).await;
    assert_eq!(hpa["spec"]["maxReplicas"], 5);
}

/// The manifests of tests/manifests, by file name: together one or more objects of every
/// built-in kind that can be applied.
const MANIFESTS: &[(&str, &str)] = &[
    ("core.yaml", include_str!("manifests/core.yaml")),
    ("workloads.yaml", include_str!("manifests/workloads.yaml")),
    (
        "beyond-workloads.yaml",
        include_str!("manifests/beyond-workloads.yaml"),
    ),
    ("cluster.yaml", include_str!("manifests/cluster.yaml")),
];

/// The documents of a YAML stream, as JSON.
fn yaml_documents(yaml: &str) -> Vec<Value> {
    use serde::Deserialize;
    serde_yaml_ng::Deserializer::from_str(yaml)
        .map(|doc| Value::deserialize(doc).expect("manifest parses"))
        .filter(|doc| !doc.is_null())
        .collect()
}

fn api_version_kind(doc: &Value) -> (String, String) {
    let field = |key: &str| {
        doc[key]
            .as_str()
            .unwrap_or_else(|| panic!("no {key} in {doc}"))
            .to_string()
    };
    (field("apiVersion"), field("kind"))
}

/// The built-in kinds the server can patch, by `(apiVersion, kind)`, with their plural: read
/// from discovery, so a kind added to the server is in this set without anyone editing a test.
async fn patchable_builtin_kinds(
    client: &kube_client::Client,
) -> std::collections::BTreeMap<(String, String), String> {
    let builtins = crt_apiserver::resource::ResourceInfo::builtins();
    let mut group_versions: Vec<(String, String)> = builtins
        .iter()
        .map(|r| (r.group.clone(), r.version.clone()))
        .collect();
    group_versions.sort();
    group_versions.dedup();
    let mut kinds = std::collections::BTreeMap::new();
    for (group, version) in group_versions {
        let (uri, api_version) = if group.is_empty() {
            (format!("/api/{version}"), version.clone())
        } else {
            (
                format!("/apis/{group}/{version}"),
                format!("{group}/{version}"),
            )
        };
        let (code, _, list) = common::get_accept(client, &uri, "application/json").await;
        assert_eq!(code, 200, "{uri}: {list}");
        for r in list["resources"].as_array().unwrap() {
            let plural = r["name"].as_str().unwrap();
            let builtin = builtins
                .iter()
                .any(|b| b.group == group && b.version == version && b.plural == plural);
            let patchable = r["verbs"].as_array().unwrap().iter().any(|v| v == "patch");
            if builtin && patchable {
                let kind = r["kind"].as_str().unwrap().to_string();
                kinds.insert((api_version.clone(), kind), plural.to_string());
            }
        }
    }
    kinds
}

/// `kubectl apply` of every manifest of tests/manifests in one stream, as a user applies a
/// directory: each object `created`, then `unchanged`, then, with a new label in each,
/// `configured` (kubectl's three-way strategic merge patch, from the OpenAPI schema's patch
/// metadata) with the label read back and nothing else lost, then `unchanged` again.
async fn apply_reapply_and_edit_every_manifest(k: &Kubectl, docs: &[Value]) {
    let stream = MANIFESTS
        .iter()
        .map(|(_, yaml)| *yaml)
        .collect::<Vec<_>>()
        .join("\n---\n");
    let each_line_ends = |out: &str, word: &str| {
        assert_eq!(out.lines().count(), docs.len(), "{out}");
        assert!(
            out.lines().all(|l| l.ends_with(&format!(" {word}"))),
            "not all {word}:\n{out}"
        );
    };
    let out = k.ok_with(&["apply", "-f", "-"], Some(&stream)).await;
    each_line_ends(&out, "created");
    let out = k.ok_with(&["apply", "-f", "-"], Some(&stream)).await;
    each_line_ends(&out, "unchanged");

    // An edit of every object: a new label.
    let edited: Vec<String> = docs
        .iter()
        .map(|doc| {
            let mut doc = doc.clone();
            let meta = doc["metadata"].as_object_mut().unwrap();
            let labels = meta
                .entry("labels")
                // Not `yes`: YAML 1.1 (kubectl's reader) takes an unquoted `yes` for a boolean.
                .or_insert_with(|| serde_json::json!({}));
            labels["example.com/edited"] = "v2".into();
            serde_yaml_ng::to_string(&doc).unwrap()
        })
        .collect();
    let edited = edited.join("\n---\n");
    let out = k.ok_with(&["apply", "-f", "-"], Some(&edited)).await;
    each_line_ends(&out, "configured");
    let got: Value = serde_json::from_str(
        &k.ok_with(&["get", "-f", "-", "-o", "json"], Some(&stream))
            .await,
    )
    .unwrap();
    let items = got["items"].as_array().unwrap();
    assert_eq!(items.len(), docs.len());
    for (doc, item) in docs.iter().zip(items) {
        assert_eq!(api_version_kind(doc), api_version_kind(item));
        assert_eq!(doc["metadata"]["name"], item["metadata"]["name"]);
        assert_eq!(
            item["metadata"]["labels"]["example.com/edited"], "v2",
            "{item}"
        );
        // What the manifest says is still there: the patch changed only the label.
        for (key, value) in doc.as_object().unwrap() {
            assert!(item.get(key).is_some(), "{key} lost: {item}");
            if let Some(labels) = value.get("labels").and_then(Value::as_object) {
                for (label, v) in labels {
                    assert_eq!(&item[key]["labels"][label], v, "{item}");
                }
            }
        }
    }
    let out = k.ok_with(&["apply", "-f", "-"], Some(&edited)).await;
    each_line_ends(&out, "unchanged");
}

/// One kind of each group version of `kinds`: kubectl reads `/openapi/v3` one document per
/// group version, so explaining one kind of each reads every document a kubectl can ask for.
fn one_per_group_version(
    kinds: &std::collections::BTreeMap<(String, String), String>,
) -> std::collections::BTreeMap<(String, String), String> {
    let mut seen = std::collections::BTreeSet::new();
    kinds
        .iter()
        .filter(|((api_version, _), _)| seen.insert(api_version.clone()))
        .map(|(key, plural)| (key.clone(), plural.clone()))
        .collect()
}

/// `kubectl explain` of every kind of `kinds` at its version: from kubectl's default source,
/// `/openapi/v3` (since 1.27), or with `v2` from `/openapi/v2`, which kubectl reads in protobuf.
async fn explain_every_kind(
    k: &Kubectl,
    kinds: &std::collections::BTreeMap<(String, String), String>,
    v2: bool,
) {
    for ((api_version, kind), plural) in kinds {
        let mut args = vec!["explain", plural, "--api-version", api_version];
        if v2 {
            args.extend(["--output", "plaintext-openapiv2"]);
        }
        let explained = k.ok(&args).await;
        // The two sources print their headers differently.
        let (kind_line, version_line) = if v2 {
            (
                format!("KIND:     {kind}\n"),
                format!("VERSION:  {api_version}\n"),
            )
        } else {
            let version = api_version.rsplit('/').next().unwrap();
            (
                format!("KIND:       {kind}\n"),
                format!("VERSION:    {version}\n"),
            )
        };
        assert!(
            explained.contains(&kind_line) && explained.contains(&version_line),
            "{api_version} {kind} (v2: {v2}): {explained}"
        );
    }
}

/// Every built-in kind that can be applied has a manifest in tests/manifests, written as for a
/// real cluster, and goes through kubectl as a user drives it, with kubectl's default (strict)
/// validation: `apply` creates it, a second `apply` leaves it `unchanged`, an edited manifest
/// `apply`s as `configured` (kubectl's three-way strategic merge patch, computed from the
/// OpenAPI schema's patch metadata) and the edit is read back, `explain` describes the kind
/// (from `/openapi/v3`, and from `/openapi/v2` in protobuf), and `create --validate=strict`
/// creates some.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_builtin_kind_applies_reapplies_edits_and_explains() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    let client = common::client(&server).await;

    // Every manifest file is in MANIFESTS.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/manifests");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".yaml"))
        .collect();
    files.sort();
    let mut listed: Vec<String> = MANIFESTS.iter().map(|(n, _)| n.to_string()).collect();
    listed.sort();
    assert_eq!(files, listed, "MANIFESTS lists every file of {dir:?}");

    let docs: Vec<Value> = MANIFESTS
        .iter()
        .flat_map(|(_, yaml)| yaml_documents(yaml))
        .collect();

    // Every built-in kind that can be patched has a manifest.
    let kinds = patchable_builtin_kinds(&client).await;
    let covered: std::collections::BTreeSet<(String, String)> =
        docs.iter().map(api_version_kind).collect();
    let missing: Vec<&(String, String)> = kinds.keys().filter(|k| !covered.contains(*k)).collect();
    assert!(
        missing.is_empty(),
        "built-in kinds without a manifest in tests/manifests: {missing:?}"
    );
    // Bindings (create only) and ComponentStatuses (read only) are the only ones left out.
    assert_eq!(
        kinds.len() + 2,
        crt_apiserver::resource::ResourceInfo::builtins().len()
    );
    let unknown: Vec<&(String, String)> =
        covered.iter().filter(|k| !kinds.contains_key(*k)).collect();
    assert!(unknown.is_empty(), "not built-in kinds: {unknown:?}");

    apply_reapply_and_edit_every_manifest(&k, &docs).await;
    explain_every_kind(&k, &kinds, false).await;
    // `/openapi/v2` is one document for every kind, read whole by each `explain`: one kind
    // per group version shows each group's definitions are there.
    explain_every_kind(&k, &one_per_group_version(&kinds), true).await;

    // `kubectl create --validate=strict` of some, renamed.
    let some = [
        ("v1", "Secret"),
        ("v1", "Service"),
        ("apps/v1", "Deployment"),
        ("coordination.k8s.io/v1", "Lease"),
        ("events.k8s.io/v1", "Event"),
        ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema"),
        ("storage.k8s.io/v1", "CSIDriver"),
        ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ];
    let created: Vec<String> = some
        .iter()
        .map(|(api_version, kind)| {
            let mut doc = docs
                .iter()
                .find(|d| api_version_kind(d) == (api_version.to_string(), kind.to_string()))
                .unwrap()
                .clone();
            let name = format!("{}-strict", doc["metadata"]["name"].as_str().unwrap());
            doc["metadata"]["name"] = name.into();
            serde_json::to_string(&doc).unwrap()
        })
        .collect();
    let created = created.join("\n---\n");
    let out = k
        .ok_with(&["create", "--validate=strict", "-f", "-"], Some(&created))
        .await;
    assert_eq!(out.lines().count(), some.len(), "{out}");
    assert!(out.lines().all(|l| l.ends_with("-strict created")), "{out}");
    let got: Value = serde_json::from_str(
        &k.ok_with(&["get", "-f", "-", "-o", "json"], Some(&created))
            .await,
    )
    .unwrap();
    assert_eq!(got["items"].as_array().unwrap().len(), some.len());
}

/// The kubectl programs to drive the server with, each with the version it reports:
/// `CRT_KUBECTLS` (paths separated by `:`) when set, else every `kubectl.1.<minor>` beside the
/// `kubectl` on PATH (as the Google Cloud SDK installs the versions it supports), oldest first,
/// else that `kubectl` alone.
fn kubectl_versions() -> Vec<(String, PathBuf)> {
    let binaries: Vec<PathBuf> = match std::env::var_os("CRT_KUBECTLS") {
        Some(list) => std::env::split_paths(&list).collect(),
        None => {
            let on_path = std::env::var_os("PATH")
                .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
                .unwrap_or_default()
                .into_iter()
                .map(|dir| dir.join("kubectl"))
                .find(|p| p.is_file());
            let Some(kubectl) = on_path else {
                return Vec::new();
            };
            let dir = std::fs::canonicalize(&kubectl)
                .ok()
                .and_then(|p| p.parent().map(Path::to_path_buf));
            let mut minors: Vec<(u32, PathBuf)> = dir
                .and_then(|dir| std::fs::read_dir(dir).ok())
                .into_iter()
                .flatten()
                .filter_map(|entry| {
                    let path = entry.ok()?.path();
                    let name = path.file_name()?.to_str()?;
                    let minor = name.strip_prefix("kubectl.1.")?.parse().ok()?;
                    Some((minor, path))
                })
                .collect();
            minors.sort();
            if minors.is_empty() {
                vec![kubectl]
            } else {
                minors.into_iter().map(|(_, path)| path).collect()
            }
        }
    };
    binaries
        .into_iter()
        .map(|binary| {
            let out = std::process::Command::new(&binary)
                .args(["version", "--client", "-o", "json"])
                .output()
                .unwrap_or_else(|e| panic!("{} does not run: {e}", binary.display()));
            let version: Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("{} version: {e}", binary.display()));
            let version = version["clientVersion"]["gitVersion"]
                .as_str()
                .expect("a gitVersion")
                .to_string();
            (version, binary)
        })
        .collect()
}

/// Every kubectl a user may run against a 1.33 server (1.27 to 1.33: kubectl supports one
/// minor version of skew and users lag further, and each version reads discovery and the
/// OpenAPI documents its own way) applies, re-applies and edits a manifest of every built-in
/// kind with its client-side validation on, and explains every kind. Each version gets its own
/// server; they run side by side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_builtin_kind_with_every_kubectl_version() {
    let versions = kubectl_versions();
    if versions.is_empty() {
        if std::env::var_os("CRT_SKIP_KUBECTL").is_some() {
            eprintln!("kubectl not found on PATH: skipped, as CRT_SKIP_KUBECTL asks");
            return;
        }
        panic!("kubectl is not on PATH (or set CRT_SKIP_KUBECTL=1 to skip the kubectl tests)");
    }
    let docs: Arc<Vec<Value>> = Arc::new(
        MANIFESTS
            .iter()
            .flat_map(|(_, yaml)| yaml_documents(yaml))
            .collect(),
    );
    // Two at a time: each runs about 70 kubectl processes.
    let turns = Arc::new(tokio::sync::Semaphore::new(2));
    let mut runs = tokio::task::JoinSet::new();
    for (version, binary) in versions.clone() {
        let docs = docs.clone();
        let turns = turns.clone();
        runs.spawn(async move {
            let _turn = turns.acquire_owned().await.unwrap();
            let server = common::server().await;
            let client = common::client(&server).await;
            let kinds = patchable_builtin_kinds(&client).await;
            let k = Kubectl::with_binary(&server, binary);
            apply_reapply_and_edit_every_manifest(&k, &docs).await;
            // Every document each version reads; every kind is explained by the test above.
            explain_every_kind(&k, &one_per_group_version(&kinds), false).await;
            (version, kinds.len())
        });
    }
    let mut done = Vec::new();
    while let Some(run) = runs.join_next().await {
        match run {
            Ok(version) => done.push(version),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
    done.sort();
    eprintln!("every built-in kind applied, edited and explained with kubectl {done:?}");
    assert_eq!(done.len(), versions.len());
}

/// A ValidatingAdmissionPolicy applied with kubectl: its `Deny` binding's refusal and its
/// `Warn` binding's warning are what kubectl prints for a real cluster's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validating_admission_policy_denies_and_warns() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    let policy = |name: &str, max: u32| {
        format!(
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\n\
             metadata:\n  name: {name}\nspec:\n  failurePolicy: Fail\n  matchConstraints:\n    \
             resourceRules:\n    - apiGroups: [\"apps\"]\n      apiVersions: [\"v1\"]\n      \
             operations: [\"CREATE\", \"UPDATE\"]\n      resources: [\"deployments\"]\n  \
             validations:\n  - expression: \"object.spec.replicas <= {max}\"\n---\n\
             apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\n\
             metadata:\n  name: {name}\nspec:\n  policyName: {name}\n"
        )
    };
    let manifests = format!(
        "{}  validationActions: [Deny]\n---\n{}  validationActions: [Warn]\n",
        policy("max-replicas", 5),
        policy("few-replicas", 2)
    );
    let out = k.ok_with(&["apply", "-f", "-"], Some(&manifests)).await;
    assert_eq!(out.matches(" created").count(), 4, "{out}");

    let deployment = |replicas: u32| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  \
             replicas: {replicas}\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    \
             metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      \
             - {{name: web, image: nginx}}\n"
        )
    };
    let err = k.fails(&["apply", "-f", "-"], Some(&deployment(6))).await;
    assert!(
        err.contains(
            "The deployments \"web\" is invalid: : ValidatingAdmissionPolicy 'max-replicas' with \
             binding 'max-replicas' denied request: failed expression: object.spec.replicas <= 5"
        ),
        "{err}"
    );
    let err = k
        .fails(
            &[
                "create",
                "deployment",
                "big",
                "--image=nginx",
                "--replicas=7",
            ],
            None,
        )
        .await;
    assert!(
        err.contains(
            "error: failed to create deployment: deployments.apps \"big\" is forbidden: \
             ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas' denied \
             request: failed expression: object.spec.replicas <= 5"
        ),
        "{err}"
    );

    // Over the Warn policy's limit, within the Deny one's: created, with kubectl's warning.
    let out = k.run(&["apply", "-f", "-"], Some(&deployment(3))).await;
    assert!(out.ok, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("deployment.apps/web created"),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr.contains(
            "Warning: Validation failed for ValidatingAdmissionPolicy 'few-replicas' with \
             binding 'few-replicas': failed expression: object.spec.replicas <= 2"
        ),
        "{}",
        out.stderr
    );
    let web = k.json(&["get", "deployment", "web"]).await;
    assert_eq!(web["spec"]["replicas"], 3);
}

/// Bad built-in objects are refused with upstream's 422, which kubectl prints as it prints a
/// real server's: `The <Kind> "<name>" is invalid: <field>: <message>` (validated client-side
/// first, as `kubectl apply` does by default, then by the server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_prints_upstreams_validation_errors() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    let cases = [
        (
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  \
             - port: 99999\n    targetPort: 8080\n",
            "The Service \"web\" is invalid: spec.ports[0].port: Invalid value: 99999: \
             must be between 1 and 65535, inclusive",
        ),
        (
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: reader\n\
             rules:\n- apiGroups: [\"\"]\n  resources: [pods]\n  verbs: []\n",
            "The Role \"reader\" is invalid: rules[0].verbs: Required value: \
             verbs must contain at least one value",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  \
             \"bad key\": x\n",
            "The ConfigMap \"settings\" is invalid: data[bad key]: Invalid value: \"bad key\": \
             a valid config key must consist of alphanumeric characters, '-', '_' or '.' \
             (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is \
             '[-._a-zA-Z0-9]+')",
        ),
    ];
    for (manifest, want) in cases {
        let stderr = k.fails(&["apply", "-f", "-"], Some(manifest)).await;
        assert_eq!(stderr.trim(), want);
    }
    // Nothing was stored.
    let listed = k
        .ok(&["get", "services,roles,configmaps", "-o", "name"])
        .await;
    assert!(
        !listed.contains("service/web")
            && !listed.contains("role.rbac.authorization.k8s.io/reader")
            && !listed.contains("configmap/settings"),
        "{listed}"
    );
}

/// `kubectl create role|clusterrole|rolebinding|clusterrolebinding|poddisruptionbudget|
/// priorityclass`: kubectl's typed clients send these as protobuf, which the server decodes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_generators_for_rbac_pdbs_and_priority_classes() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    k.ok(&[
        "create",
        "role",
        "r",
        "--verb=get,list",
        "--resource=pods",
        "--resource-name=a",
    ])
    .await;
    assert_eq!(
        k.json(&["get", "role", "r"]).await["rules"],
        json!([{"apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"], "verbs": ["get", "list"]}])
    );
    k.ok(&[
        "create",
        "clusterrole",
        "cr",
        "--verb=get",
        "--non-resource-url=/healthz",
    ])
    .await;
    k.ok(&[
        "create",
        "clusterrole",
        "agg",
        "--aggregation-rule=rbac.example.com/aggregate=true",
    ])
    .await;
    assert_eq!(
        k.json(&["get", "clusterrole", "agg"]).await["aggregationRule"],
        json!({"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate": "true"}}]})
    );
    k.ok(&[
        "create",
        "rolebinding",
        "rb",
        "--role=r",
        "--user=alice",
        "--serviceaccount=default:sa",
    ])
    .await;
    let rb = k.json(&["get", "rolebinding", "rb"]).await;
    assert_eq!(
        rb["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"})
    );
    assert_eq!(
        rb["subjects"][1],
        json!({"kind": "ServiceAccount", "name": "sa", "namespace": "default"})
    );
    k.ok(&[
        "create",
        "clusterrolebinding",
        "crb",
        "--clusterrole=cr",
        "--group=devs",
    ])
    .await;
    k.ok(&[
        "create",
        "pdb",
        "half",
        "--selector=app=x",
        "--min-available=50%",
    ])
    .await;
    assert_eq!(
        k.json(&["get", "pdb", "half"]).await["spec"],
        json!({"minAvailable": "50%", "selector": {"matchLabels": {"app": "x"}}})
    );
    k.ok(&[
        "create",
        "pdb",
        "one",
        "--selector=app=y",
        "--max-unavailable=1",
    ])
    .await;
    assert_eq!(
        k.json(&["get", "pdb", "one"]).await["spec"]["maxUnavailable"],
        1
    );
    k.ok(&[
        "create",
        "priorityclass",
        "low",
        "--value=-5",
        "--preemption-policy=Never",
    ])
    .await;
    let low = k.json(&["get", "priorityclass", "low"]).await;
    assert_eq!(
        (low["value"].as_i64(), low["preemptionPolicy"].as_str()),
        (Some(-5), Some("Never"))
    );
}

/// Admission webhooks seen through kubectl: a validating webhook's denial is printed with its
/// message, its warnings as kubectl's `Warning:` lines, and a mutating webhook's patch is in
/// `kubectl get -o yaml`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_prints_webhook_denials_and_warnings_and_shows_their_patches() {
    use common::webhook::{WebhookServer, allow, configuration, deny, hook, patch, rule};
    let handler: common::webhook::Handler = Arc::new(|path: &str, req: &Value| {
        let replicas = req["object"]["spec"]["replicas"].as_i64().unwrap_or(0);
        match path {
            "/mutate" => patch(json!([{"op": "add",
                "path": "/metadata/annotations", "value": {"defaulted-by": "webhook"}}])),
            "/validate" if replicas > 5 => deny(403, "at most 5 replicas, please"),
            "/validate" if replicas > 2 => {
                json!({"allowed": true, "warnings": ["more than 2 replicas cost extra"]})
            }
            _ => allow(),
        }
    });
    let hooks = WebhookServer::start(handler).await;
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    let rules = rule("apps", &["deployments"], &["CREATE", "UPDATE"]);
    let configs = [
        configuration(
            "Mutating",
            "defaults",
            json!([hook(
                "mutate.example.com",
                hooks.url_config("/mutate"),
                rules.clone(),
                json!({})
            )]),
        ),
        configuration(
            "Validating",
            "limits",
            json!([hook(
                "validate.example.com",
                hooks.url_config("/validate"),
                rule(
                    "apps",
                    &["deployments", "deployments/scale"],
                    &["CREATE", "UPDATE"]
                ),
                json!({})
            )]),
        ),
    ];
    for config in configs {
        k.ok_with(&["apply", "-f", "-"], Some(&config.to_string()))
            .await;
    }
    let deployment = |replicas: u32| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  \
             replicas: {replicas}\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    \
             metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      \
             - {{name: web, image: nginx}}\n"
        )
    };
    let err = k.fails(&["apply", "-f", "-"], Some(&deployment(6))).await;
    assert!(
        err.contains(
            "admission webhook \"validate.example.com\" denied the request: at most 5 replicas, please"
        ),
        "{err}"
    );
    let out = k.run(&["apply", "-f", "-"], Some(&deployment(3))).await;
    assert!(out.ok, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("deployment.apps/web created"),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr
            .contains("Warning: more than 2 replicas cost extra"),
        "{}",
        out.stderr
    );
    let yaml = k.ok(&["get", "deployment", "web", "-o", "yaml"]).await;
    assert!(yaml.contains("defaulted-by: webhook"), "{yaml}");
    // The scale subresource is admitted too (the webhook sees a Scale): refused over the
    // limit, nothing changed.
    let err = k
        .fails(&["scale", "deployment", "web", "--replicas=9"], None)
        .await;
    assert!(err.contains("at most 5 replicas"), "{err}");
    let web = k.json(&["get", "deployment", "web"]).await;
    assert_eq!(web["spec"]["replicas"], 3);
}

/// Authentication with the real kubectl: `kubectl create token` (a ServiceAccount token from
/// the TokenRequest API, with upstream's refusals), `kubectl auth whoami` with that token and
/// with a client certificate, and 401s for a revoked token and another CA's certificate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_token_and_whoami_with_tokens_and_certificates() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    k.ok(&["create", "serviceaccount", "app"]).await;
    let token = k.ok(&["create", "token", "app"]).await.trim().to_string();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    let claims: Value = {
        use base64::Engine;
        let part = token.split('.').nth(1).unwrap();
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part)
            .unwrap();
        serde_json::from_slice(&raw).unwrap()
    };
    assert_eq!(claims["sub"], "system:serviceaccount:default:app");
    assert_eq!(claims["kubernetes.io"]["serviceaccount"]["name"], "app");
    let exp = claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap();
    assert_eq!(exp, 3600, "the default lifetime");
    let long = k
        .ok(&[
            "create",
            "token",
            "app",
            "--duration",
            "2h",
            "--audience",
            "vault",
        ])
        .await;
    let claims: Value = {
        use base64::Engine;
        let part = long.trim().split('.').nth(1).unwrap();
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part)
            .unwrap();
        serde_json::from_slice(&raw).unwrap()
    };
    assert_eq!(claims["aud"], json!(["vault"]));
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        7200
    );
    let err = k
        .fails(&["create", "token", "app", "--duration", "5m"], None)
        .await;
    assert!(
        err.contains(r#"TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes"#),
        "{err}"
    );
    let err = k.fails(&["create", "token", "ghost"], None).await;
    assert!(
        err.contains(r#"serviceaccounts "ghost" not found"#),
        "{err}"
    );

    // whoami with the token (kubectl's --token overrides the kubeconfig's user).
    let who: Value = serde_json::from_str(
        &k.ok(&["auth", "whoami", "--token", &token, "-o", "json"])
            .await,
    )
    .unwrap();
    assert_eq!(
        who["status"]["userInfo"]["username"],
        "system:serviceaccount:default:app"
    );
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    let table = k.ok(&["auth", "whoami", "--token", &token]).await;
    assert!(
        table.contains("system:serviceaccount:default:app"),
        "{table}"
    );

    // whoami with a client certificate: CN user, O groups.
    let certs = tempfile::tempdir().unwrap();
    let cert_kubeconfig = certs.path().join("jane.kubeconfig");
    std::fs::write(
        &cert_kubeconfig,
        server
            .kubeconfig_for_certificate("jane", &["devs", "ops"])
            .unwrap(),
    )
    .unwrap();
    let cert_path = cert_kubeconfig.to_str().unwrap();
    let who: Value = serde_json::from_str(
        &k.ok(&["--kubeconfig", cert_path, "auth", "whoami", "-o", "json"])
            .await,
    )
    .unwrap();
    assert_eq!(
        who["status"]["userInfo"],
        json!({"username": "jane", "groups": ["devs", "ops", "system:authenticated"]})
    );

    // A certificate from another CA: 401, as kubectl reports it.
    let other = crt_apiserver::auth::x509::ClientCa::generate().unwrap();
    let (cert, key) = other
        .issue(&crt_apiserver::auth::x509::ClientCertificateParams::new(
            "mallory",
            &["system:masters"],
        ))
        .unwrap();
    let (cert_file, key_file) = (certs.path().join("m.crt"), certs.path().join("m.key"));
    std::fs::write(&cert_file, cert).unwrap();
    std::fs::write(&key_file, key).unwrap();
    let mallory = certs.path().join("mallory.kubeconfig");
    std::fs::write(&mallory, server.kubeconfig_for_token("unused")).unwrap();
    let mallory = mallory.to_str().unwrap();
    k.ok(&[
        "--kubeconfig",
        mallory,
        "config",
        "set-credentials",
        "crt-user",
        "--token=",
        &format!("--client-certificate={}", cert_file.display()),
        &format!("--client-key={}", key_file.display()),
    ])
    .await;
    let err = k
        .fails(&["--kubeconfig", mallory, "auth", "whoami"], None)
        .await;
    assert!(err.contains("Unauthorized"), "{err}");

    // Deleting the ServiceAccount revokes its token.
    k.ok(&["delete", "serviceaccount", "app"]).await;
    let err = k.fails(&["auth", "whoami", "--token", &token], None).await;
    assert!(err.contains("Unauthorized"), "{err}");
}

/// Deprecated built-in resources warn on every request as a 1.33 server does: kubectl prints
/// the warning for a create, a get and a refused get of v1 Endpoints, and for
/// componentstatuses; an EndpointSlice read warns nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deprecated_resources_warn() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    let warning = "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 \
                   EndpointSlice";
    let endpoints = "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: web\nsubsets:\n\
                     - addresses: [{ip: 10.0.0.1}]\n  ports: [{port: 80}]\n";
    let out = k.run(&["create", "-f", "-"], Some(endpoints)).await;
    assert!(out.ok, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("endpoints/web created"),
        "{}",
        out.stdout
    );
    assert!(out.stderr.contains(warning), "{}", out.stderr);

    let out = k.run(&["get", "endpoints", "web"], None).await;
    assert!(out.ok, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("10.0.0.1:80"), "{}", out.stdout);
    assert!(out.stderr.contains(warning), "{}", out.stderr);

    let out = k.run(&["get", "endpoints", "missing"], None).await;
    assert!(!out.ok);
    assert!(out.stderr.contains(warning), "{}", out.stderr);
    assert!(out.stderr.contains("NotFound"), "{}", out.stderr);

    let out = k.run(&["get", "componentstatuses"], None).await;
    assert!(
        out.stderr
            .contains("Warning: v1 ComponentStatus is deprecated in v1.19+"),
        "{}",
        out.stderr
    );

    let out = k.run(&["get", "endpointslices"], None).await;
    assert!(out.ok, "{}{}", out.stdout, out.stderr);
    assert!(!out.stderr.contains("Warning"), "{}", out.stderr);
}

/// ServiceCIDRs: `kubectl get` prints their CIDRs, and a bad range is refused with upstream's
/// message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_cidrs_print_their_ranges_and_refuse_bad_ones() {
    let server = common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    let manifest = |name: &str, cidrs: &str| {
        format!(
            "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata:\n  name: {name}\n\
             spec:\n  cidrs: {cidrs}\n"
        )
    };
    k.ok_with(
        &["apply", "-f", "-"],
        Some(&manifest("extra", r#"["10.0.0.0/24", "fd00::/108"]"#)),
    )
    .await;
    let table = k.ok(&["get", "servicecidrs", "extra"]).await;
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "CIDRS", "AGE"]);
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(row[..2], ["extra", "10.0.0.0/24,fd00::/108"]);
    let stderr = k
        .fails(
            &["apply", "-f", "-"],
            Some(&manifest("bad", r#"["10.0.0.1/8"]"#)),
        )
        .await;
    assert_eq!(
        stderr.trim(),
        "The ServiceCIDR \"bad\" is invalid: spec.cidrs[0]: Invalid value: \"10.0.0.1/8\": \
         must not have bits set beyond the prefix length"
    );
}
