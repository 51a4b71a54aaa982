//! Options that match controller-runtime's, against the embedded API server: reconcile
//! results' priority and debounce, the Manager's controller defaults and options, the
//! client's write defaults,
//! subresources and partial apply, the cache's transforms and metrics, and envtest's
//! `eventually`. One test binary for all of them: each binary links the whole dependency tree,
//! which on a 2-core CI machine costs more than the tests take to run.

#[path = "parity/client_options.rs"]
mod client_options;
#[cfg(feature = "envtest")]
#[path = "parity/client_subresource.rs"]
mod client_subresource;
#[cfg(feature = "envtest")]
#[path = "parity/eventually.rs"]
mod eventually;
#[path = "parity/manager_options.rs"]
mod manager_options;
#[path = "parity/metrics_parity.rs"]
mod metrics_parity;
#[path = "parity/reconcile_options.rs"]
mod reconcile_options;
