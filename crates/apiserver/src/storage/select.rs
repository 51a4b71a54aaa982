//! What a list or watch selects: a namespace, a label selector and a field selector, with the
//! field labels each kind supports (the real server's `GetAttrs` / field label conversion).

use crt_labels::{FieldSelector, LabelSelector};
use serde_json::Value;

use super::meta;
use crate::error::ApiError;
use crate::kinds::{self, FieldLabel};
use crate::resource::ResourceInfo;

/// The field labels a kind supports beyond `metadata.name` and `metadata.namespace`.
fn kind_fields(group: &str, kind: &str) -> &'static [FieldLabel] {
    kinds::strategy_of_kind(group, kind).field_labels
}

/// The value of a field label on a stored object (events of both APIs are stored in the core
/// form, so they share the core field labels).
fn field_value(group: &str, kind: &str, obj: &Value, field: &str) -> Option<String> {
    match field {
        "metadata.name" => return Some(meta::name(obj).to_string()),
        "metadata.namespace" => {
            return Some(meta::meta_str(obj, "namespace").unwrap_or("").to_string());
        }
        _ => {}
    }
    let label = kind_fields(group, kind).iter().find(|l| l.name == field);
    let v = meta::get_path(obj, label.map_or(field, |l| l.path));
    let text = match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        // Booleans and counters that default to false / 0 select as such.
        Some(_) | None => label.map_or("", |l| l.absent).to_string(),
    };
    Some(text)
}

/// A parsed selection over one resource.
#[derive(Clone, Debug)]
pub(crate) struct Selection {
    group: String,
    kind: String,
    /// Only objects of this namespace (`None`: every namespace).
    pub(crate) namespace: Option<String>,
    labels: Option<LabelSelector>,
    fields: Option<FieldSelector>,
}

impl Selection {
    /// Parses the selectors of a request: a malformed selector or an unsupported field label is
    /// 400 BadRequest, as the real server answers.
    pub(crate) fn parse(
        res: &ResourceInfo,
        namespace: Option<&str>,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<Self, ApiError> {
        let labels = match label_selector.map(str::trim).filter(|s| !s.is_empty()) {
            None => None,
            Some(s) => Some(
                s.parse::<LabelSelector>()
                    .map_err(|e| ApiError::bad_request(e.to_string()))?,
            ),
        };
        let fields = match field_selector.map(str::trim).filter(|s| !s.is_empty()) {
            None => None,
            Some(s) => {
                let sel = s
                    .parse::<FieldSelector>()
                    .map_err(|e| ApiError::bad_request(e.to_string()))?;
                let supported = kind_fields(&res.group, &res.kind);
                for f in sel.fields() {
                    if f != "metadata.name"
                        && f != "metadata.namespace"
                        && !supported.iter().any(|l| l.name == f)
                        && !res.selectable_fields.iter().any(|s| s == f)
                    {
                        return Err(ApiError::bad_request(format!(
                            "field label not supported: {f}"
                        )));
                    }
                }
                Some(sel)
            }
        };
        Ok(Selection {
            group: res.group.clone(),
            kind: res.kind.clone(),
            namespace: if res.namespaced {
                namespace.map(str::to_string)
            } else {
                None
            },
            labels,
            fields,
        })
    }

    /// Whether the object is selected.
    pub(crate) fn matches(&self, obj: &Value) -> bool {
        if let Some(ns) = &self.namespace
            && meta::meta_str(obj, "namespace").unwrap_or("") != ns
        {
            return false;
        }
        if let Some(labels) = &self.labels {
            let map = obj
                .get("metadata")
                .and_then(|m| m.get("labels"))
                .and_then(Value::as_object);
            if !labels.matches_fn(|k| map.and_then(|m| m.get(k)).and_then(Value::as_str)) {
                return false;
            }
        }
        if let Some(fields) = &self.fields
            && !fields.matches_fn(|f| field_value(&self.group, &self.kind, obj, f))
        {
            return false;
        }
        true
    }
}

/// A `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`) as a selector; `None`
/// when it does not form one.
pub(crate) fn label_selector(sel: &Value) -> Option<crt_labels::LabelSelector> {
    let labels = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()));
    let exprs = sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| crt_labels::MatchExpression {
            key: e
                .get("key")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            operator: e
                .get("operator")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            values: meta::string_list(e.get("values")),
        });
    crt_labels::LabelSelector::from_parts(labels.collect::<Vec<_>>(), exprs.collect::<Vec<_>>())
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn res(plural: &str) -> ResourceInfo {
        ResourceInfo::builtins()
            .into_iter()
            .find(|r| r.plural == plural && r.group.is_empty())
            .unwrap()
    }

    #[test]
    fn labels_and_fields() {
        let pods = res("pods");
        let pod = json!({"metadata": {"name": "a", "namespace": "ns", "labels": {"app": "web"}},
            "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        let sel = Selection::parse(
            &pods,
            None,
            Some("app=web"),
            Some("spec.nodeName=n1,status.phase!=Failed"),
        )
        .unwrap();
        assert!(sel.matches(&pod));
        let sel = Selection::parse(&pods, Some("other"), None, None).unwrap();
        assert!(!sel.matches(&pod));
        let sel = Selection::parse(&pods, None, Some("app notin (web)"), None).unwrap();
        assert!(!sel.matches(&pod));
        let sel = Selection::parse(&pods, None, None, Some("metadata.name=b")).unwrap();
        assert!(!sel.matches(&pod));
    }

    #[test]
    fn unsupported_field_is_bad_request() {
        let err =
            Selection::parse(&res("configmaps"), None, None, Some("spec.nodeName=x")).unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(err.message, "field label not supported: spec.nodeName");
        let err = Selection::parse(&res("pods"), None, Some("a in ("), None).unwrap_err();
        assert_eq!(err.code, 400);
    }

    #[test]
    fn defaults_of_boolean_fields() {
        let nodes = res("nodes");
        let sel = Selection::parse(&nodes, None, None, Some("spec.unschedulable=false")).unwrap();
        assert!(sel.matches(&json!({"metadata": {"name": "n"}, "spec": {}})));
        let events = res("events");
        let sel = Selection::parse(
            &events,
            None,
            None,
            Some("involvedObject.name=p,source=kubelet"),
        )
        .unwrap();
        assert!(sel.matches(&json!({"metadata": {"name": "e"}, "involvedObject": {"name": "p"}, "source": {"component": "kubelet"}})));
    }
}
