//! Authentication: a request's credentials become a [`UserInfo`], as kube-apiserver's
//! authenticator chain makes them.
//!
//! The authenticators, in upstream's order:
//! 1. the client certificate ([`super::x509`]): CN = user, O = groups, when it chains to the
//!    server's client CA;
//! 2. the bearer token, read as kube-apiserver's bearer-token authenticator reads it (the
//!    `Authorization` header trimmed, split at spaces, the scheme compared without case, the
//!    token the second part): the server's admin token ([`UserInfo::admin`]), a static user's
//!    token ([`StaticUser`], as `--token-auth-file`), or a ServiceAccount token
//!    ([`super::serviceaccount`]).
//!
//! The first that knows the request's user wins, and every authenticated user is in
//! `system:authenticated` (upstream's group adder). A request with no credentials is the
//! anonymous user (`system:anonymous`, group `system:unauthenticated`), whom authorization then
//! judges; credentials that authenticate no one (a bad token of any kind, a certificate from
//! another CA, expired or not for client auth, without a good token beside it) are refused with
//! 401 `Unauthorized`, whatever the request asks for, as upstream's fail-on-error union
//! refuses them. Why they failed is never logged nor told.
//!
//! Tokens are checked for audiences as upstream does: a TokenReview may name the audiences it
//! wants ([`Authenticator::review_token`]); requests are checked for the API server's own
//! ([`serviceaccount::ISSUER`]). Static tokens are valid for the API audiences only.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use http::{HeaderMap, header};
use rustls::pki_types::UnixTime;

use super::serviceaccount::{self, TokenError, TokenSigner};
use super::user::{AUTHENTICATED, UserInfo};
use super::x509::{ClientCa, PeerCertificates};
use crate::error::ApiError;

/// Where the ServiceAccount token authenticator looks up the objects a token names: the uid of
/// the core object `plural` (`serviceaccounts`, `pods`, `secrets`) `namespace/name`, if it
/// exists. The server's store implements it.
pub trait ObjectUids: Send + Sync {
    /// The object's `metadata.uid`, or `None` when it does not exist.
    fn uid(&self, plural: &str, namespace: &str, name: &str) -> Option<String>;
}

/// The store looks ServiceAccounts, Pods and Secrets up for the token authenticator (here,
/// in `auth`, which reads the store; the store never imports `auth`).
impl ObjectUids for crate::storage::Storage {
    fn uid(&self, plural: &str, namespace: &str, name: &str) -> Option<String> {
        let res = self.resolve("", "v1", plural)?;
        let obj = self.get(&res, Some(namespace), name, None).ok()?;
        obj.pointer("/metadata/uid")
            .and_then(serde_json::Value::as_str)
            .map(String::from)
    }
}

/// 401, as the real server answers a request whose credentials authenticate no one.
pub fn unauthorized() -> ApiError {
    ApiError::new(401, "Unauthorized", "Unauthorized")
}

/// The credentials in a request's headers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Credentials<'a> {
    /// No `Authorization` header.
    None,
    /// `Authorization: Bearer TOKEN`.
    Bearer(&'a str),
    /// An `Authorization` header that is not a well-formed bearer token.
    Malformed,
}

impl std::fmt::Debug for Credentials<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token itself.
        match self {
            Credentials::None => f.write_str("None"),
            Credentials::Bearer(_) => f.write_str("Bearer(..)"),
            Credentials::Malformed => f.write_str("Malformed"),
        }
    }
}

/// The credentials in `headers`.
pub fn credentials(headers: &HeaderMap) -> Credentials<'_> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Credentials::None;
    };
    let Ok(auth) = value.to_str() else {
        return Credentials::Malformed;
    };
    let mut parts = auth.trim().split(' ');
    let scheme = parts.next().unwrap_or("");
    match parts.next() {
        Some(token) if scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() => {
            Credentials::Bearer(token)
        }
        _ => Credentials::Malformed,
    }
}

/// A user known by a bearer token, as a line of kube-apiserver's `--token-auth-file`
/// (`token,user,uid,"group1,group2"`).
#[derive(Clone, PartialEq, Eq)]
pub struct StaticUser {
    /// The bearer token.
    pub token: String,
    /// The user name.
    pub name: String,
    /// The uid (may be empty).
    pub uid: String,
    /// The groups (`system:authenticated` is added to them).
    pub groups: Vec<String>,
}

