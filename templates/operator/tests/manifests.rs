//! The deployment manifests `memo-operator manifests` writes apply to an API server with
//! `kubectl apply --validate=strict` (unknown or duplicated fields refused): the kustomize tree,
//! its ServiceMonitor (on the CRD fixture below, as the Prometheus Operator installs it), and the
//! Helm chart's templates (rendered by `helm template` when helm is on PATH, otherwise by
//! putting the chart's default values in place of its few expressions).
//!
//! Skipped, saying so, without `kubectl` on PATH.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use controller_runtime::envtest::{ClusterConfig, Environment};
use memo_operator::manifests::{self, DEFAULT_IMAGE, Manifests, NAME, NAMESPACE};

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
/// by putting the values in place of the expressions (`serviceMonitor.enabled` set) and the
/// chart's files in place of their `.Files.Get`.
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
        let mut text = template
            .lines()
            .filter(|l| !l.starts_with("{{- if ") && !l.starts_with("{{- end"))
            .collect::<Vec<_>>()
            .join("\n")
            .replace("{{ .Release.Namespace }}", NAMESPACE)
            .replace("{{ .Values.image }}", DEFAULT_IMAGE);
        // `{{ .Files.Get "<file>" | indent 4 }}`: the file, each line indented by 4.
        let mut files = Vec::new();
        while let Some(start) = text.find("{{ .Files.Get \"") {
            let rest = &text[start + "{{ .Files.Get \"".len()..];
            let (file, rest) = rest.split_once('"').unwrap();
            let end = start + text[start..].find("}}").unwrap() + 2;
            assert_eq!(rest.split_once("}}").unwrap().0.trim(), "| indent 4");
            files.push(file.to_string());
            let placeholder = format!("@@file{}@@", files.len() - 1);
            text.replace_range(start..end, &placeholder);
        }
        assert!(
            !text.contains("{{"),
            "{}: an expression left: {text}",
            path.display()
        );
        for (i, file) in files.iter().enumerate() {
            let content = std::fs::read_to_string(chart.join(file)).unwrap();
            let indented: Vec<String> = content.lines().map(|l| format!("    {l}")).collect();
            text = text.replace(&format!("@@file{i}@@"), &indented.join("\n"));
        }
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
    // The simulated cluster runs the operator's Deployment (its pods scheduled and reported
    // Running and Ready by simulated kubelets, as a cluster would run the image).
    let env = Environment::new()
        .crd_object(crd)
        .simulate_cluster(ClusterConfig::default())
        .start()
        .await
        .unwrap();
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
        format!("role.rbac.authorization.k8s.io/{NAME} created"),
        format!("rolebinding.rbac.authorization.k8s.io/{NAME} created"),
        format!("service/{NAME}-metrics created"),
        format!("deployment.apps/{NAME} created"),
        format!("configmap/{NAME}-grafana-dashboard created"),
    ] {
        assert!(applied.contains(&object), "no {object:?} in:\n{applied}");
    }

    // The operator's Deployment becomes Available, its pod running as its ServiceAccount.
    let out = kubectl(
        &kubeconfig,
        &[
            "wait",
            "--for=condition=Available",
            &format!("deployment/{NAME}"),
            "-n",
            NAMESPACE,
            "--timeout=60s",
        ],
        None,
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let out = kubectl(
        &kubeconfig,
        &["get", "pods", "-n", NAMESPACE, "-o", "json"],
        None,
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let pods: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pod = &pods["items"][0];
    assert_eq!(pod["spec"]["serviceAccountName"], NAME, "{pod}");
    assert_eq!(pod["status"]["phase"], "Running", "{pod}");

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
        "role.rbac.authorization.k8s.io/",
        "rolebinding.",
        "service/",
        "deployment.apps/",
        "servicemonitor.",
        "configmap/",
    ] {
        assert!(applied.contains(kind), "no {kind} in:\n{applied}");
    }

    // The dashboard ConfigMap carries the dashboard, intact, under the sidecar's label.
    let out = kubectl(
        &kubeconfig,
        &[
            "get",
            "configmap",
            "-n",
            NAMESPACE,
            "-l",
            "grafana_dashboard=1",
            "-o",
            "json",
        ],
        None,
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let data = &list["items"][0]["data"][memo_operator::manifests::DASHBOARD_FILE];
    let dashboard: serde_json::Value = serde_json::from_str(data.as_str().unwrap()).unwrap();
    let shipped: serde_json::Value =
        serde_json::from_str(controller_runtime::metrics::GRAFANA_DASHBOARD).unwrap();
    assert_eq!(dashboard, shipped);

    env.stop().await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A validator of Memos, for the webhook manifests.
struct MemoValidator;

impl controller_runtime::webhook::admission::Validator<memo_operator::Memo> for MemoValidator {}

/// With a webhook, the manifests carry its configuration (pointing at the webhook Service,
/// its CA bundle left to cert-manager's injection), the Service, the cert-manager Certificate
/// and the Deployment's certificate mount; they apply strictly. Without, none of it.
#[tokio::test]
async fn webhook_manifests_come_with_a_webhook() {
    use controller_runtime::webhook::admission::Webhook;

    let plain = Manifests::default().kustomize();
    assert!(!plain.iter().any(|(p, _)| p.starts_with("webhook/")));
    let manifests = Manifests {
        webhooks: vec![Webhook::validating::<memo_operator::Memo, _>(MemoValidator)],
        ..Manifests::default()
    };
    let files = manifests.kustomize();
    let file = |path: &str| {
        files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, text)| text.clone())
            .unwrap_or_else(|| panic!("no {path}"))
    };
    let configuration: serde_json::Value =
        serde_yaml_ng::from_str(&file("webhook/manifests.yaml")).unwrap();
    assert_eq!(configuration["kind"], "ValidatingWebhookConfiguration");
    assert_eq!(
        configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
        format!("{NAMESPACE}/{NAME}-serving-cert")
    );
    let webhook = &configuration["webhooks"][0];
    // controller-runtime's path: /validate-<group, dots as dashes>-<version>-<kind>.
    type Memo = memo_operator::Memo;
    let path = format!(
        "/validate-{}-{}-{}",
        <Memo as kube::Resource>::group(&()).replace('.', "-"),
        <Memo as kube::Resource>::version(&()),
        <Memo as kube::Resource>::kind(&()).to_lowercase()
    );
    assert_eq!(
        webhook["clientConfig"],
        serde_json::json!({"service": {
            "namespace": NAMESPACE,
            "name": format!("{NAME}-webhook-service"),
            "path": path
        }})
    );
    assert_eq!(
        webhook["rules"][0]["resources"],
        serde_json::json!(["memos"])
    );
    let certificate = file("certmanager/certificate.yaml");
    assert!(
        certificate.contains(&format!("- {NAME}-webhook-service.{NAMESPACE}.svc\n")),
        "{certificate}"
    );
    let deployment: serde_json::Value =
        serde_yaml_ng::from_str(&file("manager/deployment.yaml")).unwrap();
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(
        pod["volumes"][0]["secret"]["secretName"],
        format!("{NAME}-webhook-server-cert")
    );
    assert_eq!(
        pod["containers"][0]["volumeMounts"][0]["mountPath"],
        manifests::WEBHOOK_CERT_DIR
    );
    assert!(file("default/kustomization.yaml").contains("- ../webhook\n- ../certmanager\n"));
    let chart = manifests.helm_chart();
    assert!(
        chart
            .iter()
            .any(|(p, _)| p == "templates/webhook_configurations.yaml")
    );

    if !kubectl_available() {
        eprintln!("skipped applying: no kubectl on PATH");
        return;
    }
    let dir = std::env::temp_dir().join(format!("{NAME}-webhooks-{}", std::process::id()));
    manifests.write(&dir).unwrap();
    let env = Environment::new().start().await.unwrap();
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        serde_yaml_ng::to_string(env.kubeconfig()).unwrap(),
    )
    .unwrap();
    let namespace = dir.join("config/manager/namespace.yaml");
    let webhook_dir = dir.join("config/webhook");
    for args in [
        vec![
            "apply",
            "--validate=strict",
            "-f",
            namespace.to_str().unwrap(),
        ],
        vec![
            "apply",
            "--validate=strict",
            "-k",
            webhook_dir.to_str().unwrap(),
        ],
        vec![
            "apply",
            "--validate=strict",
            "--dry-run=server",
            "-f",
            dir.join("config/manager/deployment.yaml").to_str().unwrap(),
        ],
    ] {
        let out = kubectl(&kubeconfig, &args, None).await;
        assert!(out.status.success(), "{args:?}: {}", text(&out));
    }
    let out = kubectl(
        &kubeconfig,
        &["get", "validatingwebhookconfigurations", "-o", "name"],
        None,
    )
    .await;
    assert!(
        text(&out).contains(&format!("{NAME}-validating-webhook-configuration")),
        "{}",
        text(&out)
    );
    env.stop().await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
