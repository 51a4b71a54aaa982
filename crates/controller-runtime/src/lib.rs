//! # controller-runtime
//!
//! Kubernetes' controller-runtime, in Rust. Programs built on it watch Kubernetes objects and
//! reconcile the world towards them.
//!
//! Events flow through one pipeline:
//!
//! ```text
//! API server --list/watch--> informer (cache) --> Source (Kind | Informer | Channel | Func)
//!   --> predicates --> EventHandler --> rate-limited workqueue --> workers --> Reconciler
//! ```
//!
//! Each stage is a module named after the stage, where a user of the Go controller-runtime would
//! look for it: [`event`], [`predicate`], [`handler`], [`workqueue`], [`source`], [`reconcile`] and
//! [`controller`].
//!
//! Beside the pipeline, [`webhook`] serves admission (defaulting, validation) and CRD conversion
//! webhooks over HTTPS, registered per kind by [`builder::WebhookBuilder`] and run by the
//! [`manager::Manager`]. It, the metrics server and the health probe server share
//! [`serving`]: one accept loop, and one [`serving::TlsOptions`] for where a certificate is
//! read.
//!
//! [`operations`] has the annotations an operator's users set to pause one object's
//! reconciles or request one now, and how a manager drains on SIGTERM.
//!
//! [`sharding`] runs one controller across replicas, each reconciling (and caching) only the
//! objects assigned to it, with safe handover when replicas come and go.
//!
//! One key type names objects everywhere: [`ObjectKey`] (namespace and name), the item a
//! handler enqueues ([`Request`] is an alias of it), the key of the cache's stores and the key
//! of client and cache reads.
//!
//! Reads come from the [`cache`] and see this process's own writes: after the
//! [`client::Client`] writes an object, a cached read of it waits (at most 5 s by default) until
//! the informer has stored that write, see [`cache::ReadYourWrites`] (controller-runtime issue
//! #3320; on by default, off with [`cache::CacheOptions::with_read_your_writes`]). A reconcile
//! that creates children can also keep kube-controller-manager's expectations,
//! [`controllerutil::Expectations`].
//!
//! ## Dependencies
//!
//! The crates whose types appear in this API are re-exported: [`kube_client`], [`kube_core`],
//! [`k8s_openapi`], [`futures`], [`prometheus_client`] (with the [`parking_lot`] lock around a
//! manager's registry), [`serde_json`], [`labels`] and [`CancellationToken`]. An operator needs
//! this crate and a k8s-openapi dependency that picks its Kubernetes version
//! (`features = ["latest"]`, say); this library picks none, as k8s-openapi asks of every library.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod builder;
pub mod cache;
pub mod client;
pub mod controller;
pub mod controllerutil;
#[cfg(feature = "envtest")]
pub mod envtest;
pub mod event;
pub mod finalizer;
pub mod handler;
pub mod leaderelection;
pub mod manager;
pub mod metrics;
pub mod multicluster;
pub mod operations;
pub mod predicate;
pub mod prelude;
pub mod reconcile;
pub mod recorder;
pub mod serving;
pub mod sharding;
pub mod source;
pub mod webhook;
pub mod workqueue;

mod coop;
mod error;
mod key;

pub use error::BoxError;
pub use key::ObjectKey;
pub use reconcile::Request;

// The crates whose types this crate's public API exposes, re-exported so that an operator adds
// this crate (and k8s-openapi with the Kubernetes version it picks) and nothing else, at
// versions that always match ours.
pub use crt_labels as labels;
pub use futures;
pub use k8s_openapi;
pub use kube_client;
pub use kube_core;
pub use parking_lot;
pub use prometheus_client;
pub use serde_json;
#[doc(no_inline)]
pub use tokio_util::sync::CancellationToken;

/// The crate README's examples, compiled as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
