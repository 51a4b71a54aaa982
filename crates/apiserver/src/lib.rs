//! # crt-apiserver
//!
//! An embedded Kubernetes API server: in-process, binary-free, speaking the real HTTP protocol
//! over TLS with a bearer token, so that `kubectl`, kube-client and controllers talk to it as to a
//! real cluster. It starts in milliseconds and keeps everything in memory.
//!
//! ```no_run
//! # async fn demo() -> Result<(), crt_apiserver::Error> {
//! let server = crt_apiserver::Server::start(crt_apiserver::Config::default()).await?;
//! std::fs::write("/tmp/kubeconfig", server.kubeconfig()).unwrap();
//! // kubectl --kubeconfig /tmp/kubeconfig get namespaces
//! server.stop().await;
//! # Ok(()) }
//! ```
//!
//! The map of the modules and the invariants they keep is in ARCHITECTURE.md at the repository's
//! root.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
// `ApiError` (the `Status` every failing request is answered with) is returned by value all
// through the request path; it is built once per failure, so boxing it would buy nothing.
#![allow(clippy::result_large_err)]

pub mod discovery;
pub mod error;
pub mod faults;
pub mod http;
pub mod patch;
pub mod resource;
pub mod schema;
pub mod server;
pub mod storage;
pub mod table;
pub mod tls;

pub use error::{ApiError, Error};
pub use faults::Faults;
pub use server::{Config, Server};
