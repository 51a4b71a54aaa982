//! Admission: what a kube-apiserver asks of a write after it is decoded, defaulted and
//! validated, and before it is stored. Each admission plugin lives in its own file under
//! `admission/`:
//!
//! - `lifecycle`: NamespaceLifecycle: no content created in a namespace that does not exist
//!   (404) or is being terminated (403), and the immortal namespaces never deleted (403).
//! - `policy`: ValidatingAdmissionPolicy and its Binding (`admissionregistration.k8s.io/v1`),
//!   the CEL policies upstream's `plugin/policy/validating` enforces: `matchConstraints` and
//!   the binding's `matchResources`, `matchConditions`, `paramKind`/`paramRef`, `variables`,
//!   `validations` with `Deny`, `Warn` and `Audit` actions, and `failurePolicy`.
//! - `quota`: ResourceQuota, as upstream's plugin of that name: creates (and updates of
//!   Services and claims) measured against the namespace's quotas, refused past their
//!   `status.hard`, and charged to their `status.used` in the same write.
//! - `webhook`: admission webhooks (`MutatingWebhookConfiguration`,
//!   `ValidatingWebhookConfiguration`), as upstream's `plugin/webhook` dispatches them: rules,
//!   selectors, `matchPolicy`, `matchConditions` (the same CEL as policies), `sideEffects`
//!   with dryRun, `timeoutSeconds`, `failurePolicy`, JSON patches and `reinvocationPolicy`,
//!   denials and failures worded as upstream's. It decides and words; the calls themselves go
//!   through a [`webhook::Caller`] the storage layer passes (`crate::webhook_client`).
//!
//! # Contract with storage
//! This module never imports `storage`: the storage layer calls it inside a write, once the
//! object is final, with the request described by [`Attributes`] and the store seen through
//! [`Lookup`] (namespaces, parameter objects, policies). An answer is either the warnings the
//! write carries to its response (`Warning` headers) or the [`ApiError`](crate::error::ApiError) that refuses it. The
//! storage layer keeps a [`policy::Cache`] so that a policy's CEL is compiled once per
//! resourceVersion, not once per write.
//!
//! The in-process plugins ([`Plugin`]s: NamespaceLifecycle, ValidatingAdmissionPolicy, then
//! ResourceQuota) run in [`chain`]'s order synchronously inside the write, under the store's lock. Webhooks
//! cannot (a call is a network round trip): when a webhook configuration is stored, the HTTP layer
//! takes the storage's async write path (`storage/hooked.rs`), which computes the write as a
//! dry run, calls [`webhook::mutate`] and [`webhook::validate`] outside the lock with a
//! snapshot of the store as their [`Lookup`], and commits the final object with the
//! resourceVersion it read as precondition (retried on conflict). Mutating webhooks thus run
//! after defaulting and before validation is repeated on their result, validating ones after
//! it, just before the object is stored, as upstream orders them.
//!
//! Writes to the admission configuration itself (policies, bindings, webhook configurations)
//! are never subject to admission, as upstream exempts them, so that no policy can lock the
//! server's configuration.

pub(crate) mod chain;
pub(crate) mod lifecycle;
pub(crate) mod policy;
pub(crate) mod quota;
pub(crate) mod webhook;

use std::sync::{Arc, LazyLock};

use serde_json::Value;

use crate::error::ApiError;
use crate::user::UserInfo;

/// The user of writes that name none (the server's own, and direct storage use): the admin.
pub(crate) static ADMIN: LazyLock<UserInfo> = LazyLock::new(UserInfo::admin);

/// The operation of a request, as admission names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operation {
    /// A create (POST, or an apply that creates).
    Create,
    /// An update (PUT, PATCH, apply, of the object or a subresource).
    Update,
    /// A delete.
    Delete,
}

