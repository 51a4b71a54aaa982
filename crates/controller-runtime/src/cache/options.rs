//! Cache options: what each informer caches (namespaces, selectors, transform, resync), as
//! defaults and per type, and per namespace within those (controller-runtime's
//! `cache.Options`, `ByObject` and `Config`).
//!
//! A type's informer lists and watches once per cached namespace: with
//! [`CacheOptions::with_default_namespaces`] (or [`ByObject::namespaces`]) naming `a` and `b`, the
//! informer opens one list and one watch in `a` and one in `b`, and merges them into one store.
//! An empty namespace set means every namespace, one list and one watch. Cluster-scoped types
//! ignore namespaces.
//!
//! ```
//! use controller_runtime::cache::{ByObject, CacheOptions, NamespaceConfig, namespaces};
//! use k8s_openapi::api::core::v1::Secret;
//!
//! // Every type in namespaces "a" and "b"; Secrets only in "a", and only those labelled
//! // app=web.
//! let mut secret_namespaces = namespaces(["a"]);
//! secret_namespaces.insert("a".into(), NamespaceConfig::default().with_label_selector("app=web"));
//! let options = CacheOptions::default()
//!     .with_default_namespaces(namespaces(["a", "b"]))
//!     .by_object::<Secret>(&(), ByObject::default().with_namespaces(secret_namespaces));
//! ```

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use kube_core::{ObjectMeta, Resource};

use super::consistency::ReadYourWrites;
use super::informer::TransformFn;
use super::storage::ReadMemo;

/// A change applied to every object's metadata before it is cached (see
/// [`strip_managed_fields`]).
pub type MetaTransform = Arc<dyn Fn(&mut ObjectMeta) + Send + Sync>;

/// A change applied to every whole object of every cached type, as JSON, before it is cached
/// (see [`CacheOptions::with_default_json_transform`]).
pub type JsonTransform = Arc<dyn Fn(&mut serde_json::Value) + Send + Sync>;

/// A whole-object transform of one Rust type `K` (a [`TransformFn<K>`]), kept type-erased so
/// [`ByObject`] needs no type parameter; the cache takes it back out for the informer of `K`.
#[derive(Clone)]
pub(crate) struct TypedTransform(Arc<dyn Any + Send + Sync>);

impl TypedTransform {
    /// The transform, when it was made for `K`.
    pub(crate) fn of<K: 'static>(&self) -> Option<TransformFn<K>> {
        self.0.downcast_ref::<TransformFn<K>>().cloned()
    }
}

/// The transform that drops `metadata.managedFields`, which controllers rarely read and which
/// often takes more memory than the rest of an object.
///
/// The cache knows this transform: where it is a type's only one (in every cached namespace)
/// and storage is compact (the default), the informer cuts `managedFields` out of each
/// object's JSON as it arrives, decoding nothing; any other transform makes the informer
/// decode each object, transform it and encode it again.
pub fn strip_managed_fields() -> MetaTransform {
    STRIP_MANAGED_FIELDS.clone()
}

/// The one [`strip_managed_fields`] transform, which the cache recognises.
static STRIP_MANAGED_FIELDS: std::sync::LazyLock<MetaTransform> =
    std::sync::LazyLock::new(|| Arc::new(|meta: &mut ObjectMeta| meta.managed_fields = None));

/// Whether `transform` is [`strip_managed_fields`].
pub(crate) fn is_strip_managed_fields(transform: &MetaTransform) -> bool {
    Arc::ptr_eq(transform, &STRIP_MANAGED_FIELDS)
}

/// The key of a namespace set that stands for every namespace not named otherwise
/// (controller-runtime's `cache.AllNamespaces`). With `{"": .., "a": ..}` the cache watches
/// `a` with its own settings and every other namespace with the `""` entry's.
pub const ALL_NAMESPACES: &str = "";

