//! The label selector predicate.

use super::filter::Predicate;
use crate::event::{Event, Object};
use crt_labels::LabelSelector;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;

/// Why a label selector predicate could not be built.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The selector string is not valid selector syntax.
    #[error("invalid label selector {selector:?}")]
    Parse {
        /// The selector as given.
        selector: String,
        /// What is wrong with it.
        #[source]
        source: crt_labels::ParseError,
    },
    /// The structured selector has an unknown operator, an invalid key or value, or a wrong
    /// number of values.
    #[error("invalid label selector")]
    Requirement(#[source] crt_labels::RequirementError),
}

/// Passes events about objects whose labels match a selector (for updates: the new object's
/// labels), as controller-runtime's `LabelSelectorPredicate`. A missing label map is an empty
/// one. It reads metadata only, so it is a predicate of every [`Object`] type, and an event
/// filter of the builder.
///
/// Build it from the string syntax (`app=web,tier in (a,b),!canary`) with
/// [`LabelSelectorPredicate::parse`], or from a structured `metav1.LabelSelector` with
/// [`LabelSelectorPredicate::from_label_selector`]. A malformed selector is an error then, never a
/// panic later.
///
/// ```
/// use std::sync::Arc;
/// use controller_runtime::event::{Event, GenericEvent};
/// use controller_runtime::predicate::{LabelSelectorPredicate, Predicate};
/// use k8s_openapi::api::core::v1::Pod;
///
/// let p = LabelSelectorPredicate::parse("app=web, tier notin (db)").unwrap();
/// let mut pod = Pod::default();
/// pod.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
/// assert!(p.filter(&Event::Generic(GenericEvent { object: Arc::new(pod) })));
///
/// assert!(LabelSelectorPredicate::parse("app in (web").is_err());
/// ```
#[derive(Clone, Debug)]
pub struct LabelSelectorPredicate {
    selector: LabelSelector,
}

impl LabelSelectorPredicate {
    /// Parses the Kubernetes selector syntax.
    pub fn parse(selector: &str) -> Result<Self, Error> {
        let parsed = selector
            .parse::<LabelSelector>()
            .map_err(|source| Error::Parse {
                selector: selector.to_string(),
                source,
            })?;
        Ok(LabelSelectorPredicate { selector: parsed })
    }

    /// Converts a structured selector (`matchLabels` and `matchExpressions`), as found in the
    /// spec of Deployments and other workloads.
    pub fn from_label_selector(selector: &metav1::LabelSelector) -> Result<Self, Error> {
        let labels = selector.match_labels.iter().flatten();
        let exprs =
            selector
                .match_expressions
                .iter()
                .flatten()
                .map(|e| crt_labels::MatchExpression {
                    key: e.key.clone(),
                    operator: e.operator.clone(),
                    values: e.values.clone().unwrap_or_default(),
                });
        let parsed = LabelSelector::from_parts(labels.map(|(k, v)| (k, v.clone())), exprs)
            .map_err(Error::Requirement)?;
        Ok(LabelSelectorPredicate { selector: parsed })
    }

    /// A predicate for an already parsed selector.
    pub fn new(selector: LabelSelector) -> Self {
        LabelSelectorPredicate { selector }
    }

    /// The selector.
    pub fn selector(&self) -> &LabelSelector {
        &self.selector
    }

    /// Whether `obj`'s labels match.
    fn matches<K: ?Sized + Object>(&self, obj: &K) -> bool {
        match &obj.metadata().labels {
            Some(labels) => self.selector.matches(labels),
            None => self.selector.matches_fn(|_| None),
        }
    }
}

impl<K: ?Sized + Object> Predicate<K> for LabelSelectorPredicate {
    fn filter(&self, event: &Event<K>) -> bool {
        // Updates look at the new object.
        self.matches(&**event.object())
    }
    fn filter_metadata(&self, event: &Event<dyn Object>) -> Option<bool> {
        Some(self.matches(&**event.object()))
    }
}
