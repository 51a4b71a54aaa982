//! Request parsing: the path into a [`Route`], the query string into [`Query`], and the
//! options structs storage takes.

use std::borrow::Cow;

use serde_json::Value;

use crate::error::ApiError;
use crate::storage::{
    DeleteOptions, FieldValidation, ListOptions, PatchType, WatchOptions, WriteOptions,
};

/// Where a request path leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// `/healthz`, `/readyz`, `/livez` (and their per-check sub-paths).
    Health,
    /// `/version`.
    Version,
    /// `/api`: the core group's versions.
    CoreApi,
    /// `/apis`: every group.
    Apis,
    /// `/apis/GROUP`.
    Group(String),
    /// `/api/v1` (group `""`) or `/apis/GROUP/VERSION`: the resource list.
    GroupVersion(String, String),
    /// `/openapi/v2`.
    OpenApiV2,
    /// `/openapi/v3`: the index of per-group-version documents.
    OpenApiV3Root,
    /// `/openapi/v3/api/v1` or `/openapi/v3/apis/GROUP/VERSION`.
    OpenApiV3(String, String),
    /// A resource, collection or subresource.
    Resource(ResourcePath),
    /// Nothing is served here.
    NotFound,
}

/// The parts of a resource path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourcePath {
    /// API group (`""` for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource name.
    pub plural: String,
    /// The namespace in the path, if any.
    pub namespace: Option<String>,
    /// The object name, if any.
    pub name: Option<String>,
    /// The subresource (`status`, `scale`, ...), if any.
    pub subresource: Option<String>,
    /// Reached by the legacy `/watch/` prefix.
    pub legacy_watch: bool,
}

impl ResourcePath {
    /// Whether the path names the resource `gr`.
    pub fn is(&self, gr: crate::resource::GroupResource<'_>) -> bool {
        self.group == gr.group && self.plural == gr.resource
    }
}

/// Parses a request path (without the query string).
pub fn parse_path(path: &str) -> Route {
    let split = || path.split('/').filter(|s| !s.is_empty());
    if !path.contains(['%', '+']) {
        // Nothing escaped (the usual case): the segments are slices of the path.
        return route_of(&split().collect::<Vec<&str>>());
    }
    let segs: Vec<Cow<'_, str>> = split()
        .map(|s| {
            if s.contains(['%', '+']) {
                Cow::Owned(percent_decode(s))
            } else {
                Cow::Borrowed(s)
            }
        })
        .collect();
    route_of(&segs.iter().map(|s| s.as_ref()).collect::<Vec<&str>>())
}

/// The route of a path's (decoded) segments.
fn route_of(segs: &[&str]) -> Route {
    match segs {
        ["healthz" | "readyz" | "livez", ..] => Route::Health,
        ["version"] => Route::Version,
        ["api"] => Route::CoreApi,
        ["api", version] => Route::GroupVersion(String::new(), version.to_string()),
        ["api", version, rest @ ..] => resource_route("", version, rest),
        ["apis"] => Route::Apis,
        ["apis", group] => Route::Group(group.to_string()),
        ["apis", group, version] => Route::GroupVersion(group.to_string(), version.to_string()),
        ["apis", group, version, rest @ ..] => resource_route(group, version, rest),
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiV3Root,
        ["openapi", "v3", "api", version] => Route::OpenApiV3(String::new(), version.to_string()),
        ["openapi", "v3", "apis", group, version] => {
            Route::OpenApiV3(group.to_string(), version.to_string())
        }
        _ => Route::NotFound,
    }
}

