//! Kubernetes Events about objects, as controller-runtime's `pkg/recorder` (client-go's
//! `tools/events`) and kube-rs' `runtime::events`.
//!
//! A controller tells people what it did through `events.k8s.io/v1` Events: `kubectl describe`
//! shows them under the object they are about. A [`Recorder`] writes them: each [`EventRecord`]
//! names a `reason` (why, `CamelCase`), an `action` (what the controller did), a `note` for
//! humans and a type ([`EventType::Normal`] or [`EventType::Warning`]); the Event's
//! `regarding` is the object it is about, `related` an optional second object, and
//! `reportingController`/`reportingInstance` come from the recorder's [`Reporter`].
//!
//! **Series.** A controller that fails the same way every few seconds would flood the API
//! server with copies of one Event. The recorder remembers the Events it wrote recently (a
//! bounded cache): when an identical one comes again within six minutes of the last, it does
//! not create a new Event but counts the repetition on the first one, setting `series.count`
//! (2, 3, ...) and `series.lastObservedTime`. Identical means: same type, reason, action, note,
//! reporter, `regarding` and `related`. Unlike client-go this includes the note (so that "scaled
//! to 3" and "scaled to 4" stay two Events) and leaves out the references' `resourceVersion` (a
//! changed object is the same object). client-go also writes a series count only every 30
//! minutes; this recorder writes each repetition at once, so the count is always right.
//!
//! ```no_run
//! use controller_runtime::recorder::{EventRecord, EventType, Recorder, Reporter};
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! # async fn demo(client: kube_client::Client, cm: ConfigMap) -> Result<(), controller_runtime::recorder::Error> {
//! let recorder = Recorder::new(client, Reporter::new("configmap-controller"));
//! let record = EventRecord::normal("Synced", "Reconcile").note("all keys copied");
//! recorder.publish_for(&record, &cm).await?;
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube_client::Api;
use kube_client::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube_core::Resource;

mod cache;
mod record;
#[cfg(test)]
mod tests;

use cache::{Cache, Key, Series};
pub use record::{EventRecord, EventType, Reporter};

/// The API server's limit on an Event's note, in bytes; longer notes are cut (at a character
/// boundary) rather than rejected.
pub(crate) const MAX_NOTE_BYTES: usize = 1024;

/// The API server's limit on an Event's reason and action, in characters.
pub(crate) const MAX_REASON_CHARS: usize = 128;

/// How long after its last repetition an Event still folds new repetitions into its series
/// (client-go's 6 minutes).
pub(crate) const DEFAULT_SERIES_WINDOW: Duration = Duration::from_secs(6 * 60);

/// How many distinct recent Events a recorder remembers by default.
pub(crate) const DEFAULT_CACHE_CAPACITY: usize = 4096;

/// Why an Event could not be written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The record or its object reference cannot make a valid Event.
    #[error("invalid event: {0}")]
    InvalidEvent(String),
    /// The API server refused or did not answer the Event's creation.
    #[error("failed to create event {namespace}/{name}")]
    Create {
        /// The Event's namespace.
        namespace: String,
        /// The Event's name.
        name: String,
        /// The API error.
        #[source]
        source: kube_client::Error,
    },
    /// The API server refused or did not answer the update of an Event's series.
    #[error("failed to update the series of event {namespace}/{name}")]
    Series {
        /// The Event's namespace.
        namespace: String,
        /// The Event's name.
        name: String,
        /// The API error.
        #[source]
        source: kube_client::Error,
    },
}

/// The reference to `object` an Event's `regarding` (or `related`) needs.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
///
/// let mut pod = Pod::default();
/// pod.metadata.namespace = Some("default".into());
/// pod.metadata.name = Some("web-0".into());
/// let r = controller_runtime::recorder::object_ref(&pod);
/// assert_eq!(r.kind.as_deref(), Some("Pod"));
/// assert_eq!(r.api_version.as_deref(), Some("v1"));
/// assert_eq!(r.name.as_deref(), Some("web-0"));
/// ```
pub fn object_ref<K: Resource<DynamicType = ()>>(object: &K) -> ObjectReference {
    object.object_ref(&())
}

/// Writes Events about objects: see the [module docs](self). Cheap to clone; clones share the
/// cache of recent Events.
#[derive(Clone)]
pub struct Recorder {
    client: kube_client::Client,
    reporter: Arc<Reporter>,
    cache: Arc<Cache>,
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("reporter", &self.reporter)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// A recorder writing Events through `client` as `reporter`.
    pub fn new(client: kube_client::Client, reporter: impl Into<Reporter>) -> Self {
        Recorder {
            client,
            reporter: Arc::new(reporter.into()),
            cache: Arc::new(Cache::new(DEFAULT_CACHE_CAPACITY, DEFAULT_SERIES_WINDOW)),
        }
    }

