//! Webhooks (controller-runtime's `pkg/webhook`): admission webhooks that default and validate
//! objects, and CRD conversion webhooks, served over HTTPS to the API server.
//!
//! - [`Server`] ([`server`]): the HTTPS server, its [`Options`] (port 9443, certificates in
//!   `<temp dir>/k8s-webhook-server/serving-certs`), run by the
//!   [`Manager`](crate::manager::Manager) in its webhooks group, before the caches.
//!   Its certificate is read by a [`CertWatcher`](crate::serving::CertWatcher) and
//!   served by the [`serving`](crate::serving) module's accept loop.
//! - [`admission`]: typed [`Defaulter`](admission::Defaulter) and
//!   [`Validator`](admission::Validator), a raw [`Handler`](admission::Handler), and
//!   [`Webhook`](admission::Webhook) (a handler and its path).
//! - [`conversion`]: [`Hub`](conversion::Hub) and [`Convertible`](conversion::Convertible)
//!   versions of a kind, served at `/convert`.
//! - [`config`]: the `MutatingWebhookConfiguration`, `ValidatingWebhookConfiguration` and CRD
//!   conversion stanza of what is registered.
//! - [`WebhookMetrics`] ([`metrics`]): `controller_runtime_webhook_*`.
//!
//! Register a kind's webhooks with the builder (controller-runtime's
//! `ctrl.NewWebhookManagedBy(mgr).For(&Foo{})`):
//!
//! ```no_run
//! use controller_runtime::builder::WebhookBuilder;
//! use controller_runtime::manager::{Manager, ManagerOptions};
//! use controller_runtime::webhook::admission::{Defaulter, Denial, Request, Validator, ValidationResult};
//! use k8s_openapi::api::apps::v1::Deployment;
//!
//! struct DeploymentWebhook;
//!
//! impl Defaulter<Deployment> for DeploymentWebhook {
//!     async fn default(&self, d: &mut Deployment, _: &Request) -> Result<(), Denial> {
//!         d.spec.get_or_insert_default().replicas.get_or_insert(1);
//!         Ok(())
//!     }
//! }
//!
//! impl Validator<Deployment> for DeploymentWebhook {
//!     async fn validate_create(&self, d: &Deployment, _: &Request) -> ValidationResult {
//!         match d.spec.as_ref().and_then(|s| s.replicas) {
//!             Some(n) if n > 10 => Err(Denial::new("at most 10 replicas")),
//!             _ => Ok(vec![]),
//!         }
//!     }
//! }
//!
//! # async fn f(client: kube_client::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let mgr = Manager::new(client, ManagerOptions::default())?;
//! WebhookBuilder::new(&mgr)
//!     .for_::<Deployment>()
//!     .with_defaulter(DeploymentWebhook)
//!     .with_validator(DeploymentWebhook)
//!     .complete()?;
//! mgr.add_readyz_check("webhook", mgr.webhook_server().started_checker());
//! mgr.start(controller_runtime::manager::signal_handler()).await?;
//! # Ok(()) }
//! ```

pub mod admission;
pub mod config;
pub mod conversion;
mod error;
pub mod metrics;
pub mod server;

pub use config::ClientConfig;
pub use metrics::WebhookMetrics;
pub use server::{Options, Server};

pub use error::{BoxError, Error};
