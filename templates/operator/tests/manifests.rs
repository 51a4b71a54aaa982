//! The deployment manifests `memo-operator manifests` writes apply to an API server with
//! `kubectl apply --validate=strict` (unknown or duplicated fields refused): the kustomize tree,
//! its ServiceMonitor (on the CRD fixture below, as the Prometheus Operator installs it), and the
//! Helm chart's templates (rendered by `helm template` when helm is on PATH, otherwise by
//! putting the chart's default values in place of its few expressions).
//!
//! Skipped, saying so, without `kubectl` on PATH.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use controller_runtime::envtest::Environment;
use memo_operator::manifests::{DEFAULT_IMAGE, Manifests, NAME, NAMESPACE};

/// The fields of the Prometheus Operator's ServiceMonitor the manifests use, typed as its CRD
/// types them (strict validation refuses any other field).
const SERVICE_MONITOR_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names:
    kind: ServiceMonitor
    listKind: ServiceMonitorList
    plural: servicemonitors
    singular: servicemonitor
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        required: [spec]
        properties:
          spec:
            type: object
            required: [selector]
            properties:
              endpoints:
                type: array
                items:
                  type: object
                  properties:
                    port:
                      type: string
                    path:
                      type: string
              selector:
                type: object
                properties:
                  matchLabels:
                    type: object
                    additionalProperties:
                      type: string
"#;

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs kubectl with `args` against `kubeconfig`, `stdin` piped in, off the runtime's thread
/// (the API server answers on it).
async fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<String>) -> Output {
    let mut cmd = Command::new("kubectl");
    cmd.arg("--kubeconfig").arg(kubeconfig).args(args);
    tokio::task::spawn_blocking(move || {
        use std::io::Write as _;
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("running kubectl");
        let mut input = child.stdin.take().unwrap();
        input
            .write_all(stdin.unwrap_or_default().as_bytes())
            .unwrap();
        drop(input);
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The chart's templates rendered with its default values: by helm when it is there, otherwise
/// by putting the values in place of the expressions (`serviceMonitor.enabled` set).
fn render_chart(chart: &Path) -> String {
    let helm = Command::new("helm")
        .args(["template", NAME])
        .arg(chart)
        .args([
            "--namespace",
            NAMESPACE,
            "--set",
            "serviceMonitor.enabled=true",
        ])
        .output();
    if let Ok(out) = helm {
        assert!(out.status.success(), "helm template: {}", text(&out));
        return String::from_utf8(out.stdout).unwrap();
    }
    let mut rendered = String::new();
    let mut templates: Vec<PathBuf> = std::fs::read_dir(chart.join("templates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    templates.sort();
    for path in templates {
        let template = std::fs::read_to_string(&path).unwrap();
        let text = template
            .lines()
            .filter(|l| !l.starts_with("{{- if ") && !l.starts_with("{{- end"))
            .collect::<Vec<_>>()
            .join("\n")
            .replace("{{ .Release.Namespace }}", NAMESPACE)
            .replace("{{ .Values.image }}", DEFAULT_IMAGE);
        assert!(
            !text.contains("{{"),
            "{}: an expression left: {text}",
            path.display()
        );
        rendered.push_str("---\n");
        rendered.push_str(&text);
        rendered.push('\n');
    }
    rendered
}

#[tokio::test]
async fn the_manifests_apply_with_strict_validation() {
    if !kubectl_available() {
        eprintln!("skipped: no kubectl on PATH");
        return;
    }
    let dir = std::env::temp_dir().join(format!("{NAME}-manifests-{}", std::process::id()));
    let written = Manifests::default().write(&dir).unwrap();
    assert!(written.contains(&dir.join("config/default/kustomization.yaml")));

    let crd = serde_yaml_ng::from_str(SERVICE_MONITOR_CRD).unwrap();
    let env = Environment::new().crd_object(crd).start().await.unwrap();
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        serde_yaml_ng::to_string(env.kubeconfig()).unwrap(),
    )
    .unwrap();

    let default = dir.join("config/default");
    let out = kubectl(
        &kubeconfig,
        &[
            "apply",
            "--validate=strict",
            "-k",
            default.to_str().unwrap(),
        ],
        None,
    )
    .await;
    let applied = text(&out);
    assert!(out.status.success(), "{applied}");
    for object in [
        format!("namespace/{NAMESPACE} created"),
        "customresourcedefinition.apiextensions.k8s.io/memos.example.com created".into(),
        format!("serviceaccount/{NAME} created"),
        format!("clusterrole.rbac.authorization.k8s.io/{NAME} created"),
        format!("clusterrolebinding.rbac.authorization.k8s.io/{NAME} created"),
        format!("service/{NAME}-metrics created"),
        format!("deployment.apps/{NAME} created"),
    ] {
        assert!(applied.contains(&object), "no {object:?} in:\n{applied}");
    }

    let prometheus = dir.join("config/prometheus");
    let out = kubectl(
        &kubeconfig,
        &[
            "apply",
            "--validate=strict",
            "-k",
            prometheus.to_str().unwrap(),
        ],
        None,
    )
    .await;
    let applied = text(&out);
    assert!(out.status.success(), "{applied}");
    let monitor = format!("servicemonitor.monitoring.coreos.com/{NAME} created");
    assert!(applied.contains(&monitor), "{applied}");

    // The chart's objects are the same ones: a server-side dry run of the rendered chart
    // validates them strictly against the installed ones (`unchanged` or `configured`).
    let rendered = render_chart(&dir.join("chart").join(NAME));
    let out = kubectl(
        &kubeconfig,
        &["apply", "--validate=strict", "--dry-run=server", "-f", "-"],
        Some(rendered.clone()),
    )
    .await;
    let applied = text(&out);
    assert!(out.status.success(), "{applied}\n{rendered}");
    for kind in [
        "serviceaccount/",
        "clusterrole.",
        "clusterrolebinding.",
        "service/",
        "deployment.apps/",
        "servicemonitor.",
    ] {
        assert!(applied.contains(kind), "no {kind} in:\n{applied}");
    }

    env.stop().await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
