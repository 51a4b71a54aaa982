//! 422 Invalid errors worded as the real server's field validation (`field.ErrorList`), and the
//! name formats (DNS-1123 subdomain and label, DNS-1035 label).

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::resource::ResourceInfo;

/// One field error.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FieldError {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueForbidden`, `FieldValueNotSupported`.
    pub(crate) reason: &'static str,
    /// e.g. `metadata.name`.
    pub(crate) field: String,
    /// e.g. `Invalid value: "A": a lowercase RFC 1123 ...`.
    pub(crate) message: String,
}

// `duplicate`, `not_found` and `too_many` serve the group validators being ported.
#[allow(dead_code)]
impl FieldError {
    /// `Invalid value: <value>: <detail>`.
    pub(crate) fn invalid(field: impl Into<String>, value: &Value, detail: &str) -> Self {
        FieldError {
            reason: "FieldValueInvalid",
            field: field.into(),
            message: format!("Invalid value: {}: {detail}", shown(value)),
        }
    }

    /// `Invalid value: <go>: <detail>` where `go` is the bad value already printed as Go's
    /// `%#v` prints it (`[]string{"a"}`, `rbac.RoleRef{...}`): for values that are not one
    /// JSON scalar.
    pub(crate) fn invalid_go(field: impl Into<String>, go: &str, detail: &str) -> Self {
        FieldError {
            reason: "FieldValueInvalid",
            field: field.into(),
            message: format!("Invalid value: {go}: {detail}"),
        }
    }

    /// `Duplicate value: <go>` with the value printed as Go prints it (a struct key).
    pub(crate) fn duplicate_go(field: impl Into<String>, go: &str) -> Self {
        FieldError {
            reason: "FieldValueDuplicate",
            field: field.into(),
            message: format!("Duplicate value: {go}"),
        }
    }

    /// `Required value[: <detail>]`.
    pub(crate) fn required(field: impl Into<String>, detail: &str) -> Self {
        let message = if detail.is_empty() {
            "Required value".into()
        } else {
            format!("Required value: {detail}")
        };
        FieldError {
            reason: "FieldValueRequired",
            field: field.into(),
            message,
        }
    }

    /// `Forbidden: <detail>`.
    pub(crate) fn forbidden(field: impl Into<String>, detail: &str) -> Self {
        FieldError {
            reason: "FieldValueForbidden",
            field: field.into(),
            message: format!("Forbidden: {detail}"),
        }
    }

    /// `Duplicate value: <value>`.
    pub(crate) fn duplicate(field: impl Into<String>, value: &Value) -> Self {
        FieldError {
            reason: "FieldValueDuplicate",
            field: field.into(),
            message: format!("Duplicate value: {}", shown(value)),
        }
    }

    /// `Not found: <value>`.
    pub(crate) fn not_found(field: impl Into<String>, value: &Value) -> Self {
        FieldError {
            reason: "FieldValueNotFound",
            field: field.into(),
            message: format!("Not found: {}", shown(value)),
        }
    }

    /// `Too long: may not be more than <max> bytes` (`field.TooLong` of 1.32 and 1.33; the value is
    /// never shown).
    pub(crate) fn too_long(field: impl Into<String>, max: usize) -> Self {
        FieldError {
            reason: "FieldValueTooLong",
            field: field.into(),
            message: format!("Too long: may not be more than {max} bytes"),
        }
    }

    /// `Too many: <actual>: must have at most <max> items`.
    pub(crate) fn too_many(field: impl Into<String>, actual: usize, max: usize) -> Self {
        FieldError {
            reason: "FieldValueTooMany",
            field: field.into(),
            message: format!("Too many: {actual}: must have at most {max} items"),
        }
    }

    /// `Unsupported value: <value>: supported values: ...`.
    pub(crate) fn not_supported(
        field: impl Into<String>,
        value: &Value,
        supported: &[&str],
    ) -> Self {
        let list = supported
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        FieldError {
            reason: "FieldValueNotSupported",
            field: field.into(),
            message: format!("Unsupported value: {value}: supported values: {list}"),
        }
    }
}

/// A bad value as upstream prints it: strings quoted, numbers and booleans bare.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

/// 422 Invalid for `kind "name"`, as `errors.NewInvalid` words it: `Kind.group "name" is
/// invalid: field: message, ...` (no `.group` for the core group), with one cause per error.
pub(crate) fn invalid(res: &ResourceInfo, name: &str, errors: &[FieldError]) -> ApiError {
    invalid_kind(&res.kind, &res.group, name, errors)
}

