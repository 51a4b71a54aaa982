//! The data: persistent maps of objects per resource, the global resourceVersion, the indexes
//! (uid, owners), the snapshots kept for paginated lists, and the commit primitives that every
//! write goes through ([`State::put`], [`State::remove`]).
//!
//! Objects are `Arc<serde_json::Value>` in an `imbl::OrdMap` keyed by `(namespace, name)`
//! (namespace `""` for cluster-scoped objects), one map per resource storage key
//! (`plural.group`), all in an `imbl::HashMap`. Cloning the whole [`Data`] is O(1): that is a
//! snapshot.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use super::durable::{self, Log};
use super::events::{Event, EventKind, Watchers, Window};
use super::meta;
use super::options::StorageConfig;
use crate::resource::ResourceInfo;
use crate::schema::StructuralSchema;

/// `(namespace, name)`; namespace `""` for cluster-scoped objects.
pub(crate) type ObjKey = (String, String);
/// The objects of one resource.
pub(crate) type Objects = imbl::OrdMap<ObjKey, Arc<Value>>;
/// Every object, per resource storage key.
pub(crate) type Data = imbl::HashMap<String, Objects>;

/// The storage key of a resource: objects of every version of one resource share it.
pub(crate) fn res_key(res: &ResourceInfo) -> String {
    super::convert::storage_key(&res.group, &res.plural)
}

/// The object key of a request: `(namespace, name)`, namespace `""` when cluster-scoped.
pub(crate) fn obj_key(res: &ResourceInfo, namespace: Option<&str>, name: &str) -> ObjKey {
    let ns = if res.namespaced {
        namespace.unwrap_or("")
    } else {
        ""
    };
    (ns.to_string(), name.to_string())
}

/// Where an object lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Loc {
    /// Resource storage key.
    pub(crate) res: String,
    /// `(namespace, name)`.
    pub(crate) key: ObjKey,
}

/// The served resources: built-in ones and those of registered CRDs. Each is shared (an
/// `Arc`), so that a request holds its resource without copying it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Registry {
    builtin: Vec<Arc<ResourceInfo>>,
    /// Per CRD name, the resource at each served version (storage version first).
    crds: BTreeMap<String, Vec<Arc<ResourceInfo>>>,
    /// Per CRD name (= storage key), the compiled schema of each version.
    schemas: BTreeMap<String, BTreeMap<String, Arc<StructuralSchema>>>,
}

impl Registry {
    fn new() -> Self {
        Registry {
            builtin: ResourceInfo::builtins().into_iter().map(Arc::new).collect(),
            crds: BTreeMap::new(),
            schemas: BTreeMap::new(),
        }
    }

    /// Every served resource, built-in first.
    pub(crate) fn all(&self) -> impl Iterator<Item = &ResourceInfo> {
        self.all_shared().map(|r| &**r)
    }

    fn all_shared(&self) -> impl Iterator<Item = &Arc<ResourceInfo>> {
        self.builtin.iter().chain(self.crds.values().flatten())
    }

