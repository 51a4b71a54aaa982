//! Impersonation: `Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid` and
//! `Impersonate-Extra-KEY` headers (`kubectl --as`, `--as-group`, `--as-uid`), handled as
//! upstream's `WithImpersonation` filter handles them.
//!
//! Each thing asked for is authorized for the authenticated user with the verb `impersonate`:
//! a user on `users` and a group on `groups` (API group `""`, the name the one asked for), a
//! ServiceAccount user name (`system:serviceaccount:NS:NAME`) on `serviceaccounts` in namespace
//! `NS`, an extra value on `userextras/KEY` and a uid on `uids` (API group
//! `authentication.k8s.io`). The first refused gets upstream's 403 for it
//! (`users "jane" is forbidden: User "bob" cannot impersonate resource "users" in API group ""
//! at the cluster scope`). Groups, extras or a uid without a user are a 500, in upstream's
//! plain-text words.
//!
//! The request then runs as the impersonated user: its groups are those asked for (a
//! ServiceAccount's own, `system:serviceaccounts` and `system:serviceaccounts:NS`, when none
//! are), plus `system:authenticated` unless `system:authenticated` or `system:unauthenticated`
//! is among them (`system:unauthenticated` for `system:anonymous`).

use std::collections::BTreeMap;

use http::HeaderMap;

use super::attributes::RequestAttributes;
use super::authz::{Authorizer, forbidden};
use super::rbac::SERVICE_ACCOUNT_PREFIX;
use super::user::{ANONYMOUS, AUTHENTICATED, UNAUTHENTICATED, UserInfo};
use crate::error::ApiError;

/// `Impersonate-User`.
pub const USER_HEADER: &str = "impersonate-user";
/// `Impersonate-Group` (repeated for several).
pub const GROUP_HEADER: &str = "impersonate-group";
/// `Impersonate-Uid`.
pub const UID_HEADER: &str = "impersonate-uid";
/// `Impersonate-Extra-KEY` (repeated for several values; KEY percent-encoded).
pub const EXTRA_PREFIX: &str = "impersonate-extra-";

/// Why an impersonation was not done.
#[derive(Debug)]
pub enum Refusal {
    /// Not allowed: upstream's 403 `Status`.
    Forbidden(ApiError),
    /// Malformed (groups, extras or a uid without a user): upstream answers 500 with this
    /// plain-text body.
    Malformed(String),
}

/// One thing asked for, as upstream's `ObjectReference` of it.
#[derive(Debug, PartialEq, Eq)]
enum Asked {
    User(String),
    ServiceAccount(String, String),
    Group(String),
    Extra(String, String),
    Uid(String),
}

impl Asked {
    /// Go's `%v` of the `ObjectReference` (`{Kind Namespace Name UID APIVersion
    /// ResourceVersion FieldPath}`), for the malformed-request message.
    fn go_string(&self) -> String {
        let api = "authentication.k8s.io/v1";
        match self {
            Asked::User(n) => format!("{{User  {n}    }}"),
            Asked::ServiceAccount(ns, n) => format!("{{ServiceAccount {ns} {n}    }}"),
            Asked::Group(n) => format!("{{Group  {n}    }}"),
            Asked::Extra(k, v) => format!("{{UserExtra  {v}  {api}  {k}}}"),
            Asked::Uid(u) => format!("{{UID  {u}  {api}  }}"),
        }
    }

    /// The attributes authorized for it.
    fn attributes(&self) -> RequestAttributes {
        let (group, resource, sub, ns, name) = match self {
            Asked::User(n) => ("", "users", "", "", n.as_str()),
            Asked::ServiceAccount(ns, n) => ("", "serviceaccounts", "", ns.as_str(), n.as_str()),
            Asked::Group(n) => ("", "groups", "", "", n.as_str()),
            Asked::Extra(k, v) => (
                "authentication.k8s.io",
                "userextras",
                k.as_str(),
                "",
                v.as_str(),
            ),
            Asked::Uid(u) => ("authentication.k8s.io", "uids", "", "", u.as_str()),
        };
        RequestAttributes {
            verb: "impersonate".into(),
            resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: ns.into(),
            name: name.into(),
            ..Default::default()
        }
    }
}

/// Whether `headers` ask for any impersonation.
pub fn requested(headers: &HeaderMap) -> bool {
    headers.contains_key(USER_HEADER)
        || headers.contains_key(GROUP_HEADER)
        || headers.contains_key(UID_HEADER)
        || headers.keys().any(|k| k.as_str().starts_with(EXTRA_PREFIX))
}

