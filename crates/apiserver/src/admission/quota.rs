//! ResourceQuota, as upstream's `ResourceQuota` admission plugin
//! (`k8s.io/apiserver/pkg/admission/plugin/resourcequota`) enforces quotas: a create (or an
//! update of a Service or a claim, whose usage can grow) in a namespace with ResourceQuotas
//! is measured ([`crate::quota`]) against each quota that applies to it, by the quota's
//! `status.hard` and scopes, and refused with 403 `Forbidden` when
//! - a pod's container does not name a cpu or memory request or limit the quota limits
//!   (`failed quota: NAME: must specify cpu for: c1; memory for: c1,c2`);
//! - the quota's `status.used` lacks one of its `status.hard` resources the object uses
//!   (`status unknown for quota: NAME, resources: pods`): no controller measured it yet;
//! - the usage would go past `status.hard`
//!   (`exceeded quota: NAME, requested: pods=1, used: pods=2, limited: pods=2`).
//!
//! Admitted, the write's usage is added to the `status.used` of each quota it applies to:
//! the plugin records the new statuses ([`ResourceQuota::charges`]) and the storage layer
//! writes them in the same locked write that stores the object, so two writes can never
//! both take the last unit of a quota, and the status write cannot wait on the write being
//! admitted. A dry run is measured and refused alike, and charges nothing.
//!
//! Like upstream, the plugin ignores subresources, cluster-scoped objects, deletes (a quota
//! controller gives usage back), and quotas whose `status.hard` is empty: on a server with no
//! quota controller (Go envtest's kube-apiserver alone) a quota's status stays empty and the
//! quota limits nothing.

use std::cell::RefCell;

use serde_json::{Value, json};

use super::{Attributes, Lookup, Operation, Plugin};
use crate::error::ApiError;
use crate::quota::{self, ResourceList};

/// The ResourceQuota plugin of one request.
#[derive(Default)]
pub(crate) struct ResourceQuota {
    charges: RefCell<Vec<Value>>,
}

impl ResourceQuota {
    /// The quotas to store once the write is (each with its new `status.used`).
    pub(crate) fn charges(self) -> Vec<Value> {
        self.charges.into_inner()
    }
}

/// `metadata.<field>` of an object, `""` when unset.
fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The 403 refusing the request, worded as `admission.NewForbidden` words it.
fn forbidden(attrs: &Attributes<'_>, why: String) -> ApiError {
    let mut details = json!({"name": attrs.name, "kind": attrs.resource});
    if !attrs.group.is_empty() {
        details["group"] = Value::from(attrs.group);
    }
    ApiError::new(
        403,
        "Forbidden",
        format!(
            "{} \"{}\" is forbidden: {why}",
            attrs.group_resource(),
            attrs.name
        ),
    )
    .with_details(details)
}

impl Plugin for ResourceQuota {
    fn handles(&self, operation: Operation) -> bool {
        matches!(operation, Operation::Create | Operation::Update)
    }

