//! What each identity was allowed to do: an opt-in record of the authorized resource requests,
//! per user, as (verb, API group, resource, subresource, namespace) tuples.
//!
//! The server's [`Authorizer`](super::authz::Authorizer) keeps one [`AccessRecorder`]; it
//! records nothing until [`AccessRecorder::start`]. A test environment starts it, runs an
//! operator as its ServiceAccount and reads back [`AccessRecorder::recorded`]: exactly the
//! verbs on the resources the operator's watches and client calls used, what its minimal RBAC
//! role must grant. Each access is recorded once: a set, not a log. Refused requests are kept
//! apart ([`AccessRecorder::refused`]): what a role lacks, named when a test fails. Non-resource requests (discovery, `/version`)
//! are not recorded: every authenticated user may make them (`system:discovery`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use super::attributes::RequestAttributes;
use super::user::UserInfo;

/// One kind of access a user was allowed: a verb on a resource (or its subresource) in a
/// namespace, or across namespaces / at the cluster scope when `namespace` is empty.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Access {
    /// The verb: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection` (or another a request's attributes carry, such as `impersonate`).
    pub verb: String,
    /// The API group, `""` for core.
    pub api_group: String,
    /// The resource (plural).
    pub resource: String,
    /// The subresource, `""` for none.
    pub subresource: String,
    /// The namespace, `""` for a cluster-scoped resource or a request across namespaces.
    pub namespace: String,
}

impl Access {
    /// `resource` or `resource/subresource`, as RBAC rules name it.
    pub fn rbac_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

impl std::fmt::Display for Access {
    /// `verb resource[/subresource] [in API group "G"] in namespace N` (or `at the cluster
    /// scope`), the words of the API server's 403.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.verb, self.rbac_resource())?;
        if !self.api_group.is_empty() {
            write!(f, " in API group {:?}", self.api_group)?;
        }
        if self.namespace.is_empty() {
            write!(f, " at the cluster scope")
        } else {
            write!(f, " in namespace {}", self.namespace)
        }
    }
}

/// The authorized accesses of every user, recorded while started.
#[derive(Debug, Default)]
pub struct AccessRecorder {
    recording: AtomicBool,
    by_user: Mutex<BTreeMap<String, BTreeSet<Access>>>,
    refused_by_user: Mutex<BTreeMap<String, BTreeSet<Access>>>,
}

impl AccessRecorder {
    /// Starts recording (what was recorded before is kept).
    pub fn start(&self) {
        self.recording.store(true, Ordering::Release);
    }

    /// Stops recording; what was recorded is kept.
    pub fn stop(&self) {
        self.recording.store(false, Ordering::Release);
    }

    /// Whether requests are being recorded.
    pub fn is_recording(&self) -> bool {
        self.recording.load(Ordering::Acquire)
    }

    /// Forgets everything recorded.
    pub fn clear(&self) {
        self.by_user.lock().clear();
        self.refused_by_user.lock().clear();
    }

    /// Records that `user` was allowed what `attrs` describe, when recording and a resource
    /// request.
    pub fn record(&self, user: &UserInfo, attrs: &RequestAttributes) {
        self.insert(&self.by_user, user, attrs);
    }

    /// Records that `user` was refused what `attrs` describe, when recording and a resource
    /// request.
    pub fn record_refused(&self, user: &UserInfo, attrs: &RequestAttributes) {
        self.insert(&self.refused_by_user, user, attrs);
    }

    fn insert(
        &self,
        into: &Mutex<BTreeMap<String, BTreeSet<Access>>>,
        user: &UserInfo,
        attrs: &RequestAttributes,
    ) {
        if !self.is_recording() || !attrs.resource_request {
            return;
        }
        let access = Access {
            verb: attrs.verb.clone(),
            api_group: attrs.api_group.clone(),
            resource: attrs.resource.clone(),
            subresource: attrs.subresource.clone(),
            namespace: attrs.namespace.clone(),
        };
        into.lock()
            .entry(user.name.clone())
            .or_default()
            .insert(access);
    }

    /// What the user named `user` was refused, in order.
    pub fn refused(&self, user: &str) -> BTreeSet<Access> {
        self.refused_by_user
            .lock()
            .get(user)
            .cloned()
            .unwrap_or_default()
    }

    /// What the user named `user` (`system:serviceaccount:NS:NAME` for a ServiceAccount) was
    /// allowed, in order.
    pub fn recorded(&self, user: &str) -> BTreeSet<Access> {
        self.by_user.lock().get(user).cloned().unwrap_or_default()
    }

    /// The users something was recorded for.
    pub fn users(&self) -> Vec<String> {
        self.by_user.lock().keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn user(name: &str) -> UserInfo {
        UserInfo {
            name: name.into(),
            ..Default::default()
        }
    }

    fn attrs(verb: &str, resource: &str, subresource: &str, namespace: &str) -> RequestAttributes {
        RequestAttributes {
            verb: verb.into(),
            resource_request: true,
            resource: resource.into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            ..Default::default()
        }
    }

    #[test]
    fn records_only_while_started_once_per_access_per_user() {
        let recorder = AccessRecorder::default();
        let op = user("system:serviceaccount:ns:op");
        recorder.record(&op, &attrs("get", "pods", "", "a"));
        assert!(recorder.users().is_empty(), "not started");
        recorder.start();
        recorder.record(&op, &attrs("list", "configmaps", "", ""));
        recorder.record(&op, &attrs("list", "configmaps", "", ""));
        recorder.record(&op, &attrs("update", "memos", "status", "a"));
        recorder.record(&user("other"), &attrs("delete", "pods", "", "b"));
        recorder.record(&op, &RequestAttributes::non_resource(&Method::GET, "/api"));
        recorder.record_refused(&op, &attrs("delete", "memos", "", "a"));
        recorder.stop();
        recorder.record(&op, &attrs("delete", "configmaps", "", "a"));
        let got: Vec<(String, String)> = recorder
            .recorded("system:serviceaccount:ns:op")
            .into_iter()
            .map(|a| (a.verb.clone(), a.rbac_resource()))
            .collect();
        assert_eq!(
            got,
            [
                ("list".to_string(), "configmaps".to_string()),
                ("update".to_string(), "memos/status".to_string())
            ]
        );
        assert_eq!(recorder.users(), ["other", "system:serviceaccount:ns:op"]);
        let refused = recorder.refused("system:serviceaccount:ns:op");
        assert_eq!(refused.len(), 1);
        assert_eq!(
            refused.first().unwrap().to_string(),
            "delete memos in namespace a"
        );
        assert_eq!(recorder.recorded("system:serviceaccount:ns:op").len(), 2);
        recorder.clear();
        assert!(recorder.recorded("other").is_empty());
    }
}
