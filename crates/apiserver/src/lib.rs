//! # crt-apiserver
//!
//! An embedded Kubernetes API server: in-process, binary-free, speaking the real HTTP protocol
//! over TLS with a bearer token, so that `kubectl`, kube-client and controllers talk to it as to a
//! real cluster. It starts in milliseconds and keeps everything in memory, or, with
//! [`Config::data_dir`], also in a directory: every write synced to disk before it is answered,
//! everything restored at the next start (see [`server`]'s docs).
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
//! ## What clients see
//! - TLS with a CA generated at every start ([`Server::ca_pem`]; kept in the data directory
//!   when there is one); HTTP/2 and HTTP/1.1.
//! - Authentication and authorization in kube-apiserver's order ([`auth`]): credentials that
//!   authenticate no one get 401 `Unauthorized` on every path; a request without any is the
//!   anonymous user; the server's bearer token is a `system:masters` user, allowed everything.
//! - Identities as a cluster has them: static users' bearer tokens ([`Config::users`]), client
//!   certificates signed by the server's client CA (CN user, O groups; minted by
//!   [`Server::client_certificate`] and [`Server::kubeconfig_for_certificate`]), and
//!   ServiceAccount tokens (signed JWTs with upstream's claims, from
//!   `POST .../serviceaccounts/NAME/token` as `kubectl create token` asks, or
//!   [`Server::service_account_token`]), valid until they expire or their ServiceAccount is
//!   deleted. Every namespace has its `default` ServiceAccount, as the ServiceAccount controller
//!   makes it. `kubectl auth whoami` and `TokenReview` answer who a credential is. Admission
//!   sees the request's user (a policy's `request.userInfo`, a webhook's `userInfo`).
//! - Impersonation headers (`kubectl --as`, `--as-group`) are honoured for users allowed the
//!   `impersonate` verb. Everyone else is authorized by RBAC as kube-apiserver evaluates it
//!   (Roles, ClusterRoles, their bindings, aggregation by label), over upstream's default
//!   ClusterRoles and bindings created at start (`cluster-admin`, `admin`, `edit`, `view`,
//!   `system:discovery`, `system:basic-user`, `system:public-info-viewer`, ...; so anonymous
//!   requests reach `/healthz`, `/readyz`, `/livez` and `/version` only); a refusal is
//!   upstream's 403 `Status`, worded as upstream's.
//! - Discovery in both the plain and the aggregated (`apidiscovery.k8s.io/v2`) form, computed
//!   per request, so a CRD's resource is served and discoverable as soon as it is created.
//! - Every built-in resource a kube-apiserver 1.33 serves by default (61, HPA at `v2` and `v1`),
//!   with its short names, categories, verbs and subresources as upstream publishes them; the
//!   review kinds are answered on create and never stored (access and rules reviews by the
//!   authorizer, so `kubectl auth can-i` and `can-i --list` are truthful; a `TokenReview` by
//!   the authenticator, for the audiences it names). Subresources other than `status`,
//!   `scale`, `pods/binding`, `pods/eviction`, `namespaces/finalize` and
//!   `serviceaccounts/token` (`pods/log`, `pods/exec`, ...) are published but not served.
//! - Built-in kinds speak protobuf (`application/vnd.kubernetes.protobuf`, as client-go's
//!   typed clients and kubectl do) as well as JSON: request bodies, `DeleteOptions` bodies,
//!   objects, lists, `Status` errors and watch streams, converted by one walk over the kinds'
//!   upstream message descriptors; custom resources are JSON only (a protobuf body is a 415),
//!   as upstream. `/openapi/v2` is also served in gnostic's protobuf.
//! - OpenAPI v3 documents (and `/openapi/v2`, in JSON and in gnostic's protobuf) carry the served kinds' schemas
//!   (built-in kinds from k8s-openapi, custom resources from their CRD), with merge keys and
//!   `x-kubernetes-group-version-kind`, so `kubectl explain` works; their PATCH operations
//!   declare the `fieldValidation` parameter, so kubectl leaves validation to the server. Custom
//!   objects honour it (`Strict`: 400 naming each unknown field; `Warn`, the default: pruned
//!   with a `Warning: 299` header each; `Ignore`: pruned); built-in kinds are not checked.
//! - Objects' keys come out sorted, as Go encodes unstructured objects (built-in kinds from a
//!   real server keep Go's field order; no client may rely on either); a watch line names its
//!   `type` before its `object`, as clients that decode it without buffering need.
//! - ResourceQuota admission, on as in kube-apiserver: creates (and updates of Services and
//!   claims) are measured against their namespace's quotas ([`quota`]), refused past
//!   `status.hard` with upstream's messages and charged to `status.used`. Measuring quotas
//!   and giving usage back is a controller's work (crt-cluster's); without one a quota's
//!   status stays empty and, as upstream, it limits nothing.
//! - ValidatingAdmissionPolicies (`admissionregistration.k8s.io/v1`) enforced on every create,
//!   update, patch, apply and delete their bindings select: `Deny` refuses with upstream's
//!   wording, `Warn` answers `Warning` headers, params come from the objects a binding's
//!   `paramRef` names.
//! - CRDs of conversion strategy `Webhook`: objects are stored in the storage version and
//!   converted through the CRD's conversion webhook (HTTPS, verified against its `caBundle`) for
//!   reads, lists, watches and writes at every other served version, as upstream does.
//! - The Table form for `kubectl get`, `PartialObjectMetadata` for metadata-only clients.
//! - Server-side apply (`application/apply-patch+yaml`, YAML or JSON) with `managedFields`
//!   recorded for every write, conflicts worded as the real server words them, `force`, and
//!   lists merged by their keys ([`fieldmanager`]).
//! - Fault injection through [`Server::faults`], [`Server::stop_listener`] and
//!   [`Server::restart_listener`].
//!
//! The map of the modules and the invariants they keep is in ARCHITECTURE.md at the repository's
//! root.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
// `ApiError` (the `Status` every failing request is answered with) is returned by value all
// through the request path; it is built once per failure, so boxing it would buy nothing.
#![allow(clippy::result_large_err)]

pub(crate) mod admission;
pub mod auth;
pub(crate) mod cel;
pub(crate) mod conversion;
pub mod discovery;
pub mod error;
pub mod faults;
pub mod fieldmanager;
pub mod http;
pub(crate) mod json;
pub(crate) mod kinds;
pub mod patch;
pub mod quota;
pub mod resource;
pub mod schema;
pub mod server;
pub mod storage;
pub mod table;
pub mod tls;
mod uid;
pub mod user;
pub(crate) mod validation;
pub(crate) mod webhook_client;

pub use error::{ApiError, Error};
pub use faults::Faults;
pub use server::{Config, Server};

/// The crate README's examples, compiled as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