    fn validate(
        &self,
        attrs: &Attributes<'_>,
        store: &dyn Lookup,
    ) -> Result<Vec<String>, ApiError> {
        if !attrs.subresource.is_empty() || !attrs.namespaced || attrs.namespace.is_empty() {
            return Ok(Vec::new());
        }
        let Some(evaluator) = quota::evaluator(attrs.group, attrs.resource) else {
            return Ok(Vec::new());
        };
        if attrs.operation == Operation::Update && !evaluator.handles_update() {
            return Ok(Vec::new());
        }
        let Some(obj) = attrs.object else {
            return Ok(Vec::new());
        };
        let quotas = store.list("v1", "ResourceQuota", Some(attrs.namespace));
        if quotas.is_empty() {
            return Ok(Vec::new());
        }
        let mut interesting = Vec::new();
        for (i, q) in quotas.iter().enumerate() {
            if !evaluator.matches(q, obj) {
                continue;
            }
            let name = meta_str(q, "name");
            let hard = quota::hard_names(q, "status");
            let restricted = evaluator.matching_resources(hard.iter().map(String::as_str));
            if let Err(e) = evaluator.constraints(&restricted, obj) {
                return Err(forbidden(attrs, format!("failed quota: {name}: {e}")));
            }
            let used = q.pointer("/status/used").and_then(Value::as_object);
            if restricted
                .iter()
                .any(|r| used.is_none_or(|u| !u.contains_key(r)))
            {
                let mut names = restricted.clone();
                names.sort();
                return Err(forbidden(
                    attrs,
                    format!(
                        "status unknown for quota: {name}, resources: {}",
                        names.join(",")
                    ),
                ));
            }
            interesting.push(i);
        }
        let mut delta = evaluator.usage(obj);
        let negative: Vec<&str> = delta
            .iter()
            .filter(|(_, q)| q.is_negative())
            .map(|(k, _)| k.as_str())
            .collect();
        if !negative.is_empty() {
            return Err(forbidden(
                attrs,
                format!(
                    "quota usage is negative for resource(s): {}",
                    negative.join(",")
                ),
            ));
        }
        if attrs.operation == Operation::Update
            && let Some(old) = attrs.old_object
            && !meta_str(old, "resourceVersion").is_empty()
        {
            delta = quota::subtract_non_negative(&delta, &evaluator.usage(old));
        }
        delta.retain(|_, q| !q.is_zero());
        if delta.is_empty() || interesting.is_empty() {
            return Ok(Vec::new());
        }
        let mut charges = Vec::new();
        for i in interesting {
            let q = &quotas[i];
            let hard_list = quota::quantities(q.pointer("/status/hard"));
            let used = quota::quantities(q.pointer("/status/used"));
            let hard: Vec<&String> = hard_list.keys().collect();
            let requested = quota::mask(&delta, &hard);
            let new_used = quota::add(&used, &requested);
            let exceeded: Vec<&String> = requested
                .keys()
                .filter(|k| {
                    matches!((new_used.get(*k), hard_list.get(*k)),
                        (Some(u), Some(h)) if u.cmp_value(h).is_gt())
                })
                .collect();
            if !exceeded.is_empty() {
                let part = |l: &ResourceList| quota::pretty(&quota::mask(l, &exceeded));
                return Err(forbidden(
                    attrs,
                    format!(
                        "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                        meta_str(q, "name"),
                        part(&requested),
                        part(&used),
                        part(&hard_list)
                    ),
                ));
            }
            if attrs.dry_run || quota::equals(&used, &new_used) {
                continue;
            }
            let mut updated = (**q).clone();
            let mut status_used = q
                .pointer("/status/used")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            for (k, v) in quota::to_json(&quota::mask(
                &new_used,
                &requested.keys().collect::<Vec<_>>(),
            )) {
                status_used.insert(k, v);
            }
            updated["status"]["used"] = Value::Object(status_used);
            charges.push(updated);
        }
        self.charges.borrow_mut().extend(charges);
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Value, json};

    use super::ResourceQuota;
    use crate::admission::{ADMIN, Attributes, Lookup, Operation, Plugin};

    struct Store(Vec<Value>);

    impl Lookup for Store {
        fn namespace(&self, _: &str) -> Option<Arc<Value>> {
            None
        }
        fn policy(&self, _: &str) -> Option<Arc<Value>> {
            None
        }
        fn kind_scope(&self, _: &str, _: &str) -> Option<bool> {
            None
        }
        fn get(&self, _: &str, _: &str, _: &str, _: &str) -> Option<Arc<Value>> {
            None
        }
        fn list(&self, _: &str, kind: &str, _: Option<&str>) -> Vec<Arc<Value>> {
            assert_eq!(kind, "ResourceQuota");
            self.0.iter().cloned().map(Arc::new).collect()
        }
    }