    /// The recorder remembering at most `capacity` distinct recent Events (default
    /// 4096; at least 1), and folding repetitions that come within
    /// `series_window` of the last one (default 6 minutes, as client-go). When the cache is
    /// full the Event repeated longest ago is forgotten: its next repetition starts a new Event.
    pub fn with_cache(self, capacity: usize, series_window: Duration) -> Self {
        Recorder {
            cache: Arc::new(Cache::new(capacity.max(1), series_window)),
            ..self
        }
    }

    /// The recorder's reporter.
    pub fn reporter(&self) -> &Reporter {
        &self.reporter
    }

    /// Writes `record` as an Event regarding `regarding`, or counts it on the series of the
    /// identical Event written recently. The Event lives in the namespace of `regarding`
    /// (`default` for cluster-scoped objects, as client-go).
    pub async fn publish(
        &self,
        record: &EventRecord,
        regarding: &ObjectReference,
    ) -> Result<(), Error> {
        let note = validate(record, regarding)?;
        let key = Key::new(&self.reporter, record, &note, regarding);
        let slot = self.cache.slot(key);
        let mut series = slot.lock().await;
        if let Some(current) = series.as_mut().filter(|s| self.cache.in_window(s)) {
            match self.count_repetition(current).await {
                Ok(()) => return Ok(()),
                // The Event is gone (deleted, or expired by the server's TTL): start anew.
                Err(Error::Series {
                    source: kube_client::Error::Api(status),
                    ..
                }) if status.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        let created = self.create(record, note, regarding).await?;
        *series = Some(created);
        Ok(())
    }

    /// [`publish`](Self::publish) regarding `object`.
    pub async fn publish_for<K: Resource<DynamicType = ()>>(
        &self,
        record: &EventRecord,
        object: &K,
    ) -> Result<(), Error> {
        self.publish(record, &object_ref(object)).await
    }

    async fn create(
        &self,
        record: &EventRecord,
        note: String,
        regarding: &ObjectReference,
    ) -> Result<Series, Error> {
        let now = Timestamp::now();
        let namespace = regarding
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| "default".to_string());
        // As client-go: the object's name and the time in hexadecimal nanoseconds.
        let name = format!(
            "{}.{:x}",
            regarding.name.as_deref().unwrap_or_default(),
            now.as_nanosecond()
        );
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..Default::default()
            },
            event_time: Some(MicroTime(now)),
            type_: Some(record.type_.as_str().to_string()),
            reason: Some(record.reason.clone()),
            action: Some(record.action.clone()),
            note: Some(note).filter(|n| !n.is_empty()),
            regarding: Some(regarding.clone()),
            related: record.secondary.clone(),
            reporting_controller: Some(self.reporter.controller.clone()),
            reporting_instance: Some(self.reporter.instance.clone()),
            ..Default::default()
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        match api.create(&PostParams::default(), &event).await {
            Ok(_) => Ok(Series::new(namespace, name)),
            Err(source) => Err(Error::Create {
                namespace,
                name,
                source,
            }),
        }
    }

    /// Counts one more repetition on `series`' Event; `series` changes only on success.
    async fn count_repetition(&self, series: &mut Series) -> Result<(), Error> {
        let count = series.count.saturating_add(1);
        let patch = serde_json::json!({
            "series": EventSeries {
                count,
                last_observed_time: MicroTime(Timestamp::now()),
            }
        });
        let api: Api<Event> = Api::namespaced(self.client.clone(), &series.namespace);
        match (api.patch(&series.name, &PatchParams::default(), &Patch::Merge(&patch))).await {
            Ok(_) => {
                series.repeated(count);
                Ok(())
            }
            Err(source) => Err(Error::Series {
                namespace: series.namespace.clone(),
                name: series.name.clone(),
                source,
            }),
        }
    }
}

/// Checks what the API server would reject, and returns the note cut to its limit.
fn validate(record: &EventRecord, regarding: &ObjectReference) -> Result<String, Error> {
    let invalid = |msg: &str| Err(Error::InvalidEvent(msg.to_string()));
    if record.reason.is_empty() {
        return invalid("the reason must not be empty");
    }
    if record.action.is_empty() {
        return invalid("the action must not be empty");
    }
    if record.reason.chars().count() > MAX_REASON_CHARS {
        return invalid("the reason is longer than 128 characters");
    }
    if record.action.chars().count() > MAX_REASON_CHARS {
        return invalid("the action is longer than 128 characters");
    }
    if regarding.name.as_deref().unwrap_or_default().is_empty() {
        return invalid("the regarding object has no name");
    }
    let mut note = record.note.clone().unwrap_or_default();
    if note.len() > MAX_NOTE_BYTES {
        let mut cut = MAX_NOTE_BYTES;
        while !note.is_char_boundary(cut) {
            cut -= 1;
        }
        note.truncate(cut);
    }
    Ok(note)
}
