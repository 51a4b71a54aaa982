//! Assertions that wait: poll a read until what it returns passes a check, or fail after a
//! timeout saying what was last seen (controller-runtime's `komega`: `Eventually(Object(obj))
//! .Should(...)`, `Eventually(Get(obj))`, `Eventually(ObjectList(list))`).
//!
//! ```no_run
//! use std::time::Duration;
//! use controller_runtime::ObjectKey;
//! use controller_runtime::envtest::{Environment, eventually};
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! let env = Environment::new().start().await?;
//! let client = env.client();
//! // ... a controller writes a ConfigMap ...
//! let cm: ConfigMap = eventually(&client)
//!     .with_timeout(Duration::from_secs(10))
//!     .until_object(&ObjectKey::new("default", "settings"), |cm: &ConfigMap| {
//!         cm.data.as_ref().is_some_and(|d| d.contains_key("mode"))
//!     })
//!     .await?;
//! eventually(&client).until_list_len::<ConfigMap>(Some("default"), 2).await?;
//! eventually(&client).until_gone::<ConfigMap>(&ObjectKey::new("default", "old")).await?;
//! # Ok(()) }
//! ```
//!
//! Reads go to the API server (a `kube_client::Client`) or to a started
//! [`Cache`] (also through a [`client::Client`](crate::client::Client),
//! whose reads are the cache's): see [`Source`].

use std::fmt::Debug;
use std::time::Duration;

use kube_client::api::ListParams;
use kube_client::core::ObjectList;
use kube_core::Resource;
use tokio::time::Instant;

use crate::ObjectKey;
use crate::cache::{Cache, CacheObject, ListOptions};

/// Where an [`Eventually`] reads: the API server or a cache.
#[derive(Clone)]
pub enum Source {
    /// Reads from the API server through this client (komega's default).
    Api(kube_client::Client),
    /// Reads from this cache, which must be started (the informer of a kind is made and
    /// synced on its first read).
    Cache(Cache),
}

impl From<kube_client::Client> for Source {
    fn from(client: kube_client::Client) -> Self {
        Source::Api(client)
    }
}

impl From<&kube_client::Client> for Source {
    fn from(client: &kube_client::Client) -> Self {
        Source::Api(client.clone())
    }
}

impl From<Cache> for Source {
    fn from(cache: Cache) -> Self {
        Source::Cache(cache)
    }
}

impl From<&Cache> for Source {
    fn from(cache: &Cache) -> Self {
        Source::Cache(cache.clone())
    }
}

impl From<&crate::client::Client> for Source {
    /// The client's cache, where its reads come from.
    fn from(client: &crate::client::Client) -> Self {
        Source::Cache(client.cache().clone())
    }
}

/// Why an [`Eventually`] failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The check did not pass within the timeout.
    #[error("{what}: not true within {timeout:?}; last seen: {last_seen}")]
    Timeout {
        /// What was waited for, e.g. `ConfigMap default/settings to pass the check`.
        what: String,
        /// The timeout.
        timeout: Duration,
        /// The last read's outcome: the object (as JSON, without `managedFields`), the
        /// list's keys, `not found`, or the read's error.
        last_seen: String,
    },
}

/// Polls a read until a check passes; made by [`eventually`].
#[derive(Clone)]
pub struct Eventually {
    source: Source,
    timeout: Duration,
    poll_interval: Duration,
}

/// Waits on reads from `source` (a `kube_client::Client`, a [`Cache`], or a
/// [`client::Client`](crate::client::Client)'s cache): see the [module](self).
pub fn eventually(source: impl Into<Source>) -> Eventually {
    Eventually {
        source: source.into(),
        timeout: Duration::from_secs(10),
        poll_interval: Duration::from_millis(10),
    }
}

/// One read's outcome.
enum Seen<T> {
    Found(T),
    NotFound,
    Failed(String),
}

