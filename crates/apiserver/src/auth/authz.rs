//! Authorization: whether a user may do what a request asks.
//!
//! A request is described by its [`RequestAttributes`], derived as upstream's
//! `RequestInfoFactory` derives them: a resource request (`/api/v1/...`, `/apis/G/V/...` naming
//! at least a resource) has a verb (`get`, `list`, `watch`, `create`, `update`, `patch`,
//! `delete`, `deletecollection`), an API group, a resource, maybe a subresource, a namespace and
//! a name (for a `list` or `watch`, the name a `metadata.name=` field selector asks for); any
//! other request is a non-resource request of its path, its verb the lowercased method.
//!
//! The [`Authorizer`] answers as kube-apiserver's chain does: members of `system:masters` are
//! allowed everything before anything is looked up; everyone else is judged by RBAC
//! ([`super::rbac`]) over the stored roles and bindings, read into an index that is rebuilt only
//! when one of them changed (the store's last change to the four RBAC resources is compared on
//! each request: one lock and four lookups). A refusal is upstream's 403 `Status`
//! ([`forbidden`]).

use std::sync::Arc;

use parking_lot::RwLock;

pub use super::attributes::{RequestAttributes, ResourceTarget};
use super::rbac::{Policy, Rule};
use super::recorder::AccessRecorder;
use super::user::{MASTERS, UserInfo};
use crate::error::ApiError;
use crate::storage::Storage;

/// An authorizer's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Allowed; the reason says which rule allowed it (`RBAC: allowed by ...`; empty for
    /// `system:masters`).
    Allow(String),
    /// Not allowed, with a reason (may be empty). Upstream's RBAC never denies outright: this
    /// is its "no opinion", so access reviews answer `allowed: false` without `denied`.
    Deny(String),
}

impl Decision {
    /// Whether the request is allowed.
    pub fn allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }
}

/// The storage keys of the RBAC resources, in the order [`Policy::new`] takes them.
const RBAC_KEYS: [&str; 4] = [
    "clusterroles.rbac.authorization.k8s.io",
    "roles.rbac.authorization.k8s.io",
    "clusterrolebindings.rbac.authorization.k8s.io",
    "rolebindings.rbac.authorization.k8s.io",
];

/// Decides requests: `system:masters` first, then RBAC over the store's roles and bindings.
#[derive(Debug)]
pub struct Authorizer {
    storage: Storage,
    /// The index and the resourceVersion of the RBAC change it was built at.
    policy: RwLock<Option<(u64, Arc<Policy>)>>,
    /// What requests were allowed, per user, when recording.
    recorder: AccessRecorder,
}

impl Authorizer {
    /// An authorizer reading roles and bindings from `storage`.
    pub fn new(storage: Storage) -> Authorizer {
        Authorizer {
            storage,
            policy: RwLock::new(None),
            recorder: AccessRecorder::default(),
        }
    }

    /// The current RBAC index: the one kept, unless a role or binding changed since it was
    /// built.
    pub fn policy(&self) -> Arc<Policy> {
        let since = self.policy.read().as_ref().map(|(rv, _)| *rv);
        match self.storage.objects_changed_since(&RBAC_KEYS, since) {
            None => match &*self.policy.read() {
                Some((_, p)) => p.clone(),
                None => Arc::default(),
            },
            Some((rv, objects)) => {
                let policy = Arc::new(Policy::new(
                    &objects[0],
                    &objects[1],
                    &objects[2],
                    &objects[3],
                ));
                let mut kept = self.policy.write();
                if kept.as_ref().is_none_or(|(at, _)| *at < rv) {
                    *kept = Some((rv, policy.clone()));
                }
                policy
            }
        }
    }

    /// Whether `user` may do what `attrs` describe. `system:masters` may do everything, as
    /// upstream's privileged-group authorizer lets it (reason empty); RBAC answers for
    /// everyone else.
    pub fn authorize(&self, user: &UserInfo, attrs: &RequestAttributes) -> Decision {
        if user.in_group(MASTERS) {
            return Decision::Allow(String::new());
        }
        match self.policy().authorize(user, attrs) {
            Ok(reason) => Decision::Allow(reason),
            Err(reason) => Decision::Deny(reason),
        }
    }

    /// [`authorize`](Self::authorize) for a request the server answers: an allowed one is
    /// recorded when the [`recorder`](Self::recorder) is started, and so is a refused one.
    pub fn authorize_request(&self, user: &UserInfo, attrs: &RequestAttributes) -> Decision {
        let decision = self.authorize(user, attrs);
        if decision.allowed() {
            self.recorder.record(user, attrs);
        } else {
            self.recorder.record_refused(user, attrs);
        }
        decision
    }

