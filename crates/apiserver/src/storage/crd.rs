//! CustomResourceDefinitions: validation of a CRD, its status (Established, NamesAccepted,
//! acceptedNames), the resources it serves, and the checks of custom objects against the
//! version's structural schema (validation, pruning and defaulting live in `crate::schema`).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::json;
use serde_json::{Value, json};

use super::meta;
use super::options::{FieldValidation, WriteOptions};
use super::store::{State, res_key};
use crate::discovery::version_priority;
use crate::error::ApiError;
use crate::resource::{ResourceInfo, ScaleInfo};
use crate::schema::StructuralSchema;
use crate::validation::{
    FieldError, NameFormat, is_dns1123_label, is_dns1123_subdomain, validate_name,
};

/// Fills in the defaults of a CRD's spec (singular, listKind, conversion) and checks it;
/// sets the status the real server reports once the CRD is established.
pub(crate) fn prepare_create(crd: &mut Value) -> Vec<FieldError> {
    apply_spec_defaults(crd);
    let errs = validate(crd);
    if errs.is_empty() {
        let names = crd
            .get("spec")
            .and_then(|s| s.get("names"))
            .cloned()
            .unwrap_or(json!({}));
        let storage: Vec<Value> = versions(crd)
            .iter()
            .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
            .filter_map(|v| v.get("name").cloned())
            .collect();
        let now = meta::now();
        crd["status"] = json!({
            "acceptedNames": names,
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": now},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": now},
            ],
            "storedVersions": storage,
        });
    }
    errs
}

fn apply_spec_defaults(crd: &mut Value) {
    let kind = json::str_at(crd, &["spec", "names", "kind"]).to_string();
    if !kind.is_empty() {
        if json::str_at(crd, &["spec", "names", "singular"]).is_empty() {
            meta::set_path(
                crd,
                ".spec.names.singular",
                Value::from(kind.to_ascii_lowercase()),
            );
        }
        if json::str_at(crd, &["spec", "names", "listKind"]).is_empty() {
            meta::set_path(
                crd,
                ".spec.names.listKind",
                Value::from(format!("{kind}List")),
            );
        }
    }
    if meta::get_path(crd, ".spec.conversion").is_none() {
        meta::set_path(crd, ".spec.conversion", json!({"strategy": "None"}));
    }
}

