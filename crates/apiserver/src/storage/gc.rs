//! The synchronous controllers under every write: finalizers and `deletionTimestamp`, the
//! propagation policies with ownerReference garbage collection, namespace termination and CRD
//! cleanup. The DELETE verbs (`delete.rs`) start deletions here; the commits of creates and
//! updates (`commit.rs`) hand their follow-ups here.
//!
//! The real server runs the garbage collector, the namespace controller and the CRD finalizer
//! as background controllers. Here they run **synchronously inside the write that makes them
//! due**, from a work list of [`Task`]s: after each removal, the removed object's dependents
//! (Background GC), its owners (Foreground deletion waiting for it), its namespace (if
//! terminating) and its CRD (if being deleted) are re-checked. The end states and the events
//! watchers see are those of the real server; tests need no waiting.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

use serde_json::Value;

use super::meta;
use super::store::{Loc, ObjKey, State};
use crate::error::ApiError;
use crate::resource::ResourceInfo;
use crate::validation::{FieldError, invalid_kind};

/// The finalizer of foreground deletion.
pub(crate) const FOREGROUND: &str = "foregroundDeletion";
/// The finalizer of orphaning deletion.
pub(crate) const ORPHAN: &str = "orphan";
/// The finalizer a CRD carries while its objects are removed.
pub(crate) const CRD_CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";
/// Storage key of CRDs.
pub(crate) const CRD_KEY: &str = "customresourcedefinitions.apiextensions.k8s.io";

/// `propagationPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Policy {
    /// Remove the object now; the GC removes dependents afterwards.
    Background,
    /// Remove dependents first (finalizer `foregroundDeletion`).
    Foreground,
    /// Keep dependents, removing their ownerReferences (finalizer `orphan`).
    Orphan,
}

impl Policy {
    /// The policy a deletion of `res` names, or the kind's default when it names none.
    pub(crate) fn of(res: &ResourceInfo, s: Option<&str>) -> Result<Self, ApiError> {
        match s {
            None | Some("")
                if !res.custom
                    && crate::kinds::strategy_of(&res.group, &res.plural).orphan_by_default =>
            {
                Ok(Policy::Orphan)
            }
            s => Policy::parse(s),
        }
    }

    pub(crate) fn parse(s: Option<&str>) -> Result<Self, ApiError> {
        match s {
            None | Some("") | Some("Background") => Ok(Policy::Background),
            Some("Foreground") => Ok(Policy::Foreground),
            Some("Orphan") => Ok(Policy::Orphan),
            Some(other) => Err(invalid_kind(
                "DeleteOptions",
                "meta.k8s.io",
                "",
                &[FieldError::not_supported(
                    "propagationPolicy",
                    &Value::from(other),
                    &["Foreground", "Background", "Orphan", "nil"],
                )],
            )),
        }
    }
}

/// Work for the synchronous controllers.
#[derive(Debug)]
pub(crate) enum Task {
    /// Re-examine the object with this uid (pending finalizers, namespace, CRD).
    Recheck(String),
    /// Delete an object with a policy.
    Delete(Loc, Policy),
    /// An object was removed: handle its dependents, owners, namespace and CRD.
    Removed(String, Arc<Value>),
    /// An object's ownerReferences were set: collect it if its owners are absent.
    Owners(String),
}

/// What a deletion did.
pub(crate) enum Outcome {
    /// Still there, marked for deletion (the marked state).
    Marked(Arc<Value>),
    /// Removed (its last state).
    Removed(Arc<Value>),
}

/// The keys of one namespace in an object map.
pub(crate) fn namespace_range(ns: &str) -> (Bound<ObjKey>, Bound<ObjKey>) {
    (
        Bound::Included((ns.to_string(), String::new())),
        Bound::Excluded((format!("{ns}\u{0}"), String::new())),
    )
}

/// Whether a namespace is held by `spec.finalizers` (the namespace controller's `kubernetes`).
pub(crate) fn held_by_spec(obj: &Value) -> bool {
    obj.get("kind").and_then(Value::as_str) == Some("Namespace")
        && !meta::string_list(meta::get_path(obj, ".spec.finalizers")).is_empty()
}

/// Runs tasks until none is left.
pub(crate) fn run(st: &mut State, tasks: Vec<Task>) {
    run_queue(st, tasks.into());
}