/// [`invalid`] for a kind and group given directly.
pub(crate) fn invalid_kind(kind: &str, group: &str, name: &str, errors: &[FieldError]) -> ApiError {
    let qualified = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    // `ErrorList.ToAggregate` drops repeated messages from the summary (the causes keep them).
    let mut items: Vec<String> = Vec::with_capacity(errors.len());
    for e in errors {
        let item = format!("{}: {}", e.field, e.message);
        if !items.contains(&item) {
            items.push(item);
        }
    }
    let summary = if items.len() == 1 {
        items.remove(0)
    } else {
        format!("[{}]", items.join(", "))
    };
    // A cause at no field (a junctor's own error) has no `field` (upstream's `omitempty`).
    let causes: Vec<Value> = errors
        .iter()
        .map(|e| match e.field.as_str() {
            "" => json!({ "reason": e.reason, "message": e.message }),
            f => json!({ "reason": e.reason, "message": e.message, "field": f }),
        })
        .collect();
    let mut details = json!({ "name": name, "kind": kind, "causes": causes });
    if !group.is_empty() {
        details["group"] = Value::from(group);
    }
    ApiError::new(
        422,
        "Invalid",
        format!("{qualified} {name:?} is invalid: {summary}"),
    )
    .with_details(details)
}

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// Whether `s` is a DNS-1123 label (at most 63 characters).
pub(crate) fn is_dns1123_label(s: &str) -> bool {
    s.len() <= 63 && is_label(s)
}

/// Whether `s` is a DNS-1123 subdomain (at most 253 characters).
pub(crate) fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_label)
}

/// The name format a kind requires (upstream's `ValidateNameFunc` of the kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NameFormat {
    /// Most kinds (`NameIsDNSSubdomain`).
    Subdomain,
    /// Namespaces (`ValidateNamespaceName`, a DNS-1123 label).
    Label,
    /// Services (`NameIsDNS1035Label`).
    Dns1035,
    /// RBAC roles and bindings (`path.IsValidPathSegmentName`): anything but `.`, `..`, `/`
    /// and `%`.
    PathSegment,
}

/// The problems of `name` in `format` as upstream's name functions word them (empty when
/// valid). `prefix` is a `generateName`: a trailing `-` is then allowed.
pub(crate) fn name_problems(format: NameFormat, name: &str, prefix: bool) -> Vec<String> {
    let masked;
    let name = if prefix && format != NameFormat::PathSegment {
        masked = mask_trailing_dash(name);
        masked.as_str()
    } else {
        name
    };
    let mut out = Vec::new();
    match format {
        NameFormat::Subdomain => {
            if name.len() > 253 {
                out.push("must be no more than 253 characters".to_string());
            }
            if !name.split('.').all(is_label) {
                out.push(DNS1123_SUBDOMAIN_MSG.to_string());
            }
        }
        NameFormat::Label => {
            if name.len() > 63 {
                out.push("must be no more than 63 characters".to_string());
            }
            if !is_label(name) {
                // `IsDNS1123Label`: a valid subdomain that is not a label has dots.
                out.push(if name.len() <= 253 && name.split('.').all(is_label) {
                    "must not contain dots".to_string()
                } else {
                    DNS1123_LABEL_MSG.to_string()
                });
            }
        }
        NameFormat::Dns1035 => {
            if name.len() > 63 {
                out.push("must be no more than 63 characters".to_string());
            }
            if !is_label(name) || !name.as_bytes()[0].is_ascii_lowercase() {
                out.push(DNS1035_LABEL_MSG.to_string());
            }
        }
        NameFormat::PathSegment => {
            if name == "." || name == ".." {
                out.push(format!("may not be '{name}'"));
            } else {
                for bad in ["/", "%"] {
                    if name.contains(bad) {
                        out.push(format!("may not contain '{bad}'"));
                    }
                }
            }
        }
    }
    out
}

/// upstream's `maskTrailingDash`: a generated name's prefix may end in `-` (it drops the last
/// two characters and appends `a`, as upstream does).
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        let mut s = name[..name.len() - 2].to_string();
        s.push('a');
        s
    } else {
        name.to_string()
    }
}

/// The errors of a name (`field` is e.g. `metadata.name`).
pub(crate) fn validate_name(format: NameFormat, name: &str, field: &str) -> Vec<FieldError> {
    if format == NameFormat::Subdomain && is_dns1123_subdomain(name) {
        return Vec::new();
    }
    let problems = name_problems(format, name, false);
    if problems.is_empty() {
        return Vec::new();
    }
    let value = Value::from(name);
    problems
        .iter()
        .map(|msg| FieldError::invalid(field, &value, msg))
        .collect()
}

