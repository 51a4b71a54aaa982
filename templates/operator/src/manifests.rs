//! The operator's deployment manifests, generated from its code: `memo-operator manifests`
//! writes them, as a kustomize tree (`config/`) and as a Helm chart (`chart/memo-operator/`).
//!
//! - CRDs: from `#[derive(CustomResource)]` ([`crds`]), never written by hand.
//! - RBAC: the ServiceAccount the operator runs as, in its namespace (`memo-operator-system`),
//!   bound to the ClusterRole of `config/rbac/role.yaml` (what it does in every namespace)
//!   and to the Role of `config/rbac/namespace_role.yaml` in its own namespace (its
//!   leader-election Lease), both derived from behaviour:
//!   `tests/rbac.rs` runs the operator as its ServiceAccount with exactly these manifests while
//!   the API server records what it was allowed, fails naming what it was refused, warns about
//!   a grant nothing used, and with `UPDATE_RBAC=1` writes the roles the operator used.
//! - The Deployment: one replica of the binary, `/metrics` on port 8080 (named `metrics`),
//!   `/healthz` and `/readyz` on 8081 for the liveness and readiness probes (ready once the
//!   caches have synced), a non-root read-only container; on SIGTERM the manager stops taking
//!   work and lets running reconciles finish before it exits.
//! - Monitoring: a Service in front of the metrics port and a Prometheus Operator
//!   `ServiceMonitor` scraping it (`config/prometheus/`, kept out of `config/default/` as it
//!   needs the Prometheus Operator's CRD; in the chart, `serviceMonitor.enabled`), and
//!   controller-runtime's Grafana dashboard
//!   ([`GRAFANA_DASHBOARD`](controller_runtime::metrics::GRAFANA_DASHBOARD): reconciles, queues,
//!   cache, webhooks, API requests, leader election) as a ConfigMap labelled
//!   `grafana_dashboard: "1"`, which Grafana's dashboard sidecar loads (`config/grafana/`; in
//!   the chart, `grafanaDashboard.enabled`, on by default).
//!
//! - Webhooks, when the operator serves any ([`Manifests::webhooks`]): their
//!   Mutating/ValidatingWebhookConfigurations (generated from the registered webhooks, as
//!   controller-gen does) pointing at a webhook Service (443 to the server's 9443), a
//!   cert-manager self-signed Issuer and Certificate for the Service's name, whose Secret the
//!   Deployment mounts where the webhook server reads its certificate, and the
//!   `cert-manager.io/inject-ca-from` annotation by which cert-manager fills in the
//!   configurations' CA bundle (`config/webhook/`, `config/certmanager/`; cert-manager must
//!   be installed).
//!
//! The kustomize tree applies with `kubectl apply -k config/default`; the chart installs with
//! `helm install memo-operator chart/memo-operator -n memo-operator-system --create-namespace`.
//! The image is `--image` (default `memo-operator:VERSION`), built by the crate's `Dockerfile`.
//! The kustomize and the Helm files come from the same functions, the chart's with template
//! expressions where kustomize has values.

use std::path::{Path, PathBuf};

use controller_runtime::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use controller_runtime::webhook::admission::Webhook;
use controller_runtime::webhook::{ClientConfig, config as webhook_config};
use kube::CustomResourceExt;

use crate::Memo;

/// The operator's name: its binary, ServiceAccount, ClusterRole, Deployment and Service.
pub const NAME: &str = env!("CARGO_PKG_NAME");
/// The namespace the operator runs in.
pub const NAMESPACE: &str = concat!(env!("CARGO_PKG_NAME"), "-system");
/// The image the manifests run unless told otherwise.
pub const DEFAULT_IMAGE: &str = concat!(env!("CARGO_PKG_NAME"), ":", env!("CARGO_PKG_VERSION"));
/// The port of `/metrics` (the binary's `--metrics-bind-address`).
pub const METRICS_PORT: u16 = 8080;
/// The port of `/healthz` and `/readyz` (the binary's `--health-probe-bind-address`).
pub const PROBE_PORT: u16 = 8081;
/// The webhook server's port (controller-runtime's default).
pub const WEBHOOK_PORT: u16 = 9443;
/// Where the webhook server reads `tls.crt` and `tls.key` (controller-runtime's default).
pub const WEBHOOK_CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";

