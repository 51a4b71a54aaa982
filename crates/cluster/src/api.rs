//! The simulation's door to the store: the resources it reads and writes, and its writers'
//! identities. Every write goes through the store's normal write path (defaults, validation,
//! admission policies, `managedFields`, watch events), as a controller's request would, under
//! the field manager and user upstream's component writes with.

use std::sync::Arc;

use crt_apiserver::ApiError;
use crt_apiserver::resource::ResourceInfo;
use crt_apiserver::storage::{DeleteOptions, ListOptions, PatchType, Storage, WriteOptions};
use crt_apiserver::user::UserInfo;
use serde_json::{Value, json};

use crate::clock::Clock;

/// The resources the controllers use.
pub(crate) struct Resources {
    pub(crate) pods: ResourceInfo,
    pub(crate) nodes: ResourceInfo,
    pub(crate) leases: ResourceInfo,
    pub(crate) events: ResourceInfo,
    pub(crate) replicasets: ResourceInfo,
    pub(crate) replicationcontrollers: ResourceInfo,
    pub(crate) deployments: ResourceInfo,
    pub(crate) jobs: ResourceInfo,
    pub(crate) services: ResourceInfo,
    pub(crate) endpoints: ResourceInfo,
    pub(crate) endpointslices: ResourceInfo,
    pub(crate) statefulsets: ResourceInfo,
    pub(crate) daemonsets: ResourceInfo,
    pub(crate) controllerrevisions: ResourceInfo,
    pub(crate) cronjobs: ResourceInfo,
    pub(crate) pvcs: ResourceInfo,
    pub(crate) pvs: ResourceInfo,
    pub(crate) storageclasses: ResourceInfo,
}

/// The store, the resources and the clock, shared by every controller.
#[derive(Clone)]
pub(crate) struct Api {
    pub(crate) storage: Storage,
    pub(crate) res: Arc<Resources>,
    pub(crate) clock: Clock,
    /// Added to the time in Event names, so that two Events of one object at one instant
    /// (the paused clock stands still) get different names.
    events: Arc<std::sync::atomic::AtomicU64>,
}

/// Who writes: a field manager and a user.
#[derive(Clone)]
pub(crate) struct Actor {
    opts: WriteOptions,
    /// The component its Events name as their reporting controller.
    component: String,
}

impl Actor {
    /// A writer named `manager` in `managedFields`, authenticated as `user` in `groups`
    /// (`system:authenticated` is added), reporting Events as `component`.
    pub(crate) fn new(manager: &str, user: &str, groups: &[&str], component: &str) -> Actor {
        let mut groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        groups.push("system:authenticated".into());
        Actor {
            opts: WriteOptions {
                field_manager: Some(manager.into()),
                user: Some(Arc::new(UserInfo {
                    name: user.into(),
                    groups,
                    ..UserInfo::default()
                })),
                ..WriteOptions::default()
            },
            component: component.into(),
        }
    }

    /// A kube-controller-manager controller, running as its ServiceAccount in `kube-system`
    /// (`replicaset-controller`, ...), as with `--use-service-account-credentials`.
    pub(crate) fn controller(account: &str) -> Actor {
        Actor::new(
            "kube-controller-manager",
            &format!("system:serviceaccount:kube-system:{account}"),
            &[
                "system:serviceaccounts",
                "system:serviceaccounts:kube-system",
            ],
            account,
        )
    }
}

impl Actor {
    /// The same writer, reporting Events as `component` (upstream's event source, where it
    /// differs from the ServiceAccount's name).
    pub(crate) fn reporting_as(mut self, component: &str) -> Actor {
        self.component = component.into();
        self
    }
}

impl Api {
    /// The resources of `storage`, with a clock starting now.
    pub(crate) fn new(storage: Storage) -> Api {
        let r = |group: &str, version: &str, plural: &str| {
            storage
                .resolve(group, version, plural)
                .unwrap_or_else(|| panic!("{plural} are built in"))
        };
        let res = Resources {
            pods: r("", "v1", "pods"),
            nodes: r("", "v1", "nodes"),
            leases: r("coordination.k8s.io", "v1", "leases"),
            events: r("events.k8s.io", "v1", "events"),
            replicasets: r("apps", "v1", "replicasets"),
            replicationcontrollers: r("", "v1", "replicationcontrollers"),
            deployments: r("apps", "v1", "deployments"),
            jobs: r("batch", "v1", "jobs"),
            services: r("", "v1", "services"),
            endpoints: r("", "v1", "endpoints"),
            endpointslices: r("discovery.k8s.io", "v1", "endpointslices"),
            statefulsets: r("apps", "v1", "statefulsets"),
            daemonsets: r("apps", "v1", "daemonsets"),
            controllerrevisions: r("apps", "v1", "controllerrevisions"),
            cronjobs: r("batch", "v1", "cronjobs"),
            pvcs: r("", "v1", "persistentvolumeclaims"),
            pvs: r("", "v1", "persistentvolumes"),
            storageclasses: r("storage.k8s.io", "v1", "storageclasses"),
        };
        Api {
            storage,
            res: Arc::new(res),
            clock: Clock::new(),
            events: Arc::default(),
        }
    }

    /// An object, if it exists.
    pub(crate) fn get(&self, res: &ResourceInfo, ns: Option<&str>, name: &str) -> Option<Value> {
        self.storage.get(res, ns, name, None).ok()
    }

