//! Reading from the cache: get and list return the cached `Arc`s, never deep copies (in a
//! type cached compactly, [`ByObject::compact`](super::ByObject::compact), each read decodes
//! its own copy instead).
//!
//! A cache of several namespaces answers a list without a namespace from all of them, and
//! refuses a get or list in a namespace it does not hold ([`Error::UnknownNamespace`]) rather
//! than answer "not found" for objects it never watched.
//!
//! A read of an object this process's client wrote waits until the informer has stored that
//! write (see [`ReadYourWrites`](super::ReadYourWrites)); a list waits so for every object of
//! its namespace (or of all) written and not stored yet.
//!
//! Label selectors are matched in memory; field selectors go through field indexes
//! ([`Cache::index_field`]), except `metadata.name` and `metadata.namespace`, which every
//! object has.

use std::sync::Arc;

use crt_labels::{FieldOperator, FieldSelector, LabelSelector};
use kube_core::Resource;

use super::consistency::Written;
use super::error::Error;
use super::informer::{Informer, seen_cached};
use super::informer_cache::{Cache, CacheObject};
use super::options::gvk_key;
use crate::ObjectKey;

/// What to list from the cache.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// Only this namespace.
    pub(crate) namespace: Option<String>,
    /// Only objects whose labels match.
    pub(crate) label_selector: Option<LabelSelector>,
    /// Only objects whose indexed fields match (exact `field=value` requirements).
    pub(crate) field_selector: Option<FieldSelector>,
}

impl ListOptions {
    /// Only objects in `namespace`.
    pub fn in_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Only objects matching a label selector in Kubernetes syntax (`app=web,tier!=db`).
    pub fn labels(mut self, selector: &str) -> Result<Self, Error> {
        self.label_selector = Some(selector.parse()?);
        Ok(self)
    }

    /// Only objects matching a field selector in Kubernetes syntax (`spec.nodeName=n1`).
    pub fn fields(mut self, selector: &str) -> Result<Self, Error> {
        self.field_selector = Some(selector.parse()?);
        Ok(self)
    }
}

/// Fails with [`Error::UnknownNamespace`] when `informer` does not cache `namespace`.
fn check_namespace<K: CacheObject>(
    informer: &Informer<K>,
    dt: &K::DynamicType,
    verb: &'static str,
    namespace: &str,
    target: impl FnOnce() -> String,
) -> Result<(), Error> {
    if informer.covers_namespace(namespace) {
        return Ok(());
    }
    Err(Error::UnknownNamespace {
        verb,
        target: target(),
        kind: K::kind(dt).into_owned(),
        cached: informer.namespaces().unwrap_or_default().join(", "),
    })
}

/// The index name under which a field is indexed.
pub(crate) fn field_index_name(field: &str) -> String {
    format!("field:{field}")
}

