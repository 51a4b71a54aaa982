//! The ResourceQuota controller, as kube-controller-manager's `resourcequota-controller`
//! keeps quotas: each quota's `status.hard` is its `spec.hard`, and its `status.used` the
//! usage of the namespace's objects its scopes select, measured by the server's quota
//! evaluators ([`crt_apiserver::quota::calculate_used`]), every name of `spec.hard` present.
//!
//! The server's ResourceQuota admission charges each create to the quotas as it admits it;
//! this controller gives usage back (replenishment): a quota is measured again when it is
//! created or changed and whenever an object it may count changes or goes (pods, Services,
//! claims, ConfigMaps, Secets, ReplicationControllers, ResourceQuotas, ReplicaSets,
//! Deployments, Jobs). A quota counting other resources (`count/widgets.example.com`) is
//! measured again every [`RESYNC`], since nothing watches those. Its status is written with the
//! resourceVersion it was measured at, so a write charged in between makes it measure again.

use std::sync::Arc;
use std::time::Duration;

use crt_apiserver::resource::ResourceInfo;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::api::{Actor, Api};
use crate::controller::{self, Key, Reconcile, Watched};
use crate::obj;

/// How often a quota counting resources nothing here watches is measured again.
pub(crate) const RESYNC: Duration = Duration::from_secs(1);

/// The resources whose changes make the quotas of their namespace measured again.
const WATCHED: [(&str, &str, &str); 10] = [
    ("", "v1", "pods"),
    ("", "v1", "services"),
    ("", "v1", "persistentvolumeclaims"),
    ("", "v1", "configmaps"),
    ("", "v1", "secrets"),
    ("", "v1", "replicationcontrollers"),
    ("", "v1", "resourcequotas"),
    ("apps", "v1", "replicasets"),
    ("apps", "v1", "deployments"),
    ("batch", "v1", "jobs"),
];

/// Starts the controller.
pub(crate) fn start(api: &Api) -> Vec<JoinHandle<()>> {
    let Some(quotas) = api.storage.resolve("", "v1", "resourcequotas") else {
        return Vec::new();
    };
    let watches = WATCHED
        .iter()
        .filter_map(|(g, v, r)| api.storage.resolve(g, v, r))
        .map(|res| {
            let lookup = api.clone();
            let quotas = quotas.clone();
            // An object concerns every quota of its namespace.
            Watched::mapped(&res, move |o| {
                lookup
                    .list(&quotas, Some(obj::namespace(o)), None, None)
                    .iter()
                    .map(controller::key_of)
                    .collect()
            })
        })
        .collect();
    let controller = Quotas {
        api: api.clone(),
        quotas,
        who: Actor::controller("resourcequota-controller"),
        served: Arc::new(Vec::new()),
    };
    controller::spawn(&api.storage, watches, controller)
}

struct Quotas {
    api: Api,
    quotas: ResourceInfo,
    who: Actor,
    /// The resources served when the batch began.
    served: Arc<Vec<ResourceInfo>>,
}

/// Whether a group/resource is one of [`WATCHED`].
fn watched(group: &str, resource: &str) -> bool {
    WATCHED
        .iter()
        .any(|(g, _, r)| *g == group && *r == resource)
}

impl Reconcile for Quotas {
    fn begin(&mut self) {
        self.served = Arc::new(self.api.storage.served_resources());
    }