impl Eventually {
    /// How long to wait before failing.
    ///
    /// Default: 10 s (Gomega's `Eventually` waits 1 s, too little for a loaded CI machine).
    /// controller-runtime: `Eventually(...).WithTimeout` (Gomega).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long to wait between reads.
    ///
    /// Default: 10 ms (Gomega's). controller-runtime: `Eventually(...).WithPolling` (Gomega).
    pub fn with_poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// Waits until the object of `key` exists and `check` passes, and returns it.
    pub async fn until_object<K>(
        &self,
        key: &ObjectKey,
        mut check: impl FnMut(&K) -> bool,
    ) -> Result<K, Error>
    where
        K: CacheObject + Resource<DynamicType = ()>,
    {
        let what = format!("{} {key} to pass the check", K::kind(&()));
        let done = |seen: &Seen<K>| matches!(seen, Seen::Found(obj) if check(obj));
        self.poll(what, || self.get::<K>(key), done, describe_object)
            .await
            .map(|seen| match seen {
                Seen::Found(obj) => obj,
                _ => unreachable!("only a found object passes"),
            })
    }

    /// Waits until the object of `key` exists, and returns it (komega's `Get`).
    pub async fn until_exists<K>(&self, key: &ObjectKey) -> Result<K, Error>
    where
        K: CacheObject + Resource<DynamicType = ()>,
    {
        self.until_object(key, |_: &K| true).await
    }

    /// Waits until the object of `key` is gone (not found).
    pub async fn until_gone<K>(&self, key: &ObjectKey) -> Result<(), Error>
    where
        K: CacheObject + Resource<DynamicType = ()>,
    {
        let what = format!("{} {key} to be gone", K::kind(&()));
        self.poll(
            what,
            || self.get::<K>(key),
            |seen| matches!(seen, Seen::NotFound),
            describe_object,
        )
        .await
        .map(drop)
    }

    /// Waits until the objects of `namespace` (all namespaces with `None`) pass `check`, and
    /// returns them (komega's `ObjectList`).
    pub async fn until_list<K>(
        &self,
        namespace: Option<&str>,
        mut check: impl FnMut(&[K]) -> bool,
    ) -> Result<Vec<K>, Error>
    where
        K: CacheObject + Resource<DynamicType = ()>,
    {
        let scope = namespace.map_or("all namespaces".to_string(), |ns| format!("namespace {ns}"));
        let what = format!("the {} list of {scope} to pass the check", K::kind(&()));
        let done = |seen: &Seen<Vec<K>>| matches!(seen, Seen::Found(items) if check(items));
        self.poll(
            what,
            || self.list::<K>(namespace),
            done,
            |items| describe_list(items),
        )
        .await
        .map(|seen| match seen {
            Seen::Found(items) => items,
            _ => unreachable!("only a list passes"),
        })
    }

    /// Waits until `namespace` (all namespaces with `None`) holds exactly `len` objects of
    /// `K`, and returns them.
    pub async fn until_list_len<K>(
        &self,
        namespace: Option<&str>,
        len: usize,
    ) -> Result<Vec<K>, Error>
    where
        K: CacheObject + Resource<DynamicType = ()>,
    {
        let scope = namespace.map_or("all namespaces".to_string(), |ns| format!("namespace {ns}"));
        let what = format!("{len} {} in {scope}", K::kind(&()));
        let done = |seen: &Seen<Vec<K>>| matches!(seen, Seen::Found(items) if items.len() == len);
        self.poll(
            what,
            || self.list::<K>(namespace),
            done,
            |items| describe_list(items),
        )
        .await
        .map(|seen| match seen {
            Seen::Found(items) => items,
            _ => unreachable!("only a list passes"),
        })
    }

    /// Waits until `check` returns `Some`, and returns what it held: for what no object read
    /// says (a cache's sync errors, several objects at once). `what` names the wait in the
    /// timeout's error. The source is not read.
    ///
    /// ```no_run
    /// # async fn f(cache: controller_runtime::cache::Cache) -> Result<(), Box<dyn std::error::Error>> {
    /// use controller_runtime::envtest::eventually;
    ///
    /// let forbidden = eventually(&cache)
    ///     .until("the cache reports a refused list", || async {
    ///         cache.sync_errors().into_iter().find(|(_, e)| e.is_forbidden())
    ///     })
    ///     .await?;
    /// # let _ = forbidden; Ok(()) }
    /// ```
    pub async fn until<T, F>(&self, what: &str, mut check: impl FnMut() -> F) -> Result<T, Error>
    where
        F: Future<Output = Option<T>>,
    {
        let read = || {
            let next = check();
            async move {
                match next.await {
                    Some(value) => Seen::Found(value),
                    None => Seen::NotFound,
                }
            }
        };
        self.poll(
            what.to_string(),
            read,
            |seen| matches!(seen, Seen::Found(_)),
            |_| String::new(),
        )
        .await
        .map(|seen| match seen {
            Seen::Found(value) => value,
            _ => unreachable!("only a value passes"),
        })
    }