/// The user a request acts as: `requestor` when `headers` ask for no impersonation, else the
/// impersonated user when `requestor` may impersonate everything asked. `uri` is the
/// request's (path and query), for the malformed-request message.
pub fn impersonate(
    headers: &HeaderMap,
    requestor: UserInfo,
    authz: &Authorizer,
    uri: &str,
) -> Result<UserInfo, Refusal> {
    if !requested(headers) {
        return Ok(requestor);
    }
    let asked = asked(headers).map_err(|e| {
        Refusal::Malformed(sanitize(&format!("Internal Server Error: {uri:?}: {e}")))
    })?;
    let groups_given = headers.contains_key(GROUP_HEADER);
    let mut user = UserInfo::default();
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for a in &asked {
        let attrs = a.attributes();
        if let super::authz::Decision::Deny(reason) = authz.authorize(&requestor, &attrs) {
            return Err(Refusal::Forbidden(forbidden(&requestor, &attrs, &reason)));
        }
        match a {
            Asked::User(n) => user.name = n.clone(),
            Asked::ServiceAccount(ns, n) => {
                user.name = format!("{SERVICE_ACCOUNT_PREFIX}{ns}:{n}");
                if !groups_given {
                    user.groups = vec![
                        "system:serviceaccounts".into(),
                        format!("system:serviceaccounts:{ns}"),
                    ];
                }
            }
            Asked::Group(g) => user.groups.push(g.clone()),
            Asked::Extra(k, v) => extra.entry(k.clone()).or_default().push(v.clone()),
            Asked::Uid(u) => user.uid = u.clone(),
        }
    }
    if user.name != ANONYMOUS {
        if !user
            .groups
            .iter()
            .any(|g| g == AUTHENTICATED || g == UNAUTHENTICATED)
        {
            user.groups.push(AUTHENTICATED.into());
        }
    } else if !user.in_group(UNAUTHENTICATED) {
        user.groups.push(UNAUTHENTICATED.into());
    }
    user.extra = extra;
    Ok(user)
}

/// What the headers ask for, in upstream's order (user, groups, extras, uid); an error when
/// groups, extras or a uid come without a user.
fn asked(headers: &HeaderMap) -> Result<Vec<Asked>, String> {
    let text = |v: &http::HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned();
    let mut asked = Vec::new();
    let user = headers.get(USER_HEADER).map(text).unwrap_or_default();
    let has_user = !user.is_empty();
    if has_user {
        asked.push(match split_service_account(&user) {
            Some((ns, name)) => Asked::ServiceAccount(ns.into(), name.into()),
            None => Asked::User(user),
        });
    }
    let mut others = false;
    for g in headers.get_all(GROUP_HEADER) {
        others = true;
        asked.push(Asked::Group(text(g)));
    }
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) {
            others = true;
            asked.push(Asked::Extra(unescape(key), text(value)));
        }
    }
    let uid = headers.get(UID_HEADER).map(text).unwrap_or_default();
    if !uid.is_empty() {
        others = true;
        asked.push(Asked::Uid(uid));
    }
    if others && !has_user {
        let list: Vec<String> = asked.iter().map(Asked::go_string).collect();
        return Err(format!(
            "requested [{}] without impersonating a user",
            list.join(" ")
        ));
    }
    Ok(asked)
}

/// `system:serviceaccount:NS:NAME` as `(NS, NAME)` when NS is a DNS label and NAME a DNS
/// subdomain (upstream's `serviceaccount.SplitUsername`).
pub fn split_service_account(username: &str) -> Option<(&str, &str)> {
    let rest = username.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let mut parts = rest.split(':');
    let (ns, name) = (parts.next()?, parts.next()?);
    if parts.next().is_some() || !is_dns_label(ns) || !is_dns_subdomain(name) {
        return None;
    }
    Some((ns, name))
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// Percent-decoding of an extra's key (upstream's `url.PathUnescape`; the key as is when it
/// does not decode).
fn unescape(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok());
            match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                Some(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                None => return key.to_string(),
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| key.to_string())
}

