//! Combinators: [`PredicateExt`]'s `.and()`, `.or()` and `.not()` over predicates you name,
//! and [`all`] and [`any`] over a list of boxed predicates.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use super::filter::{BoxPredicate, Predicate};
use crate::event::{Event, Object};

/// Combines predicates as they are, without boxing: `a.and(b)`, `a.or(b)`, `a.not()`. Every
/// [`Predicate`] has these methods (the trait is in the [prelude](crate::prelude)); the result
/// is a predicate of the same objects, for
/// [`Input::with_predicate`](crate::builder::Input::with_predicate) or another combinator.
///
/// ```
/// use std::sync::Arc;
/// use controller_runtime::event::{Event, UpdateEvent};
/// use controller_runtime::predicate::{GenerationChanged, LabelChanged, Predicate, PredicateExt};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// // Spec changes, or a change of labels.
/// let p = GenerationChanged.or(LabelChanged);
///
/// let old = Arc::new(ConfigMap::default());
/// let mut changed = ConfigMap::default();
/// changed.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
/// assert!(p.filter(&Event::Update(UpdateEvent { old: old.clone(), new: Arc::new(changed) })));
/// assert!(!p.filter(&Event::Update(UpdateEvent { old: old.clone(), new: old })));
/// ```
pub trait PredicateExt<K: ?Sized>: Predicate<K> + Sized {
    /// Passes what both `self` and `other` pass; `other` is not asked when `self` rejects.
    fn and<P: Predicate<K>>(self, other: P) -> And<Self, P, K> {
        And {
            a: self,
            b: other,
            _k: PhantomData,
        }
    }

    /// Passes what `self` or `other` passes; `other` is not asked when `self` accepts.
    fn or<P: Predicate<K>>(self, other: P) -> Or<Self, P, K> {
        Or {
            a: self,
            b: other,
            _k: PhantomData,
        }
    }

    /// Passes what `self` rejects.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use controller_runtime::event::{Event, UpdateEvent};
    /// use controller_runtime::predicate::{Predicate, PredicateExt, ResourceVersionChanged};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// // Only resyncs (updates that did not change the resourceVersion).
    /// let resyncs = ResourceVersionChanged.not();
    /// let cm = Arc::new(ConfigMap::default());
    /// assert!(resyncs.filter(&Event::Update(UpdateEvent { old: cm.clone(), new: cm })));
    /// ```
    fn not(self) -> Not<Self, K> {
        Not {
            inner: self,
            _k: PhantomData,
        }
    }
}

impl<K: ?Sized, P: Predicate<K>> PredicateExt<K> for P {}

/// Both predicates pass; made by [`PredicateExt::and`].
pub struct And<A, B, K: ?Sized> {
    a: A,
    b: B,
    _k: PhantomData<fn(&K) -> bool>,
}

/// Either predicate passes; made by [`PredicateExt::or`].
pub struct Or<A, B, K: ?Sized> {
    a: A,
    b: B,
    _k: PhantomData<fn(&K) -> bool>,
}

/// The inner predicate rejects; made by [`PredicateExt::not`].
pub struct Not<A, K: ?Sized> {
    inner: A,
    _k: PhantomData<fn(&K) -> bool>,
}

impl<K: ?Sized, A: Predicate<K>, B: Predicate<K>> Predicate<K> for And<A, B, K> {
    fn filter(&self, event: &Event<K>) -> bool {
        self.a.filter(event) && self.b.filter(event)
    }
    fn filter_metadata(&self, event: &Event<dyn Object>) -> Option<bool> {
        match self.a.filter_metadata(event)? {
            false => Some(false),
            true => self.b.filter_metadata(event),
        }
    }
}

impl<K: ?Sized, A: Predicate<K>, B: Predicate<K>> Predicate<K> for Or<A, B, K> {
    fn filter(&self, event: &Event<K>) -> bool {
        self.a.filter(event) || self.b.filter(event)
    }
    fn filter_metadata(&self, event: &Event<dyn Object>) -> Option<bool> {
        match self.a.filter_metadata(event)? {
            true => Some(true),
            false => self.b.filter_metadata(event),
        }
    }
}

impl<K: ?Sized, A: Predicate<K>> Predicate<K> for Not<A, K> {
    fn filter(&self, event: &Event<K>) -> bool {
        !self.inner.filter(event)
    }
    fn filter_metadata(&self, event: &Event<dyn Object>) -> Option<bool> {
        self.inner.filter_metadata(event).map(|pass| !pass)
    }
}