/// Settings for one namespace of a type (controller-runtime's `cache.Config`); unset fields
/// fall back to the type's [`ByObject`] settings, then to the [`CacheOptions`] defaults.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct NamespaceConfig {
    /// Cache only objects matching this label selector in this namespace.
    pub(crate) label_selector: Option<String>,
    /// Cache only objects matching this field selector in this namespace.
    pub(crate) field_selector: Option<String>,
    /// Applied to the metadata of every object of this namespace before it is cached.
    pub(crate) transform: Option<MetaTransform>,
}

/// Cached namespaces, each with its own settings. Empty: every namespace.
pub type Namespaces = BTreeMap<String, NamespaceConfig>;

/// A namespace set with default settings for each namespace.
///
/// ```
/// let set = controller_runtime::cache::namespaces(["a", "b"]);
/// assert_eq!(set.keys().collect::<Vec<_>>(), ["a", "b"]);
/// ```
pub fn namespaces<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Namespaces {
    names
        .into_iter()
        .map(|name| (name.into(), NamespaceConfig::default()))
        .collect()
}

/// Settings for one type's informer; unset fields fall back to the [`CacheOptions`] defaults.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct ByObject {
    /// Cache only these namespaces (see [`namespaces`]); `None`: the cache's
    /// [`default_namespaces`](CacheOptions::with_default_namespaces); an empty set: every namespace.
    /// Ignored for cluster-scoped types.
    pub(crate) namespaces: Option<Namespaces>,
    /// Cache only objects matching this label selector.
    pub(crate) label_selector: Option<String>,
    /// Cache only objects matching this field selector.
    pub(crate) field_selector: Option<String>,
    /// Applied to every object's metadata before it is cached.
    pub(crate) transform: Option<MetaTransform>,
    /// Applied to every whole object of this type before it is cached (see
    /// [`ByObject::with_typed_transform`]).
    pub(crate) typed_transform: Option<TypedTransform>,
    /// Resync period; `None`: the cache's
    /// [`sync_period`](CacheOptions::with_sync_period).
    pub(crate) sync_period: Option<Duration>,
    /// Hold this type's objects compactly, encoded, and decode them on each read (see
    /// [`Storage`](super::Storage)); `None`: the cache's
    /// [`default_compact`](CacheOptions::with_default_compact).
    pub(crate) compact: Option<bool>,
    /// The bound of a compact store's memo of recent reads; `None`: the cache's
    /// [`default_read_memo`](CacheOptions::with_default_read_memo).
    pub(crate) read_memo: Option<ReadMemo>,
}

/// Options of a [`Cache`](super::Cache). Every field has a default; set the others with the
/// `with_*` setters (one per field) and [`by_object`](Self::by_object).
#[derive(Clone)]
#[non_exhaustive]
pub struct CacheOptions {
    /// Cache only these namespaces, for every namespaced type without its own setting. Empty
    /// (the default): every namespace.
    pub(crate) default_namespaces: Namespaces,
    /// Default label selector.
    pub(crate) default_label_selector: Option<String>,
    /// Default field selector.
    pub(crate) default_field_selector: Option<String>,
    /// Default metadata transform.
    pub(crate) default_transform: Option<MetaTransform>,
    /// Default whole-object transform, on each object's JSON, for types without a typed one.
    pub(crate) default_json_transform: Option<JsonTransform>,
    /// Default resync period (controller-runtime: 10 hours, with jitter).
    pub(crate) sync_period: Option<Duration>,
    /// Hold every type's objects compactly unless its [`ByObject`] says otherwise (see
    /// [`Storage`](super::Storage)). Default true: each object is kept as the JSON the server
    /// sent, about a quarter of the memory of a typed object; events reach metadata-only
    /// handlers and predicates with the metadata read from it, without a full decode, and a
    /// typed read decodes (a few microseconds for a 1 KB object). False: shared typed `Arc`s,
    /// which reads never copy.
    pub(crate) default_compact: bool,
    /// The bound of each compact store's memo of recent reads (see [`ReadMemo`]), unless its
    /// [`ByObject`] says otherwise. Default: [`ReadMemo::default`].
    pub(crate) default_read_memo: ReadMemo,
    /// Per-type settings, keyed by `group/version/Kind` (`v1/Kind` for the core group); see
    /// [`CacheOptions::by_object`].
    pub(crate) by_object: HashMap<String, ByObject>,
    /// When true, reading a type the cache has no informer for is an error; when false (the
    /// default), the first read starts an informer and waits for it to sync.
    pub(crate) reader_fail_on_missing_informer: bool,
    /// Whether cached reads wait to see this process's own writes, and how long.
    pub(crate) read_your_writes: ReadYourWrites,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            default_namespaces: Namespaces::new(),
            default_label_selector: None,
            default_field_selector: None,
            default_transform: None,
            default_json_transform: None,
            sync_period: Some(Duration::from_secs(10 * 3600)),
            default_compact: true,
            default_read_memo: ReadMemo::default(),
            by_object: HashMap::new(),
            reader_fail_on_missing_informer: false,
            read_your_writes: ReadYourWrites::default(),
        }
    }
}