    /// The resource at `group/version/plural`.
    pub(crate) fn resolve(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<&Arc<ResourceInfo>> {
        self.all_shared()
            .find(|r| r.group == group && r.version == version && r.plural == plural)
    }

    /// The built-in (or CRD-defined) resource `gr` at `version`.
    pub(crate) fn resolve_gr(
        &self,
        gr: crate::resource::GroupResource<'_>,
        version: &str,
    ) -> Option<&Arc<ResourceInfo>> {
        self.resolve(gr.group, version, gr.resource)
    }

    /// The resources a CRD serves now.
    pub(crate) fn crd(&self, name: &str) -> Option<&Vec<Arc<ResourceInfo>>> {
        self.crds.get(name)
    }

    /// Registers (or re-registers) the resources of a CRD and their schemas.
    pub(crate) fn set_crd(
        &mut self,
        name: &str,
        resources: Vec<ResourceInfo>,
        schemas: BTreeMap<String, Arc<StructuralSchema>>,
    ) {
        self.crds.insert(
            name.to_string(),
            resources.into_iter().map(Arc::new).collect(),
        );
        self.schemas.insert(name.to_string(), schemas);
    }

    /// Unregisters a CRD's resources.
    pub(crate) fn remove_crd(&mut self, name: &str) {
        self.schemas.remove(name);
        self.crds.remove(name);
    }

    /// The compiled schema of a custom resource at a version.
    pub(crate) fn schema(&self, key: &str, version: &str) -> Option<Arc<StructuralSchema>> {
        self.schemas.get(key)?.get(version).cloned()
    }
}

/// Everything behind the store's lock.
pub(crate) struct State {
    /// The objects.
    pub(crate) data: Data,
    /// The latest resourceVersion.
    pub(crate) rv: u64,
    /// uid -> location.
    pub(crate) uids: HashMap<String, Loc>,
    /// owner uid -> uids of the objects that name it in `ownerReferences`.
    pub(crate) dependents: HashMap<String, BTreeSet<String>>,
    /// Recent events.
    pub(crate) window: Window,
    /// Running watchers.
    pub(crate) watchers: Watchers,
    /// Fault injection: streaming lists started meanwhile get their initial-events-end
    /// bookmark only after the next write to their resource (or when this is cleared).
    pub(crate) withhold_initial_events_end: bool,
    /// Pods bound to a node are deleted gracefully (`Storage::set_graceful_pod_deletion`).
    pub(crate) graceful_pods: bool,
    /// Fault injection: while `Some`, committed events are kept here instead of reaching the
    /// running watches; they get them, in order, when it is cleared.
    pub(crate) held_events: Option<Vec<Arc<Event>>>,
    /// Snapshots taken for paginated lists, oldest first.
    pub(crate) snapshots: VecDeque<(u64, Data)>,
    /// Lists and continue tokens older than this get 410.
    pub(crate) compacted: u64,
    /// Served resources.
    pub(crate) registry: Registry,
    /// Tunables.
    pub(crate) config: StorageConfig,
    /// Next ClusterIP to hand out (10.96.0.0/12).
    pub(crate) next_cluster_ip: u32,
    /// The ValidatingAdmissionPolicies, compiled once per resourceVersion.
    pub(crate) policies: crate::admission::policy::Cache,
    /// Per resource storage key, the resourceVersion of its last change (readers that keep
    /// something derived from a resource's objects rebuild it when this moves).
    pub(crate) last_change: HashMap<String, u64>,
    /// The write-ahead log every change is appended to, when the store is durable.
    pub(crate) log: Option<Log>,
}

impl State {
    /// An empty state (no namespaces yet).
    pub(crate) fn new(config: StorageConfig) -> Self {
        State {
            data: Data::new(),
            rv: 0,
            uids: HashMap::new(),
            dependents: HashMap::new(),
            window: Window::new(config.watch_window),
            watchers: Watchers::default(),
            withhold_initial_events_end: false,
            graceful_pods: false,
            held_events: None,
            snapshots: VecDeque::new(),
            compacted: 0,
            registry: Registry::new(),
            config,
            next_cluster_ip: 1,
            policies: Default::default(),
            last_change: HashMap::new(),
            log: None,
        }
    }

    /// Loads the objects recovered from a data directory into this (new) state, without
    /// events, and continues at resourceVersion `start`: the history before it is compacted,
    /// so watches and lists from an older resourceVersion get 410 Gone. The CRDs among them
    /// are registered by the caller.
    pub(crate) fn restore(&mut self, objects: durable::Objects, start: u64) {
        for (res, objs) in objects {
            let mut stored = Objects::new();
            for (key, obj) in objs {
                self.index(&res, &key, &obj);
                stored.insert(key, obj);
            }
            self.last_change.insert(res.clone(), start);
            self.data.insert(res, stored);
        }
        self.rv = start;
        self.compact_to(start);
        // ClusterIPs continue after the highest one handed out.
        let highest = self
            .data
            .get("services")
            .into_iter()
            .flat_map(|objs| objs.values())
            .filter_map(|svc| {
                svc.pointer("/spec/clusterIP")?
                    .as_str()?
                    .strip_prefix("10.96.")
            })
            .filter_map(|rest| {
                let (a, b) = rest.split_once('.')?;
                Some((a.parse::<u32>().ok()? << 8) | b.parse::<u32>().ok()?)
            })
            .max();
        if let Some(n) = highest {
            self.next_cluster_ip = self.next_cluster_ip.max(n + 1);
        }
    }