impl StaticUser {
    /// A user `name` in `groups`, known by `token`.
    ///
    /// ```
    /// let jane = crt_apiserver::auth::authn::StaticUser::new("s3cret", "jane", &["devs"]);
    /// assert_eq!(jane.groups, ["devs"]);
    /// ```
    pub fn new(token: &str, name: &str, groups: &[&str]) -> StaticUser {
        StaticUser {
            token: token.into(),
            name: name.into(),
            uid: String::new(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }

    /// The same user with a uid.
    pub fn with_uid(mut self, uid: &str) -> StaticUser {
        self.uid = uid.into();
        self
    }
}

impl std::fmt::Debug for StaticUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        f.debug_struct("StaticUser")
            .field("name", &self.name)
            .field("uid", &self.uid)
            .field("groups", &self.groups)
            .finish_non_exhaustive()
    }
}

/// The ServiceAccount token authenticator: the signing key, and the store to check that the
/// ServiceAccount a token names still exists.
struct ServiceAccounts {
    signer: Arc<TokenSigner>,
    objects: Arc<dyn ObjectUids>,
}

/// Turns credentials into users.
pub struct Authenticator {
    /// The server's own bearer token, whose holder is [`UserInfo::admin`].
    admin_token: String,
    /// Static users by token.
    tokens: HashMap<String, UserInfo>,
    client_ca: Option<Arc<ClientCa>>,
    service_accounts: Option<ServiceAccounts>,
    api_audiences: Vec<String>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never a token.
        f.debug_struct("Authenticator")
            .field("static_users", &self.tokens.len())
            .field("client_ca", &self.client_ca.is_some())
            .field("service_accounts", &self.service_accounts.is_some())
            .finish_non_exhaustive()
    }
}