impl NamespaceConfig {
    /// Cache only objects matching this label selector in this namespace.
    pub fn with_label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Cache only objects matching this field selector in this namespace.
    pub fn with_field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Applied to the metadata of every object of this namespace before it is cached.
    pub fn with_transform(mut self, transform: MetaTransform) -> Self {
        self.transform = Some(transform);
        self
    }
}

impl ByObject {
    /// Cache only these namespaces (see [`namespaces`]); `None`: the cache's
    /// [`default_namespaces`](CacheOptions::with_default_namespaces); an empty set: every namespace.
    /// Ignored for cluster-scoped types.
    pub fn with_namespaces(mut self, namespaces: Namespaces) -> Self {
        self.namespaces = Some(namespaces);
        self
    }

    /// Cache only objects matching this label selector.
    pub fn with_label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Cache only objects matching this field selector.
    pub fn with_field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Applied to every object's metadata before it is cached.
    pub fn with_transform(mut self, transform: MetaTransform) -> Self {
        self.transform = Some(transform);
        self
    }

    /// Applied to every object of this type, the whole object, before it is stored in the
    /// cache and before any handler sees it, e.g. to drop a Secret's `data` or a Pod's `spec`
    /// that a controller never reads, so the cache does not hold them:
    ///
    /// ```
    /// use controller_runtime::cache::{ByObject, CacheOptions};
    /// use k8s_openapi::api::core::v1::Secret;
    ///
    /// let options = CacheOptions::default().by_object::<Secret>(
    ///     &(),
    ///     ByObject::default().with_typed_transform(|secret: &mut Secret| secret.data = None),
    /// );
    /// # let _ = options;
    /// ```
    ///
    /// It runs for the informer of the Rust type `K` only: give it to the `ByObject` of `K`'s
    /// kind (a transform of another type is ignored), and note that informers of the same kind
    /// through another Rust type (metadata-only `PartialObjectMeta<K>`, `DynamicObject`) do not
    /// run it. It runs before the metadata [`transform`](Self::with_transform), and replaces
    /// the cache's [`default_json_transform`](CacheOptions::with_default_json_transform) for
    /// this type. Cached reads return the transformed object: a controller reading a cleared
    /// field from the cache sees it cleared.
    ///
    /// Default: `None`. controller-runtime: `cache.ByObject.Transform`; kube-rs: the closure
    /// of `reflector::store` users apply with `WatchStreamExt::modify`.
    pub fn with_typed_transform<K: 'static>(
        mut self,
        transform: impl Fn(&mut K) + Send + Sync + 'static,
    ) -> Self {
        let transform: TransformFn<K> = Arc::new(move |mut obj: K| {
            transform(&mut obj);
            obj
        });
        self.typed_transform = Some(TypedTransform(Arc::new(transform)));
        self
    }

    /// This type's resync period: every period (with jitter), its informer replays every
    /// cached object to the handlers as an update, so controllers reconcile them again.
    ///
    /// Default: `None`, the cache's [`sync_period`](CacheOptions::with_sync_period) (10
    /// hours). controller-runtime: `cache.ByObject.SyncPeriod`; kube-rs: none (a
    /// `Controller`'s `reconcile_all_on`).
    pub fn with_sync_period(mut self, period: Duration) -> Self {
        self.sync_period = Some(period);
        self
    }

    /// Hold this type's objects compactly, encoded, and decode them on each read (see
    /// [`Storage`](super::Storage)); `None`: the cache's
    /// [`default_compact`](CacheOptions::with_default_compact).
    pub fn with_compact(mut self, compact: bool) -> Self {
        self.compact = Some(compact);
        self
    }

    /// The bound of this type's memo of recent reads, if its store is compact (see
    /// [`ReadMemo`]); `None`: the cache's
    /// [`default_read_memo`](CacheOptions::with_default_read_memo).
    pub fn with_read_memo(mut self, read_memo: ReadMemo) -> Self {
        self.read_memo = Some(read_memo);
        self
    }
}

