//! The assigner: on the ring's coordinator, every object of the controller's kind gets the
//! shard rendezvous hashing picks among the live members, through a drain when it leaves a
//! live one.

use std::collections::{BTreeMap, HashMap};
use std::marker::PhantomData;
use std::sync::Arc;

use futures::StreamExt;
use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use kube_core::params::ListParams;
use serde::Deserialize;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::assignment::assign;
use super::drain::patch_object;
use super::labels::{drain_label, shard_label};
use super::metrics::ShardMetrics;
use super::ring::Membership;
use crate::BoxError;
use crate::ObjectKey;
use crate::cache::CacheObject;

/// Objects listed per page.
const PAGE: u32 = 500;
/// Assignment writes in flight at once.
const WRITES_IN_FLIGHT: usize = 16;

#[derive(Deserialize)]
struct MetaList {
    #[serde(default)]
    metadata: ListMeta,
    #[serde(default)]
    items: Vec<MetaItem>,
}

#[derive(Deserialize)]
struct MetaItem {
    metadata: ObjectMeta,
}

/// What the assigner does to one object.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// Write this shard (an unassigned object, or one whose replica is dead).
    Assign(String),
    /// Ask the current (live) shard to let go.
    Drain,
}

/// The step for an object with `current` shard, `draining` or not, when rendezvous hashing
/// wants `desired` and `live` says who is live. `None`: nothing to do now.
fn step(current: Option<&str>, draining: bool, desired: &str, live: &[String]) -> Option<Step> {
    match current {
        None => Some(Step::Assign(desired.to_string())),
        Some(cur) if !live.iter().any(|m| m == cur) => Some(Step::Assign(desired.to_string())),
        // Live and draining: wait for its acknowledgement, even if it would now stay.
        Some(_) if draining => None,
        Some(cur) if cur == desired => None,
        Some(_) => Some(Step::Drain),
    }
}

/// The ring's runnable: it renews this replica's Lease, reads the ring, and on the coordinator
/// assigns objects.
pub(crate) struct Sharder<K: CacheObject> {
    shard: Arc<Membership>,
    kube: kube_client::Client,
    dt: K::DynamicType,
    metrics: ShardMetrics,
    /// Drains asked by this replica, for their duration.
    drains: parking_lot::Mutex<HashMap<ObjectKey, Instant>>,
    _kind: PhantomData<fn() -> K>,
}

impl<K: CacheObject> Sharder<K> {
    pub(crate) fn new(
        shard: Arc<Membership>,
        kube: kube_client::Client,
        dt: K::DynamicType,
        metrics: ShardMetrics,
    ) -> Self {
        Sharder {
            shard,
            kube,
            dt,
            metrics,
            drains: parking_lot::Mutex::new(HashMap::new()),
            _kind: PhantomData,
        }
    }

    /// Runs the ring and the assigner until `ctx` is cancelled.
    pub(crate) fn run(
        self: Arc<Self>,
        ctx: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        Box::pin(async move {
            let ring = self.shard.run(self.kube.clone(), ctx.clone());
            let assigner = self.assign_loop(ctx.clone());
            let (ring, ()) = tokio::join!(ring, assigner);
            ring
        })
    }

    async fn assign_loop(&self, ctx: CancellationToken) {
        let mut changes = self.shard.subscribe();
        let period = self.shard.options().assign_period;
        loop {
            tokio::select! {
                () = ctx.cancelled() => return,
                _ = changes.changed() => {}
                () = tokio::time::sleep(period) => {}
            }
            if !self.shard.coordinates() {
                continue;
            }
            if let Err(e) = self.pass(&ctx).await {
                tracing::warn!(controller = %self.shard.controller(), error = %e, "assigning shards failed; retrying");
            }
        }
    }