/// The name of the dashboard's file in its ConfigMap (and in the chart's `dashboards/`).
pub const DASHBOARD_FILE: &str = "controller-runtime.json";

/// The ClusterRole the operator runs with: the source of the RBAC manifests.
pub const ROLE: &str = include_str!("../config/rbac/role.yaml");
/// The Role the operator runs with in its own namespace ([`NAMESPACE`] in the file).
pub const NAMESPACE_ROLE: &str = include_str!("../config/rbac/namespace_role.yaml");

/// The CustomResourceDefinitions of the operator's kinds.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![Memo::crd()]
}

/// What the manifests are generated for.
#[derive(Clone, Debug)]
pub struct Manifests {
    /// The operator's image.
    pub image: String,
    /// The admission webhooks the operator serves (those it registers with its manager's
    /// webhook server, `mgr.webhook_server().webhooks()`): none, no webhook manifests.
    pub webhooks: Vec<Webhook>,
}

impl Default for Manifests {
    fn default() -> Self {
        Manifests {
            image: DEFAULT_IMAGE.to_string(),
            webhooks: Vec::new(),
        }
    }
}

/// Where a file goes: the values written into it (kustomize) or template expressions (Helm).
struct Values<'a> {
    namespace: &'a str,
    image: &'a str,
    /// Whether the operator serves webhooks (the Deployment mounts their certificate).
    webhooks: bool,
}

impl Manifests {
    /// The kustomize tree: (path under `config/`, contents).
    pub fn kustomize(&self) -> Vec<(String, String)> {
        let values = Values {
            namespace: NAMESPACE,
            image: &self.image,
            webhooks: !self.webhooks.is_empty(),
        };
        let mut files = Vec::new();
        let mut crd_files = Vec::new();
        for crd in crds() {
            let file = format!("{}.yaml", crd.metadata.name.as_deref().unwrap_or_default());
            files.push((format!("crd/{file}"), crd_yaml(&crd)));
            crd_files.push(file);
        }
        files.push(("crd/kustomization.yaml".into(), kustomization(&crd_files)));
        files.push(("rbac/service_account.yaml".into(), service_account(&values)));
        files.push(("rbac/role.yaml".into(), ROLE.to_string()));
        files.push(("rbac/role_binding.yaml".into(), role_binding(&values)));
        files.push((
            "rbac/namespace_role.yaml".into(),
            NAMESPACE_ROLE.to_string(),
        ));
        files.push((
            "rbac/namespace_role_binding.yaml".into(),
            namespace_role_binding(&values),
        ));
        files.push((
            "rbac/kustomization.yaml".into(),
            kustomization(&[
                "service_account.yaml",
                "role.yaml",
                "role_binding.yaml",
                "namespace_role.yaml",
                "namespace_role_binding.yaml",
            ]),
        ));
        files.push(("manager/namespace.yaml".into(), namespace()));
        files.push(("manager/deployment.yaml".into(), deployment(&values)));
        files.push((
            "manager/metrics_service.yaml".into(),
            metrics_service(&values),
        ));
        files.push((
            "manager/kustomization.yaml".into(),
            kustomization(&["namespace.yaml", "deployment.yaml", "metrics_service.yaml"]),
        ));
        files.push(("prometheus/monitor.yaml".into(), service_monitor(&values)));
        files.push((
            "prometheus/kustomization.yaml".into(),
            kustomization(&["monitor.yaml"]),
        ));
        files.push((
            "grafana/dashboard.yaml".into(),
            dashboard_config_map(&values),
        ));
        files.push((
            "grafana/kustomization.yaml".into(),
            kustomization(&["dashboard.yaml"]),
        ));
        let webhooks = !self.webhooks.is_empty();
        if webhooks {
            files.push((
                "webhook/manifests.yaml".into(),
                self.webhook_configurations(&values),
            ));
            files.push(("webhook/service.yaml".into(), webhook_service(&values)));
            files.push((
                "webhook/kustomization.yaml".into(),
                kustomization(&["manifests.yaml", "service.yaml"]),
            ));
            files.push(("certmanager/certificate.yaml".into(), certificate(&values)));
            files.push((
                "certmanager/kustomization.yaml".into(),
                kustomization(&["certificate.yaml"]),
            ));
        }
        files.push((
            "default/kustomization.yaml".into(),
            format!(
                "# The operator and everything it needs: `kubectl apply -k config/default`.\n\
                 # With the Prometheus Operator installed, add ../prometheus (its ServiceMonitor).\n\
                 {cert_manager}\
                 apiVersion: kustomize.config.k8s.io/v1beta1\n\
                 kind: Kustomization\n\
                 namespace: {NAMESPACE}\n\
                 resources:\n\
                 - ../crd\n\
                 - ../rbac\n\
                 - ../manager\n\
                 - ../grafana\n\
                 {webhook_dirs}",
                cert_manager = if webhooks {
                    "# The webhooks' certificate needs cert-manager installed.\n"
                } else {
                    ""
                },
                webhook_dirs = if webhooks {
                    "- ../webhook\n- ../certmanager\n"
                } else {
                    ""
                },
            ),
        ));
        files
    }