/// Seconds since the epoch.
fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Adds `system:authenticated` unless the user is already in it (upstream's group adder).
fn with_authenticated_group(mut user: UserInfo) -> UserInfo {
    if !user.in_group(AUTHENTICATED) {
        user.groups.push(AUTHENTICATED.into());
    }
    user
}

fn intersect(a: &[String], b: &[String]) -> Vec<String> {
    a.iter().filter(|x| b.contains(x)).cloned().collect()
}

impl Authenticator {
    /// An authenticator knowing only the server's admin token.
    pub fn new(admin_token: String) -> Authenticator {
        Authenticator {
            admin_token,
            tokens: HashMap::new(),
            client_ca: None,
            service_accounts: None,
            api_audiences: vec![serviceaccount::ISSUER.into()],
        }
    }

    /// Also knows `users` by their tokens (a token used twice keeps its last user; the admin
    /// token stays the admin's).
    pub fn with_users(mut self, users: &[StaticUser]) -> Authenticator {
        for u in users.iter().filter(|u| !u.token.is_empty()) {
            let user = UserInfo {
                name: u.name.clone(),
                uid: u.uid.clone(),
                groups: u.groups.clone(),
                ..Default::default()
            };
            self.tokens
                .insert(u.token.clone(), with_authenticated_group(user));
        }
        self
    }

    /// Also authenticates client certificates that chain to `ca`.
    pub fn with_client_ca(mut self, ca: Arc<ClientCa>) -> Authenticator {
        self.client_ca = Some(ca);
        self
    }

    /// Also authenticates the ServiceAccount tokens `signer` signs, for ServiceAccounts that
    /// exist in `objects` (the server's store) with the uid the token names; the API audiences
    /// become the signer's.
    pub fn with_service_accounts(
        mut self,
        signer: Arc<TokenSigner>,
        objects: Arc<dyn ObjectUids>,
    ) -> Authenticator {
        self.api_audiences = signer.api_audiences().to_vec();
        self.service_accounts = Some(ServiceAccounts { signer, objects });
        self
    }

    /// The server's admin token.
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// The audiences the API server accepts tokens for.
    pub fn api_audiences(&self) -> &[String] {
        &self.api_audiences
    }

    /// The ServiceAccount token signer, when ServiceAccount tokens are on.
    pub fn token_signer(&self) -> Option<&Arc<TokenSigner>> {
        self.service_accounts.as_ref().map(|s| &s.signer)
    }

    /// The user a bearer token authenticates for the API server itself, if any.
    pub fn authenticate_token(&self, token: &str) -> Option<UserInfo> {
        self.token_user(token, &self.api_audiences, unix_now())
            .ok()
            .map(|(user, _)| user)
    }

    /// What a `TokenReview` answers: the user `token` authenticates and the audiences it is
    /// valid for among `audiences` (the API server's when empty), as upstream's TokenReview
    /// does.
    pub fn review_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Option<(UserInfo, Vec<String>)> {
        let requested = if audiences.is_empty() {
            &self.api_audiences
        } else {
            audiences
        };
        self.token_user(token, requested, unix_now()).ok()
    }

    /// The user of `token` for the `requested` audiences at `now` (seconds since the epoch),
    /// with the audiences it is valid for.
    pub fn token_user(
        &self,
        token: &str,
        requested: &[String],
        now: i64,
    ) -> Result<(UserInfo, Vec<String>), TokenError> {
        if token.is_empty() {
            return Err(TokenError::Malformed);
        }
        let fixed = if token == self.admin_token {
            Some(UserInfo::admin())
        } else {
            self.tokens.get(token).cloned()
        };
        if let Some(user) = fixed {
            // Audience-agnostic tokens are valid for the API server's audiences only.
            let auds = intersect(&self.api_audiences, requested);
            if auds.is_empty() {
                return Err(TokenError::WrongAudience);
            }
            return Ok((user, auds));
        }
        let sa = self
            .service_accounts
            .as_ref()
            .ok_or(TokenError::OtherIssuer)?;
        let claims = sa.signer.verify(token, now)?;
        let auds = intersect(&claims.audiences, requested);
        if auds.is_empty() {
            return Err(TokenError::WrongAudience);
        }
        let ns = claims.namespace.as_str();
        let check = |plural: &str, object: &serviceaccount::ObjectClaim| match sa.objects.uid(
            plural,
            ns,
            &object.name,
        ) {
            Some(uid) if uid == object.uid => Ok(()),
            Some(_) => Err(TokenError::Revoked(format!(
                "{plural} {:?} has another uid than the token's",
                object.name
            ))),
            None => Err(TokenError::Revoked(format!(
                "{plural} {:?} not found",
                object.name
            ))),
        };
        check("serviceaccounts", &claims.service_account)?;
        if let Some(pod) = &claims.pod {
            check("pods", pod)?;
        }
        if let Some(secret) = &claims.secret {
            check("secrets", secret)?;
        }
        let mut user = UserInfo {
            name: claims.subject(),
            uid: claims.service_account.uid.clone(),
            groups: vec![
                serviceaccount::ALL_GROUP.into(),
                format!("{}:{ns}", serviceaccount::ALL_GROUP),
                AUTHENTICATED.into(),
            ],
            ..Default::default()
        };
        if !claims.id.is_empty() {
            user.extra.insert(
                "authentication.kubernetes.io/credential-id".into(),
                vec![format!("JTI={}", claims.id)],
            );
        }
        if let Some(pod) = &claims.pod {
            user.extra.insert(
                "authentication.kubernetes.io/pod-name".into(),
                vec![pod.name.clone()],
            );
            user.extra.insert(
                "authentication.kubernetes.io/pod-uid".into(),
                vec![pod.uid.clone()],
            );
        }
        Ok((user, auds))
    }

    /// The user a request is from, given its headers and the client certificate chain of its
    /// connection: anonymous without credentials, 401 when its credentials authenticate no one.
    pub fn authenticate(
        &self,
        headers: &HeaderMap,
        certificates: Option<&PeerCertificates>,
    ) -> Result<UserInfo, ApiError> {
        let mut refused = false;
        if let (Some(ca), Some(PeerCertificates(chain))) = (&self.client_ca, certificates)
            && !chain.is_empty()
        {
            match ca.authenticate(chain, UnixTime::now()) {
                Ok(Some(user)) => return Ok(with_authenticated_group(user)),
                Ok(None) => {}
                Err(_) => refused = true,
            }
        }
        match credentials(headers) {
            Credentials::None if refused => Err(unauthorized()),
            Credentials::None => Ok(UserInfo::anonymous()),
            Credentials::Bearer(token) => self.authenticate_token(token).ok_or_else(unauthorized),
            Credentials::Malformed => Err(unauthorized()),
        }
    }
}

#[cfg(test)]
mod tests;
