//! [`ClusterSet`]: the clusters added to it, engaged while it runs.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::BoxError;
use crate::cache::CacheOptions;
use crate::multicluster::aware::{Aware, Provider};
use crate::multicluster::cluster::Cluster;
use crate::multicluster::error::Error;

/// A provider of the clusters added to it: a static list (add them before the manager starts),
/// or a set changed at run time ([`add`](Self::add) engages at once, [`remove`](Self::remove)
/// disengages). Each engagement gets a fresh [`Cluster`] (a new cache) from the member's
/// client and cache options. Cheap to clone; clones are the same set.
///
/// ```
/// use controller_runtime::multicluster::providers::ClusterSet;
/// # async fn f(member_1: kube_client::Client) -> Result<(), controller_runtime::multicluster::Error> {
/// let set = ClusterSet::new();
/// set.add("member-1", member_1).await?;
/// assert_eq!(set.names(), ["member-1"]);
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct ClusterSet {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    cache_options: Mutex<Option<CacheOptions>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The manager and the provider's context, while it runs.
    running: Option<(Arc<dyn Aware>, CancellationToken)>,
    members: BTreeMap<String, Member>,
}

struct Member {
    client: kube_client::Client,
    options: CacheOptions,
    /// The context of its engagement, while engaged.
    engaged: Option<CancellationToken>,
}

impl fmt::Debug for ClusterSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterSet")
            .field("members", &self.names())
            .finish_non_exhaustive()
    }
}

impl ClusterSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The cache options of the clusters [`add`](Self::add) adds from now on (default
    /// [`CacheOptions::default`]).
    pub fn with_cache_options(self, options: CacheOptions) -> Self {
        *self.inner.cache_options.lock() = Some(options);
        self
    }

    /// The names of its clusters, sorted.
    pub fn names(&self) -> Vec<String> {
        self.inner.state.lock().members.keys().cloned().collect()
    }

    /// Adds (or replaces) the cluster `name` reached through `client`; while the set runs, it
    /// is engaged at once (a replaced one disengaged first).
    pub async fn add(
        &self,
        name: impl Into<String>,
        client: kube_client::Client,
    ) -> Result<(), Error> {
        let options = self.inner.cache_options.lock().clone().unwrap_or_default();
        self.add_with_options(name, client, options).await
    }

    /// [`add`](Self::add), with the cluster's own cache options.
    pub async fn add_with_options(
        &self,
        name: impl Into<String>,
        client: kube_client::Client,
        options: CacheOptions,
    ) -> Result<(), Error> {
        let name = name.into();
        if name.is_empty() {
            return Err(Error::ReservedName);
        }
        let (running, replaced) = {
            let mut state = self.inner.state.lock();
            let old = state.members.insert(
                name.clone(),
                Member {
                    client,
                    options,
                    engaged: None,
                },
            );
            (state.running.clone(), old.and_then(|m| m.engaged))
        };
        let Some((aware, ctx)) = running else {
            return Ok(());
        };
        if let Some(token) = replaced {
            aware.disengage(&name).await;
            token.cancel();
        }
        self.engage(&aware, &ctx, &name).await
    }

    /// Removes the cluster `name`, disengaging it (waited for) while the set runs. Returns
    /// whether it was in the set.
    pub async fn remove(&self, name: &str) -> bool {
        let (member, running) = {
            let mut state = self.inner.state.lock();
            (state.members.remove(name), state.running.clone())
        };
        let Some(member) = member else {
            return false;
        };
        // Disengaged first, waited for; only then is the engagement's context cancelled. The
        // other order lets the manager see the cancellation and start disengaging on its own,
        // and the call below would find the cluster gone and return before it is.
        if let Some((aware, _)) = running {
            aware.disengage(name).await;
        }
        if let Some(token) = member.engaged {
            token.cancel();
        }
        true
    }

    /// Engages member `name` with a new cluster.
    async fn engage(
        &self,
        aware: &Arc<dyn Aware>,
        ctx: &CancellationToken,
        name: &str,
    ) -> Result<(), Error> {
        let Some(cluster) = ({
            let state = self.inner.state.lock();
            (state.members.get(name))
                .map(|m| Cluster::new(name, m.client.clone(), m.options.clone()))
        }) else {
            return Ok(());
        };
        let token = ctx.child_token();
        match aware.engage(token.clone(), cluster).await {
            Ok(()) => {
                if let Some(m) = self.inner.state.lock().members.get_mut(name) {
                    m.engaged = Some(token);
                }
                Ok(())
            }
            // engaged meanwhile by another call
            Err(Error::AlreadyEngaged(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl ClusterSet {
    /// Runs the set with `aware` and, beside it, `sync(provider, state)` at once and then
    /// every `interval` until `ctx` is cancelled: the loop of the providers that poll for their
    /// clusters and add and remove them here.
    pub(crate) async fn run_polling<P: Sync, S: Send>(
        &self,
        ctx: CancellationToken,
        aware: Arc<dyn Aware>,
        interval: Duration,
        (provider, mut state): (&P, S),
        sync: for<'s> fn(&'s P, &'s mut S) -> BoxFuture<'s, ()>,
    ) -> Result<(), BoxError> {
        let poll = async {
            loop {
                sync(provider, &mut state).await;
                tokio::select! {
                    () = ctx.cancelled() => return,
                    () = tokio::time::sleep(interval) => {}
                }
            }
        };
        let (run, ()) = tokio::join!(self.start(ctx.clone(), aware), poll);
        run
    }
}

impl Provider for ClusterSet {
    fn start(
        &self,
        ctx: CancellationToken,
        aware: Arc<dyn Aware>,
    ) -> BoxFuture<'_, Result<(), BoxError>> {
        Box::pin(async move {
            let names: Vec<String> = {
                let mut state = self.inner.state.lock();
                state.running = Some((aware.clone(), ctx.clone()));
                state.members.keys().cloned().collect()
            };
            for name in names {
                if let Err(e) = self.engage(&aware, &ctx, &name).await {
                    tracing::error!(cluster = %name, error = %e, "could not engage cluster");
                }
            }
            ctx.cancelled().await;
            let mut state = self.inner.state.lock();
            state.running = None;
            for member in state.members.values_mut() {
                member.engaged = None;
            }
            Ok(())
        })
    }

    fn describe(&self) -> String {
        "cluster set provider".into()
    }
}
