//! Authorization: whether a user may do what a request asks.
//!
//! A request is described by its [`RequestAttributes`], derived as upstream's
//! `RequestInfoFactory` derives them: a resource request (`/api/v1/...`, `/apis/G/V/...` naming
//! at least a resource) has a verb (`get`, `list`, `watch`, `create`, `update`, `patch`,
//! `delete`, `deletecollection`), an API group, a resource, maybe a subresource, a namespace and
//! a name; any other request is a non-resource request of its path, its verb the lowercased
//! method. A refusal is upstream's 403 `Status` ([`forbidden`]).

use http::Method;

use super::user::{MASTERS, UserInfo};
use crate::error::ApiError;
use crate::http::request::{ResourcePath, Route};

/// What a request asks to do, as an authorizer sees it (upstream's `authorizer.Attributes`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestAttributes {
    /// The verb (`get`, `list`, ... for resources; the lowercased method otherwise).
    pub verb: String,
    /// Whether the request is for a resource (otherwise for `path`).
    pub resource_request: bool,
    /// The request path (non-resource requests are authorized by it).
    pub path: String,
    /// The API group (`""` for core).
    pub api_group: String,
    /// The API version.
    pub api_version: String,
    /// The resource (plural).
    pub resource: String,
    /// The subresource, `""` for none.
    pub subresource: String,
    /// The namespace, `""` for none.
    pub namespace: String,
    /// The object's name, `""` for none.
    pub name: String,
}

impl RequestAttributes {
    /// The attributes of a request with this method, path, route and `watch` query parameter.
    pub fn of(method: &Method, path: &str, route: &Route, watch: bool) -> RequestAttributes {
        let Route::Resource(res) = route else {
            return RequestAttributes {
                verb: method.as_str().to_ascii_lowercase(),
                path: path.to_string(),
                ..Default::default()
            };
        };
        RequestAttributes {
            verb: resource_verb(method, res, watch).to_string(),
            resource_request: true,
            path: path.to_string(),
            api_group: res.group.clone(),
            api_version: res.version.clone(),
            resource: res.plural.clone(),
            subresource: res.subresource.clone().unwrap_or_default(),
            namespace: res.namespace.clone().unwrap_or_default(),
            name: res.name.clone().unwrap_or_default(),
        }
    }

    /// `resource.group` (`resource` in the core group), as a forbidden message's subject.
    pub fn group_resource(&self) -> String {
        if self.api_group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.api_group)
        }
    }
}

fn resource_verb(method: &Method, res: &ResourcePath, watch: bool) -> &'static str {
    let named = res.name.is_some();
    match *method {
        Method::GET | Method::HEAD if res.legacy_watch || watch => "watch",
        Method::GET | Method::HEAD if named => "get",
        Method::GET | Method::HEAD => "list",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if named => "delete",
        Method::DELETE => "deletecollection",
        _ => "",
    }
}

/// An authorizer's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Allowed; the reason says which rule allowed it.
    Allow(String),
    /// Refused, with a reason (may be empty).
    Deny(String),
}

impl Decision {
    /// Whether the request is allowed.
    pub fn allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }
}

/// Decides requests.
#[derive(Debug, Default)]
pub struct Authorizer {}

impl Authorizer {
    /// An authorizer.
    pub fn new() -> Authorizer {
        Authorizer {}
    }

    /// Whether `user` may do what `attrs` describe. `system:masters` may do everything, as
    /// upstream's privileged-group authorizer lets it; anyone may read the health endpoints
    /// and `/version` (upstream's `system:public-info-viewer`); any authenticated user may ask
    /// who they are (`create selfsubjectreviews`, from upstream's `system:basic-user`).
    pub fn authorize(&self, user: &UserInfo, attrs: &RequestAttributes) -> Decision {
        if user.in_group(MASTERS) {
            return Decision::Allow(String::new());
        }
        if user.in_group(super::user::AUTHENTICATED)
            && attrs.resource_request
            && attrs.verb == "create"
            && attrs.api_group == "authentication.k8s.io"
            && attrs.resource == "selfsubjectreviews"
        {
            return Decision::Allow(String::new());
        }
        if !attrs.resource_request && attrs.verb == "get" && is_public_info(&attrs.path) {
            return Decision::Allow(String::new());
        }
        Decision::Deny(String::new())
    }
}

/// The paths `system:public-info-viewer` opens to everyone.
fn is_public_info(path: &str) -> bool {
    ["/healthz", "/readyz", "/livez"]
        .iter()
        .any(|p| path == *p || path.strip_prefix(p).is_some_and(|r| r.starts_with('/')))
        || path == "/version"
        || path == "/version/"
}