    /// The Helm chart: (path under `chart/memo-operator/`, contents).
    pub fn helm_chart(&self) -> Vec<(String, String)> {
        let values = Values {
            namespace: "{{ .Release.Namespace }}",
            image: "{{ .Values.image }}",
            webhooks: !self.webhooks.is_empty(),
        };
        let mut files = vec![
            (
                "Chart.yaml".to_string(),
                format!(
                    "apiVersion: v2\n\
                     name: {NAME}\n\
                     description: The {NAME} Kubernetes operator\n\
                     type: application\n\
                     version: {version}\n\
                     appVersion: \"{version}\"\n",
                    version = env!("CARGO_PKG_VERSION")
                ),
            ),
            (
                "values.yaml".to_string(),
                format!(
                    "# The operator's image.\n\
                     image: {image}\n\
                     serviceMonitor:\n  \
                       # A Prometheus Operator ServiceMonitor for the metrics Service (needs its CRD).\n  \
                       enabled: false\n\
                     grafanaDashboard:\n  \
                       # controller-runtime's Grafana dashboard, as a ConfigMap Grafana's sidecar loads.\n  \
                       enabled: true\n",
                    image = self.image
                ),
            ),
        ];
        // Helm installs the files of crds/ before the templates, and never deletes them.
        for crd in crds() {
            let name = crd.metadata.name.as_deref().unwrap_or_default().to_string();
            files.push((format!("crds/{name}.yaml"), crd_yaml(&crd)));
        }
        files.push((
            "templates/service_account.yaml".into(),
            service_account(&values),
        ));
        files.push(("templates/role.yaml".into(), ROLE.to_string()));
        files.push(("templates/role_binding.yaml".into(), role_binding(&values)));
        files.push((
            "templates/namespace_role.yaml".into(),
            NAMESPACE_ROLE.replace(
                &format!("namespace: {NAMESPACE}\n"),
                &format!("namespace: {}\n", values.namespace),
            ),
        ));
        files.push((
            "templates/namespace_role_binding.yaml".into(),
            namespace_role_binding(&values),
        ));
        files.push(("templates/deployment.yaml".into(), deployment(&values)));
        files.push((
            "templates/metrics_service.yaml".into(),
            metrics_service(&values),
        ));
        files.push((
            "templates/service_monitor.yaml".into(),
            format!(
                "{{{{- if .Values.serviceMonitor.enabled }}}}\n{}{{{{- end }}}}\n",
                service_monitor(&values)
            ),
        ));
        if !self.webhooks.is_empty() {
            files.push((
                "templates/webhook_configurations.yaml".into(),
                self.webhook_configurations(&values),
            ));
            files.push((
                "templates/webhook_service.yaml".into(),
                webhook_service(&values),
            ));
            files.push(("templates/certificate.yaml".into(), certificate(&values)));
        }
        // Helm renders templates, not files: the dashboard's `{{legend}}` stay as they are.
        files.push((
            format!("dashboards/{DASHBOARD_FILE}"),
            controller_runtime::metrics::GRAFANA_DASHBOARD.to_string(),
        ));
        files.push((
            "templates/grafana_dashboard.yaml".into(),
            format!(
                "{{{{- if .Values.grafanaDashboard.enabled }}}}\n\
                 {head}  \
                   {DASHBOARD_FILE}: |-\n\
                 {{{{ .Files.Get \"dashboards/{DASHBOARD_FILE}\" | indent 4 }}}}\n\
                 {{{{- end }}}}\n",
                head = dashboard_head(&values)
            ),
        ));
        files
    }

