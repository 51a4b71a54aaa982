//! The configuration objects of what a [`Server`](super::Server) serves, generated from what is
//! registered (controller-gen writes them for kubebuilder): a `MutatingWebhookConfiguration`
//! for the defaulters, a `ValidatingWebhookConfiguration` for the validators, and a CRD's
//! `spec.conversion` stanza for a kind with a conversion. Tests and deployments install the
//! same objects, so they cannot drift from the code.
//!
//! Every webhook gets controller-gen's defaults: its kind's group, version and resource,
//! the operations it handles (`CREATE`, `UPDATE` for a defaulter; also `DELETE` for a
//! validator), `sideEffects: None`, `admissionReviewVersions: ["v1"]`, `failurePolicy: Fail`.
//! Where the API server reaches the webhook is a [`ClientConfig`]: a URL (outside a cluster,
//! in tests) or a Service, and the CA bundle that signed the serving certificate.
//!
//! ```
//! use controller_runtime::webhook::{ClientConfig, config};
//! use controller_runtime::webhook::admission::{Defaulter, Denial, Request, Webhook};
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! struct Noop;
//! impl Defaulter<ConfigMap> for Noop {
//!     async fn default(&self, _: &mut ConfigMap, _: &Request) -> Result<(), Denial> { Ok(()) }
//! }
//!
//! let webhooks = [Webhook::defaulting::<ConfigMap, _>(Noop)];
//! let client = ClientConfig::service("system", "webhook-service", b"-----BEGIN CERTIFICATE-----...".to_vec());
//! let mutating = config::mutating_webhook_configuration("mutating-webhook-configuration", &webhooks, &client);
//! let webhook = &mutating.webhooks.as_ref().unwrap()[0];
//! assert_eq!(webhook.name, "mconfigmap-v1.kb.io");
//! assert_eq!(webhook.side_effects, "None");
//! let service = webhook.client_config.service.as_ref().unwrap();
//! assert_eq!(service.path.as_deref(), Some("/mutate-core-v1-configmap"));
//! ```

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1 as reg;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as ext;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::admission::{Rule, Webhook, WebhookKind};
use super::conversion::CONVERT_PATH;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    Url(String),
    Service {
        namespace: String,
        name: String,
        port: Option<i32>,
    },
}

/// Where the API server reaches the webhook server, and the CA bundle (PEM) it trusts for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    target: Target,
    ca_bundle: Vec<u8>,
}

impl ClientConfig {
    /// The server at `base_url` (`https://127.0.0.1:9443`); each webhook's path is appended.
    pub fn url(base_url: impl Into<String>, ca_bundle: impl Into<Vec<u8>>) -> Self {
        let base: String = base_url.into();
        ClientConfig {
            target: Target::Url(base.trim_end_matches('/').to_string()),
            ca_bundle: ca_bundle.into(),
        }
    }

    /// The Service `namespace/name` in front of the server (port 443 unless
    /// [`with_port`](Self::with_port)).
    pub fn service(
        namespace: impl Into<String>,
        name: impl Into<String>,
        ca_bundle: impl Into<Vec<u8>>,
    ) -> Self {
        ClientConfig {
            target: Target::Service {
                namespace: namespace.into(),
                name: name.into(),
                port: None,
            },
            ca_bundle: ca_bundle.into(),
        }
    }

    /// The Service's port (a URL client config ignores it: the URL names its port).
    pub fn with_port(mut self, port: i32) -> Self {
        if let Target::Service { port: p, .. } = &mut self.target {
            *p = Some(port);
        }
        self
    }

    fn admission(&self, path: &str) -> reg::WebhookClientConfig {
        let ca_bundle = Some(ByteString(self.ca_bundle.clone()));
        match &self.target {
            Target::Url(base) => reg::WebhookClientConfig {
                url: Some(format!("{base}{path}")),
                ca_bundle,
                service: None,
            },
            Target::Service {
                namespace,
                name,
                port,
            } => reg::WebhookClientConfig {
                service: Some(reg::ServiceReference {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    path: Some(path.to_string()),
                    port: *port,
                }),
                ca_bundle,
                url: None,
            },
        }
    }

    fn conversion(&self) -> ext::WebhookClientConfig {
        let admission = self.admission(CONVERT_PATH);
        ext::WebhookClientConfig {
            url: admission.url,
            ca_bundle: admission.ca_bundle,
            service: admission.service.map(|s| ext::ServiceReference {
                namespace: s.namespace,
                name: s.name,
                path: s.path,
                port: s.port,
            }),
        }
    }
}

fn rule_with_operations(rule: &Rule) -> reg::RuleWithOperations {
    reg::RuleWithOperations {
        api_groups: Some(vec![rule.group.clone()]),
        api_versions: Some(vec![rule.version.clone()]),
        resources: Some(vec![rule.resource.clone()]),
        operations: Some(rule.operations.clone()),
        scope: None,
    }
}

fn typed(webhooks: &[Webhook], kind: WebhookKind) -> impl Iterator<Item = (&Webhook, &Rule)> {
    webhooks
        .iter()
        .filter_map(move |w| w.rule().filter(|r| r.kind == kind).map(|r| (w, r)))
}

/// The `MutatingWebhookConfiguration` named `name` listing the mutating webhooks among
/// `webhooks` (raw webhooks, which carry no rule, are left out).
pub fn mutating_webhook_configuration(
    name: &str,
    webhooks: &[Webhook],
    client: &ClientConfig,
) -> reg::MutatingWebhookConfiguration {
    let webhooks = typed(webhooks, WebhookKind::Mutating)
        .map(|(webhook, rule)| reg::MutatingWebhook {
            name: rule.name.clone(),
            client_config: client.admission(webhook.path()),
            rules: Some(vec![rule_with_operations(rule)]),
            side_effects: "None".into(),
            admission_review_versions: vec!["v1".into()],
            failure_policy: Some("Fail".into()),
            ..Default::default()
        })
        .collect();
    reg::MutatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        webhooks: Some(webhooks),
    }
}

/// The `ValidatingWebhookConfiguration` named `name` listing the validating webhooks among
/// `webhooks`.
pub fn validating_webhook_configuration(
    name: &str,
    webhooks: &[Webhook],
    client: &ClientConfig,
) -> reg::ValidatingWebhookConfiguration {
    let webhooks = typed(webhooks, WebhookKind::Validating)
        .map(|(webhook, rule)| reg::ValidatingWebhook {
            name: rule.name.clone(),
            client_config: client.admission(webhook.path()),
            rules: Some(vec![rule_with_operations(rule)]),
            side_effects: "None".into(),
            admission_review_versions: vec!["v1".into()],
            failure_policy: Some("Fail".into()),
            ..Default::default()
        })
        .collect();
    reg::ValidatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        webhooks: Some(webhooks),
    }
}

/// A CRD's `spec.conversion`: strategy `Webhook`, calling `/convert` with ConversionReview
/// `v1`.
pub fn crd_conversion(client: &ClientConfig) -> ext::CustomResourceConversion {
    ext::CustomResourceConversion {
        strategy: "Webhook".into(),
        webhook: Some(ext::WebhookConversion {
            client_config: Some(client.conversion()),
            conversion_review_versions: vec!["v1".into()],
        }),
    }
}
