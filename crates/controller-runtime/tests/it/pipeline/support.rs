//! What the pipeline tests share: a queue that records what handlers do, and objects.

// The imports every test module shares; each module glob-imports this one.
#![allow(unused_imports)]

pub(crate) use std::collections::BTreeMap;
pub(crate) use std::sync::Arc;
pub(crate) use std::time::Duration;

pub(crate) use controller_runtime::Request;
pub(crate) use controller_runtime::event::{
    CreateEvent, DeleteEvent, Event, GenericEvent, UpdateEvent,
};
pub(crate) use controller_runtime::handler::{
    EnqueueRequestForObject, EnqueueRequestForOwner, EnqueueRequestsFromMapFunc, EventHandler,
    Funcs, LowPriorityWhenUnchanged, OwnerScope,
};
pub(crate) use controller_runtime::predicate::{self, Predicate};
pub(crate) use controller_runtime::source::{self, Channel, EventDispatcher, Func, Source, Watch};
pub(crate) use controller_runtime::workqueue::{AddOpts, Enqueue, LOW_PRIORITY, Queue};
pub(crate) use futures::future::BoxFuture;
pub(crate) use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
pub(crate) use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
pub(crate) use k8s_openapi::api::rbac::v1::ClusterRole;
pub(crate) use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;
pub(crate) use metav1::OwnerReference;
pub(crate) use parking_lot::Mutex;
pub(crate) use tokio_util::sync::CancellationToken;

/// One recorded call: the item and the priority it was added at (`None`: a plain add).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Added {
    pub(crate) item: Request,
    pub(crate) priority: Option<i32>,
}

#[derive(Default)]
pub(crate) struct RecordingQueue {
    added: Mutex<Vec<Added>>,
}

impl RecordingQueue {
    pub(crate) fn take(&self) -> Vec<Added> {
        std::mem::take(&mut *self.added.lock())
    }
}

/// Records every add with its priority (`None`: a plain add); handlers never delay or rate-limit.
impl Enqueue<Request> for RecordingQueue {
    fn add_with_opts(&self, opts: AddOpts, item: Request) {
        assert_eq!(opts.after, None, "handlers never add_after");
        assert!(!opts.rate_limited, "handlers never add_rate_limited");
        self.added.lock().push(Added {
            item,
            priority: opts.priority,
        });
    }
}

impl Queue<Request> for RecordingQueue {
    fn forget(&self, _item: &Request) {}
    fn num_requeues(&self, _item: &Request) -> u32 {
        0
    }
    fn get_with_priority(&self) -> BoxFuture<'_, Option<(Request, i32)>> {
        Box::pin(async { None })
    }
    fn done(&self, _item: &Request) {}
    fn len(&self) -> usize {
        self.added.lock().len()
    }
    fn shut_down(&self) {}
    fn shut_down_with_drain(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    fn is_shutting_down(&self) -> bool {
        false
    }
}

pub(crate) fn plain(ns: &str, name: &str) -> Added {
    Added {
        item: Request::new(ns, name),
        priority: None,
    }
}
pub(crate) fn low(ns: &str, name: &str) -> Added {
    Added {
        item: Request::new(ns, name),
        priority: Some(LOW_PRIORITY),
    }
}

pub(crate) fn cm(ns: &str, name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some(ns.into());
    cm.metadata.name = Some(name.into());
    cm
}

pub(crate) fn with_rv(mut cm: ConfigMap, rv: &str) -> ConfigMap {
    cm.metadata.resource_version = Some(rv.into());
    cm
}

pub(crate) fn labels(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

pub(crate) fn update<K>(old: K, new: K) -> UpdateEvent<K> {
    UpdateEvent {
        old: Arc::new(old),
        new: Arc::new(new),
    }
}
pub(crate) fn create<K>(obj: K, initial: bool) -> CreateEvent<K> {
    CreateEvent {
        object: Arc::new(obj),
        is_in_initial_list: initial,
    }
}
pub(crate) fn delete<K>(obj: K) -> DeleteEvent<K> {
    DeleteEvent {
        object: Arc::new(obj),
        delete_state_unknown: false,
    }
}
pub(crate) fn generic<K>(obj: K) -> GenericEvent<K> {
    GenericEvent {
        object: Arc::new(obj),
    }
}

pub(crate) fn owner_ref(
    api_version: &str,
    kind: &str,
    name: &str,
    controller: Option<bool>,
) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: format!("uid-{name}"),
        controller,
        block_owner_deletion: None,
    }
}

pub(crate) fn pod_owned_by(refs: Vec<OwnerReference>) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.namespace = Some("ns".into());
    pod.metadata.name = Some("pod".into());
    pod.metadata.owner_references = Some(refs);
    pod
}
