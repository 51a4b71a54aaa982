//! Authentication: a request's credentials become a [`UserInfo`].
//!
//! Credentials are read as kube-apiserver's bearer-token authenticator reads them: the
//! `Authorization` header trimmed, split at spaces, the scheme compared without case, the token
//! the second part. A request with no credentials is the anonymous user
//! (`system:anonymous`, group `system:unauthenticated`), whom authorization then judges; a
//! request with credentials that authenticate no one is refused with 401 `Unauthorized`,
//! whatever it asks for.

use http::{HeaderMap, header};

use super::user::UserInfo;
use crate::error::ApiError;

/// 401, as the real server answers a request whose credentials authenticate no one.
pub fn unauthorized() -> ApiError {
    ApiError::new(401, "Unauthorized", "Unauthorized")
}

/// The credentials a request presents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Credentials<'a> {
    /// None at all: the anonymous user.
    None,
    /// `Authorization: Bearer TOKEN`.
    Bearer(&'a str),
    /// An `Authorization` header that is not a well-formed bearer token.
    Malformed,
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

/// Turns credentials into users.
#[derive(Debug)]
pub struct Authenticator {
    /// The server's own bearer token, whose holder is [`UserInfo::admin`].
    admin_token: String,
}

impl Authenticator {
    /// An authenticator knowing the server's admin token.
    pub fn new(admin_token: String) -> Authenticator {
        Authenticator { admin_token }
    }

    /// The server's admin token.
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// The user a bearer token authenticates, if any (what a `TokenReview` answers).
    pub fn authenticate_token(&self, token: &str) -> Option<UserInfo> {
        (!token.is_empty() && token == self.admin_token).then(UserInfo::admin)
    }

    /// The user a request is from: anonymous without credentials, 401 when its credentials
    /// authenticate no one.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<UserInfo, ApiError> {
        match credentials(headers) {
            Credentials::None => Ok(UserInfo::anonymous()),
            Credentials::Bearer(token) => self.authenticate_token(token).ok_or_else(unauthorized),
            Credentials::Malformed => Err(unauthorized()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(v) = value {
            h.insert(header::AUTHORIZATION, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn bearer_tokens_are_read_as_upstream_reads_them() {
        let authn = Authenticator::new("tok".into());
        for accepted in [
            "Bearer tok",
            "bearer tok",
            "  Bearer tok  ",
            "Bearer tok more",
        ] {
            let user = authn.authenticate(&headers(Some(accepted))).unwrap();
            assert_eq!(user, UserInfo::admin(), "{accepted:?}");
        }
        for refused in [
            "Bearer",
            "Bearer ",
            "Bearer  tok",
            "Basic tok",
            "Bearer wrong",
            "Bearertok",
        ] {
            let err = authn.authenticate(&headers(Some(refused))).unwrap_err();
            assert_eq!(err.code, 401, "{refused:?}");
        }
        assert_eq!(
            authn.authenticate(&headers(None)).unwrap(),
            UserInfo::anonymous()
        );
    }
}