    /// Appends a change to the log (when durable), and starts a snapshot when one is due.
    fn log_change(&mut self, rv: u64, res: &str, key: &ObjKey, obj: Option<&Arc<Value>>) {
        let Some(log) = &mut self.log else {
            return;
        };
        log.append(rv, res, key, obj.cloned());
        if log.snapshot_due() {
            self.start_snapshot();
        }
    }

    /// Starts writing a snapshot of the store at the current resourceVersion (when durable):
    /// the copy is O(1), the writing happens on the log's snapshot thread.
    pub(crate) fn start_snapshot(&mut self) {
        let rv = self.rv;
        let data = self.data.clone();
        if let Some(log) = &mut self.log {
            log.snapshot(
                rv,
                Box::new(move |emit| {
                    for (res, objs) in data.iter() {
                        for ((ns, name), obj) in objs.iter() {
                            emit(res, ns, name, obj)?;
                        }
                    }
                    Ok(())
                }),
            );
        }
    }

    /// The object at a location.
    pub(crate) fn get(&self, res: &str, key: &ObjKey) -> Option<&Arc<Value>> {
        self.data.get(res)?.get(key)
    }

    /// The object with a uid.
    pub(crate) fn by_uid(&self, uid: &str) -> Option<(Loc, Arc<Value>)> {
        let loc = self.uids.get(uid)?;
        let obj = self.get(&loc.res, &loc.key)?.clone();
        Some((loc.clone(), obj))
    }

    /// Stores an object (create or update): bumps the resourceVersion, stamps it on the object,
    /// updates indexes, records and fans out the event. Answers the stored object.
    pub(crate) fn put(&mut self, res: &str, key: ObjKey, mut obj: Value) -> Arc<Value> {
        self.rv += 1;
        let rv = self.rv;
        meta::set_meta(&mut obj, "resourceVersion", Value::from(rv.to_string()));
        let obj = Arc::new(obj);
        let objects = match self.data.get_mut(res) {
            Some(objects) => objects,
            None => self.data.entry(res.to_string()).or_default(),
        };
        let previous = objects.insert(key.clone(), obj.clone());
        self.log_change(rv, res, &key, Some(&obj));
        self.changed(res, rv);
        if let Some(prev) = &previous {
            self.unindex(prev);
        }
        self.index(res, &key, &obj);
        let kind = if previous.is_some() {
            EventKind::Modified
        } else {
            EventKind::Added
        };
        self.record(Event {
            rv,
            res: res.to_string(),
            kind,
            object: obj.clone(),
            previous,
        });
        obj
    }

    /// Removes an object: bumps the resourceVersion, records and fans out DELETED with the last
    /// state carrying the new resourceVersion. Answers that last state.
    pub(crate) fn remove(&mut self, res: &str, key: &ObjKey) -> Option<Arc<Value>> {
        let previous = self.data.get_mut(res)?.remove(key)?;
        self.rv += 1;
        let rv = self.rv;
        self.log_change(rv, res, key, None);
        self.changed(res, rv);
        self.unindex(&previous);
        let mut last = (*previous).clone();
        meta::set_meta(&mut last, "resourceVersion", Value::from(rv.to_string()));
        let last = Arc::new(last);
        self.record(Event {
            rv,
            res: res.to_string(),
            kind: EventKind::Deleted,
            object: last.clone(),
            previous: Some(previous),
        });
        Some(last)
    }

    fn changed(&mut self, res: &str, rv: u64) {
        match self.last_change.get_mut(res) {
            Some(at) => *at = rv,
            None => {
                self.last_change.insert(res.to_string(), rv);
            }
        }
    }