impl CacheOptions {
    /// Cache only these namespaces, for every namespaced type without its own setting. Empty
    /// (the default): every namespace.
    pub fn with_default_namespaces(mut self, namespaces: Namespaces) -> Self {
        self.default_namespaces = namespaces;
        self
    }

    /// Default label selector.
    pub fn with_default_label_selector(mut self, selector: impl Into<String>) -> Self {
        self.default_label_selector = Some(selector.into());
        self
    }

    /// Default field selector.
    pub fn with_default_field_selector(mut self, selector: impl Into<String>) -> Self {
        self.default_field_selector = Some(selector.into());
        self
    }

    /// Default metadata transform.
    pub fn with_default_transform(mut self, transform: MetaTransform) -> Self {
        self.default_transform = Some(transform);
        self
    }

    /// Default whole-object transform: applied to every object of every type without a
    /// [typed transform](ByObject::with_typed_transform) of its own, before it is stored and
    /// before any handler sees it, on the object's JSON (any type, including
    /// `DynamicObject` and metadata-only ones):
    ///
    /// ```
    /// use std::sync::Arc;
    /// use controller_runtime::cache::CacheOptions;
    ///
    /// // Drop every cached object's status.
    /// let options = CacheOptions::default().with_default_json_transform(Arc::new(|obj| {
    ///     if let Some(obj) = obj.as_object_mut() {
    ///         obj.remove("status");
    ///     }
    /// }));
    /// # let _ = options;
    /// ```
    ///
    /// A transform over every type can only see an object dynamically (Go's
    /// `DefaultTransform` takes an `interface{}` and type-switches): here the object is
    /// encoded to JSON, transformed, and decoded back into its type, one encode and decode per
    /// object and event. Prefer a typed [`ByObject`] transform for the types that need one,
    /// or the metadata [`with_default_transform`](Self::with_default_transform), which cost
    /// nothing of the kind. An object whose transformed JSON no longer decodes into its type
    /// is cached untransformed, with a warning. It runs before the metadata transform.
    ///
    /// Default: `None`. controller-runtime: `cache.Options.DefaultTransform`; kube-rs: none.
    pub fn with_default_json_transform(mut self, transform: JsonTransform) -> Self {
        self.default_json_transform = Some(transform);
        self
    }

    /// Default resync period (controller-runtime: 10 hours, with jitter); a type's
    /// [`ByObject::with_sync_period`] overrides it.
    ///
    /// `None`: no resync.
    pub fn with_sync_period(mut self, period: Option<Duration>) -> Self {
        self.sync_period = period;
        self
    }

    /// Hold every type's objects compactly unless its [`ByObject`] says otherwise (see
    /// [`Storage`](super::Storage)). Default true: each object is kept as the JSON the server
    /// sent, about a quarter of the memory of a typed object; events reach metadata-only
    /// handlers and predicates with the metadata read from it, without a full decode, and a
    /// typed read decodes (a few microseconds for a 1 KB object). False: shared typed `Arc`s,
    /// which reads never copy.
    pub fn with_default_compact(mut self, compact: bool) -> Self {
        self.default_compact = compact;
        self
    }