pub(crate) fn run_queue(st: &mut State, mut queue: VecDeque<Task>) {
    while let Some(task) = queue.pop_front() {
        match task {
            Task::Recheck(uid) => recheck(st, &uid, &mut queue),
            Task::Delete(loc, policy) => {
                delete_one(st, &loc, policy, &mut queue);
            }
            Task::Removed(res, obj) => after_removal(st, &res, &obj, &mut queue),
            Task::Owners(uid) => check_owners(st, &uid, &mut queue),
        }
    }
}

/// Removes an object now and runs the follow-ups; answers its last state.
pub(crate) fn remove_now(
    st: &mut State,
    res: &str,
    key: &super::store::ObjKey,
) -> Option<Arc<Value>> {
    let mut queue = VecDeque::new();
    let last = remove_queued(
        st,
        &Loc {
            res: res.to_string(),
            key: key.clone(),
        },
        &mut queue,
    )?;
    run_queue(st, queue);
    Some(last)
}

fn remove_queued(st: &mut State, loc: &Loc, queue: &mut VecDeque<Task>) -> Option<Arc<Value>> {
    let last = st.remove(&loc.res, &loc.key)?;
    queue.push_back(Task::Removed(loc.res.clone(), last.clone()));
    Some(last)
}

/// The finalizers an object gets from a deletion with `policy` (and the CRD cleanup one).
pub(crate) fn finalizers_for(loc: &Loc, obj: &Value, policy: Policy) -> Vec<String> {
    let mut fins = meta::finalizers(obj);
    let mut add = |f: &str| {
        if !fins.iter().any(|x| x == f) {
            fins.push(f.to_string());
        }
    };
    match policy {
        Policy::Foreground => add(FOREGROUND),
        Policy::Orphan => add(ORPHAN),
        Policy::Background => {}
    }
    if loc.res == CRD_KEY {
        add(CRD_CLEANUP);
    }
    if policy == Policy::Foreground {
        fins.retain(|f| f != ORPHAN);
    } else if policy == Policy::Orphan {
        fins.retain(|f| f != FOREGROUND);
    }
    fins
}

/// The marked state of an object being deleted with `finalizers`.
pub(crate) fn marked(loc: &Loc, obj: &Value, finalizers: &[String]) -> Value {
    let mut new = obj.clone();
    meta::set_finalizers(&mut new, finalizers);
    if !meta::is_deleting(obj) {
        meta::set_meta(&mut new, "deletionTimestamp", Value::from(meta::now()));
        meta::set_meta(&mut new, "deletionGracePeriodSeconds", Value::from(0));
        if let Some(g) = obj
            .get("metadata")
            .and_then(|m| m.get("generation"))
            .and_then(Value::as_i64)
            && g > 0
        {
            meta::set_meta(&mut new, "generation", Value::from(g + 1));
        }
    }
    if loc.res == "namespaces" {
        meta::set_path(&mut new, ".status.phase", Value::from("Terminating"));
    }
    if loc.res == CRD_KEY {
        super::crd::set_condition(
            &mut new,
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        );
    }
    new
}

/// Deletes (marks or removes) one object, queueing the follow-ups.
pub(crate) fn delete_one(
    st: &mut State,
    loc: &Loc,
    policy: Policy,
    queue: &mut VecDeque<Task>,
) -> Option<Outcome> {
    let obj = st.get(&loc.res, &loc.key)?.clone();
    let fins = finalizers_for(loc, &obj, policy);
    if fins.is_empty() && !held_by_spec(&obj) {
        return remove_queued(st, loc, queue).map(Outcome::Removed);
    }
    let was_deleting = meta::is_deleting(&obj);
    let new = marked(loc, &obj, &fins);
    let stored = if meta::same_content(&obj, &new) {
        obj
    } else {
        st.put(&loc.res, loc.key.clone(), new)
    };
    if !was_deleting {
        if loc.res == "namespaces" {
            let ns = loc.key.1.clone();
            for (res, objs) in st.data.iter() {
                for (key, _) in objs.range(namespace_range(&ns)) {
                    queue.push_back(Task::Delete(
                        Loc {
                            res: res.clone(),
                            key: key.clone(),
                        },
                        Policy::Background,
                    ));
                }
            }
        }
        if loc.res == CRD_KEY
            && let Some(objs) = st.data.get(&loc.key.1)
        {
            for key in objs.keys() {
                queue.push_back(Task::Delete(
                    Loc {
                        res: loc.key.1.clone(),
                        key: key.clone(),
                    },
                    Policy::Background,
                ));
            }
        }
    }
    queue.push_back(Task::Recheck(meta::uid(&stored).to_string()));
    Some(Outcome::Marked(stored))
}

