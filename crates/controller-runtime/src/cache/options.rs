//! Cache options: what each informer caches (namespace, selectors, transform, resync), as
//! defaults and per type.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kube_core::{ObjectMeta, Resource};

/// A change applied to every object's metadata before it is cached (see
/// [`strip_managed_fields`]).
pub type MetaTransform = Arc<dyn Fn(&mut ObjectMeta) + Send + Sync>;

/// The transform that drops `metadata.managedFields`, which controllers rarely read and which
/// often takes more memory than the rest of an object.
pub fn strip_managed_fields() -> MetaTransform {
    Arc::new(|meta: &mut ObjectMeta| meta.managed_fields = None)
}

/// Settings for one type's informer; unset fields fall back to the [`CacheOptions`] defaults.
#[derive(Clone, Default)]
pub struct ByObject {
    /// Cache only this namespace (ignored for cluster-scoped types).
    pub namespace: Option<String>,
    /// Cache only objects matching this label selector.
    pub label_selector: Option<String>,
    /// Cache only objects matching this field selector.
    pub field_selector: Option<String>,
    /// Applied to every object's metadata before it is cached.
    pub transform: Option<MetaTransform>,
    /// Resync period.
    pub sync_period: Option<Duration>,
}

/// Options of a [`Cache`](super::Cache).
#[derive(Clone)]
pub struct CacheOptions {
    /// Cache only this namespace, for every namespaced type without its own setting.
    pub default_namespace: Option<String>,
    /// Default label selector.
    pub default_label_selector: Option<String>,
    /// Default field selector.
    pub default_field_selector: Option<String>,
    /// Default metadata transform.
    pub default_transform: Option<MetaTransform>,
    /// Default resync period (controller-runtime: 10 hours, with jitter).
    pub sync_period: Option<Duration>,
    /// Per-type settings, keyed by `group/version/Kind` (`v1/Kind` for the core group); see
    /// [`CacheOptions::by_object`].
    pub by_object: HashMap<String, ByObject>,
    /// When true, reading a type the cache has no informer for is an error; when false (the
    /// default), the first read starts an informer and waits for it to sync.
    pub reader_fail_on_missing_informer: bool,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            default_namespace: None,
            default_label_selector: None,
            default_field_selector: None,
            default_transform: None,
            sync_period: Some(Duration::from_secs(10 * 3600)),
            by_object: HashMap::new(),
            reader_fail_on_missing_informer: false,
        }
    }
}

impl CacheOptions {
    /// Sets the options of type `K` (with its dynamic type `dt`: `&()` for static types).
    pub fn by_object<K: Resource>(mut self, dt: &K::DynamicType, options: ByObject) -> Self {
        self.by_object.insert(gvk_key::<K>(dt), options);
        self
    }

    /// The effective settings for type `K`.
    pub(crate) fn resolve<K: Resource>(&self, dt: &K::DynamicType) -> ByObject {
        let own = self
            .by_object
            .get(&gvk_key::<K>(dt))
            .cloned()
            .unwrap_or_default();
        ByObject {
            namespace: own.namespace.or_else(|| self.default_namespace.clone()),
            label_selector: own
                .label_selector
                .or_else(|| self.default_label_selector.clone()),
            field_selector: own
                .field_selector
                .or_else(|| self.default_field_selector.clone()),
            transform: own.transform.or_else(|| self.default_transform.clone()),
            sync_period: own.sync_period.or(self.sync_period),
        }
    }
}

/// `group/version/Kind`, or `version/Kind` for the core group.
pub(crate) fn gvk_key<K: Resource>(dt: &K::DynamicType) -> String {
    format!("{}/{}", K::api_version(dt), K::kind(dt))
}