    /// The objects of a collection (`ns` `None`: every namespace) that the selectors select.
    pub(crate) fn list(
        &self,
        res: &ResourceInfo,
        ns: Option<&str>,
        label_selector: Option<String>,
        field_selector: Option<String>,
    ) -> Vec<Value> {
        let opts = ListOptions {
            label_selector,
            field_selector,
            ..ListOptions::default()
        };
        match self.storage.list(res, ns, &opts) {
            Ok(Value::Object(mut list)) => match list.remove("items") {
                Some(Value::Array(items)) => items,
                _ => Vec::new(),
            },
            Ok(_) => Vec::new(),
            Err(e) => {
                tracing::debug!("listing {}: {e}", res.plural);
                Vec::new()
            }
        }
    }

    /// [`Api::list`] without copies: the stored objects, shared (for scans of many objects,
    /// such as every assigned pod).
    pub(crate) fn list_shared(
        &self,
        res: &ResourceInfo,
        ns: Option<&str>,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Vec<Arc<Value>> {
        self.storage
            .list_shared(res, ns, label_selector, field_selector)
            .unwrap_or_else(|e| {
                tracing::debug!("listing {}: {e}", res.plural);
                Vec::new()
            })
    }

    /// The objects of `res` that name `owner_uid` among their owners (the store's owner index:
    /// no scan), shared.
    pub(crate) fn owned_shared(&self, res: &ResourceInfo, owner_uid: &str) -> Vec<Arc<Value>> {
        self.storage.owned_shared(res, owner_uid)
    }

    /// Creates an object.
    pub(crate) fn create(
        &self,
        res: &ResourceInfo,
        ns: Option<&str>,
        body: Value,
        who: &Actor,
    ) -> Result<Value, ApiError> {
        self.storage.create(res, ns, body, &who.opts)
    }

    /// Replaces an object or (`sub` `Some("status")`) its status; `body` names the
    /// resourceVersion it read, so a concurrent change fails with a conflict.
    pub(crate) fn update(
        &self,
        res: &ResourceInfo,
        ns: Option<&str>,
        sub: Option<&str>,
        body: Value,
        who: &Actor,
    ) -> Result<Value, ApiError> {
        let name = crate::obj::name(&body).to_string();
        self.storage.update(res, ns, &name, sub, body, &who.opts)
    }

    /// Merge-patches an object or its status.
    pub(crate) fn merge_patch(
        &self,
        res: &ResourceInfo,
        ns: Option<&str>,
        name: &str,
        sub: Option<&str>,
        patch: &Value,
        who: &Actor,
    ) -> Result<Value, ApiError> {
        let body = serde_json::to_vec(patch).unwrap_or_default();
        self.storage
            .patch(res, ns, name, sub, PatchType::Merge, &body, &who.opts)
    }

    /// Deletes an object, with a grace period and the uid it must still have.
    pub(crate) fn delete(
        &self,
        res: &ResourceInfo,
        ns: Option<&str>,
        name: &str,
        grace_period_seconds: Option<i64>,
        uid: Option<&str>,
        who: &Actor,
    ) -> Result<Value, ApiError> {
        let opts = DeleteOptions {
            grace_period_seconds,
            precondition_uid: uid.map(String::from),
            user: who.opts.user.clone(),
            ..DeleteOptions::default()
        };
        self.storage.delete(res, ns, name, &opts)
    }

    /// Binds a pod to a node (a `Binding` to `pods/NAME/binding`).
    pub(crate) fn bind(
        &self,
        ns: &str,
        pod: &str,
        node: &str,
        who: &Actor,
    ) -> Result<(), ApiError> {
        let binding = json!({
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": pod, "namespace": ns},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        });
        self.storage
            .bind(ns, Some(pod), &binding, &who.opts)
            .map(|_| ())
    }

    /// Records an `events.k8s.io/v1` Event about `regarding` (a `Normal` or `Warning` of
    /// `reason`, reported by `who`'s component), as upstream's event recorders do.
    pub(crate) fn event(
        &self,
        regarding: &Value,
        type_: &str,
        reason: &str,
        action: &str,
        note: &str,
        who: &Actor,
    ) {
        let controller = who.component.as_str();
        let ns = match crate::obj::namespace(regarding) {
            "" => "default",
            ns => ns,
        };
        let now = self.clock.now();
        let seq = self
            .events
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!(
            "{}.{:x}",
            crate::obj::name(regarding),
            (now.timestamp_nanos_opt().unwrap_or_default() as u64).wrapping_add(seq)
        );
        let body = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "eventTime": crate::clock::micro_time(now),
            "reportingController": controller,
            "reportingInstance": format!("{controller}-crt"),
            "action": action,
            "reason": reason,
            "type": type_,
            "note": note,
            "regarding": {
                "apiVersion": crate::obj::str_at(regarding, "/apiVersion"),
                "kind": crate::obj::str_at(regarding, "/kind"),
                "namespace": crate::obj::namespace(regarding),
                "name": crate::obj::name(regarding),
                "uid": crate::obj::uid(regarding),
                "resourceVersion": crate::obj::str_at(regarding, "/metadata/resourceVersion"),
            },
        });
        if let Err(e) = self.create(&self.res.events, Some(ns), body, who) {
            tracing::debug!("recording event {reason}: {e}");
        }
    }
}
