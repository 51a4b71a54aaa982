//! Who is asking, and may they: the steps every request passes before it is routed, in
//! kube-apiserver's order.
//!
//! 1. [`authn`]: the request's credentials become a [`UserInfo`] (or a 401 `Status` when they
//!    are present and bad): a client certificate ([`x509`]), the server's admin token, a static
//!    user's token, or a ServiceAccount token ([`serviceaccount`]). A request without
//!    credentials is the anonymous user.
//! 2. [`impersonate`] (`Impersonate-User`, `-Group`, `-Uid`, `-Extra-*`): the authenticated
//!    user, when allowed to `impersonate`, acts as another.
//! 3. [`authz`]: the request's [`RequestAttributes`] (verb, resource, namespace, name, or a
//!    non-resource path) are authorized for the user: `system:masters` may do everything,
//!    everyone else what [`rbac`] grants over the stored roles and bindings ([`bootstrap`]
//!    creates the default ones at start); a refusal is upstream's 403 `Status`. What was
//!    allowed can be recorded per user ([`recorder`], opt-in), the source of a minimal role.
//!
//! The user then travels with the request (an `Arc<UserInfo>` in its extensions), so admission
//! and the review APIs see who asked.

pub mod attributes;
pub mod authn;
pub mod authz;
pub mod bootstrap;
pub mod impersonate;
pub mod rbac;
pub mod recorder;
pub mod serviceaccount;
pub mod x509;

/// The identities themselves live in the crate's leaf module [`crate::user`], so that storage
/// and admission, which `auth` reads through, can name a request's user without a cycle.
pub use crate::user::{self, UserInfo};
pub use attributes::RequestAttributes;
pub use authn::StaticUser;
pub use authz::Decision;
pub use recorder::{Access, AccessRecorder};