    /// The Mutating- and ValidatingWebhookConfigurations of [`webhooks`](Self::webhooks), as
    /// controller-gen writes them: the webhook Service, and no CA bundle, which cert-manager
    /// injects from the Certificate the annotation names.
    fn webhook_configurations(&self, v: &Values) -> String {
        let client =
            ClientConfig::service(v.namespace, format!("{NAME}-webhook-service"), Vec::new());
        let mutating = webhook_config::mutating_webhook_configuration(
            &format!("{NAME}-mutating-webhook-configuration"),
            &self.webhooks,
            &client,
        );
        let validating = webhook_config::validating_webhook_configuration(
            &format!("{NAME}-validating-webhook-configuration"),
            &self.webhooks,
            &client,
        );
        let mut docs = Vec::new();
        for (kind, object, count) in [
            (
                "MutatingWebhookConfiguration",
                serde_json::to_value(&mutating).expect("serializes"),
                mutating.webhooks.as_ref().map_or(0, Vec::len),
            ),
            (
                "ValidatingWebhookConfiguration",
                serde_json::to_value(&validating).expect("serializes"),
                validating.webhooks.as_ref().map_or(0, Vec::len),
            ),
        ] {
            if count == 0 {
                continue;
            }
            let mut object = object;
            object["apiVersion"] = "admissionregistration.k8s.io/v1".into();
            object["kind"] = kind.into();
            object["metadata"]["annotations"] = serde_json::json!({
                "cert-manager.io/inject-ca-from": format!("{}/{NAME}-serving-cert", v.namespace)
            });
            for webhook in object["webhooks"].as_array_mut().into_iter().flatten() {
                webhook["clientConfig"]
                    .as_object_mut()
                    .map(|c| c.remove("caBundle"));
            }
            // The keys in the order kubectl shows them.
            let ordered = serde_json::json!({
                "apiVersion": object["apiVersion"],
                "kind": object["kind"],
                "metadata": object["metadata"],
                "webhooks": object["webhooks"],
            });
            docs.push(serde_yaml_ng::to_string(&ordered).expect("serializes"));
        }
        docs.join("---\n")
    }

    /// Writes `config/` and `chart/memo-operator/` under `root`; the files written.
    pub fn write(&self, root: &Path) -> std::io::Result<Vec<PathBuf>> {
        let config = root.join("config");
        let chart = root.join("chart").join(NAME);
        let files = self
            .kustomize()
            .into_iter()
            .map(|(path, text)| (config.join(path), text))
            .chain(
                self.helm_chart()
                    .into_iter()
                    .map(|(path, text)| (chart.join(path), text)),
            );
        let mut written = Vec::new();
        for (path, text) in files {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, text)?;
            written.push(path);
        }
        Ok(written)
    }
}

fn crd_yaml(crd: &CustomResourceDefinition) -> String {
    serde_yaml_ng::to_string(crd).expect("a CRD serializes")
}

fn kustomization(resources: &[impl AsRef<str>]) -> String {
    let mut out = String::from(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n",
    );
    for resource in resources {
        out.push_str(&format!("- {}\n", resource.as_ref()));
    }
    out
}

fn labels(indent: &str) -> String {
    format!(
        "{indent}app.kubernetes.io/name: {NAME}\n{indent}app.kubernetes.io/component: controller\n"
    )
}

fn namespace() -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NAMESPACE}\n  labels:\n{}",
        labels("    ")
    )
}