    fn quota(name: &str, hard: Value, used: Option<Value>) -> Value {
        let mut q = json!({"metadata": {"name": name, "namespace": "ns", "resourceVersion": "5"},
            "spec": {"hard": hard.clone()}, "status": {"hard": hard}});
        match used {
            Some(u) => q["status"]["used"] = u,
            None => q["status"] = json!({}),
        }
        q
    }

    /// The plugin's answer to a create of `obj` as `resource`: the refusal's message, or
    /// the `status.used` of each quota charged.
    fn create(store: &Store, resource: &str, obj: &Value) -> Result<Vec<Value>, (u16, String)> {
        let plugin = ResourceQuota::default();
        let attrs = Attributes {
            operation: Operation::Create,
            group: "",
            version: "v1",
            kind: "",
            resource,
            subresource: "",
            namespaced: true,
            namespace: "ns",
            name: "x",
            object: Some(obj),
            old_object: None,
            dry_run: false,
            user: &ADMIN,
        };
        plugin
            .validate(&attrs, store)
            .map_err(|e| (e.code, e.message))?;
        Ok(plugin
            .charges()
            .into_iter()
            .map(|q| q["status"]["used"].clone())
            .collect())
    }

    fn pod(requests: Value) -> Value {
        json!({"metadata": {"name": "x"}, "spec": {"containers": [
            {"name": "c", "resources": {"requests": requests}}]}})
    }

    #[test]
    fn a_create_is_charged_to_each_quota_it_fits() {
        let store = Store(vec![
            quota(
                "a",
                json!({"pods": "2", "requests.cpu": "1"}),
                Some(json!({"pods": "1", "requests.cpu": "250m"})),
            ),
            quota(
                "b",
                json!({"configmaps": "1"}),
                Some(json!({"configmaps": "0"})),
            ),
        ]);
        let charged = create(
            &store,
            "pods",
            &pod(json!({"cpu": "500m", "memory": "1Gi"})),
        );
        assert_eq!(
            charged,
            Ok(vec![json!({"pods": "2", "requests.cpu": "750m"})])
        );
        assert_eq!(
            create(&store, "configmaps", &json!({})),
            Ok(vec![json!({"configmaps": "1"})])
        );
        // Nothing limits secrets: admitted, nothing charged.
        assert_eq!(create(&store, "secrets", &json!({})), Ok(vec![]));
    }

    #[test]
    fn refusals_are_worded_as_upstream_words_them() {
        let full = Store(vec![quota(
            "q",
            json!({"pods": "1", "requests.cpu": "1"}),
            Some(json!({"pods": "1", "requests.cpu": "500m"})),
        )]);
        assert_eq!(
            create(&full, "pods", &pod(json!({"cpu": "600m"}))),
            Err((403, r#"pods "x" is forbidden: exceeded quota: q, requested: pods=1,requests.cpu=600m, used: pods=1,requests.cpu=500m, limited: pods=1,requests.cpu=1"#.into()))
        );
        let cpu = Store(vec![quota(
            "q",
            json!({"cpu": "2", "memory": "1Gi"}),
            Some(json!({"cpu": "0", "memory": "0"})),
        )]);
        assert_eq!(
            create(&cpu, "pods", &pod(json!({"memory": "1Gi"}))),
            Err((
                403,
                r#"pods "x" is forbidden: failed quota: q: must specify cpu for: c"#.into()
            ))
        );
        let unknown = Store(vec![quota(
            "q",
            json!({"pods": "3", "count/pods": "3"}),
            Some(json!({"pods": "0"})),
        )]);
        assert_eq!(
            create(&unknown, "pods", &pod(json!({}))),
            Err((
                403,
                r#"pods "x" is forbidden: status unknown for quota: q, resources: count/pods,pods"#
                    .into()
            ))
        );
        // A quota no controller has measured (empty status) limits nothing, as upstream.
        let unmeasured = Store(vec![quota("q", json!({"pods": "0"}), None)]);
        assert_eq!(create(&unmeasured, "pods", &pod(json!({}))), Ok(vec![]));
    }
}
