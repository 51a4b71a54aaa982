//! Predicates from closures: [`Funcs`] (one closure per event kind) and [`from_fn`] (one filter on
//! the object for every kind).

use std::sync::Arc;

use super::{BoxPredicate, Predicate};
use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};

type Check<E> = Box<dyn Fn(&E) -> bool + Send + Sync>;

/// A predicate with one optional closure per event kind; a kind without a closure passes
/// (controller-runtime's `predicate.Funcs`).
///
/// ```
/// use std::sync::Arc;
/// use controller_runtime::event::{DeleteEvent, CreateEvent};
/// use controller_runtime::predicate::{Funcs, Predicate};
/// use k8s_openapi::api::core::v1::Pod;
///
/// // Ignore deletes we only learned about on relist.
/// let p = Funcs::<Pod>::new().on_delete(|e| !e.delete_state_unknown);
/// let pod = Arc::new(Pod::default());
/// assert!(!p.delete(&DeleteEvent { object: pod.clone(), delete_state_unknown: true }));
/// assert!(p.create(&CreateEvent { object: pod, is_in_initial_list: false }));
/// ```
pub struct Funcs<K> {
    create: Option<Check<CreateEvent<K>>>,
    update: Option<Check<UpdateEvent<K>>>,
    delete: Option<Check<DeleteEvent<K>>>,
    generic: Option<Check<GenericEvent<K>>>,
}

impl<K> Default for Funcs<K> {
    fn default() -> Self {
        Funcs {
            create: None,
            update: None,
            delete: None,
            generic: None,
        }
    }
}

impl<K> Funcs<K> {
    /// A predicate that passes everything until closures are set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decides create events.
    pub fn on_create(
        mut self,
        f: impl Fn(&CreateEvent<K>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.create = Some(Box::new(f));
        self
    }

    /// Decides update events.
    pub fn on_update(
        mut self,
        f: impl Fn(&UpdateEvent<K>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Decides delete events.
    pub fn on_delete(
        mut self,
        f: impl Fn(&DeleteEvent<K>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.delete = Some(Box::new(f));
        self
    }

    /// Decides generic events.
    pub fn on_generic(
        mut self,
        f: impl Fn(&GenericEvent<K>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.generic = Some(Box::new(f));
        self
    }

    /// Shares the predicate, ready for a watch's predicate list.
    pub fn boxed(self) -> BoxPredicate<K>
    where
        K: 'static,
    {
        Arc::new(self)
    }
}

impl<K> Predicate<K> for Funcs<K> {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        self.create.as_ref().is_none_or(|f| f(e))
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        self.update.as_ref().is_none_or(|f| f(e))
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        self.delete.as_ref().is_none_or(|f| f(e))
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        self.generic.as_ref().is_none_or(|f| f(e))
    }
}

/// A predicate applying one filter to the event's object: the object of creates, deletes and
/// generic events, the **new** object of updates (controller-runtime's `NewPredicateFuncs`).
pub struct FilterFn<F>(F);

/// Makes a predicate from a filter on the object; see [`FilterFn`].
///
/// ```
/// use std::sync::Arc;
/// use controller_runtime::event::GenericEvent;
/// use controller_runtime::predicate::{self, Predicate};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_core::ResourceExt;
///
/// let in_default = predicate::from_fn(|cm: &ConfigMap| cm.namespace().as_deref() == Some("default"));
/// let mut cm = ConfigMap::default();
/// cm.metadata.namespace = Some("default".into());
/// assert!(in_default.generic(&GenericEvent { object: Arc::new(cm) }));
/// ```
pub fn from_fn<K, F>(filter: F) -> FilterFn<F>
where
    F: Fn(&K) -> bool + Send + Sync,
{
    FilterFn(filter)
}

impl<K, F: Fn(&K) -> bool + Send + Sync> Predicate<K> for FilterFn<F> {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        (self.0)(&e.object)
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        (self.0)(&e.new)
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        (self.0)(&e.object)
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        (self.0)(&e.object)
    }
}
