//! The Greeting's admission webhooks, served by the operator's Manager and called by the API
//! server on every write of a Greeting (as kubebuilder scaffolds them for an API):
//!
//! - the defaulter fills in an empty `spec.message` with [`DEFAULT_MESSAGE`];
//! - the validator refuses a message that says [`FORBIDDEN`] or is longer than
//!   [`MAX_MESSAGE`] characters, with a message the client shows, and warns when a Greeting is
//!   deleted that its ConfigMaps go with it.
//!
//! [`register`] adds both to the Manager's webhook server through the `WebhookBuilder`, at
//! kubebuilder's paths (`/mutate-demo-crt-dev-v1-greeting`, `/validate-demo-crt-dev-v1-greeting`).

use controller_runtime::builder::WebhookBuilder;
use controller_runtime::manager::Manager;
use controller_runtime::webhook::admission::{
    Defaulter, Denial, Request, ValidationResult, Validator,
};

use super::crd::Greeting;
use super::operator::FINALIZER;

/// What an empty `spec.message` becomes.
pub const DEFAULT_MESSAGE: &str = "hello";
/// The word a Greeting's message may not contain (any case).
pub const FORBIDDEN: &str = "goodbye";
/// The longest message allowed, in characters.
pub const MAX_MESSAGE: usize = 64;

/// The Greeting's defaulter and validator (one type can be both).
pub struct GreetingWebhook;

impl Defaulter<Greeting> for GreetingWebhook {
    async fn default(&self, greeting: &mut Greeting, _req: &Request) -> Result<(), Denial> {
        if greeting.spec.message.trim().is_empty() {
            greeting.spec.message = DEFAULT_MESSAGE.into();
        }
        Ok(())
    }
}

impl Validator<Greeting> for GreetingWebhook {
    async fn validate_create(&self, greeting: &Greeting, _req: &Request) -> ValidationResult {
        check_message(&greeting.spec.message)
    }

    async fn validate_update(
        &self,
        _old: &Greeting,
        greeting: &Greeting,
        _req: &Request,
    ) -> ValidationResult {
        check_message(&greeting.spec.message)
    }

    async fn validate_delete(&self, greeting: &Greeting, _req: &Request) -> ValidationResult {
        let children = greeting.status.as_ref().map_or(0, |s| s.replicas);
        Ok(vec![format!(
            "its {children} ConfigMap(s) are deleted with it (finalizer {FINALIZER})"
        )])
    }
}

/// A message's verdict: allowed with no warning, or a 422 Invalid saying what is wrong.
fn check_message(message: &str) -> ValidationResult {
    let invalid = |why: String| Err(Denial::new(why).with_code(422).with_reason("Invalid"));
    if message.to_lowercase().contains(FORBIDDEN) {
        return invalid(format!(
            "spec.message: a Greeting says hello, never {FORBIDDEN:?}"
        ));
    }
    let length = message.chars().count();
    if length > MAX_MESSAGE {
        return invalid(format!(
            "spec.message: {length} characters, at most {MAX_MESSAGE}"
        ));
    }
    Ok(vec![])
}

/// Registers the Greeting's defaulter and validator on `mgr`'s webhook server (which the
/// Manager then runs).
pub fn register(mgr: &Manager) -> anyhow::Result<()> {
    WebhookBuilder::new(mgr)
        .for_::<Greeting>()
        .with_defaulter(GreetingWebhook)
        .with_validator(GreetingWebhook)
        .complete()?;
    mgr.add_readyz_check("webhook", mgr.webhook_server().started_checker());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_saying_goodbye_or_too_long_is_refused_with_why() {
        assert_eq!(check_message("hello"), Ok(vec![]));
        assert_eq!(check_message(&"a".repeat(MAX_MESSAGE)), Ok(vec![]));
        let refused = check_message("Goodbye, world").unwrap_err();
        assert_eq!((refused.code, refused.reason.as_str()), (422, "Invalid"));
        assert!(refused.message.contains("never \"goodbye\""), "{refused}");
        let refused = check_message(&"é".repeat(MAX_MESSAGE + 1)).unwrap_err();
        assert_eq!(refused.message, "spec.message: 65 characters, at most 64");
    }
}