fn resource_route(group: &str, version: &str, mut rest: &[&str]) -> Route {
    let mut path = ResourcePath {
        group: group.into(),
        version: version.into(),
        ..Default::default()
    };
    if rest.first() == Some(&"watch") {
        path.legacy_watch = true;
        rest = &rest[1..];
    }
    // `namespaces/NAME/status` and `namespaces/NAME/finalize` are subresources of a namespace;
    // any other `namespaces/NS/...` scopes the rest of the path to NS.
    let namespace_subresource = rest.len() == 3 && matches!(rest[2], "status" | "finalize");
    if rest.len() >= 3 && rest[0] == "namespaces" && !namespace_subresource {
        path.namespace = Some(rest[1].to_string());
        rest = &rest[2..];
    }
    match rest {
        [plural] => path.plural = plural.to_string(),
        [plural, name] => {
            path.plural = plural.to_string();
            path.name = Some(name.to_string());
        }
        [plural, name, sub] => {
            path.plural = plural.to_string();
            path.name = Some(name.to_string());
            path.subresource = Some(sub.to_string());
        }
        _ => return Route::NotFound,
    }
    Route::Resource(path)
}

/// The query parameters the server understands; others are ignored (as `pretty` is).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `limit`.
    pub limit: Option<usize>,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `resourceVersion`.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<String>,
    /// `watch=true`.
    pub watch: bool,
    /// `allowWatchBookmarks=true`.
    pub allow_watch_bookmarks: bool,
    /// `sendInitialEvents=true`.
    pub send_initial_events: bool,
    /// `timeoutSeconds`.
    pub timeout_seconds: Option<u64>,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `fieldManager`.
    pub field_manager: Option<String>,
    /// `force=true`.
    pub force: bool,
    /// `propagationPolicy`.
    pub propagation_policy: Option<String>,
    /// `gracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
    /// `includeObject` (Table requests): `None`, `Metadata` (default) or `Object`.
    pub include_object: Option<String>,
    /// `fieldValidation`, as sent (checked by [`Query::field_validation`]).
    pub field_validation: Option<String>,
}

fn truthy(v: &str) -> bool {
    matches!(v, "true" | "1" | "True" | "TRUE")
}

/// Parses a query string (without `?`). Malformed numbers are a 400, as on the real server.
pub fn parse_query(query: Option<&str>) -> Result<Query, ApiError> {
    let mut q = Query::default();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (k, v) = (percent_decode(k), percent_decode(v));
        let number_err = |_| ApiError::bad_request(format!("invalid value for {k}: {v:?}"));
        match k.as_str() {
            "labelSelector" => q.label_selector = non_empty(v),
            "fieldSelector" => q.field_selector = non_empty(v),
            "limit" => q.limit = Some(v.parse().map_err(number_err)?),
            "continue" => q.continue_token = non_empty(v),
            "resourceVersion" => q.resource_version = non_empty(v),
            "resourceVersionMatch" => q.resource_version_match = non_empty(v),
            "watch" => q.watch = truthy(&v),
            "allowWatchBookmarks" => q.allow_watch_bookmarks = truthy(&v),
            "sendInitialEvents" => q.send_initial_events = truthy(&v),
            "timeoutSeconds" => q.timeout_seconds = Some(v.parse().map_err(number_err)?),
            "dryRun" => {
                if v != "All" && !v.is_empty() {
                    return Err(ApiError::bad_request(format!(
                        "Invalid dryRun value: {v:?}, supported values: \"All\""
                    )));
                }
                q.dry_run = v == "All";
            }
            "fieldManager" => q.field_manager = non_empty(v),
            "force" => q.force = truthy(&v),
            "propagationPolicy" => q.propagation_policy = non_empty(v),
            "gracePeriodSeconds" => q.grace_period_seconds = Some(v.parse().map_err(number_err)?),
            "includeObject" => q.include_object = non_empty(v),
            "fieldValidation" => q.field_validation = Some(v),
            _ => {}
        }
    }
    Ok(q)
}

fn non_empty(v: String) -> Option<String> {
    (!v.is_empty()).then_some(v)
}