/// Re-examines a deleting object: processes the `orphan` and `foregroundDeletion` finalizers,
/// namespace finalization and CRD cleanup; removes it when nothing holds it any more.
fn recheck(st: &mut State, uid: &str, queue: &mut VecDeque<Task>) {
    let Some((loc, obj)) = st.by_uid(uid) else {
        return;
    };
    if !meta::is_deleting(&obj) {
        return;
    }
    let mut fins = meta::finalizers(&obj);
    let mut new = (*obj).clone();
    let mut changed = false;
    if fins.iter().any(|f| f == ORPHAN) {
        for dep_uid in st.dependents_of(uid) {
            let Some((dloc, dep)) = st.by_uid(&dep_uid) else {
                continue;
            };
            let mut d = (*dep).clone();
            let refs: Vec<Value> = meta::owner_refs(&d)
                .into_iter()
                .filter(|r| r.get("uid").and_then(Value::as_str) != Some(uid))
                .collect();
            meta::set_meta(
                &mut d,
                "ownerReferences",
                if refs.is_empty() {
                    Value::Null
                } else {
                    Value::from(refs)
                },
            );
            st.put(&dloc.res, dloc.key, d);
        }
        fins.retain(|f| f != ORPHAN);
        changed = true;
    }
    if fins.iter().any(|f| f == FOREGROUND) {
        let mut pending = false;
        let mut blocking = false;
        for dep_uid in st.dependents_of(uid) {
            let Some((dloc, dep)) = st.by_uid(&dep_uid) else {
                continue;
            };
            if !meta::is_deleting(&dep) && has_solid_owner(st, &dloc, &dep, uid) {
                // Another owner still stands: the dependent stays, without its references to
                // this owner and to owners that are gone or also waiting for their dependents
                // (the garbage collector's solid / dangling / waiting classification).
                let kept: Vec<Value> = meta::owner_refs(&dep)
                    .into_iter()
                    .filter(|r| {
                        r.get("uid")
                            .and_then(Value::as_str)
                            .is_some_and(|o| o != uid && is_solid_owner(st, &dloc, o))
                    })
                    .collect();
                let mut d = (*dep).clone();
                meta::set_meta(&mut d, "ownerReferences", Value::from(kept));
                st.put(&dloc.res, dloc.key, d);
            } else if !meta::is_deleting(&dep) {
                let policy = if st.dependents_of(&dep_uid).is_empty() {
                    Policy::Background
                } else {
                    if dependent_deleting_in_foreground(st, &dep_uid) {
                        unblock_owner_refs(st, &dloc, &dep);
                    }
                    Policy::Foreground
                };
                queue.push_back(Task::Delete(dloc, policy));
                pending = true;
            } else if meta::owner_refs(&dep).iter().any(|r| {
                r.get("uid").and_then(Value::as_str) == Some(uid)
                    && r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
            }) {
                blocking = true;
            }
        }
        if pending {
            // A removal queues a re-check of this owner; a dependent that is only marked
            // (held by finalizers) needs one queued after its deletion.
            queue.push_back(Task::Recheck(uid.to_string()));
            return;
        }
        if !blocking {
            fins.retain(|f| f != FOREGROUND);
            changed = true;
        }
    }
    if loc.res == "namespaces" && held_by_spec(&obj) {
        let ns = &loc.key.1;
        let empty = st
            .data
            .iter()
            .all(|(_, objs)| objs.range(namespace_range(ns)).next().is_none());
        if empty {
            meta::set_path(&mut new, ".spec.finalizers", Value::Array(Vec::new()));
            if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove("finalizers");
            }
            changed = true;
        }
    }
    if loc.res == CRD_KEY && fins.iter().any(|f| f == CRD_CLEANUP) {
        let res = loc.key.1.clone();
        if st.data.get(&res).is_none_or(|objs| objs.is_empty()) {
            st.registry.remove_crd(&res);
            st.watchers.close_resource(&res);
            st.data.remove(&res);
            fins.retain(|f| f != CRD_CLEANUP);
            changed = true;
        }
    }
    if !changed {
        return;
    }
    meta::set_finalizers(&mut new, &fins);
    if fins.is_empty() && !held_by_spec(&new) {
        // Only the namespace's own spec finalizer is visible as a separate write (the real
        // namespace controller finalizes, then the namespace goes).
        if loc.res == "namespaces" {
            st.put(&loc.res, loc.key.clone(), new);
        }
        remove_queued(st, &loc, queue);
    } else {
        st.put(&loc.res, loc.key.clone(), new);
    }
}