fn service_account(v: &Values) -> String {
    format!(
        "# The identity the operator runs as.\n\
         apiVersion: v1\n\
         kind: ServiceAccount\n\
         metadata:\n  \
           name: {NAME}\n  \
           namespace: {ns}\n  \
           labels:\n{labels}",
        ns = v.namespace,
        labels = labels("    ")
    )
}

fn role_binding(v: &Values) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\n\
         kind: ClusterRoleBinding\n\
         metadata:\n  \
           name: {NAME}\n\
         roleRef:\n  \
           apiGroup: rbac.authorization.k8s.io\n  \
           kind: ClusterRole\n  \
           name: {NAME}\n\
         subjects:\n\
         - kind: ServiceAccount\n  \
           name: {NAME}\n  \
           namespace: {ns}\n",
        ns = v.namespace
    )
}

fn namespace_role_binding(v: &Values) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\n\
         kind: RoleBinding\n\
         metadata:\n  \
           name: {NAME}\n  \
           namespace: {ns}\n\
         roleRef:\n  \
           apiGroup: rbac.authorization.k8s.io\n  \
           kind: Role\n  \
           name: {NAME}\n\
         subjects:\n\
         - kind: ServiceAccount\n  \
           name: {NAME}\n  \
           namespace: {ns}\n",
        ns = v.namespace
    )
}

fn webhook_service(v: &Values) -> String {
    format!(
        "apiVersion: v1\n\
         kind: Service\n\
         metadata:\n  \
           name: {NAME}-webhook-service\n  \
           namespace: {ns}\n  \
           labels:\n{labels4}\
         spec:\n  \
           selector:\n{labels4}  \
           ports:\n  \
           - name: webhook\n    \
             port: 443\n    \
             targetPort: webhook-server\n    \
             protocol: TCP\n",
        ns = v.namespace,
        labels4 = labels("    "),
    )
}

/// cert-manager's self-signed Issuer and the webhook Service's serving Certificate.
fn certificate(v: &Values) -> String {
    format!(
        "# The webhook server's certificate, issued by cert-manager into the Secret the\n\
         # Deployment mounts; cert-manager also injects its CA into the webhook configurations.\n\
         apiVersion: cert-manager.io/v1\n\
         kind: Issuer\n\
         metadata:\n  \
           name: {NAME}-selfsigned-issuer\n  \
           namespace: {ns}\n\
         spec:\n  \
           selfSigned: {{}}\n\
         ---\n\
         apiVersion: cert-manager.io/v1\n\
         kind: Certificate\n\
         metadata:\n  \
           name: {NAME}-serving-cert\n  \
           namespace: {ns}\n\
         spec:\n  \
           dnsNames:\n  \
           - {NAME}-webhook-service.{ns}.svc\n  \
           - {NAME}-webhook-service.{ns}.svc.cluster.local\n  \
           issuerRef:\n    \
             kind: Issuer\n    \
             name: {NAME}-selfsigned-issuer\n  \
           secretName: {NAME}-webhook-server-cert\n",
        ns = v.namespace,
    )
}

/// The Deployment's webhook port, certificate mount and volume, when it serves webhooks.
fn webhook_parts(v: &Values) -> (String, String, String) {
    if !v.webhooks {
        return Default::default();
    }
    (
        format!(
            "        - name: webhook-server\n          \
                       containerPort: {WEBHOOK_PORT}\n          \
                       protocol: TCP\n"
        ),
        format!(
            "        volumeMounts:\n        \
                     - name: cert\n          \
                       mountPath: {WEBHOOK_CERT_DIR}\n          \
                       readOnly: true\n"
        ),
        format!(
            "      volumes:\n      \
                   - name: cert\n        \
                     secret:\n          \
                       secretName: {NAME}-webhook-server-cert\n"
        ),
    )
}