/// The 403 `Status` of a refused request, worded as upstream's `forbiddenMessage` and
/// `NewForbidden` word it; `reason` is the authorizer's, appended after `": "` when not empty.
pub fn forbidden(user: &UserInfo, attrs: &RequestAttributes, reason: &str) -> ApiError {
    let name = &user.name;
    let verb = &attrs.verb;
    let mut why = if !attrs.resource_request {
        format!("User {name:?} cannot {verb} path {:?}", attrs.path)
    } else {
        let mut resource = attrs.resource.clone();
        if !attrs.subresource.is_empty() {
            resource = format!("{resource}/{}", attrs.subresource);
        }
        let group = &attrs.api_group;
        if attrs.namespace.is_empty() {
            format!(
                "User {name:?} cannot {verb} resource {resource:?} in API group {group:?} at the cluster scope"
            )
        } else {
            format!(
                "User {name:?} cannot {verb} resource {resource:?} in API group {group:?} in the namespace {:?}",
                attrs.namespace
            )
        }
    };
    if !reason.is_empty() {
        why = format!("{why}: {reason}");
    }
    if !attrs.resource_request {
        return ApiError::new(403, "Forbidden", format!("forbidden: {why}"))
            .with_details(serde_json::json!({}));
    }
    let subject = attrs.group_resource();
    let message = if attrs.name.is_empty() {
        format!("{subject} is forbidden: {why}")
    } else {
        format!("{subject} {:?} is forbidden: {why}", attrs.name)
    };
    let mut details = serde_json::json!({ "kind": attrs.resource });
    if !attrs.name.is_empty() {
        details["name"] = attrs.name.clone().into();
    }
    if !attrs.api_group.is_empty() {
        details["group"] = attrs.api_group.clone().into();
    }
    ApiError::new(403, "Forbidden", message).with_details(details)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::request::parse_path;

    fn attrs(method: Method, path: &str, watch: bool) -> RequestAttributes {
        RequestAttributes::of(&method, path, &parse_path(path), watch)
    }

    #[test]
    fn verbs_follow_upstream_request_info() {
        let cases = [
            (
                Method::GET,
                "/api/v1/namespaces/default/pods",
                false,
                "list",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/default/pods",
                true,
                "watch",
            ),
            (
                Method::GET,
                "/api/v1/watch/namespaces/default/pods",
                false,
                "watch",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/default/pods/p",
                false,
                "get",
            ),
            (
                Method::POST,
                "/api/v1/namespaces/default/pods",
                false,
                "create",
            ),
            (
                Method::PUT,
                "/api/v1/namespaces/default/pods/p/status",
                false,
                "update",
            ),
            (
                Method::PATCH,
                "/apis/apps/v1/namespaces/a/deployments/d/scale",
                false,
                "patch",
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/default/pods/p",
                false,
                "delete",
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/default/pods",
                false,
                "deletecollection",
            ),
            (Method::GET, "/api", false, "get"),
            (Method::POST, "/healthz", false, "post"),
        ];
        for (method, path, watch, verb) in cases {
            assert_eq!(
                attrs(method.clone(), path, watch).verb,
                verb,
                "{method} {path}"
            );
        }
        let a = attrs(
            Method::PATCH,
            "/apis/apps/v1/namespaces/a/deployments/d/scale",
            false,
        );
        assert_eq!(
            (
                a.api_group.as_str(),
                a.resource.as_str(),
                a.subresource.as_str()
            ),
            ("apps", "deployments", "scale")
        );
        assert!(!attrs(Method::GET, "/apis/apps/v1", false).resource_request);
    }

    #[test]
    fn forbidden_messages_are_upstreams() {
        let bob = UserInfo {
            name: "bob".into(),
            ..Default::default()
        };
        let cases = [
            (
                attrs(Method::GET, "/api/v1/namespaces/default/pods", false),
                r#"pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "default""#,
            ),
            (
                attrs(
                    Method::GET,
                    "/apis/apps/v1/namespaces/a/deployments/d/scale",
                    false,
                ),
                r#"deployments.apps "d" is forbidden: User "bob" cannot get resource "deployments/scale" in API group "apps" in the namespace "a""#,
            ),
            (
                attrs(Method::GET, "/api/v1/nodes", false),
                r#"nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at the cluster scope"#,
            ),
            (
                attrs(Method::GET, "/api", false),
                r#"forbidden: User "bob" cannot get path "/api""#,
            ),
        ];
        for (a, message) in cases {
            let err = forbidden(&bob, &a, "");
            assert_eq!((err.code, err.message.as_str()), (403, message));
        }
    }

    #[test]
    fn masters_may_everything_and_everyone_reads_public_info() {
        let authz = Authorizer::new();
        let list = attrs(Method::GET, "/api/v1/pods", false);
        assert!(authz.authorize(&UserInfo::admin(), &list).allowed());
        assert!(!authz.authorize(&UserInfo::anonymous(), &list).allowed());
        for path in ["/healthz", "/readyz/ping", "/livez", "/version"] {
            let a = attrs(Method::GET, path, false);
            assert!(
                authz.authorize(&UserInfo::anonymous(), &a).allowed(),
                "{path}"
            );
        }
        let a = attrs(Method::GET, "/healthzz", false);
        assert!(!authz.authorize(&UserInfo::anonymous(), &a).allowed());
    }

    #[test]
    fn authenticated_users_may_ask_who_they_are() {
        let authz = Authorizer::new();
        let jane = UserInfo {
            name: "jane".into(),
            groups: vec![crate::auth::user::AUTHENTICATED.into()],
            ..Default::default()
        };
        let whoami = attrs(
            Method::POST,
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            false,
        );
        assert!(authz.authorize(&jane, &whoami).allowed());
        assert!(!authz.authorize(&UserInfo::anonymous(), &whoami).allowed());
        let token_review = attrs(
            Method::POST,
            "/apis/authentication.k8s.io/v1/tokenreviews",
            false,
        );
        assert!(!authz.authorize(&jane, &token_review).allowed());
        let list = attrs(Method::GET, "/api/v1/pods", false);
        assert!(!authz.authorize(&jane, &list).allowed());
    }
}