    fn reconcile(&mut self, key: &Key) -> Option<Duration> {
        let quota = self.api.get(&self.quotas, Some(&key.0), &key.1)?;
        if obj::is_deleting(&quota) {
            return None;
        }
        let mut unwatched = false;
        let served = self.served.clone();
        let api = &self.api;
        let mut list = |group: &str, resource: &str| -> Option<Vec<Value>> {
            if !watched(group, resource) {
                unwatched = true;
            }
            let res = served
                .iter()
                .find(|r| r.group == group && r.plural == resource)?;
            Some(api.list(res, Some(&key.0), None, None))
        };
        let used = crt_apiserver::quota::calculate_used(&quota, &mut list);
        let hard = quota.pointer("/spec/hard").cloned().unwrap_or(json!({}));
        let status = json!({"hard": hard, "used": used});
        let again = unwatched.then_some(RESYNC);
        if quota.get("status") == Some(&status) {
            return again;
        }
        let mut body = quota.clone();
        body["status"] = status;
        match self
            .api
            .update(&self.quotas, Some(&key.0), Some("status"), body, &self.who)
        {
            Ok(_) => again,
            Err(e) => {
                tracing::debug!("updating quota {}/{}: {e}", key.0, key.1);
                Some(Duration::from_millis(10))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crt_apiserver::storage::{DeleteOptions, Storage, StorageConfig, WriteOptions};
    use serde_json::{Value, json};

    use crate::{Cluster, ClusterConfig};

    fn opts() -> WriteOptions {
        WriteOptions {
            field_manager: Some("test".into()),
            ..WriteOptions::default()
        }
    }

    /// Waits (5 s of simulated time at most) until quota `name` in `default` has `want` as
    /// `status.used` and its `spec.hard` as `status.hard`.
    async fn used_becomes(store: &Storage, name: &str, want: Value) {
        let res = store.resolve("", "v1", "resourcequotas").unwrap();
        for _ in 0..100 {
            let q = store.get(&res, Some("default"), name, None).unwrap();
            if q["status"]["used"] == want && q["status"]["hard"] == q["spec"]["hard"] {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let q = store.get(&res, Some("default"), name, None).unwrap();
        panic!("used of {name}: {} != {want}", q["status"]["used"]);
    }

    #[tokio::test(start_paused = true)]
    async fn quotas_measure_usage_and_give_it_back_on_delete() {
        let store = Storage::new(StorageConfig::default());
        let _cluster = Cluster::start(&store, ClusterConfig::default());
        let res = |g: &str, r: &str| store.resolve(g, "v1", r).unwrap();
        let create = |g: &str, r: &str, body: Value| {
            store.create(&res(g, r), Some("default"), body, &opts())
        };
        create(
            "",
            "resourcequotas",
            json!({"metadata": {"name": "q"}, "spec": {"hard": {
                "pods": "2", "configmaps": "5", "resourcequotas": "1",
                "count/replicasets.apps": "1", "requests.cpu": "1"}}}),
        )
        .unwrap();
        used_becomes(
            &store,
            "q",
            json!({"pods": "0", "configmaps": "0", "resourcequotas": "1",
                "count/replicasets.apps": "0", "requests.cpu": "0"}),
        )
        .await;
        for (name, cpu) in [("a", "300m"), ("b", "500m")] {
            create(
                "",
                "pods",
                json!({"metadata": {"name": name}, "spec": {"containers": [
                    {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]}}),
            )
            .unwrap();
        }
        create("", "configmaps", json!({"metadata": {"name": "cm"}})).unwrap();
        used_becomes(
            &store,
            "q",
            json!({"pods": "2", "configmaps": "1", "resourcequotas": "1",
                "count/replicasets.apps": "0", "requests.cpu": "800m"}),
        )
        .await;
        // Full: admission refuses the third pod.
        let third = create(
            "",
            "pods",
            json!({"metadata": {"name": "c"}, "spec": {"containers": [
                {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1m"}}}]}}),
        )
        .unwrap_err();
        assert_eq!(
            third.message,
            r#"pods "c" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"#
        );
        // Deleting gives the usage back (the kubelets finish the pod's deletion).
        let delete = DeleteOptions {
            grace_period_seconds: Some(0),
            ..DeleteOptions::default()
        };
        store
            .delete(&res("", "pods"), Some("default"), "a", &delete)
            .unwrap();
        store
            .delete(&res("", "configmaps"), Some("default"), "cm", &delete)
            .unwrap();
        used_becomes(
            &store,
            "q",
            json!({"pods": "1", "configmaps": "0", "resourcequotas": "1",
                "count/replicasets.apps": "0", "requests.cpu": "500m"}),
        )
        .await;
        // A change of spec.hard shows in status.hard.
        store
            .patch(
                &res("", "resourcequotas"),
                Some("default"),
                "q",
                None,
                crt_apiserver::storage::PatchType::Merge,
                br#"{"spec":{"hard":{"pods":"3","resourcequotas":"2"}}}"#,
                &opts(),
            )
            .unwrap();
        used_becomes(
            &store,
            "q",
            json!({"pods": "1", "configmaps": "0", "resourcequotas": "1",
                "count/replicasets.apps": "0", "requests.cpu": "500m"}),
        )
        .await;
        let q = store
            .get(&res("", "resourcequotas"), Some("default"), "q", None)
            .unwrap();
        assert_eq!(q["status"]["hard"]["pods"], "3");
        // Custom resources are counted too (measured again every RESYNC: nothing watches
        // them), and admission charges their creates.
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}}]}});
        let crds = res("apiextensions.k8s.io", "customresourcedefinitions");
        store.create(&crds, None, crd, &opts()).unwrap();
        create(
            "",
            "resourcequotas",
            json!({"metadata": {"name": "widgets"},
                "spec": {"hard": {"count/widgets.example.com": "1"}}}),
        )
        .unwrap();
        used_becomes(&store, "widgets", json!({"count/widgets.example.com": "0"})).await;
        let widgets = store.resolve("example.com", "v1", "widgets").unwrap();
        let widget = |name: &str| json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}});
        store
            .create(&widgets, Some("default"), widget("w1"), &opts())
            .unwrap();
        let refused = store
            .create(&widgets, Some("default"), widget("w2"), &opts())
            .unwrap_err();
        assert_eq!(
            refused.message,
            r#"widgets.example.com "w2" is forbidden: exceeded quota: widgets, requested: count/widgets.example.com=1, used: count/widgets.example.com=1, limited: count/widgets.example.com=1"#
        );
        store
            .delete(&widgets, Some("default"), "w1", &delete)
            .unwrap();
        used_becomes(&store, "widgets", json!({"count/widgets.example.com": "0"})).await;
    }
}