/// Whether `s` is a qualified name (a label key): an optional DNS-1123 subdomain and `/`, then
/// 1 to 63 of `[-A-Za-z0-9_.]` starting and ending with an alphanumeric character. The cheap
/// check of the valid case; [`qualified_name_problems`] words what is wrong.
pub(crate) fn is_qualified(s: &str) -> bool {
    let name_ok = |n: &str| {
        let b = n.as_bytes();
        !b.is_empty()
            && b.len() <= 63
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    };
    match s.split_once('/') {
        None => name_ok(s),
        Some((prefix, name)) => !prefix.is_empty() && is_dns1123_subdomain(prefix) && name_ok(name),
    }
}

/// upstream's `IsQualifiedName`: the problems of a qualified name, allocation-free when it is
/// valid (the words are `crt_labels`').
pub(crate) fn qualified_name_problems(s: &str) -> Vec<String> {
    if is_qualified(s) {
        Vec::new()
    } else {
        crt_labels::validation::is_qualified_name(s)
    }
}

const CONFIG_KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

/// upstream's `IsConfigMapKey`: the problems of a ConfigMap or Secret key (empty when valid).
pub(crate) fn config_key_problems(key: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    if key.len() > 253 {
        out.push("must be no more than 253 characters");
    }
    let charset = !key.is_empty()
        && key
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    if !charset {
        out.push(CONFIG_KEY_MSG);
    }
    if key == "." {
        out.push("must not be '.'");
    } else if key == ".." {
        out.push("must not be '..'");
    } else if key.starts_with("..") {
        out.push("must not start with '..'");
    }
    out
}

/// A list of strings as Go's `%#v` prints a `[]string`: `[]string{"a", "b"}`.
pub(crate) fn go_strings<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let quoted: Vec<String> = items.into_iter().map(|s| format!("{s:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(is_dns1123_subdomain("a.b-c.d"));
        assert!(!is_dns1123_subdomain("A"));
        assert!(!is_dns1123_subdomain("a..b"));
        assert!(is_dns1123_label("abc-1"));
        assert!(!is_dns1123_label("a.b"));
        assert!(validate_name(NameFormat::Dns1035, "1abc", "metadata.name").len() == 1);
        assert!(validate_name(NameFormat::Label, "1abc", "metadata.name").is_empty());
        assert_eq!(
            validate_name(NameFormat::Subdomain, &"a".repeat(254), "metadata.name").len(),
            1
        );
    }

    #[test]
    fn the_cheap_qualified_name_check_agrees_with_the_worded_one() {
        for s in [
            "app",
            "app.kubernetes.io/name",
            "a/b/c",
            "/x",
            "x/",
            "Example.com/x",
            "-x",
            "x_",
            "a.b_c-d",
            "",
            &"a".repeat(63),
            &"a".repeat(64),
        ] {
            assert_eq!(
                is_qualified(s),
                crt_labels::validation::is_qualified_name(s).is_empty(),
                "{s}"
            );
        }
    }

    #[test]
    fn invalid_is_worded_as_upstream() {
        let cm = ResourceInfo::builtins()
            .into_iter()
            .find(|r| r.plural == "configmaps")
            .unwrap();
        let errs = validate_name(NameFormat::Subdomain, "Bad_Name", "metadata.name");
        let e = invalid(&cm, "Bad_Name", &errs);
        assert_eq!(e.code, 422);
        assert!(e.message.starts_with(
            "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"
        ));
        let details = e.details.unwrap();
        assert_eq!(details["causes"][0]["field"], "metadata.name");
        assert!(details.get("group").is_none());
        // An error at no field: `: message` in the summary, no `field` in its cause.
        let errs = [FieldError {
            reason: "FieldValueInvalid",
            field: String::new(),
            message: "Invalid value: \"\": \"spec.a\" must validate at least one schema (anyOf)"
                .into(),
        }];
        let e = invalid(&cm, "x", &errs);
        assert_eq!(
            e.message,
            "ConfigMap \"x\" is invalid: : Invalid value: \"\": \"spec.a\" must validate at least one schema (anyOf)"
        );
        let cause = &e.details.unwrap()["causes"][0];
        assert!(cause.get("field").is_none(), "{cause}");
        assert_eq!(cause["reason"], "FieldValueInvalid");
    }
}