/// Upstream's error sanitizer: no text that looks like HTML.
fn sanitize(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{Storage, WriteOptions};
    use serde_json::json;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    fn bob() -> UserInfo {
        UserInfo {
            name: "bob".into(),
            groups: vec![AUTHENTICATED.into()],
            ..Default::default()
        }
    }

    /// An authorizer whose store lets bob impersonate the user `jane`, the group `devs`,
    /// the ServiceAccount `ns/sa` and the extra `scopes=view`.
    fn authorizer() -> Authorizer {
        let store = Storage::default();
        let create = |plural: &str, body: serde_json::Value| {
            let res = store
                .resolve("rbac.authorization.k8s.io", "v1", plural)
                .unwrap();
            store
                .create(&res, None, body, &WriteOptions::default())
                .unwrap();
        };
        create(
            "clusterroles",
            json!({"metadata": {"name": "imp"}, "rules": [
                {"verbs": ["impersonate"], "apiGroups": [""], "resources": ["users"], "resourceNames": ["jane"]},
                {"verbs": ["impersonate"], "apiGroups": [""], "resources": ["groups"], "resourceNames": ["devs"]},
                {"verbs": ["impersonate"], "apiGroups": [""], "resources": ["serviceaccounts"], "resourceNames": ["sa"]},
                {"verbs": ["impersonate"], "apiGroups": ["authentication.k8s.io"], "resources": ["userextras/scopes"]},
            ]}),
        );
        create(
            "clusterrolebindings",
            json!({"metadata": {"name": "imp"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "imp"},
            "subjects": [{"kind": "User", "name": "bob"}]}),
        );
        Authorizer::new(store)
    }

    #[test]
    fn impersonated_users_get_their_groups_and_system_authenticated() {
        let authz = authorizer();
        let as_jane = impersonate(
            &headers(&[("impersonate-user", "jane")]),
            bob(),
            &authz,
            "/",
        )
        .unwrap();
        assert_eq!(
            (as_jane.name.as_str(), as_jane.groups.clone()),
            ("jane", vec![AUTHENTICATED.to_string()])
        );
        let with_group = impersonate(
            &headers(&[
                ("impersonate-user", "jane"),
                ("impersonate-group", "devs"),
                ("impersonate-extra-scopes", "view"),
            ]),
            bob(),
            &authz,
            "/",
        )
        .unwrap();
        assert_eq!(
            with_group.groups,
            vec!["devs".to_string(), AUTHENTICATED.to_string()]
        );
        assert_eq!(with_group.extra["scopes"], vec!["view".to_string()]);
        let sa = impersonate(
            &headers(&[("impersonate-user", "system:serviceaccount:ns:sa")]),
            bob(),
            &authz,
            "/",
        )
        .unwrap();
        assert_eq!(sa.name, "system:serviceaccount:ns:sa");
        assert_eq!(
            sa.groups,
            vec![
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                AUTHENTICATED
            ]
        );
        // No impersonation asked: the requestor.
        assert_eq!(
            impersonate(&HeaderMap::new(), bob(), &authz, "/").unwrap(),
            bob()
        );
    }

    #[test]
    fn each_thing_asked_is_authorized_with_upstreams_refusal() {
        let authz = authorizer();
        let refused =
            |pairs: &[(&str, &str)]| match impersonate(&headers(pairs), bob(), &authz, "/") {
                Err(Refusal::Forbidden(e)) => (e.code, e.message),
                other => panic!("{other:?}"),
            };
        assert_eq!(
            refused(&[("impersonate-user", "root")]),
            (403, r#"users "root" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope"#.into())
        );
        assert_eq!(
            refused(&[("impersonate-user", "jane"), ("impersonate-group", "system:masters")]),
            (403, r#"groups "system:masters" is forbidden: User "bob" cannot impersonate resource "groups" in API group "" at the cluster scope"#.into())
        );
        assert_eq!(
            refused(&[("impersonate-user", "system:serviceaccount:ns:other")]),
            (403, r#"serviceaccounts "other" is forbidden: User "bob" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns""#.into())
        );
        assert_eq!(
            refused(&[("impersonate-user", "jane"), ("impersonate-uid", "1234")]),
            (403, r#"uids.authentication.k8s.io "1234" is forbidden: User "bob" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope"#.into())
        );
        // The admin may impersonate anyone.
        let admin = impersonate(
            &headers(&[("impersonate-user", "root")]),
            UserInfo::admin(),
            &authz,
            "/",
        )
        .unwrap();
        assert_eq!(admin.name, "root");
    }

    #[test]
    fn groups_without_a_user_are_upstreams_500() {
        let authz = authorizer();
        match impersonate(
            &headers(&[("impersonate-group", "devs")]),
            bob(),
            &authz,
            "/api?x=<b>",
        ) {
            Err(Refusal::Malformed(body)) => assert_eq!(
                body,
                "Internal Server Error: \"/api?x=&lt;b&gt;\": requested [{Group  devs    }] without impersonating a user"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn service_account_names_split_as_upstream() {
        assert_eq!(
            split_service_account("system:serviceaccount:ns:sa"),
            Some(("ns", "sa"))
        );
        assert_eq!(
            split_service_account("system:serviceaccount:ns:a.b"),
            Some(("ns", "a.b"))
        );
        for bad in [
            "system:serviceaccount:ns",
            "system:serviceaccount:ns:sa:x",
            "system:serviceaccount::sa",
            "system:serviceaccount:NS:sa",
            "bob",
        ] {
            assert_eq!(split_service_account(bad), None, "{bad}");
        }
        assert_eq!(unescape("a%2Fb"), "a/b");
        assert_eq!(unescape("bad%zz"), "bad%zz");
    }
}
