//! What an event says and who reports it: [`EventRecord`], [`EventType`], [`Reporter`]. A leaf
//! of `recorder`, which re-exports it.

use std::fmt;

use k8s_openapi::api::core::v1::ObjectReference;

/// An Event's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum EventType {
    /// Something expected happened.
    #[default]
    Normal,
    /// Something may need attention.
    Warning,
}

impl EventType {
    /// `Normal` or `Warning`, as in the Event's `type`.
    pub fn as_str(&self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happened, to be written as an Event by [`Recorder::publish`](crate::recorder::Recorder::publish).
///
/// ```
/// use controller_runtime::recorder::{EventRecord, EventType};
///
/// let record = EventRecord::warning("BackOff", "Reconcile").note("retrying in 10s");
/// assert_eq!(record.type_, EventType::Warning);
/// assert_eq!(record.note.as_deref(), Some("retrying in 10s"));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventRecord {
    /// Normal or Warning.
    pub type_: EventType,
    /// Why the action was taken, short and `CamelCase` (at most 128 characters).
    pub reason: String,
    /// A human-readable description (cut to 1024 bytes, as upstream).
    pub note: Option<String>,
    /// What the controller did or failed to do, e.g. `Reconcile`, `Scale` (at most 128
    /// characters).
    pub action: String,
    /// A second object the event involves (the Event's `related`).
    pub secondary: Option<ObjectReference>,
}

impl EventRecord {
    /// A Normal event with `reason` and `action`.
    pub fn normal(reason: impl Into<String>, action: impl Into<String>) -> Self {
        EventRecord {
            type_: EventType::Normal,
            reason: reason.into(),
            action: action.into(),
            ..Default::default()
        }
    }

    /// A Warning event with `reason` and `action`.
    pub fn warning(reason: impl Into<String>, action: impl Into<String>) -> Self {
        EventRecord {
            type_: EventType::Warning,
            ..Self::normal(reason, action)
        }
    }

    /// The record with `note`.
    pub fn note(self, note: impl Into<String>) -> Self {
        EventRecord {
            note: Some(note.into()),
            ..self
        }
    }

    /// The record with `related` as its second object.
    pub fn secondary(self, related: ObjectReference) -> Self {
        EventRecord {
            secondary: Some(related),
            ..self
        }
    }
}

/// Who writes the Events: the Event's `reportingController` and `reportingInstance`.
///
/// ```
/// use controller_runtime::recorder::Reporter;
///
/// let reporter = Reporter::new("foo-controller");
/// assert_eq!(reporter.controller, "foo-controller");
/// assert!(reporter.instance.starts_with("foo-controller-"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reporter {
    /// The controller's name, e.g. `example.com/foo-controller`.
    pub controller: String,
    /// This replica of the controller, e.g. the pod name.
    pub instance: String,
}

impl Reporter {
    /// A reporter for `controller`, with the instance `<controller>-<host name>` (as client-go).
    pub fn new(controller: impl Into<String>) -> Self {
        let controller = controller.into();
        let instance = format!("{controller}-{}", crate::leaderelection::host_name());
        Reporter {
            controller,
            instance,
        }
    }
}

impl From<&str> for Reporter {
    fn from(controller: &str) -> Self {
        Reporter::new(controller)
    }
}