    /// One pass over every object: assign, drain, and count.
    async fn pass(&self, ctx: &CancellationToken) -> Result<(), kube_client::Error> {
        let live = self.shard.live();
        if live.is_empty() {
            return Ok(());
        }
        let controller = self.shard.controller();
        let (shard_key, drain_key) = (shard_label(controller), drain_label(controller));
        let mut counts: BTreeMap<String, i64> = live.iter().map(|m| (m.clone(), 0)).collect();
        let mut writes = Vec::new();
        let mut continue_token: Option<String> = None;
        loop {
            let mut params = ListParams::default().limit(PAGE);
            if let Some(token) = &continue_token {
                params = params.continue_token(token);
            }
            let request = kube_core::Request::new(K::url_path(&self.dt, None))
                .list_metadata(&params)
                .map_err(kube_client::Error::BuildRequest)?;
            let page: MetaList = self.kube.request(request).await?;
            for item in page.items {
                let meta = item.metadata;
                let Some(name) = meta.name.clone() else {
                    continue;
                };
                let key = ObjectKey {
                    namespace: meta.namespace.clone(),
                    name,
                };
                let labels = meta.labels.unwrap_or_default();
                let current = labels.get(&shard_key).map(String::as_str);
                let draining = labels.contains_key(&drain_key);
                if current.is_none()
                    && let Some(asked) = self.drains.lock().remove(&key)
                {
                    self.metrics.drained(controller, asked.elapsed());
                }
                let Some(desired) = assign(&key, &live) else {
                    continue;
                };
                if meta.deletion_timestamp.is_some() {
                    // Being deleted: its shard finishes it (finalizers) wherever it is.
                    if let Some(cur) = current {
                        *counts.entry(cur.to_string()).or_default() += 1;
                    }
                    continue;
                }
                let todo = step(current, draining, desired, &live);
                let counted = match &todo {
                    Some(Step::Assign(to)) => to.clone(),
                    _ => current.unwrap_or(desired).to_string(),
                };
                *counts.entry(counted).or_default() += 1;
                if let Some(todo) = todo {
                    let version = meta.resource_version.clone().unwrap_or_default();
                    writes.push((key, current.map(str::to_string), version, todo));
                }
            }
            continue_token = page.metadata.continue_.filter(|t| !t.is_empty());
            if continue_token.is_none() {
                break;
            }
        }
        self.metrics
            .set_objects(controller, &counts.into_iter().collect::<Vec<_>>());
        let shard_key = &shard_key;
        let drain_key = &drain_key;
        let mut results = futures::stream::iter(writes)
            .map(|(key, current, version, todo)| async move {
                if ctx.is_cancelled() || !self.shard.coordinates() {
                    return Ok(());
                }
                // The resourceVersion makes each write conditional on what was decided on.
                let patch = match &todo {
                    Step::Assign(to) => serde_json::json!({"metadata": {
                        "resourceVersion": version,
                        "labels": { shard_key.clone(): to, drain_key.clone(): null },
                    }}),
                    Step::Drain => serde_json::json!({"metadata": {
                        "resourceVersion": version,
                        "labels": { drain_key.clone(): "true" },
                    }}),
                };
                let result = patch_object::<K>(&self.kube, &self.dt, &key, &patch).await;
                match (&result, &todo) {
                    (Ok(()), Step::Drain) => {
                        self.metrics.moved(controller);
                        self.drains.lock().insert(key.clone(), Instant::now());
                    }
                    (Ok(()), Step::Assign(to)) => {
                        if current.is_some() {
                            self.metrics.moved(controller);
                        }
                        tracing::trace!(%controller, %key, shard = %to, "assigned");
                    }
                    _ => {}
                }
                match result {
                    // Changed since listed, or gone: the next pass sees it anew.
                    Err(kube_client::Error::Api(s)) if s.code == 409 || s.code == 404 => Ok(()),
                    other => other,
                }
            })
            .buffer_unordered(WRITES_IN_FLIGHT);
        let mut first_error = None;
        while let Some(result) = results.next().await {
            if let Err(e) = result {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn unassigned_objects_are_assigned() {
        assert_eq!(
            step(None, false, "a", &live(&["a", "b"])),
            Some(Step::Assign("a".into()))
        );
    }

    #[test]
    fn a_live_shard_is_drained_before_the_object_moves() {
        let members = live(&["a", "b"]);
        assert_eq!(step(Some("a"), false, "b", &members), Some(Step::Drain));
        // Draining: wait for the acknowledgement, whatever is now desired.
        assert_eq!(step(Some("a"), true, "b", &members), None);
        assert_eq!(step(Some("a"), true, "a", &members), None);
        assert_eq!(step(Some("a"), false, "a", &members), None);
    }

    #[test]
    fn a_dead_shards_objects_move_directly() {
        let members = live(&["a", "b"]);
        assert_eq!(
            step(Some("c"), false, "b", &members),
            Some(Step::Assign("b".into()))
        );
        assert_eq!(
            step(Some("c"), true, "a", &members),
            Some(Step::Assign("a".into()))
        );
    }
}