/// Whether the owner `owner_uid` of a dependent at `dep` stands: it exists where the
/// dependent may refer to it (its namespace, or cluster-scoped) and is not itself waiting for
/// its dependents' deletion (deleting with `foregroundDeletion`).
fn is_solid_owner(st: &State, dep: &Loc, owner_uid: &str) -> bool {
    st.by_uid(owner_uid).is_some_and(|(oloc, owner)| {
        (oloc.key.0.is_empty() || oloc.key.0 == dep.key.0)
            && !(meta::is_deleting(&owner)
                && meta::finalizers(&owner).iter().any(|f| f == FOREGROUND))
    })
}

/// Whether the dependent `obj` (at `loc`) has a standing owner other than `owner_uid`.
fn has_solid_owner(st: &State, loc: &Loc, obj: &Value, owner_uid: &str) -> bool {
    meta::owner_uids(obj)
        .iter()
        .any(|o| o != owner_uid && is_solid_owner(st, loc, o))
}

/// Whether one of the object's dependents is itself waiting for its dependents (deleting with
/// the `foregroundDeletion` finalizer): the sign of an ownership cycle.
fn dependent_deleting_in_foreground(st: &State, uid: &str) -> bool {
    st.dependents_of(uid).iter().any(|d| {
        st.by_uid(d).is_some_and(|(_, dep)| {
            meta::is_deleting(&dep) && meta::finalizers(&dep).iter().any(|f| f == FOREGROUND)
        })
    })
}

/// Makes an object's ownerReferences non-blocking before it is deleted in the foreground, as
/// the garbage collector does when a dependent of it already waits for its own dependents:
/// otherwise a cycle of blocking references (a owns b owns c owns a) would hold every member
/// for ever.
fn unblock_owner_refs(st: &mut State, loc: &Loc, obj: &Value) {
    let mut refs = meta::owner_refs(obj);
    let mut changed = false;
    for r in &mut refs {
        if r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true) {
            r["blockOwnerDeletion"] = Value::Bool(false);
            changed = true;
        }
    }
    if changed {
        let mut new = obj.clone();
        meta::set_meta(&mut new, "ownerReferences", Value::from(refs));
        st.put(&loc.res, loc.key.clone(), new);
    }
}

/// Follow-ups of a removal: Background GC of dependents, owners waiting in foreground
/// deletion, a terminating namespace, a CRD being deleted.
fn after_removal(st: &mut State, res: &str, obj: &Value, queue: &mut VecDeque<Task>) {
    let uid = meta::uid(obj).to_string();
    for dep_uid in st.dependents_of(&uid) {
        check_owners(st, &dep_uid, queue);
    }
    for owner in meta::owner_uids(obj) {
        queue.push_back(Task::Recheck(owner));
    }
    let ns = meta::meta_str(obj, "namespace").unwrap_or("");
    if !ns.is_empty()
        && let Some(nsobj) = st.get("namespaces", &(String::new(), ns.to_string()))
        && meta::is_deleting(nsobj)
    {
        queue.push_back(Task::Recheck(meta::uid(nsobj).to_string()));
    }
    if let Some(crd) = st.get(CRD_KEY, &(String::new(), res.to_string()))
        && meta::is_deleting(crd)
    {
        queue.push_back(Task::Recheck(meta::uid(crd).to_string()));
    }
}

/// The garbage collector's verdict on one dependent: when none of its owners exists (an
/// owner in another namespace does not count, as for the real GC), it is deleted in the
/// background; when some do, the references to the absent ones are removed.
fn check_owners(st: &mut State, uid: &str, queue: &mut VecDeque<Task>) {
    let Some((loc, dep)) = st.by_uid(uid) else {
        return;
    };
    let refs = meta::owner_refs(&dep);
    if refs.is_empty() {
        return;
    }
    let ns = loc.key.0.as_str();
    let exists = |r: &Value| {
        r.get("uid")
            .and_then(Value::as_str)
            .and_then(|u| st.uids.get(u))
            .is_some_and(|owner| owner.key.0.is_empty() || owner.key.0 == ns)
    };
    let kept: Vec<Value> = refs.iter().filter(|r| exists(r)).cloned().collect();
    if kept.len() == refs.len() {
        return;
    }
    if !kept.is_empty() {
        let mut d = (*dep).clone();
        meta::set_meta(&mut d, "ownerReferences", Value::from(kept));
        st.put(&loc.res, loc.key, d);
    } else if !meta::is_deleting(&dep) {
        queue.push_back(Task::Delete(loc, Policy::Background));
    }
}
