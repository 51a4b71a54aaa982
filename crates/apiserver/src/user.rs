//! [`UserInfo`]: an authenticated identity, as `authentication.k8s.io/v1` `UserInfo` names it.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// The group every authenticated user is in.
pub const AUTHENTICATED: &str = "system:authenticated";
/// The group of the anonymous user.
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The anonymous user's name.
pub const ANONYMOUS: &str = "system:anonymous";
/// The group whose members bypass authorization, as on a real cluster.
pub const MASTERS: &str = "system:masters";
/// The name of the user the server's own bearer token authenticates as.
pub const ADMIN: &str = "crt-admin";

/// Who a request is from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// The user's name (`system:serviceaccount:NS:NAME` for a ServiceAccount).
    pub name: String,
    /// A unique id, if the authenticator knows one.
    pub uid: String,
    /// The groups, `system:authenticated` included for every authenticated user.
    pub groups: Vec<String>,
    /// Extra attributes (a service account token's pod name, ...).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The holder of the server's bearer token: in `system:masters`, so allowed everything.
    pub fn admin() -> UserInfo {
        UserInfo {
            name: ADMIN.into(),
            groups: vec![MASTERS.into(), AUTHENTICATED.into()],
            ..Default::default()
        }
    }

    /// The user of a request without credentials.
    pub fn anonymous() -> UserInfo {
        UserInfo {
            name: ANONYMOUS.into(),
            groups: vec![UNAUTHENTICATED.into()],
            ..Default::default()
        }
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// The `UserInfo` object reviews and admission requests carry (`username`, `uid`,
    /// `groups`, `extra`; empty ones left out, as Go's `omitempty`).
    pub fn to_json(&self) -> Value {
        let mut out = json!({ "username": self.name });
        if !self.uid.is_empty() {
            out["uid"] = json!(self.uid);
        }
        if !self.groups.is_empty() {
            out["groups"] = json!(self.groups);
        }
        if !self.extra.is_empty() {
            out["extra"] = json!(self.extra);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_leaves_empty_fields_out() {
        let admin = UserInfo::admin().to_json();
        assert_eq!(
            admin,
            json!({"username": "crt-admin", "groups": ["system:masters", "system:authenticated"]})
        );
        assert!(UserInfo::admin().in_group(MASTERS));
        assert!(!UserInfo::anonymous().in_group(AUTHENTICATED));
    }
}