impl Operation {
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// A request as admission sees it (upstream's `admission.Attributes`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Attributes<'a> {
    /// What the request does.
    pub(crate) operation: Operation,
    /// The resource's API group (`""` for the core group).
    pub(crate) group: &'a str,
    /// The version the request speaks.
    pub(crate) version: &'a str,
    /// The kind of the object.
    pub(crate) kind: &'a str,
    /// The resource (plural).
    pub(crate) resource: &'a str,
    /// The subresource written, `""` for the object itself.
    pub(crate) subresource: &'a str,
    /// Whether the resource is namespaced.
    pub(crate) namespaced: bool,
    /// The object's namespace (`""` when cluster-scoped).
    pub(crate) namespace: &'a str,
    /// The object's name.
    pub(crate) name: &'a str,
    /// The object as it would be stored (`None` on delete).
    pub(crate) object: Option<&'a Value>,
    /// The stored object (`None` on create).
    pub(crate) old_object: Option<&'a Value>,
    /// `dryRun=All`.
    pub(crate) dry_run: bool,
    /// Who makes the request (`userInfo`).
    pub(crate) user: &'a UserInfo,
}

impl Attributes<'_> {
    /// Whether the request is about the resource `gr` names.
    pub(crate) fn is(&self, gr: crate::resource::GroupResource<'_>) -> bool {
        crate::resource::GroupResource {
            group: self.group,
            resource: self.resource,
        } == gr
    }

    /// `resource.group`, or `resource` for the core group, as errors name it.
    pub(crate) fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    /// Whether the request writes the admission configuration itself, which upstream exempts
    /// from admission (`IsExemptAdmissionConfigurationResource`).
    pub(crate) fn is_exempt(&self) -> bool {
        self.group == "admissionregistration.k8s.io"
            && matches!(
                self.resource,
                "validatingadmissionpolicies"
                    | "validatingadmissionpolicybindings"
                    | "mutatingadmissionpolicies"
                    | "mutatingadmissionpolicybindings"
                    | "validatingwebhookconfigurations"
                    | "mutatingwebhookconfigurations"
            )
    }
}

/// An admission plugin run inside the write (upstream's `admission.Interface` with its
/// `ValidationInterface`): it says which operations it handles, and validates a request once
/// its object is final, answering the warnings the write carries or the error that refuses
/// it. The plugins run in [`chain`]'s fixed order.
pub(crate) trait Plugin {
    /// Whether the plugin acts on `operation` (upstream's `Handles`).
    fn handles(&self, operation: Operation) -> bool;
    /// The validating phase: the request's warnings, or the error that refuses it.
    fn validate(&self, attrs: &Attributes<'_>, store: &dyn Lookup)
    -> Result<Vec<String>, ApiError>;
}

/// The store, as admission reads it.
pub(crate) trait Lookup {
    /// The namespace named `name`.
    fn namespace(&self, name: &str) -> Option<Arc<Value>>;
    /// The ValidatingAdmissionPolicy named `name`.
    fn policy(&self, name: &str) -> Option<Arc<Value>>;
    /// Whether the resource serving `api_version`/`kind` is namespaced; `None` when no
    /// resource serves that kind.
    fn kind_scope(&self, api_version: &str, kind: &str) -> Option<bool>;
    /// The object of that kind at `namespace`/`name` (`namespace` `""` for cluster-scoped).
    fn get(&self, api_version: &str, kind: &str, namespace: &str, name: &str)
    -> Option<Arc<Value>>;
    /// The objects of that kind in `namespace` (`None`: in every namespace, or
    /// cluster-scoped).
    fn list(&self, api_version: &str, kind: &str, namespace: Option<&str>) -> Vec<Arc<Value>>;
    /// The other served versions of `resource` in `group` (`(version, kind)`), whose objects
    /// [`Lookup::convert`] converts: what `matchPolicy: Equivalent` matches. None by default.
    fn equivalents(&self, group: &str, resource: &str) -> Vec<(String, String)> {
        let _ = (group, resource);
        Vec::new()
    }
    /// `obj` at `api_version` (an equivalent version of its resource).
    fn convert(&self, obj: &Value, api_version: &str) -> Value {
        let mut obj = obj.clone();
        obj["apiVersion"] = Value::from(api_version);
        obj
    }
}