    /// The record of allowed requests per user (empty until started).
    pub fn recorder(&self) -> &AccessRecorder {
        &self.recorder
    }

    /// The rules `user` has in `namespace` (what a `SelfSubjectRulesReview` lists: RBAC's,
    /// as upstream, where `system:masters` has its rules through `cluster-admin`'s binding),
    /// and the resolution errors as one message.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<Rule>, String) {
        self.policy().rules_for(user, namespace)
    }
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
    use crate::http::{parse_path, request_attributes};
    use http::Method;

    fn attrs(method: Method, path: &str, watch: bool) -> RequestAttributes {
        let uri: http::Uri = if watch {
            format!("{path}?watch=true")
        } else {
            path.to_string()
        }
        .parse()
        .unwrap();
        request_attributes(&method, &uri, &parse_path(path))
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
    fn a_name_field_selector_names_a_list_or_watch() {
        let uri: http::Uri =
            "/api/v1/namespaces/a/configmaps?fieldSelector=metadata.name%3Dcm&watch=1"
                .parse()
                .unwrap();
        let a = request_attributes(&Method::GET, &uri, &parse_path(uri.path()));
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("watch", "cm"));
        let uri: http::Uri = "/api/v1/namespaces/a/configmaps?fieldSelector=metadata.name!%3Dcm"
            .parse()
            .unwrap();
        let a = request_attributes(&Method::GET, &uri, &parse_path(uri.path()));
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("list", ""));
    }

    #[test]
    fn a_namespace_is_in_itself() {
        let a = attrs(Method::GET, "/api/v1/namespaces/team", false);
        assert_eq!((a.namespace.as_str(), a.name.as_str()), ("team", "team"));
        let a = attrs(Method::PUT, "/api/v1/namespaces/team/finalize", false);
        assert_eq!(
            (a.namespace.as_str(), a.subresource.as_str()),
            ("team", "finalize")
        );
        assert_eq!(
            attrs(Method::GET, "/api/v1/namespaces", false).namespace,
            ""
        );
        assert_eq!(
            forbidden(&UserInfo::anonymous(), &a, "").message,
            r#"namespaces "team" is forbidden: User "system:anonymous" cannot update resource "namespaces/finalize" in API group "" in the namespace "team""#
        );
    }

    #[test]
    fn masters_may_everything_and_rbac_answers_the_rest() {
        let store = Storage::default();
        crate::auth::bootstrap::install(&store);
        let authz = Authorizer::new(store.clone());
        let list = attrs(Method::GET, "/api/v1/pods", false);
        assert_eq!(
            authz.authorize(&UserInfo::admin(), &list),
            Decision::Allow(String::new())
        );
        assert!(!authz.authorize(&UserInfo::anonymous(), &list).allowed());
        for path in ["/healthz", "/livez", "/readyz", "/version"] {
            let a = attrs(Method::GET, path, false);
            assert_eq!(
                authz.authorize(&UserInfo::anonymous(), &a),
                Decision::Allow(r#"RBAC: allowed by ClusterRoleBinding "system:public-info-viewer" of ClusterRole "system:public-info-viewer" to Group "system:unauthenticated""#.into()),
                "{path}"
            );
        }
        for path in ["/healthzz", "/readyz/ping", "/api"] {
            let a = attrs(Method::GET, path, false);
            assert!(
                !authz.authorize(&UserInfo::anonymous(), &a).allowed(),
                "{path}"
            );
        }
        // A binding created later is seen by the next request (the index is rebuilt).
        let bob = UserInfo {
            name: "bob".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        };
        assert!(
            authz
                .authorize(&bob, &attrs(Method::GET, "/api", false))
                .allowed()
        );
        assert!(!authz.authorize(&bob, &list).allowed());
        let res = store
            .resolve("rbac.authorization.k8s.io", "v1", "clusterrolebindings")
            .unwrap();
        let body = serde_json::json!({"metadata": {"name": "bob-view"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "bob"}]});
        store.create(&res, None, body, &Default::default()).unwrap();
        assert_eq!(
            authz.authorize(&bob, &list),
            Decision::Allow(r#"RBAC: allowed by ClusterRoleBinding "bob-view" of ClusterRole "view" to User "bob""#.into())
        );
        let kept = authz.policy();
        assert!(
            Arc::ptr_eq(&kept, &authz.policy()),
            "unchanged RBAC: the same index"
        );
    }
}
