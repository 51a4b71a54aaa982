//! The CEL engine shared by CRD validation rules (`x-kubernetes-validations`, in
//! [`crate::schema`]) and ValidatingAdmissionPolicies (`admission::policy`): what
//! `k8s.io/apiserver/pkg/cel` and cel-go add to the cel crate, which parses and evaluates
//! but checks neither names, types nor costs.
//!
//! - [`parse`]: the environment every expression compiles in (the cel crate's standard
//!   library with its macros, its strings and lists extensions, Kubernetes' list
//!   `indexOf`/`lastIndexOf`), cel-go's limits on size (100,000 code points) and nesting
//!   (250), its wording of errors, and the undeclared names of an expression.
//! - [`library`]: Kubernetes' libraries evaluated at run time (lists, quantity, url, ip,
//!   cidr, format, regex).
//! - [`value`]: JSON values as CEL values.
//! - [`check`]: the type checker, over the declared type ([`check::Decl`]) of `self`.
//! - [`cost`]: cel-go's static cost estimate of a checked expression, with the Kubernetes
//!   libraries' costs and upstream's per-rule and per-CRD limits.
//! - [`runtime_cost`]: the per-call and per-object limits on evaluations.
//!
//! This module knows nothing of schemas: the CRD code derives a [`check::Decl`] from a
//! structural schema node and drives the checker, the estimator and the evaluation.

pub(crate) mod check;
pub(crate) mod cost;
pub(crate) mod library;
pub(crate) mod parse;
pub(crate) mod runtime_cost;
pub(crate) mod value;