impl Cache {
    /// Indexes objects of type `K` by `field`, so cached lists can select on it
    /// (controller-runtime's `IndexField`). `extract` returns the values an object has.
    pub async fn index_field<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        field: &str,
        extract: impl Fn(&K) -> Vec<String> + Send + Sync + 'static,
    ) -> Result<(), Error> {
        let informer = self.get_informer_with::<K>(dt).await?;
        informer.add_index(field_index_name(field), Arc::new(extract))?;
        Ok(())
    }

    /// Reads one object of a static type from the cache.
    pub async fn get<K>(&self, key: &ObjectKey) -> Result<Arc<K>, Error>
    where
        K: CacheObject + Resource<DynamicType = ()>,
    {
        self.get_with::<K>(&(), key).await
    }

    /// Reads one object from the cache.
    pub async fn get_with<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        key: &ObjectKey,
    ) -> Result<Arc<K>, Error> {
        let informer = self.synced_informer::<K>(dt).await?;
        if let Some(ns) = &key.namespace {
            check_namespace(&informer, dt, "get", ns, || key.to_string())?;
        }
        if !self.written().is_empty() {
            let gvk = gvk_key::<K>(dt);
            if let Some(written) = self.written().get(&gvk, key) {
                self.await_writes(&informer, dt, &gvk, vec![(key.clone(), written)])
                    .await?;
            }
        }
        informer.store().get(key).ok_or_else(|| Error::NotFound {
            kind: K::kind(dt).into_owned(),
            key: key.to_string(),
        })
    }

    /// Lists objects of a static type from the cache.
    pub async fn list<K>(&self, options: &ListOptions) -> Result<Vec<Arc<K>>, Error>
    where
        K: CacheObject + Resource<DynamicType = ()>,
    {
        self.list_with::<K>(&(), options).await
    }

    /// Lists objects from the cache.
    pub async fn list_with<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        options: &ListOptions,
    ) -> Result<Vec<Arc<K>>, Error> {
        let informer = self.synced_informer::<K>(dt).await?;
        let store = informer.store();
        // Resolve the field requirements first: the namespace (from the options or
        // `metadata.namespace`), the name, and at most one indexed field; then read once.
        let mut namespace = options.namespace.as_deref();
        let mut name_filter: Option<&str> = None;
        let mut indexed: Option<(&str, &str)> = None;
        if let Some(fields) = &options.field_selector {
            let unsupported = |reason: &str| Error::FieldSelector {
                selector: fields.to_string(),
                reason: reason.into(),
            };
            for req in fields.requirements() {
                if req.operator != FieldOperator::Equals {
                    return Err(unsupported(
                        "the cache answers only exact (=) field requirements",
                    ));
                }
                let value = req.value.as_str();
                match req.field.as_str() {
                    "metadata.name" if name_filter.is_some_and(|n| n != value) => {
                        return Ok(Vec::new());
                    }
                    "metadata.name" => name_filter = Some(value),
                    "metadata.namespace" if namespace.is_some_and(|ns| ns != value) => {
                        return Ok(Vec::new());
                    }
                    "metadata.namespace" => namespace = Some(value),
                    field if indexed.is_none() => indexed = Some((field, value)),
                    _ => {
                        return Err(unsupported(
                            "the cache answers one indexed field requirement per list",
                        ));
                    }
                }
            }
            if let Some((field, _)) = indexed
                && !store.has_index(&field_index_name(field))
            {
                return Err(unsupported(&format!(
                    "no index for field {field:?} (see Cache::index_field)"
                )));
            }
        }
        if let Some(ns) = namespace {
            check_namespace(&informer, dt, "list", ns, || ns.to_string())?;
        }
        if !self.written().is_empty() {
            let gvk = gvk_key::<K>(dt);
            let pending = self.written().in_namespace(&gvk, namespace);
            if !pending.is_empty() {
                self.await_writes(&informer, dt, &gvk, pending).await?;
            }
        }
        let objects = match indexed {
            Some((field, value)) => store
                .by_index(&field_index_name(field), namespace, value)
                .unwrap_or_default(),
            None => store.list(namespace),
        };
        Ok(objects
            .into_iter()
            .filter(|o| name_filter.is_none_or(|n| o.meta().name.as_deref() == Some(n)))
            .filter(|o| match &options.label_selector {
                None => true,
                Some(sel) => {
                    let labels = o.meta().labels.as_ref();
                    sel.matches_fn(|key| labels.and_then(|l| l.get(key)).map(String::as_str))
                }
            })
            .collect())
    }

    /// Waits until `informer` has stored each of these writes of this process (or something
    /// newer), or another informer of the kind has and dropped it from the table; fails with
    /// [`Error::ReadYourWritesTimeout`] once the configured bound has passed.
    async fn await_writes<K: CacheObject>(
        &self,
        informer: &Informer<K>,
        dt: &K::DynamicType,
        gvk: &str,
        mut pending: Vec<(ObjectKey, Written)>,
    ) -> Result<(), Error> {
        let timeout = self.options().read_your_writes.timeout;
        let deadline = tokio::time::Instant::now() + timeout;
        let table = self.written();
        loop {
            // Registered before looking, so a change made meanwhile still wakes this read.
            let changed = informer.store_changed().notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            pending.retain(|(key, written)| {
                if informer.caught_up_with(key, written)
                    || written.seen_in(seen_cached(informer.store().get_cached(key).as_ref()))
                {
                    table.settle(gvk, key, |w| w == written);
                    return false;
                }
                table.is_pending(gvk, key, written)
            });
            let Some((key, written)) = pending.first() else {
                return Ok(());
            };
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return Err(Error::ReadYourWritesTimeout {
                    kind: K::kind(dt).into_owned(),
                    key: key.to_string(),
                    resource_version: written.resource_version.map(|rv| rv.to_string()),
                    timeout,
                });
            }
        }
    }

    /// The informer for `K`, synced; created and started on first use unless
    /// `reader_fail_on_missing_informer`.
    async fn synced_informer<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
    ) -> Result<Informer<K>, Error> {
        let informer = match self.peek_informer_with::<K>(dt) {
            Some(informer) => informer,
            None if self.options().reader_fail_on_missing_informer => {
                return Err(Error::MissingInformer {
                    kind: K::kind(dt).into_owned(),
                });
            }
            None => {
                let informer = self.get_informer_with::<K>(dt).await?;
                let gvk = gvk_key::<K>(dt);
                match informer.namespaces() {
                    None => tracing::info!(
                        informer = %gvk,
                        compact = informer.store().is_compact(),
                        "a cached read started an informer over every namespace: it lists, \
                         watches and keeps every object of this kind (see the \
                         controller_runtime_cache_bytes gauge)"
                    ),
                    Some(namespaces) => tracing::info!(
                        informer = %gvk,
                        namespaces = %namespaces.join(","),
                        compact = informer.store().is_compact(),
                        "a cached read started an informer"
                    ),
                }
                informer
            }
        };
        if !informer.has_synced() {
            let ctx = self.started().ok_or(Error::NotStarted)?;
            tokio::select! {
                _ = informer.wait_for_sync() => {}
                _ = ctx.cancelled() => return Err(Error::Cancelled {
                    kind: K::kind(dt).into_owned(),
                    last_error: informer.last_error(),
                }),
            }
        }
        Ok(informer)
    }
}
