//! The name and value rules of `k8s.io/apimachinery/pkg/util/validation` that selectors (and the
//! API server) need: qualified names (label keys), label values, DNS-1123 subdomains and labels.
//!
//! Every function returns the list of problems, worded as the real API server words them; an
//! empty list means the input is valid.
//!
//! ```
//! use crt_labels::validation::{is_qualified_name, is_valid_label_value};
//! assert!(is_qualified_name("example.com/tier").is_empty());
//! assert!(!is_qualified_name("-tier").is_empty());
//! assert!(is_valid_label_value("").is_empty());
//! ```

/// Longest name part of a qualified name, and longest label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// Longest DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Longest DNS-1123 label.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;

const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_REGEX: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_REGEX: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_REGEX: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_LABEL_REGEX: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";

fn regex_error(msg: &str, regex: &str, examples: &[&str]) -> String {
    let mut out = String::from(msg);
    if examples.is_empty() {
        out.push_str(" (regex used for validation is '");
    } else {
        out.push_str(" (e.g. ");
        for (i, e) in examples.iter().enumerate() {
            if i > 0 {
                out.push_str(",  or ");
            }
            out.push('\'');
            out.push_str(e);
            out.push('\'');
        }
        out.push_str(", regex used for validation is '");
    }
    out.push_str(regex);
    out.push_str("')");
    out
}

/// `[A-Za-z0-9]`
fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, anchored.
fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && is_alnum(b[0])
        && is_alnum(b[b.len() - 1])
        && b.iter()
            .all(|&c| is_alnum(c) || c == b'-' || c == b'_' || c == b'.')
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, anchored.
fn is_dns_label_shape(s: &str) -> bool {
    let b = s.as_bytes();
    let lower_alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && lower_alnum(b[0])
        && lower_alnum(b[b.len() - 1])
        && b.iter().all(|&c| lower_alnum(c) || c == b'-')
}

/// Checks a qualified name (a label or annotation key): an optional DNS-1123 subdomain prefix
/// and `/`, then a name of at most 63 characters of `[-A-Za-z0-9_.]` starting and ending with
/// an alphanumeric character.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name =
        match parts.as_slice() {
            [name] => *name,
            [prefix, name] => {
                if prefix.is_empty() {
                    errs.push("prefix part must be non-empty".to_string());
                } else {
                    for e in is_dns1123_subdomain(prefix) {
                        errs.push(format!("prefix part {e}"));
                    }
                }
                *name
            }
            _ => {
                errs.push(format!(
                "a qualified name {}",
                regex_error(
                    QUALIFIED_NAME_ERR,
                    QUALIFIED_NAME_REGEX,
                    &["MyName", "my.name", "123-abc"]
                )
            ) + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
                return errs;
            }
        };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(format!(
            "name part must be no more than {LABEL_VALUE_MAX_LENGTH} characters"
        ));
    }
    if !name.is_empty() && !is_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_REGEX,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Checks a label value: empty, or at most 63 characters of `[-A-Za-z0-9_.]` starting and
/// ending with an alphanumeric character.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(format!(
            "must be no more than {LABEL_VALUE_MAX_LENGTH} characters"
        ));
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_REGEX,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Checks a lowercase RFC 1123 subdomain (most object names): at most 253 characters, dot
/// separated DNS labels of `[a-z0-9-]` starting and ending with an alphanumeric character.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(format!(
            "must be no more than {DNS1123_SUBDOMAIN_MAX_LENGTH} characters"
        ));
    }
    if value.is_empty() || !value.split('.').all(is_dns_label_shape) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_REGEX,
            &["example.com"],
        ));
    }
    errs
}

/// Checks a lowercase RFC 1123 label (namespace names, service names): at most 63 characters
/// of `[a-z0-9-]` starting and ending with an alphanumeric character.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(format!(
            "must be no more than {DNS1123_LABEL_MAX_LENGTH} characters"
        ));
    }
    if !is_dns_label_shape(value) {
        errs.push(regex_error(
            DNS1123_LABEL_ERR,
            DNS1123_LABEL_REGEX,
            &["my-name", "123-abc"],
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names() {
        for ok in [
            "a",
            "A",
            "a.b_c-d",
            "1",
            "example.com/a",
            "app.kubernetes.io/name",
            &"x".repeat(63),
        ] {
            assert!(
                is_qualified_name(ok).is_empty(),
                "{ok}: {:?}",
                is_qualified_name(ok)
            );
        }
        for bad in [
            "",
            "-a",
            "a-",
            "a b",
            "/a",
            "a/",
            "a/b/c",
            "Example.com/a",
            "é",
            &"x".repeat(64),
        ] {
            assert!(
                !is_qualified_name(bad).is_empty(),
                "{bad} should be invalid"
            );
        }
        assert_eq!(
            is_qualified_name("/a"),
            vec!["prefix part must be non-empty"]
        );
        assert!(is_qualified_name("a b")[0].starts_with("name part must consist of"));
    }

    #[test]
    fn label_values() {
        for ok in ["", "a", "a.b", "A_b-1", &"v".repeat(63)] {
            assert!(is_valid_label_value(ok).is_empty(), "{ok}");
        }
        for bad in ["-", "a/b", "a b", "_a", &"v".repeat(64)] {
            assert!(!is_valid_label_value(bad).is_empty(), "{bad}");
        }
    }

    #[test]
    fn dns_names() {
        assert!(is_dns1123_subdomain("a.b-c.d").is_empty());
        assert!(!is_dns1123_subdomain("").is_empty());
        assert!(!is_dns1123_subdomain("a..b").is_empty());
        assert!(!is_dns1123_subdomain("A").is_empty());
        assert!(is_dns1123_label("kube-system").is_empty());
        assert!(!is_dns1123_label("a.b").is_empty());
        assert!(!is_dns1123_label(&"a".repeat(64)).is_empty());
    }
}
