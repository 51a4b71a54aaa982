//! [`Fleet`]: embedded API servers started in this process, as member clusters for tests.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::set::ClusterSet;
use crate::BoxError;
use crate::envtest::{Environment, Running};
use crate::multicluster::aware::{Aware, Provider};
use crate::multicluster::error::Error;

/// A provider of test clusters, each an embedded API server ([`Environment`]) started in this
/// process in milliseconds: a fleet of ten costs less than one kind node. Members join with
/// [`add_member`](Self::add_member) and leave with [`remove_member`](Self::remove_member)
/// (disengaged, then their server stopped), before or while the manager runs. Cheap to clone;
/// clones are the same fleet.
///
/// ```
/// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
/// use controller_runtime::multicluster::providers::Fleet;
///
/// let fleet = Fleet::new();
/// fleet.add_members(2).await?;
/// assert_eq!(fleet.members(), ["member-1", "member-2"]);
/// let client = fleet.client("member-1").unwrap(); // create the test's objects with it
/// # let _ = client;
/// fleet.stop().await?;
/// # Ok::<(), controller_runtime::multicluster::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct Fleet {
    set: ClusterSet,
    environment: Arc<dyn Fn() -> Environment + Send + Sync>,
    members: Arc<Mutex<BTreeMap<String, Running>>>,
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet")
            .field("members", &self.set.names())
            .finish_non_exhaustive()
    }
}

impl Default for Fleet {
    fn default() -> Self {
        Self::new()
    }
}

impl Fleet {
    /// An empty fleet whose members are `Environment::new()` (no CRDs).
    pub fn new() -> Self {
        Fleet {
            set: ClusterSet::new(),
            environment: Arc::new(Environment::new),
            members: Arc::default(),
        }
    }

    /// Members made from the environment `make` returns (CRDs, manifests).
    pub fn with_environment(
        mut self,
        make: impl Fn() -> Environment + Send + Sync + 'static,
    ) -> Self {
        self.environment = Arc::new(make);
        self
    }

    /// The set of clusters underneath (its cache options apply to new members).
    pub fn cluster_set(&self) -> &ClusterSet {
        &self.set
    }

    /// Starts a member named `name` and adds it (engaged at once while the manager runs);
    /// returns a client of it.
    pub async fn add_member(&self, name: &str) -> Result<kube_client::Client, Error> {
        let running = (self.environment)().start().await?;
        let client = running.client();
        self.members.lock().insert(name.to_string(), running);
        self.set.add(name, client.clone()).await?;
        Ok(client)
    }

    /// Starts `n` members named `member-<i>`, numbered after the members there are.
    pub async fn add_members(&self, n: usize) -> Result<(), Error> {
        let first = self.members.lock().len() + 1;
        for i in first..first + n {
            self.add_member(&format!("member-{i}")).await?;
        }
        Ok(())
    }

    /// Disengages the member `name` (waited for) and stops its server. Returns whether it was
    /// a member.
    pub async fn remove_member(&self, name: &str) -> Result<bool, Error> {
        self.set.remove(name).await;
        let running = self.members.lock().remove(name);
        let Some(running) = running else {
            return Ok(false);
        };
        running.stop().await?;
        Ok(true)
    }

    /// The members' names, sorted.
    pub fn members(&self) -> Vec<String> {
        self.set.names()
    }

    /// A client of member `name`.
    pub fn client(&self, name: &str) -> Option<kube_client::Client> {
        self.members.lock().get(name).map(Running::client)
    }

    /// Removes every member.
    pub async fn stop(&self) -> Result<(), Error> {
        for name in self.set.names() {
            self.remove_member(&name).await?;
        }
        Ok(())
    }
}

impl Provider for Fleet {
    fn start(
        &self,
        ctx: CancellationToken,
        aware: Arc<dyn Aware>,
    ) -> BoxFuture<'_, Result<(), BoxError>> {
        self.set.start(ctx, aware)
    }

    fn describe(&self) -> String {
        "envtest fleet provider".into()
    }
}