    /// Reads until `done` says yes or the timeout passes; a read still running at the
    /// deadline is abandoned (the previous one is reported).
    async fn poll<T, F>(
        &self,
        what: String,
        mut read: impl FnMut() -> F,
        mut done: impl FnMut(&Seen<T>) -> bool,
        describe: impl Fn(&T) -> String,
    ) -> Result<Seen<T>, Error>
    where
        F: Future<Output = Seen<T>>,
    {
        let deadline = Instant::now() + self.timeout;
        let mut last = String::from("nothing (no read finished)");
        loop {
            match tokio::time::timeout_at(deadline, read()).await {
                Ok(seen) => {
                    if done(&seen) {
                        return Ok(seen);
                    }
                    last = match &seen {
                        Seen::Found(value) => describe(value),
                        Seen::NotFound => "not found".to_string(),
                        Seen::Failed(error) => format!("error: {error}"),
                    };
                }
                Err(_elapsed) => {}
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::Timeout {
                    what,
                    timeout: self.timeout,
                    last_seen: last,
                });
            }
            tokio::time::sleep_until((now + self.poll_interval).min(deadline)).await;
        }
    }

    async fn get<K>(&self, key: &ObjectKey) -> Seen<K>
    where
        K: CacheObject + Resource<DynamicType = ()>,
    {
        match &self.source {
            Source::Cache(cache) => match cache.get_with::<K>(&(), key).await {
                Ok(obj) => Seen::Found((*obj).clone()),
                Err(crate::cache::Error::NotFound { .. }) => Seen::NotFound,
                Err(e) => Seen::Failed(chain(&e)),
            },
            Source::Api(client) => {
                let request = kube_core::Request::new(K::url_path(&(), key.namespace.as_deref()));
                let built = match request.get(&key.name, &Default::default()) {
                    Ok(built) => built,
                    Err(e) => return Seen::Failed(chain(&e)),
                };
                match client.request::<K>(built).await {
                    Ok(obj) => Seen::Found(obj),
                    Err(kube_client::Error::Api(status)) if status.code == 404 => Seen::NotFound,
                    Err(e) => Seen::Failed(chain(&e)),
                }
            }
        }
    }

    async fn list<K>(&self, namespace: Option<&str>) -> Seen<Vec<K>>
    where
        K: CacheObject + Resource<DynamicType = ()>,
    {
        match &self.source {
            Source::Cache(cache) => {
                let mut options = ListOptions::default();
                if let Some(ns) = namespace {
                    options = options.in_namespace(ns);
                }
                match cache.list_with::<K>(&(), &options).await {
                    Ok(items) => Seen::Found(items.iter().map(|o| (**o).clone()).collect()),
                    Err(e) => Seen::Failed(chain(&e)),
                }
            }
            Source::Api(client) => {
                let request = kube_core::Request::new(K::url_path(&(), namespace));
                let built = match request.list(&ListParams::default()) {
                    Ok(built) => built,
                    Err(e) => return Seen::Failed(chain(&e)),
                };
                match client.request::<ObjectList<K>>(built).await {
                    Ok(list) => Seen::Found(list.items),
                    Err(e) => Seen::Failed(chain(&e)),
                }
            }
        }
    }
}

/// An object read, for the timeout's message: its JSON without `managedFields`.
fn describe_object<K: serde::Serialize>(object: &K) -> String {
    let mut value = serde_json::to_value(object).unwrap_or_default();
    if let Some(meta) = value
        .get_mut("metadata")
        .and_then(serde_json::Value::as_object_mut)
    {
        meta.remove("managedFields");
    }
    value.to_string()
}

/// A list read, for the timeout's message: its keys.
fn describe_list<K: Resource>(items: &[K]) -> String {
    let keys: Vec<String> = items.iter().map(|o| ObjectKey::of(o).to_string()).collect();
    format!("{} objects: [{}]", keys.len(), keys.join(", "))
}

/// An error and its sources, one line.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

impl Debug for Eventually {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Eventually")
            .field("timeout", &self.timeout)
            .field("poll_interval", &self.poll_interval)
            .finish_non_exhaustive()
    }
}