/// Decodes `%XX` escapes and `+` (as a space, form encoding).
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Query {
    /// The list options.
    pub fn list_options(&self) -> ListOptions {
        ListOptions {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            limit: self.limit.filter(|l| *l > 0),
            continue_token: self.continue_token.clone(),
            resource_version: self.resource_version.clone(),
            resource_version_match: self.resource_version_match.clone(),
        }
    }

    /// The watch options; `name` (a watch on one object) narrows the field selector.
    pub fn watch_options(&self, name: Option<&str>) -> WatchOptions {
        let mut field_selector = self.field_selector.clone();
        if let Some(name) = name {
            let by_name = format!("metadata.name={name}");
            field_selector = Some(match field_selector {
                Some(f) => format!("{f},{by_name}"),
                None => by_name,
            });
        }
        WatchOptions {
            label_selector: self.label_selector.clone(),
            field_selector,
            resource_version: self.resource_version.clone(),
            send_initial_events: self.send_initial_events,
            allow_bookmarks: self.allow_watch_bookmarks,
        }
    }

    /// The write options of create, update and patch (`fieldValidation` is checked
    /// separately, by [`Query::field_validation`]).
    pub fn write_options(&self) -> WriteOptions {
        WriteOptions {
            dry_run: self.dry_run,
            field_manager: self.field_manager.clone(),
            force: self.force,
            field_validation: FieldValidation::default(),
            warnings: Default::default(),
            user: None,
            body_findings: Default::default(),
        }
    }

    /// The `fieldValidation` directive (`Warn` when absent); any other value than the three
    /// is a 422 on the write's options kind (`CreateOptions`, `UpdateOptions`,
    /// `PatchOptions`), as `ValidateFieldValidation` answers it.
    pub fn field_validation(&self, options_kind: &str) -> Result<FieldValidation, ApiError> {
        let raw = self.field_validation.as_deref().unwrap_or("");
        FieldValidation::parse(raw).ok_or_else(|| {
            ApiError::invalid(
                options_kind,
                "meta.k8s.io",
                "",
                &[(
                    "fieldValidation".into(),
                    format!(
                        "Unsupported value: {raw:?}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
                    ),
                )],
            )
        })
    }

    /// The delete options: the query's, overridden by a `DeleteOptions` body when one is sent
    /// (JSON, or protobuf by its `Content-Type`).
    pub fn delete_options(
        &self,
        content_type: Option<&str>,
        body: &[u8],
    ) -> Result<DeleteOptions, ApiError> {
        let mut opts = DeleteOptions {
            propagation_policy: self.propagation_policy.clone(),
            dry_run: self.dry_run,
            grace_period_seconds: self.grace_period_seconds,
            ..Default::default()
        };
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(opts);
        }
        let body: Value = if super::protobuf::is_protobuf(content_type) {
            super::protobuf::decode(body)?
        } else {
            serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("json parse error: {e}")))?
        };
        if !body.is_object() {
            return Err(ApiError::bad_request(
                "json parse error: DeleteOptions must be an object",
            ));
        }
        if let Some(p) = body.get("propagationPolicy").and_then(Value::as_str) {
            opts.propagation_policy = Some(p.to_string());
        }
        if let Some(g) = body.get("gracePeriodSeconds").and_then(Value::as_i64) {
            opts.grace_period_seconds = Some(g);
        }
        if let Some(d) = body.get("dryRun").and_then(Value::as_array) {
            opts.dry_run |= d.iter().any(|v| v == "All");
        }
        // The deprecated `orphanDependents`, when no policy is named: `true` orphans, `false`
        // collects in the background (overriding a kind that orphans by default).
        if let Some(orphan) = body.get("orphanDependents").and_then(Value::as_bool)
            && opts.propagation_policy.is_none()
        {
            let policy = if orphan { "Orphan" } else { "Background" };
            opts.propagation_policy = Some(policy.into());
        }
        if let Some(pre) = body.get("preconditions") {
            opts.precondition_uid = pre.get("uid").and_then(Value::as_str).map(String::from);
            opts.precondition_resource_version = pre
                .get("resourceVersion")
                .and_then(Value::as_str)
                .map(String::from);
        }
        if let Some(p) = &opts.propagation_policy
            && !matches!(p.as_str(), "Background" | "Foreground" | "Orphan")
        {
            return Err(ApiError::invalid(
                "DeleteOptions",
                "meta.k8s.io",
                "",
                &[(
                    "propagationPolicy".into(),
                    format!(
                        "Unsupported value: {p:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
                    ),
                )],
            ));
        }
        Ok(opts)
    }
}