    /// The bound of each compact store's memo of recent reads, unless its [`ByObject`] says
    /// otherwise (see [`ReadMemo`]; [`ReadMemo::disabled`]: every typed read decodes).
    pub fn with_default_read_memo(mut self, read_memo: ReadMemo) -> Self {
        self.default_read_memo = read_memo;
        self
    }

    /// When true, reading a type the cache has no informer for is an error; when false (the
    /// default), the first read starts an informer and waits for it to sync.
    pub fn with_reader_fail_on_missing_informer(mut self, fail: bool) -> Self {
        self.reader_fail_on_missing_informer = fail;
        self
    }

    /// Whether a cached read of an object this process's [`Client`](crate::client::Client)
    /// wrote waits until the informer has stored that write (or something newer), and for how
    /// long before it fails with [`Error::ReadYourWritesTimeout`](super::Error). Default: on,
    /// 5 s; [`ReadYourWrites::disabled`] answers from the cache at once, as controller-runtime
    /// does (its issue #3320 asks for this). See [`ReadYourWrites`].
    pub fn with_read_your_writes(mut self, read_your_writes: ReadYourWrites) -> Self {
        self.read_your_writes = read_your_writes;
        self
    }
}

/// What one list+watch of an informer covers, with its effective settings.
#[derive(Clone)]
pub(crate) struct ResolvedScope {
    /// The namespace listed; `None`: every namespace (or a cluster-scoped type).
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub transform: Option<MetaTransform>,
}

/// The effective settings of one type's informer.
pub(crate) struct Resolved {
    /// One per list+watch; never empty.
    pub scopes: Vec<ResolvedScope>,
    /// The type's own whole-object transform (to be downcast to the informer's type).
    pub typed_transform: Option<TypedTransform>,
    /// The cache's default whole-object transform, for a type without a typed one.
    pub json_transform: Option<JsonTransform>,
    pub sync_period: Option<Duration>,
    /// Whether the store is compact.
    pub compact: bool,
    /// The bound of a compact store's read memo.
    pub read_memo: ReadMemo,
}

impl CacheOptions {
    /// Sets the options of type `K` (with its dynamic type `dt`: `&()` for static types).
    pub fn by_object<K: Resource>(mut self, dt: &K::DynamicType, options: ByObject) -> Self {
        self.by_object.insert(gvk_key::<K>(dt), options);
        self
    }

    /// The effective settings for type `K`: one scope per cached namespace, or a single
    /// all-namespaces scope (also for cluster-scoped types, which ignore namespaces).
    pub(crate) fn resolve<K: Resource>(&self, dt: &K::DynamicType, namespaced: bool) -> Resolved {
        let own = self
            .by_object
            .get(&gvk_key::<K>(dt))
            .cloned()
            .unwrap_or_default();
        let label_selector = own
            .label_selector
            .or_else(|| self.default_label_selector.clone());
        let field_selector = own
            .field_selector
            .or_else(|| self.default_field_selector.clone());
        let transform = own.transform.or_else(|| self.default_transform.clone());
        let namespaces = own
            .namespaces
            .unwrap_or_else(|| self.default_namespaces.clone());
        let scopes = if !namespaced || namespaces.is_empty() {
            vec![ResolvedScope {
                namespace: None,
                label_selector,
                field_selector,
                transform,
            }]
        } else {
            let named: Vec<&str> = namespaces
                .keys()
                .map(String::as_str)
                .filter(|ns| *ns != ALL_NAMESPACES)
                .collect();
            namespaces
                .iter()
                .map(|(ns, config)| {
                    let field_selector = config
                        .field_selector
                        .clone()
                        .or_else(|| field_selector.clone());
                    let (namespace, field_selector) = if ns == ALL_NAMESPACES {
                        // Every other namespace: leave out the ones watched on their own.
                        (None, excluding(field_selector, &named))
                    } else {
                        (Some(ns.clone()), field_selector)
                    };
                    ResolvedScope {
                        namespace,
                        label_selector: config
                            .label_selector
                            .clone()
                            .or_else(|| label_selector.clone()),
                        field_selector,
                        transform: config.transform.clone().or_else(|| transform.clone()),
                    }
                })
                .collect()
        };
        Resolved {
            scopes,
            typed_transform: own.typed_transform,
            json_transform: self.default_json_transform.clone(),
            sync_period: own.sync_period.or(self.sync_period),
            compact: own.compact.unwrap_or(self.default_compact),
            read_memo: own.read_memo.unwrap_or(self.default_read_memo),
        }
    }
}