    /// The resourceVersion of the last change to a resource's objects (0: none since start).
    pub(crate) fn last_change(&self, res: &str) -> u64 {
        self.last_change.get(res).copied().unwrap_or(0)
    }

    fn record(&mut self, event: Event) {
        let event = Arc::new(event);
        match &mut self.held_events {
            Some(held) => held.push(event.clone()),
            None => self.watchers.dispatch(&event),
        }
        self.window.push(event);
    }

    fn index(&mut self, res: &str, key: &ObjKey, obj: &Value) {
        let uid = meta::uid(obj);
        if uid.is_empty() {
            return;
        }
        self.uids.insert(
            uid.to_string(),
            Loc {
                res: res.to_string(),
                key: key.clone(),
            },
        );
        for owner in meta::owner_uids(obj) {
            self.dependents
                .entry(owner)
                .or_default()
                .insert(uid.to_string());
        }
    }

    fn unindex(&mut self, obj: &Value) {
        let uid = meta::uid(obj);
        self.uids.remove(uid);
        for owner in meta::owner_uids(obj) {
            if let Some(set) = self.dependents.get_mut(&owner) {
                set.remove(uid);
                if set.is_empty() {
                    self.dependents.remove(&owner);
                }
            }
        }
    }

    /// The uids of the objects that name `owner_uid` as an owner.
    pub(crate) fn dependents_of(&self, owner_uid: &str) -> Vec<String> {
        self.dependents
            .get(owner_uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Keeps a snapshot of the current data for continue tokens (at most
    /// `StorageConfig::list_snapshots`), and answers its resourceVersion.
    pub(crate) fn snapshot(&mut self) -> u64 {
        let rv = self.rv;
        if self.snapshots.back().map(|(r, _)| *r) != Some(rv) {
            self.snapshots.push_back((rv, self.data.clone()));
            while self.snapshots.len() > self.config.list_snapshots.max(1) {
                self.snapshots.pop_front();
            }
        }
        rv
    }

    /// Keeps `data` (read at `rv`) as a snapshot for continue tokens; answers `rv`.
    pub(crate) fn snapshot_at(&mut self, rv: u64, data: &Data) -> u64 {
        if rv == self.rv {
            return self.snapshot();
        }
        if !self.snapshots.iter().any(|(r, _)| *r == rv) {
            self.snapshots.push_back((rv, data.clone()));
            self.snapshots.make_contiguous().sort_by_key(|(r, _)| *r);
            while self.snapshots.len() > self.config.list_snapshots.max(1) {
                self.snapshots.pop_front();
            }
        }
        rv
    }

    /// The data as of `rv`, when a snapshot of it is kept (or it is the current one).
    pub(crate) fn data_at(&self, rv: u64) -> Option<Data> {
        if rv < self.compacted {
            return None;
        }
        if rv == self.rv {
            return Some(self.data.clone());
        }
        self.snapshots
            .iter()
            .find(|(r, _)| *r == rv)
            .map(|(_, d)| d.clone())
    }

    /// Fault injection: forgets the event window and every snapshot.
    pub(crate) fn compact(&mut self) {
        self.compact_to(self.rv);
    }

    /// Compacts the history up to `rv`, as etcd's compaction does: lists and watches at an
    /// older resourceVersion, and continue tokens of older lists, get 410 from now on.
    pub(crate) fn compact_to(&mut self, rv: u64) {
        let rv = rv.min(self.rv);
        if rv <= self.compacted {
            return;
        }
        self.window.compact(rv);
        self.snapshots.retain(|(r, _)| *r >= rv);
        self.compacted = rv;
    }

    /// A full copy of the objects and the resourceVersion, to compare in tests.
    #[cfg(test)]
    pub(crate) fn dump(&self) -> (u64, Vec<(String, ObjKey, Value)>) {
        let mut all: Vec<(String, ObjKey, Value)> = self
            .data
            .iter()
            .flat_map(|(r, objs)| {
                objs.iter()
                    .map(move |(k, v)| (r.clone(), k.clone(), (**v).clone()))
            })
            .collect();
        all.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        (self.rv, all)
    }
}
