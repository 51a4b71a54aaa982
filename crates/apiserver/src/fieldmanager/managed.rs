//! `metadata.managedFields`: one entry per manager, operation and subresource, read from and
//! written back to the object in the order the real server keeps them.

use serde_json::{Map, Value};

use super::fieldpath::FieldSet;

/// The operation an entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Any other write (create, update, patch).
    Update,
}

impl Operation {
    /// `"Apply"` or `"Update"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One `ManagedFieldsEntry`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// `manager`.
    pub manager: String,
    /// `operation`.
    pub operation: Operation,
    /// `apiVersion` of the request that wrote the fields.
    pub api_version: String,
    /// `time`: when the entry's fields last changed (RFC 3339, seconds).
    pub time: Option<String>,
    /// `subresource`: `"status"` or `"scale"` for writes through them.
    pub subresource: Option<String>,
    /// The fields (`fieldsV1`).
    pub fields: FieldSet,
}

impl Entry {
    /// Whether this entry belongs to `manager` writing with `operation` through `subresource`.
    pub fn is(&self, manager: &str, operation: Operation, subresource: Option<&str>) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource.as_deref() == subresource
    }

    /// The manager as conflict messages name it: `"kubectl"` for an applier,
    /// `"kube-client" using v1` for an updater, `with subresource "status"` when through one.
    pub fn label(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if let Some(sub) = &self.subresource {
            s.push_str(&format!(" with subresource {sub:?}"));
        }
        if self.operation == Operation::Update {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }

    /// The entry as stored in `metadata.managedFields`.
    pub fn to_value(&self) -> Value {
        Entry::value(
            self.manager.clone(),
            self.operation,
            self.api_version.clone(),
            self.time.clone(),
            self.subresource.clone(),
            &self.fields,
        )
    }

    /// [`Entry::to_value`], taking the entry's strings rather than copying them.
    pub fn into_value(self) -> Value {
        Entry::value(
            self.manager,
            self.operation,
            self.api_version,
            self.time,
            self.subresource,
            &self.fields,
        )
    }

    fn value(
        manager: String,
        operation: Operation,
        api_version: String,
        time: Option<String>,
        subresource: Option<String>,
        fields: &FieldSet,
    ) -> Value {
        let mut m = Map::with_capacity(7);
        if !manager.is_empty() {
            m.insert("manager".into(), Value::from(manager));
        }
        m.insert("operation".into(), Value::from(operation.as_str()));
        m.insert("apiVersion".into(), Value::from(api_version));
        if let Some(t) = time {
            m.insert("time".into(), Value::from(t));
        }
        m.insert("fieldsType".into(), Value::from("FieldsV1"));
        m.insert("fieldsV1".into(), fields.to_fields_v1());
        if let Some(sub) = subresource {
            m.insert("subresource".into(), Value::from(sub));
        }
        Value::Object(m)
    }

    /// Reads one stored entry; `None` when it is not a `FieldsV1` entry of a known operation.
    pub fn from_value(v: &Value) -> Option<Entry> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(String::from);
        let operation = match s("operation")?.as_str() {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return None,
        };
        let fields = match v.get("fieldsV1") {
            Some(f) => FieldSet::from_fields_v1(f).ok()?,
            None => FieldSet::new(),
        };
        Some(Entry {
            manager: s("manager").unwrap_or_default(),
            operation,
            api_version: s("apiVersion").unwrap_or_default(),
            time: s("time"),
            subresource: s("subresource").filter(|s| !s.is_empty()),
            fields,
        })
    }
}

/// The entries of one object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ManagedFields {
    /// The entries, in any order (written back sorted).
    pub entries: Vec<Entry>,
}

impl ManagedFields {
    /// Reads `metadata.managedFields`; entries that cannot be read are dropped (the real
    /// server resets unreadable managed fields rather than failing the write).
    pub fn from_object(obj: &Value) -> ManagedFields {
        let entries = obj
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Entry::from_value)
            .collect();
        ManagedFields { entries }
    }

    /// The entry of `manager` for `operation` through `subresource`, if any.
    pub fn find(
        &self,
        manager: &str,
        operation: Operation,
        subresource: Option<&str>,
    ) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.is(manager, operation, subresource))
    }

    /// Sets the fields of `manager`'s entry (creating it), stamping `time` and `apiVersion`
    /// when they change.
    pub fn set(
        &mut self,
        manager: &str,
        operation: Operation,
        subresource: Option<&str>,
        api_version: &str,
        fields: FieldSet,
        now: &str,
    ) {
        match self
            .entries
            .iter_mut()
            .find(|e| e.is(manager, operation, subresource))
        {
            Some(e) => {
                if e.fields != fields || e.api_version != api_version {
                    e.time = Some(now.to_string());
                    e.api_version = api_version.to_string();
                    e.fields = fields;
                }
            }
            None => self.entries.push(Entry {
                manager: manager.to_string(),
                operation,
                api_version: api_version.to_string(),
                time: Some(now.to_string()),
                subresource: subresource.map(String::from),
                fields,
            }),
        }
    }

    /// Writes the entries into `metadata.managedFields`, without the empty ones, sorted as the
    /// real server sorts them (operation, time, manager, apiVersion, subresource); removes the
    /// field when none is left.
    pub fn write(mut self, obj: &mut Value) {
        self.entries.retain(|e| !e.fields.is_empty());
        self.entries.sort_by(|a, b| {
            (
                a.operation,
                &a.time,
                &a.manager,
                &a.api_version,
                &a.subresource,
            )
                .cmp(&(
                    b.operation,
                    &b.time,
                    &b.manager,
                    &b.api_version,
                    &b.subresource,
                ))
        });
        write_values(obj, self.entries.iter().map(Entry::to_value).collect());
    }
}

/// Whether a stored entry belongs to `manager` writing with `operation` through `subresource`.
pub fn value_is(v: &Value, manager: &str, operation: Operation, subresource: Option<&str>) -> bool {
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    s("manager").unwrap_or("") == manager
        && s("operation") == Some(operation.as_str())
        && s("subresource").filter(|s| !s.is_empty()) == subresource
}

/// Sorts stored entries as the real server does (operation, time, manager, apiVersion,
/// subresource) and writes them into `metadata.managedFields` (removed when empty).
pub fn write_values(obj: &mut Value, mut entries: Vec<Value>) {
    fn key(v: &Value) -> [&str; 5] {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
        [
            s("operation"),
            s("time"),
            s("manager"),
            s("apiVersion"),
            s("subresource"),
        ]
    }
    entries.sort_by(|a, b| key(a).cmp(&key(b)));
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if entries.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), Value::Array(entries));
    }
}