/// `selector` plus `metadata.namespace!=NS` for each of `namespaces`.
fn excluding(selector: Option<String>, namespaces: &[&str]) -> Option<String> {
    let parts: Vec<String> = selector
        .into_iter()
        .filter(|s| !s.is_empty())
        .chain(
            namespaces
                .iter()
                .map(|ns| format!("metadata.namespace!={ns}")),
        )
        .collect();
    (!parts.is_empty()).then(|| parts.join(","))
}

/// `group/version/Kind`, or `version/Kind` for the core group.
pub(crate) fn gvk_key<K: Resource>(dt: &K::DynamicType) -> String {
    format!("{}/{}", K::api_version(dt), K::kind(dt))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};

    fn summary(resolved: &Resolved) -> Vec<String> {
        resolved
            .scopes
            .iter()
            .map(|s| {
                format!(
                    "{} l={} f={}",
                    s.namespace.as_deref().unwrap_or("*"),
                    s.label_selector.as_deref().unwrap_or("-"),
                    s.field_selector.as_deref().unwrap_or("-"),
                )
            })
            .collect()
    }

    #[test]
    fn no_namespaces_is_one_all_namespaces_scope() {
        let options = CacheOptions {
            default_label_selector: Some("app=x".into()),
            ..Default::default()
        };
        assert_eq!(
            summary(&options.resolve::<ConfigMap>(&(), true)),
            ["* l=app=x f=-"]
        );
    }

    #[test]
    fn one_scope_per_namespace_with_inherited_settings() {
        let mut own = namespaces(["a", "b"]);
        own.insert(
            "b".into(),
            NamespaceConfig {
                label_selector: Some("tier=db".into()),
                ..Default::default()
            },
        );
        let options = CacheOptions {
            default_namespaces: namespaces(["z"]),
            default_field_selector: Some("metadata.name=n".into()),
            ..Default::default()
        }
        .by_object::<ConfigMap>(
            &(),
            ByObject {
                namespaces: Some(own),
                label_selector: Some("app=x".into()),
                ..Default::default()
            },
        );
        assert_eq!(
            summary(&options.resolve::<ConfigMap>(&(), true)),
            [
                "a l=app=x f=metadata.name=n",
                "b l=tier=db f=metadata.name=n"
            ]
        );
        // Types without their own setting use the default namespaces.
        assert_eq!(
            summary(&options.resolve::<k8s_openapi::api::core::v1::Secret>(&(), true)),
            ["z l=- f=metadata.name=n"]
        );
    }

    #[test]
    fn all_namespaces_entry_leaves_out_the_named_ones() {
        let options = CacheOptions {
            default_namespaces: namespaces(["", "a", "b"]),
            default_field_selector: Some("metadata.name=n".into()),
            ..Default::default()
        };
        assert_eq!(
            summary(&options.resolve::<ConfigMap>(&(), true)),
            [
                "* l=- f=metadata.name=n,metadata.namespace!=a,metadata.namespace!=b",
                "a l=- f=metadata.name=n",
                "b l=- f=metadata.name=n",
            ]
        );
    }

    #[test]
    fn cluster_scoped_types_ignore_namespaces() {
        let options = CacheOptions {
            default_namespaces: namespaces(["a", "b"]),
            ..Default::default()
        };
        assert_eq!(
            summary(&options.resolve::<Namespace>(&(), false)),
            ["* l=- f=-"]
        );
    }
}
