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
//! One key type names objects everywhere: [`ObjectKey`] (namespace and name), the item a
//! handler enqueues ([`Request`] is an alias of it), the key of the cache's stores and the key
//! of client and cache reads.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod builder;
pub mod cache;
pub mod client;
pub mod controller;
pub mod event;
pub mod finalizer;
pub mod handler;
pub mod leaderelection;
pub mod manager;
pub mod metrics;
pub mod predicate;
pub mod reconcile;
pub mod recorder;
pub mod source;
pub mod workqueue;

mod key;

pub use key::ObjectKey;
pub use reconcile::Request;