impl<A: Clone, B: Clone, K: ?Sized> Clone for And<A, B, K> {
    fn clone(&self) -> Self {
        And {
            a: self.a.clone(),
            b: self.b.clone(),
            _k: PhantomData,
        }
    }
}

impl<A: Clone, B: Clone, K: ?Sized> Clone for Or<A, B, K> {
    fn clone(&self) -> Self {
        Or {
            a: self.a.clone(),
            b: self.b.clone(),
            _k: PhantomData,
        }
    }
}

impl<A: Clone, K: ?Sized> Clone for Not<A, K> {
    fn clone(&self) -> Self {
        Not {
            inner: self.inner.clone(),
            _k: PhantomData,
        }
    }
}

impl<A: fmt::Debug, B: fmt::Debug, K: ?Sized> fmt::Debug for And<A, B, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("And").field(&self.a).field(&self.b).finish()
    }
}

impl<A: fmt::Debug, B: fmt::Debug, K: ?Sized> fmt::Debug for Or<A, B, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Or").field(&self.a).field(&self.b).finish()
    }
}

impl<A: fmt::Debug, K: ?Sized> fmt::Debug for Not<A, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Not").field(&self.inner).finish()
    }
}

/// Every predicate of a list must pass (an empty list passes everything). Stops at the first
/// predicate that rejects. For a list made at run time; two predicates you name combine with
/// [`PredicateExt::and`].
pub fn all<K: ?Sized + 'static>(
    predicates: impl IntoIterator<Item = BoxPredicate<K>>,
) -> BoxPredicate<K> {
    Arc::new(All(predicates.into_iter().collect()))
}

/// At least one predicate of a list must pass (an empty list passes nothing, as
/// controller-runtime's `Or`). Stops at the first predicate that accepts. For a list made at
/// run time; two predicates you name combine with [`PredicateExt::or`].
pub fn any<K: ?Sized + 'static>(
    predicates: impl IntoIterator<Item = BoxPredicate<K>>,
) -> BoxPredicate<K> {
    Arc::new(Any(predicates.into_iter().collect()))
}

/// What [`all`] returns.
struct All<K: ?Sized>(Vec<BoxPredicate<K>>);

impl<K: ?Sized> Predicate<K> for All<K> {
    fn filter(&self, event: &Event<K>) -> bool {
        self.0.iter().all(|p| p.filter(event))
    }
    fn filter_metadata(&self, event: &Event<dyn Object>) -> Option<bool> {
        for p in &self.0 {
            if !p.filter_metadata(event)? {
                return Some(false);
            }
        }
        Some(true)
    }
}

/// What [`any`] returns.
struct Any<K: ?Sized>(Vec<BoxPredicate<K>>);

impl<K: ?Sized> Predicate<K> for Any<K> {
    fn filter(&self, event: &Event<K>) -> bool {
        self.0.iter().any(|p| p.filter(event))
    }
    fn filter_metadata(&self, event: &Event<dyn Object>) -> Option<bool> {
        for p in &self.0 {
            if p.filter_metadata(event)? {
                return Some(true);
            }
        }
        Some(false)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::ConfigMap;

    use super::PredicateExt;
    use crate::event::{Event, GenericEvent, UpdateEvent};
    use crate::predicate::{GenerationChanged, LabelChanged, Predicate};

    #[test]
    fn methods_combine_without_boxing() {
        let yes = |_: &Event<ConfigMap>| true;
        let no = |_: &Event<ConfigMap>| false;
        let ev = Event::Generic(GenericEvent {
            object: Arc::new(ConfigMap::default()),
        });
        assert!(yes.and(yes).filter(&ev));
        assert!(!yes.and(no).filter(&ev));
        assert!(no.or(yes).filter(&ev));
        assert!(!no.or(no).filter(&ev));
        assert!(no.not().filter(&ev));
        assert!(yes.and(no).not().filter(&ev));

        // Metadata predicates, generic over the object type, take it from their use.
        let p = GenerationChanged.or(LabelChanged).not();
        let cm = Arc::new(ConfigMap::default());
        let resync = Event::Update(UpdateEvent {
            old: cm.clone(),
            new: cm,
        });
        assert!(p.filter(&resync));
    }
}
