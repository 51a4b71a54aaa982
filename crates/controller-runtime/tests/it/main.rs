//! controller-runtime's integration tests, one module per area, in one test binary: every test
//! binary links the whole dependency tree (kube-client, k8s-openapi, hyper, rustls, the embedded
//! API server), so one binary builds and links once where a binary per file did it per file.
//!
//! `tests/chaos.rs` stays a binary of its own: it installs a counting global allocator and
//! asserts that the process's live heap does not grow, which other tests running beside it in
//! the same process would falsify.

mod support;

mod builder;
mod cache;
mod controller;
mod controllerutil;
#[cfg(feature = "envtest")]
mod dashboard;
// The test environment (`envtest`) and what runs against it need the feature; the crate's
// dev-dependency on itself turns it on for its tests.
#[cfg(feature = "envtest")]
mod envtest;
mod manager;
#[cfg(feature = "envtest")]
mod metrics_auth;
#[cfg(feature = "envtest")]
mod multicluster;
mod parity;
mod pipeline;
mod read_your_writes;
mod sharding;
mod webhook;
#[cfg(feature = "envtest")]
mod webhook_e2e;
mod workqueue;