fn versions(crd: &Value) -> Vec<Value> {
    meta::get_path(crd, ".spec.versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Checks a CRD as the real server's validation does (the parts that decide what is served).
pub(crate) fn validate(crd: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let group = json::str_at(crd, &["spec", "group"]);
    let plural = json::str_at(crd, &["spec", "names", "plural"]);
    let name = meta::name(crd);
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        errs.push(FieldError::invalid(
            "metadata.name",
            &Value::from(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else if !is_dns1123_subdomain(group) {
        errs.extend(validate_name(NameFormat::Subdomain, group, "spec.group"));
    } else if !group.contains('.') {
        errs.push(FieldError::invalid(
            "spec.group",
            &Value::from(group),
            "should be a domain with at least one dot",
        ));
    }
    for field in ["plural", "singular"] {
        let v = json::str_at(crd, &["spec", "names", field]);
        if v.is_empty() {
            errs.push(FieldError::required(format!("spec.names.{field}"), ""));
        } else if !is_dns1123_label(v) {
            errs.extend(validate_name(
                NameFormat::Label,
                v,
                &format!("spec.names.{field}"),
            ));
        }
    }
    for field in ["kind", "listKind"] {
        if json::str_at(crd, &["spec", "names", field]).is_empty() {
            errs.push(FieldError::required(format!("spec.names.{field}"), ""));
        }
    }
    for (i, short) in meta::string_list(meta::get_path(crd, ".spec.names.shortNames"))
        .iter()
        .enumerate()
    {
        if !is_dns1123_label(short) {
            errs.extend(validate_name(
                NameFormat::Label,
                short,
                &format!("spec.names.shortNames[{i}]"),
            ));
        }
    }
    match json::str_at(crd, &["spec", "scope"]) {
        "Namespaced" | "Cluster" => {}
        "" => errs.push(FieldError::required("spec.scope", "")),
        other => errs.push(FieldError::not_supported(
            "spec.scope",
            &Value::from(other),
            &["Cluster", "Namespaced"],
        )),
    }
    let vs = versions(crd);
    if vs.is_empty() {
        errs.push(FieldError::required(
            "spec.versions",
            "must have exactly one version marked as storage version",
        ));
    }
    let storage = vs
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .count();
    if !vs.is_empty() && storage != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            &Value::from(vs.clone()),
            "must have exactly one version marked as storage version",
        ));
    }
    // Upstream validates its internal form, where a per-version field that is identical in
    // every version is hoisted to the spec: its errors are reported at the spec's path.
    let identical = |field: &str| vs.iter().all(|v| v.get(field) == vs[0].get(field));
    let schema_hoisted = !vs.is_empty() && identical("schema");
    let subresources_hoisted = !vs.is_empty() && identical("subresources");
    let columns_hoisted = !vs.is_empty() && identical("additionalPrinterColumns");
    let selectable_hoisted = schema_hoisted && identical("selectableFields");
    if schema_hoisted && let Some(schema) = vs[0].pointer("/schema/openAPIV3Schema") {
        errs.extend(schema_errors(schema, "spec.validation.openAPIV3Schema"));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, v) in vs.iter().enumerate() {
        let at = |field: &str, hoisted: bool| match hoisted {
            true => format!("spec.{field}"),
            false => format!("spec.versions[{i}].{field}"),
        };
        if i == 0 || !subresources_hoisted {
            errs.extend(validate_subresources(
                v.get("subresources"),
                &at("subresources", subresources_hoisted),
            ));
        }
        if i == 0 || !columns_hoisted {
            errs.extend(validate_printer_columns(
                v.get("additionalPrinterColumns"),
                &at("additionalPrinterColumns", columns_hoisted),
            ));
        }
        if (i == 0 || !selectable_hoisted)
            && let Some(fields) = v.get("selectableFields").and_then(Value::as_array)
            && let Some(schema) = v.pointer("/schema/openAPIV3Schema")
            && let Ok(schema) = StructuralSchema::from_value(schema)
        {
            errs.extend(validate_selectable_fields(
                fields,
                &schema,
                &at("selectableFields", selectable_hoisted),
            ));
        }
        let vname = v.get("name").and_then(Value::as_str).unwrap_or("");
        if vname.is_empty() {
            errs.push(FieldError::required(format!("spec.versions[{i}].name"), ""));
        } else if !is_dns1123_label(vname) || !vname.as_bytes()[0].is_ascii_lowercase() {
            errs.extend(validate_name(
                NameFormat::Dns1035,
                vname,
                &format!("spec.versions[{i}].name"),
            ));
        } else if !seen.insert(vname.to_string()) {
            errs.push(FieldError {
                reason: "FieldValueDuplicate",
                field: format!("spec.versions[{i}].name"),
                message: format!("Duplicate value: {vname:?}"),
            });
        }
        match v.get("schema").and_then(|s| s.get("openAPIV3Schema")) {
            None => errs.push(FieldError::required(
                format!("spec.versions[{i}].schema.openAPIV3Schema"),
                "schemas are required",
            )),
            Some(_) if schema_hoisted => {}
            Some(schema) => {
                errs.extend(schema_errors(
                    schema,
                    &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                ));
            }
        }
    }
    if !vs.is_empty()
        && !vs
            .iter()
            .any(|v| v.get("served").and_then(Value::as_bool) == Some(true))
    {
        errs.push(FieldError::invalid(
            "spec.versions",
            &Value::from(vs.clone()),
            "must have at least one served version",
        ));
    }
    errs.extend(validate_conversion(crd));
    errs
}

/// A simple JSONPath as upstream's `validateSimpleJSONPath` accepts it: `.` then names.
fn simple_json_path_errors(path: &str, field: &str) -> Option<FieldError> {
    if path.is_empty() {
        return Some(FieldError::invalid(
            field,
            &Value::from(path),
            "must not be empty",
        ));
    }
    (!path.starts_with('.')).then(|| {
        FieldError::invalid(
            field,
            &Value::from(path),
            "must be a simple json path starting with .",
        )
    })
}

/// Checks the status and scale subresources as upstream's
/// `ValidateCustomResourceDefinitionSubresources` does: the scale's replica paths are simple
/// JSONPaths under `.spec` and `.status`, its label selector path under `.status`.
fn validate_subresources(subresources: Option<&Value>, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(scale) = subresources.and_then(|s| s.get("scale")) else {
        return errs;
    };
    for (field, under, required) in [
        ("specReplicasPath", ".spec.", true),
        ("statusReplicasPath", ".status.", true),
        ("labelSelectorPath", ".status.", false),
    ] {
        let path = scale.get(field).and_then(Value::as_str).unwrap_or("");
        let name = format!("{at}.scale.{field}");
        if path.is_empty() {
            if required {
                errs.push(FieldError::required(name, ""));
            }
            continue;
        }
        if let Some(e) = simple_json_path_errors(path, &name) {
            errs.push(e);
        } else if !path.starts_with(under) {
            errs.push(FieldError::invalid(
                &name,
                &Value::from(path),
                &format!(
                    "should be a json path under {}",
                    under.trim_end_matches('.')
                ),
            ));
        }
    }
    errs
}

/// Checks printer columns as upstream's `ValidateCustomResourceColumnDefinition` does.
fn validate_printer_columns(columns: Option<&Value>, at: &str) -> Vec<FieldError> {
    const TYPES: &str = "boolean,date,integer,number,string";
    const FORMATS: [&str; 8] = [
        "byte",
        "date",
        "date-time",
        "double",
        "float",
        "int32",
        "int64",
        "password",
    ];
    let mut errs = Vec::new();
    for (j, col) in columns
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let field = |f: &str| format!("{at}[{j}].{f}");
        let text = |f: &str| col.get(f).and_then(Value::as_str).unwrap_or("");
        if text("name").is_empty() {
            errs.push(FieldError::required(field("name"), ""));
        }
        match text("type") {
            "" => errs.push(FieldError::required(
                field("type"),
                &format!("must be one of {TYPES}"),
            )),
            t if !TYPES.split(',').any(|k| k == t) => errs.push(FieldError::invalid(
                field("type"),
                &Value::from(t),
                &format!("must be one of {TYPES}"),
            )),
            _ => {}
        }
        let format = text("format");
        if !format.is_empty() && !FORMATS.contains(&format) {
            errs.push(FieldError::invalid(
                field("format"),
                &Value::from(format),
                &format!("must be one of {}", FORMATS.join(",")),
            ));
        }
        // Upstream names the field by its Go name here.
        let path = text("jsonPath");
        if path.is_empty() {
            errs.push(FieldError::required(field("JSONPath"), ""));
        } else if let Some(e) = simple_json_path_errors(path, &field("JSONPath")) {
            errs.push(e);
        }
    }
    errs
}

/// Checks `selectableFields` as upstream's `ValidateCustomResourceSelectableFields` does: each
/// names a declared field of type string, integer or boolean outside `metadata`, once; at
/// most 8.
fn validate_selectable_fields(
    fields: &[Value],
    schema: &StructuralSchema,
    at: &str,
) -> Vec<FieldError> {
    const MAX: usize = 8;
    let mut errs = Vec::new();
    let mut unique = std::collections::BTreeSet::new();
    for (i, f) in fields.iter().enumerate() {
        let name = format!("{at}[{i}].jsonPath");
        let path = f.get("jsonPath").and_then(Value::as_str).unwrap_or("");
        if path.is_empty() {
            errs.push(FieldError::required(name, ""));
            continue;
        }
        let value = Value::from(path);
        let Some(ty) = schema.field_type(path) else {
            errs.push(FieldError::invalid(
                &name,
                &value,
                "is an invalid path: does not refer to a valid field",
            ));
            continue;
        };
        if path == ".metadata" || path.starts_with(".metadata.") {
            errs.push(FieldError::invalid(
                &name,
                &value,
                "must not point to fields in metadata",
            ));
        }
        if !matches!(ty, "string" | "integer" | "boolean") {
            errs.push(FieldError::invalid(
                &name,
                &value,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if !unique.insert(path) {
            errs.push(FieldError {
                reason: "FieldValueDuplicate",
                field: name,
                message: format!("Duplicate value: {path:?}"),
            });
        }
    }
    if unique.len() > MAX {
        errs.push(FieldError::too_many(at, unique.len(), MAX));
    }
    errs
}

/// Checks `spec.conversion` as upstream's `validateCustomResourceConversion` does. The paths
/// are upstream's internal ones: a v1 client's `spec.conversion.webhook.clientConfig` is
/// `spec.conversion.webhookClientConfig` there, and that is what upstream reports.
fn validate_conversion(crd: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(conversion) = meta::get_path(crd, ".spec.conversion").filter(|c| !c.is_null()) else {
        return errs;
    };
    let strategy = json::str_at(conversion, &["strategy"]);
    match strategy {
        "None" | "Webhook" => {}
        "" => errs.push(FieldError::required("spec.conversion.strategy", "")),
        other => errs.push(FieldError::not_supported(
            "spec.conversion.strategy",
            &Value::from(other),
            &["None", "Webhook"],
        )),
    }
    if strategy == "Webhook"
        && meta::get_path(crd, ".spec.preserveUnknownFields").and_then(Value::as_bool) == Some(true)
    {
        errs.push(FieldError::invalid(
            "spec.conversion.strategy",
            &Value::from(strategy),
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    let webhook = conversion.get("webhook").filter(|w| !w.is_null());
    let client_config = webhook
        .and_then(|w| w.get("clientConfig"))
        .filter(|c| !c.is_null());
    let review_versions = webhook
        .and_then(|w| w.get("conversionReviewVersions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    const CLIENT_CONFIG: &str = "spec.conversion.webhookClientConfig";
    const REVIEW_VERSIONS: &str = "spec.conversion.conversionReviewVersions";
    if strategy != "Webhook" {
        let not_webhook = "should not be set when strategy is not set to Webhook";
        if client_config.is_some() {
            errs.push(FieldError::forbidden(CLIENT_CONFIG, not_webhook));
        }
        if !review_versions.is_empty() {
            errs.push(FieldError::forbidden(REVIEW_VERSIONS, not_webhook));
        }
        return errs;
    }
    match client_config {
        None => errs.push(FieldError::required(
            CLIENT_CONFIG,
            "required when strategy is set to Webhook",
        )),
        Some(cc) => {
            let url = cc.get("url").filter(|u| !u.is_null());
            let service = cc.get("service").filter(|u| !u.is_null());
            match (url, service) {
                (Some(url), None) => errs.extend(validate_webhook_url(
                    &format!("{CLIENT_CONFIG}.url"),
                    url.as_str().unwrap_or(""),
                )),
                (None, Some(service)) => {
                    let at = format!("{CLIENT_CONFIG}.service");
                    for f in ["name", "namespace"] {
                        if json::str_at(service, &[f]).is_empty() {
                            errs.push(FieldError::required(
                                format!("{at}.{f}"),
                                &format!("service {f} is required"),
                            ));
                        }
                    }
                    let path = json::str_at(service, &["path"]);
                    if !path.is_empty() && !path.starts_with('/') {
                        errs.push(FieldError::invalid(
                            format!("{at}.path"),
                            &Value::from(path),
                            "must start with a '/'",
                        ));
                    }
                }
                _ => errs.push(FieldError::required(
                    CLIENT_CONFIG,
                    "exactly one of url or service is required",
                )),
            }
        }
    }
    if review_versions.is_empty() {
        errs.push(FieldError::required(REVIEW_VERSIONS, ""));
        return errs;
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut accepted = false;
    for (i, v) in review_versions.iter().enumerate() {
        let v = v.as_str().unwrap_or("");
        let at = format!("{REVIEW_VERSIONS}[{i}]");
        if !seen.insert(v) {
            errs.push(FieldError::invalid(
                at,
                &Value::from(v),
                "duplicate version",
            ));
            continue;
        }
        errs.extend(validate_name(NameFormat::Dns1035, v, &at));
        accepted |= matches!(v, "v1" | "v1beta1");
    }
    if !accepted {
        let go = review_versions
            .iter()
            .map(|v| format!("{:?}", v.as_str().unwrap_or("")))
            .collect::<Vec<_>>()
            .join(", ");
        errs.push(FieldError::invalid_go(
            REVIEW_VERSIONS,
            &format!("[]string{{{go}}}"),
            "must include at least one of v1, v1beta1",
        ));
    }
    errs
}

/// Checks a webhook's `url` as upstream's `ValidateWebhookURL` does with HTTPS required.
fn validate_webhook_url(field: &str, url: &str) -> Vec<FieldError> {
    const FORM: &str = "; desired format: https://host[/path]";
    let mut errs = Vec::new();
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = rest.split('/').next().unwrap_or("");
    let (user, host) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    let host = if url.contains("://") { host } else { "" };
    if scheme != "https" {
        errs.push(FieldError::invalid(
            field,
            &Value::from(scheme),
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if host.is_empty() {
        errs.push(FieldError::invalid(
            field,
            &Value::from(host),
            &format!("host must be specified{FORM}"),
        ));
    }
    if let Some(user) = user {
        errs.push(FieldError::invalid(
            field,
            &Value::from(user),
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        errs.push(FieldError::invalid(
            field,
            &Value::from(fragment),
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        errs.push(FieldError::invalid(
            field,
            &Value::from(query),
            "query parameters are not permitted in the URL",
        ));
    }
    errs
}

/// Fills in the spec defaults of an updated CRD, as on create (the real server defaults every
/// write), and checks it: the fields the real server keeps immutable, and the spec.
pub(crate) fn prepare_update(old: &Value, new: &mut Value) -> Vec<FieldError> {
    apply_spec_defaults(new);
    let new = &*new;
    let mut errs = Vec::new();
    for path in [".spec.group", ".spec.names.plural", ".spec.scope"] {
        if meta::get_path(old, path) != meta::get_path(new, path) {
            let v = meta::get_path(new, path).cloned().unwrap_or(Value::Null);
            errs.push(FieldError::invalid(
                path.trim_start_matches('.'),
                &v,
                "field is immutable",
            ));
        }
    }
    if !meta::is_deleting(new) {
        errs.extend(validate(new));
    }
    errs
}

/// Keeps `status.storedVersions` listing every version ever used for storage (the real
/// server adds the new storage version when it changes).
pub(crate) fn track_stored_versions(crd: &mut Value) {
    let Some(storage) = versions(crd)
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").and_then(Value::as_str).map(str::to_string))
    else {
        return;
    };
    let mut stored = meta::string_list(meta::get_path(crd, ".status.storedVersions"));
    if !stored.contains(&storage) {
        stored.push(storage);
        meta::set_path(crd, ".status.storedVersions", Value::from(stored));
    }
}

/// Sets (or replaces) a condition in `status.conditions`.
pub(crate) fn set_condition(
    crd: &mut Value,
    kind: &str,
    status: &str,
    reason: &str,
    message: &str,
) {
    let cond = json!({"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": meta::now()});
    let mut conds = meta::get_path(crd, ".status.conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    conds.retain(|c| c.get("type").and_then(Value::as_str) != Some(kind));
    conds.push(cond);
    meta::set_path(crd, ".status.conditions", Value::from(conds));
}

/// The resources a CRD serves: one per served version.
pub(crate) fn resources_of(crd: &Value) -> Vec<ResourceInfo> {
    let group = json::str_at(crd, &["spec", "group"]).to_string();
    let names = |f: &str| json::str_at(crd, &["spec", "names", f]).to_string();
    let list = |f: &str| meta::string_list(meta::get_path(crd, &format!(".spec.names.{f}")));
    // Every served version publishes the hash of the storage version.
    let hash = versions(crd)
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").and_then(Value::as_str))
        .map(|v| crate::resource::storage_version_hash(&group, v, &names("kind")));
    let mut out: Vec<ResourceInfo> = versions(crd)
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .map(|v| {
            let subs = v.get("subresources");
            let scale = subs.and_then(|s| s.get("scale")).map(|sc| ScaleInfo {
                spec_replicas_path: json::str_at(sc, &["specReplicasPath"]).to_string(),
                status_replicas_path: json::str_at(sc, &["statusReplicasPath"]).to_string(),
                label_selector_path: sc
                    .get("labelSelectorPath")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            });
            ResourceInfo {
                group: group.clone(),
                version: v
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                plural: names("plural"),
                singular: names("singular"),
                kind: names("kind"),
                list_kind: names("listKind"),
                namespaced: json::str_at(crd, &["spec", "scope"]) == "Namespaced",
                short_names: list("shortNames"),
                categories: list("categories"),
                status_subresource: subs.and_then(|s| s.get("status")).is_some(),
                scale,
                generation: true,
                custom: true,
                deprecation_warning: deprecation_warning(crd, v),
                selectable_fields: v
                    .get("selectableFields")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|f| f.get("jsonPath")?.as_str())
                    .map(|p| p.trim_start_matches('.').to_string())
                    .collect(),
                storage_version_hash: hash.clone(),
            }
        })
        .collect();
    // The storage version first: it names the resource in GC and cleanup.
    let storage = versions(crd)
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").and_then(Value::as_str).map(str::to_string));
    out.sort_by_key(|r| Some(&r.version) != storage.as_ref());
    out
}

/// The warning of a version marked `deprecated`: its `deprecationWarning`, else upstream's
/// default, which names the newest served version that is not deprecated and is newer than
/// this one (by Kubernetes version order: GA, then beta, then alpha).
fn deprecation_warning(crd: &Value, version: &Value) -> Option<String> {
    if version.get("deprecated").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    if let Some(text) = version.get("deprecationWarning").and_then(Value::as_str) {
        return Some(text.to_string());
    }
    let group = json::str_at(crd, &["spec", "group"]);
    let kind = json::str_at(crd, &["spec", "names", "kind"]);
    let name = json::str_at(version, &["name"]);
    let mut msg = format!("{group}/{name} {kind} is deprecated");
    let newest = versions(crd)
        .iter()
        .filter(|v| {
            v.get("served").and_then(Value::as_bool) == Some(true)
                && v.get("deprecated").and_then(Value::as_bool) != Some(true)
        })
        .map(|v| json::str_at(v, &["name"]).to_string())
        .filter(|v| version_priority(v) < version_priority(name))
        .min_by_key(|v| version_priority(v));
    if let Some(newest) = newest {
        msg.push_str(&format!("; use {group}/{newest} {kind}"));
    }
    Some(msg)
}

/// Serves (or re-serves) the resources of a stored CRD; watches of versions no longer served
/// end.
pub(crate) fn register(st: &mut State, crd: &Value) {
    let resources = resources_of(crd);
    let key = meta::name(crd).to_string();
    if let Some(before) = st.registry.crd(&key) {
        let gone: Vec<String> = before
            .iter()
            .filter(|old| !resources.iter().any(|r| r.version == old.version))
            .map(|old| old.api_version())
            .collect();
        for api_version in gone {
            st.watchers.close_version(&key, &api_version);
        }
    }
    st.registry
        .set_crd(meta::name(crd), resources, compile_schemas(crd));
    default_stored(st, crd);
}

/// Objects stored before their schema gained a default read with it, as upstream's storage
/// defaults every object it decodes: the storage version's defaults are applied to the stored
/// objects in place, with no new resourceVersion and no event (upstream rewrites nothing).
fn default_stored(st: &mut State, crd: &Value) {
    let Some(version) = versions(crd)
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .map(|v| json::str_at(v, &["name"]).to_string())
    else {
        return;
    };
    let rk = super::convert::storage_key(
        json::str_at(crd, &["spec", "group"]),
        json::str_at(crd, &["spec", "names", "plural"]),
    );
    let Some(schema) = st.registry.schema(&rk, &version) else {
        return;
    };
    let Some(objects) = st.data.get_mut(&rk) else {
        return;
    };
    let mut defaulted = Vec::new();
    for (key, obj) in objects.iter() {
        let mut v = Value::clone(obj);
        schema.apply_defaults(&mut v);
        if v != **obj {
            defaulted.push((key.clone(), Arc::new(v)));
        }
    }
    if defaulted.is_empty() {
        return;
    }
    for (key, obj) in defaulted {
        objects.insert(key, obj);
    }
    // What readers derived from these objects is stale.
    st.last_change.insert(rk, st.rv);
}

/// The compiled schema of every version of a CRD (a CRD is only stored when each one is
/// structural, so versions that fail to compile are simply absent).
pub(crate) fn compile_schemas(crd: &Value) -> BTreeMap<String, Arc<StructuralSchema>> {
    versions(crd)
        .iter()
        .filter_map(|v| {
            let name = v.get("name")?.as_str()?.to_string();
            let schema =
                StructuralSchema::from_value(v.get("schema")?.get("openAPIV3Schema")?).ok()?;
            Some((name, Arc::new(schema)))
        })
        .collect()
}

/// Checks a custom object against its version's schema as the real server does: defaults,
/// then pruning of unknown fields, then validation; answers the violations. Unknown fields
/// follow `opts.field_validation`: a 400 under `Strict`, a warning each under `Warn`. `old`
/// is the stored object on update: the CRD's transition rules (`oldSelf`) and ratcheting
/// need it.
pub(crate) fn validate_custom(
    st: &State,
    res: &ResourceInfo,
    obj: &mut Value,
    old: Option<&Value>,
    opts: &WriteOptions,
) -> Result<Vec<FieldError>, ApiError> {
    let Some(schema) = st.registry.schema(&res_key(res), &res.version) else {
        check_unknown(res, &[], opts)?;
        return Ok(Vec::new());
    };
    schema.apply_defaults(obj);
    let unknown = schema.prune_reporting(obj);
    check_unknown(res, &unknown, opts)?;
    let errors = match old {
        Some(old) => schema.validate_update(obj, old),
        None => schema.validate(obj),
    };
    Ok(errors
        .into_iter()
        .map(|e| from_schema_error(e, ""))
        .collect())
}

/// Applies the `fieldValidation` directive to the unknown fields of a write, with what the
/// request body itself broke (`WriteOptions::body_findings`), worded as the real server's
/// strict decoder words a create or update (`write::patch` drops the prefix for patches, as
/// upstream's patcher does): a patch document's errors first; then a custom object's repeated
/// fields before its unknown ones (its decoder keeps every field, the schema prunes after),
/// or a built-in object's both in document order, a field that is unknown and repeated
/// reported once, as unknown (its typed decoder skips unknown fields whole).
pub(crate) fn check_unknown(
    res: &ResourceInfo,
    unknown: &[String],
    opts: &WriteOptions,
) -> Result<(), ApiError> {
    let findings = opts.body_findings.take().unwrap_or_default();
    if unknown.is_empty() && findings.patch.is_empty() && findings.duplicates.is_empty() {
        return Ok(());
    }
    let mut each: Vec<String> = findings.patch;
    if res.custom {
        each.extend(
            findings
                .duplicates
                .iter()
                .map(|(_, p)| format!("duplicate field {p:?}")),
        );
        each.extend(unknown.iter().map(|p| format!("unknown field {p:?}")));
    } else {
        let under_unknown = |path: &str| {
            unknown.iter().any(|u| {
                path.strip_prefix(u.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
            })
        };
        let mut all: Vec<(usize, String)> = unknown
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let at = findings
                    .positions
                    .get(p)
                    .copied()
                    .unwrap_or(usize::MAX - unknown.len() + i);
                (at, format!("unknown field {p:?}"))
            })
            .collect();
        all.extend(
            findings
                .duplicates
                .iter()
                .filter(|(_, p)| !under_unknown(p))
                .map(|(at, p)| (*at, format!("duplicate field {p:?}"))),
        );
        all.sort_by_key(|(at, _)| *at);
        each.extend(all.into_iter().map(|(_, e)| e));
    }
    match opts.field_validation {
        FieldValidation::Ignore => Ok(()),
        FieldValidation::Warn => {
            each.into_iter().for_each(|w| opts.warnings.push(w));
            Ok(())
        }
        FieldValidation::Strict => Err(ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: {STRICT_PREFIX}{}",
            each.join(", "),
            kind = res.kind,
            version = res.version,
        ))),
    }
}

/// Under `Strict`, refuses an apply configuration with fields the schema (a CRD's, or a
/// built-in kind's) does not declare,
/// as the real server's field manager does when it types the configuration: a 500 (a plain
/// error upstream, not a `Status` reason) naming each field. Under `Warn` and `Ignore` the
/// fields are left to [`validate_custom`], which prunes them (upstream refuses them
/// whatever the directive; pruning keeps the writes that used to pass passing).
///
/// The configuration is walked in place, not copied: when it holds unknown fields the apply
/// is refused, and otherwise the walk changes nothing (a decoding error stops the walk before
/// it removes anything, and is answered when the merged object is decoded).
pub(crate) fn check_apply_config(
    st: &State,
    res: &ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    config: &mut Value,
    opts: &WriteOptions,
) -> Result<(), ApiError> {
    if opts.field_validation != FieldValidation::Strict {
        return Ok(());
    }
    let unknown = if res.custom {
        let Some(schema) = st.registry.schema(&res_key(res), &res.version) else {
            return Ok(());
        };
        schema.prune_reporting(config)
    } else {
        let Some(decoder) =
            crate::schema::decode::Decoder::for_kind(&res.group, &res.version, &res.kind)
        else {
            return Ok(());
        };
        // A value of the wrong type is the decoder's to answer, on the applied object.
        decoder.decode(config).unwrap_or_default()
    };
    if unknown.is_empty() {
        return Ok(());
    }
    let each: Vec<String> = unknown
        .iter()
        .map(|p| format!(".{p}: field not declared in schema"))
        .collect();
    let errors = match each.as_slice() {
        [one] => one.clone(),
        many => format!("errors:\n  {}", many.join("\n  ")),
    };
    Err(ApiError::new(
        500,
        "",
        format!(
            // Go's `GroupVersionKind.String()`: `/v1` for the core group.
            "failed to create typed patch object ({}/{name}; {}/{}, Kind={}): {errors}",
            namespace.unwrap_or(""),
            res.group,
            res.version,
            res.kind,
        ),
    ))
}

/// How the real server's strict decoding errors begin.
pub(crate) const STRICT_PREFIX: &str = "strict decoding error: ";

fn from_schema_error(e: crate::schema::FieldError, prefix: &str) -> FieldError {
    let field = match (prefix.is_empty(), e.path.is_empty()) {
        (true, _) => e.path,
        (false, true) => prefix.to_string(),
        (false, false) => format!("{prefix}.{}", e.path),
    };
    FieldError {
        reason: e.reason,
        field,
        message: e.message,
    }
}

/// The structural-schema errors of a CRD version's schema, with paths under `field`.
fn schema_errors(schema: &Value, field: &str) -> Vec<FieldError> {
    match StructuralSchema::from_value_at(schema, field) {
        Ok(_) => Vec::new(),
        Err(e) => e
            .errors
            .into_iter()
            .map(|e| from_schema_error(e, field))
            .collect(),
    }
}