/// The patch type of a PATCH request's `Content-Type`; 415 for any other.
pub fn patch_type(content_type: Option<&str>) -> Result<PatchType, ApiError> {
    let raw = content_type.unwrap_or("");
    let media = raw
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match media.as_str() {
        "application/merge-patch+json" => Ok(PatchType::Merge),
        "application/json-patch+json" => Ok(PatchType::Json),
        "application/strategic-merge-patch+json" => Ok(PatchType::Strategic),
        "application/apply-patch+yaml" => Ok(PatchType::Apply),
        _ => Err(ApiError::unsupported_media_type(raw)),
    }
}

/// What the `Accept` header asks the object to be turned into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accept {
    /// Plain JSON (also the answer to protobuf requests).
    Json,
    /// `as=Table`.
    Table,
    /// `as=PartialObjectMetadata` / `as=PartialObjectMetadataList`.
    Metadata,
}

/// Reads the `Accept` header. Protobuf is never answered: JSON is the fallback every client
/// lists.
pub fn accept(header: Option<&str>) -> Accept {
    let header = header.unwrap_or("");
    if !header.contains("as=") {
        return Accept::Json;
    }
    for part in header.split(',') {
        let params: Vec<&str> = part.split(';').map(str::trim).collect();
        if params.contains(&"as=Table") {
            return Accept::Table;
        }
        if params
            .iter()
            .any(|p| p.starts_with("as=PartialObjectMetadata"))
        {
            return Accept::Metadata;
        }
    }
    Accept::Json
}

/// Parses a JSON object body the way the real server words failures.
pub fn parse_object(body: &[u8]) -> Result<Value, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(json_error)?;
    object_only(value)
}

fn json_error(e: serde_json::Error) -> ApiError {
    ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
}

fn object_only(value: Value) -> Result<Value, ApiError> {
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "couldn't get version/kind; json parse error: the body is not a JSON object",
        ));
    }
    Ok(value)
}

/// Decodes a create or update body by its `Content-Type`: JSON (also when unset), YAML, or the
/// Kubernetes protobuf envelope for the kinds [`super::protobuf`] knows; 415 for anything else.
pub fn decode_object(content_type: Option<&str>, body: &[u8]) -> Result<Value, ApiError> {
    decode(content_type, body, None)
}

/// [`decode_object`], also listing the fields a JSON body repeats (`metadata.labels.app`), in
/// the order met; the object keeps the last of each, as [`decode_object`]'s does.
pub fn decode_object_reporting_duplicates(
    content_type: Option<&str>,
    body: &[u8],
) -> Result<(Value, Vec<String>), ApiError> {
    let mut dups = Vec::new();
    let obj = decode(content_type, body, Some(&mut dups))?;
    Ok((obj, dups))
}

fn decode(
    content_type: Option<&str>,
    body: &[u8],
    dups: Option<&mut Vec<String>>,
) -> Result<Value, ApiError> {
    let raw = content_type.unwrap_or("");
    let media = raw
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match media.as_str() {
        "" | "application/json" | "*/*" => match dups {
            None => parse_object(body),
            Some(dups) => {
                let (value, found) = super::duplicates::parse(body).map_err(json_error)?;
                *dups = found;
                object_only(value)
            }
        },
        "application/vnd.kubernetes.protobuf" => super::protobuf::decode(body),
        "application/yaml" => super::yaml::decode(body),
        _ => Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf; got {raw}"
            ),
        )),
    }
}

#[cfg(test)]
mod tests;
