//! [`WebhookBuilder`]: a kind's webhooks, registered on a manager's webhook server
//! (controller-runtime's `builder.WebhookBuilder`, `ctrl.NewWebhookManagedBy(mgr)`).

use std::marker::PhantomData;

use super::state::NoFor;
use crate::manager::Manager;
use crate::webhook::Error;
use crate::webhook::admission::{Defaulter, Object, Validator, Webhook};
use crate::webhook::conversion::{Conversion, Hub};

/// Registers a kind's conversion on a manager's server (its hub type erased).
type RegisterConversion = Box<dyn FnOnce(&Manager) -> Result<(), Error> + Send>;

/// The state of a webhook builder whose kind is `K`: the webhooks given so far.
pub struct WebhookFor<K> {
    defaulter: Option<Webhook>,
    validator: Option<Webhook>,
    conversion: Option<RegisterConversion>,
    kind: PhantomData<fn() -> K>,
}

/// Registers a kind's defaulter, validator and conversion on the manager's
/// [webhook server](Manager::webhook_server), at kubebuilder's paths.
///
/// Typed by its state as [`ControllerBuilder`](super::ControllerBuilder) is: `new` gives a
/// `WebhookBuilder<NoFor>`, whose only verb is [`for_`](WebhookBuilder::for_); the kind's
/// builder takes a [`Defaulter<K>`] and a [`Validator<K>`] of that kind only, and a
/// [`Conversion<K>`] only when `K` is the [`Hub`].
///
/// ```no_run
/// use controller_runtime::builder::WebhookBuilder;
/// use controller_runtime::webhook::admission::{Denial, Request, Validator, ValidationResult};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// struct Immutable;
/// impl Validator<ConfigMap> for Immutable {
///     async fn validate_update(&self, _old: &ConfigMap, _new: &ConfigMap, _: &Request) -> ValidationResult {
///         Err(Denial::new("configmaps here are immutable"))
///     }
/// }
///
/// # fn f(mgr: controller_runtime::manager::Manager) -> Result<(), controller_runtime::webhook::Error> {
/// WebhookBuilder::new(&mgr).for_::<ConfigMap>().with_validator(Immutable).complete()?;
/// assert_eq!(mgr.webhook_server().paths(), ["/validate-core-v1-configmap"]);
/// # Ok(()) }
/// ```
///
/// A validator of another kind does not compile:
///
/// ```compile_fail,E0277
/// # use controller_runtime::builder::WebhookBuilder;
/// # use controller_runtime::webhook::admission::Validator;
/// # use k8s_openapi::api::core::v1::{ConfigMap, Secret};
/// struct SecretsOnly;
/// impl Validator<Secret> for SecretsOnly {}
/// # fn f(mgr: controller_runtime::manager::Manager) {
/// let _ = WebhookBuilder::new(&mgr).for_::<ConfigMap>().with_validator(SecretsOnly);
/// # }
/// ```
///
/// Nor `complete` without a kind:
///
/// ```compile_fail,E0599
/// # use controller_runtime::builder::WebhookBuilder;
/// # fn f(mgr: controller_runtime::manager::Manager) {
/// let _ = WebhookBuilder::new(&mgr).complete();
/// # }
/// ```
pub struct WebhookBuilder<S> {
    mgr: Manager,
    state: S,
}

impl WebhookBuilder<NoFor> {
    /// A builder for `mgr`'s webhook server.
    pub fn new(mgr: &Manager) -> Self {
        WebhookBuilder {
            mgr: mgr.clone(),
            state: NoFor(()),
        }
    }

    /// The kind the webhooks serve.
    pub fn for_<K: Object>(self) -> WebhookBuilder<WebhookFor<K>> {
        WebhookBuilder {
            mgr: self.mgr,
            state: WebhookFor {
                defaulter: None,
                validator: None,
                conversion: None,
                kind: PhantomData,
            },
        }
    }
}

impl<K: Object> WebhookBuilder<WebhookFor<K>> {
    /// Defaults `K` on create and update, at `/mutate-<group>-<version>-<kind>`.
    pub fn with_defaulter<D: Defaulter<K>>(mut self, defaulter: D) -> Self
    where
        K: Clone,
    {
        self.state.defaulter = Some(Webhook::defaulting::<K, D>(defaulter));
        self
    }

    /// Validates `K` on create, update and delete, at `/validate-<group>-<version>-<kind>`.
    pub fn with_validator<V: Validator<K>>(mut self, validator: V) -> Self {
        self.state.validator = Some(Webhook::validating::<K, V>(validator));
        self
    }

    /// Converts between `K` (the hub) and its spokes, at `/convert`.
    pub fn with_conversion(mut self, conversion: Conversion<K>) -> Self
    where
        K: Hub,
    {
        self.state.conversion = Some(Box::new(move |mgr: &Manager| {
            mgr.webhook_server().register_conversion(conversion)
        }));
        self
    }

    /// Registers the webhooks on the manager's server (adding the server to the manager).
    /// Fails when a path or the kind's conversion is registered already.
    pub fn complete(self) -> Result<(), Error> {
        let server = self.mgr.webhook_server();
        for webhook in [self.state.defaulter, self.state.validator]
            .into_iter()
            .flatten()
        {
            server.register(webhook)?;
        }
        if let Some(register) = self.state.conversion {
            register(&self.mgr)?;
        }
        Ok(())
    }
}