fn deployment(v: &Values) -> String {
    let (webhook_port, cert_mount, cert_volume) = webhook_parts(v);
    format!(
        "apiVersion: apps/v1\n\
         kind: Deployment\n\
         metadata:\n  \
           name: {NAME}\n  \
           namespace: {ns}\n  \
           labels:\n{labels4}\
         spec:\n  \
           replicas: 1\n  \
           selector:\n    \
             matchLabels:\n{labels6}  \
           template:\n    \
             metadata:\n      \
               labels:\n{labels8}    \
             spec:\n      \
               serviceAccountName: {NAME}\n      \
               securityContext:\n        \
                 runAsNonRoot: true\n        \
                 seccompProfile:\n          \
                   type: RuntimeDefault\n      \
               terminationGracePeriodSeconds: 30\n      \
               containers:\n      \
               - name: manager\n        \
                 image: \"{image}\"\n        \
                 args:\n        \
                 - --metrics-bind-address=:{METRICS_PORT}\n        \
                 - --health-probe-bind-address=:{PROBE_PORT}\n        \
                 env:\n        \
                 - name: POD_NAMESPACE\n          \
                   valueFrom:\n            \
                     fieldRef:\n              \
                       fieldPath: metadata.namespace\n        \
                 ports:\n        \
                 - name: metrics\n          \
                   containerPort: {METRICS_PORT}\n          \
                   protocol: TCP\n        \
                 - name: probes\n          \
                   containerPort: {PROBE_PORT}\n          \
                   protocol: TCP\n\
                 {webhook_port}        \
                 livenessProbe:\n          \
                   httpGet:\n            \
                     path: /healthz\n            \
                     port: probes\n          \
                   initialDelaySeconds: 15\n          \
                   periodSeconds: 20\n        \
                 readinessProbe:\n          \
                   httpGet:\n            \
                     path: /readyz\n            \
                     port: probes\n          \
                   initialDelaySeconds: 5\n          \
                   periodSeconds: 10\n        \
                 securityContext:\n          \
                   allowPrivilegeEscalation: false\n          \
                   readOnlyRootFilesystem: true\n          \
                   capabilities:\n            \
                     drop: [ALL]\n        \
                 resources:\n          \
                   requests:\n            \
                     cpu: 10m\n            \
                     memory: 64Mi\n          \
                   limits:\n            \
                     cpu: 500m\n            \
                     memory: 256Mi\n\
                 {cert_mount}{cert_volume}",
        ns = v.namespace,
        image = v.image,
        labels4 = labels("    "),
        labels6 = labels("      "),
        labels8 = labels("        "),
    )
}

fn metrics_service(v: &Values) -> String {
    format!(
        "apiVersion: v1\n\
         kind: Service\n\
         metadata:\n  \
           name: {NAME}-metrics\n  \
           namespace: {ns}\n  \
           labels:\n{labels4}\
         spec:\n  \
           selector:\n{labels4}  \
           ports:\n  \
           - name: metrics\n    \
             port: {METRICS_PORT}\n    \
             targetPort: metrics\n    \
             protocol: TCP\n",
        ns = v.namespace,
        labels4 = labels("    "),
    )
}

/// The dashboard's ConfigMap up to its `data:` key.
fn dashboard_head(v: &Values) -> String {
    format!(
        "# controller-runtime's Grafana dashboard; Grafana's sidecar loads ConfigMaps so labelled.\n\
         apiVersion: v1\n\
         kind: ConfigMap\n\
         metadata:\n  \
           name: {NAME}-grafana-dashboard\n  \
           namespace: {ns}\n  \
           labels:\n    \
             grafana_dashboard: \"1\"\n{labels4}\
         data:\n",
        ns = v.namespace,
        labels4 = labels("    "),
    )
}

fn dashboard_config_map(v: &Values) -> String {
    let mut out = dashboard_head(v);
    out.push_str(&format!("  {DASHBOARD_FILE}: |-\n"));
    for line in controller_runtime::metrics::GRAFANA_DASHBOARD
        .trim_end()
        .lines()
    {
        out.push_str("    ");
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn service_monitor(v: &Values) -> String {
    format!(
        "apiVersion: monitoring.coreos.com/v1\n\
         kind: ServiceMonitor\n\
         metadata:\n  \
           name: {NAME}\n  \
           namespace: {ns}\n  \
           labels:\n{labels4}\
         spec:\n  \
           endpoints:\n  \
           - port: metrics\n    \
             path: /metrics\n  \
           selector:\n    \
             matchLabels:\n{labels6}",
        ns = v.namespace,
        labels4 = labels("    "),
        labels6 = labels("      "),
    )
}
