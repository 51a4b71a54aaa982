//! # crt-labels
//!
//! Kubernetes label and field selectors, as `k8s.io/apimachinery/pkg/labels` and
//! `pkg/fields` define them: parsing of the string syntax (with the real server's error
//! messages), the canonical printed form, and matching. Shared by the runtime (the
//! `label_selector` predicate, cache selectors) and the embedded API server (list and watch
//! filtering).
//!
//! ```
//! use crt_labels::{FieldSelector, LabelSelector};
//!
//! let labels: LabelSelector = "environment in (production, qa), tier notin (frontend), !legacy"
//!     .parse()
//!     .unwrap();
//! assert!(labels.matches_fn(|k| match k {
//!     "environment" => Some("qa"),
//!     "tier" => Some("backend"),
//!     _ => None,
//! }));
//!
//! let fields: FieldSelector = "metadata.namespace=default".parse().unwrap();
//! assert_eq!(fields.requires_exact_match("metadata.namespace"), Some("default"));
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod error;
pub mod field;
pub mod requirement;
pub mod selector;
pub mod validation;

pub use error::{ParseError, RequirementError};
pub use field::{FieldOperator, FieldRequirement, FieldSelector};
pub use requirement::{Operator, Requirement};
pub use selector::{LabelSelector, MatchExpression};

#[cfg(test)]
mod tests;

/// The crate README's examples, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
