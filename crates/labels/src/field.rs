//! [`FieldSelector`]: the field selector syntax (`metadata.name=foo,status.phase!=Running`).
//!
//! As apimachinery's `fields.ParseSelector`: terms are separated by unescaped commas; each term
//! splits at its first `!=`, `==` or `=`; the field name is taken literally and the value is
//! unescaped (`\\`, `\,` and `\=` stand for `\`, `,` and `=`; any other backslash sequence, and
//! an unescaped `,` or `=` in a value, are errors). Empty terms are skipped. A missing field
//! compares as the empty string, as upstream.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::error::ParseError;

/// The operators of field selectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FieldOperator {
    /// `field=value` or `field==value`.
    Equals,
    /// `field!=value`.
    NotEquals,
}

/// One term of a field selector.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FieldRequirement {
    /// The field path, e.g. `metadata.name`.
    pub field: String,
    /// `=` or `!=`.
    pub operator: FieldOperator,
    /// The (unescaped) value.
    pub value: String,
}

impl FieldRequirement {
    /// Whether a field value (`None` when the object has no such field, which compares as
    /// the empty string) satisfies the term.
    pub fn matches_value(&self, value: Option<&str>) -> bool {
        let v = value.unwrap_or("");
        match self.operator {
            FieldOperator::Equals => v == self.value,
            FieldOperator::NotEquals => v != self.value,
        }
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operator {
            FieldOperator::Equals => "=",
            FieldOperator::NotEquals => "!=",
        };
        write!(f, "{}{op}{}", self.field, escape_value(&self.value))
    }
}

/// A parsed field selector: the AND of its terms, kept in a canonical order.
///
/// ```
/// use crt_labels::FieldSelector;
/// let sel: FieldSelector = "metadata.name=a\\,b,status.phase!=Running".parse().unwrap();
/// assert_eq!(sel.fields().collect::<Vec<_>>(), ["metadata.name", "status.phase"]);
/// assert!(sel.matches_fn(|f| match f {
///     "metadata.name" => Some("a,b"),
///     _ => None,
/// }));
/// assert_eq!(sel.to_string(), "metadata.name=a\\,b,status.phase!=Running");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// The selector that matches everything (the empty string).
    pub fn everything() -> Self {
        FieldSelector::default()
    }

    /// Whether the selector has no term.
    pub fn is_everything(&self) -> bool {
        self.requirements.is_empty()
    }

    /// A selector from terms (put in canonical order).
    pub fn from_requirements(requirements: impl IntoIterator<Item = FieldRequirement>) -> Self {
        let mut requirements: Vec<FieldRequirement> = requirements.into_iter().collect();
        requirements.sort();
        FieldSelector { requirements }
    }

    /// The terms.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// The field names the selector uses (in order, possibly repeated), so a server can
    /// reject fields it does not support for a kind.
    pub fn fields(&self) -> impl Iterator<Item = &str> + '_ {
        self.requirements.iter().map(|r| r.field.as_str())
    }

    /// Whether the fields given by a lookup function satisfy every term.
    pub fn matches_fn<S: AsRef<str>>(&self, get: impl Fn(&str) -> Option<S>) -> bool {
        self.requirements.iter().all(|r| {
            let v = get(&r.field);
            r.matches_value(v.as_ref().map(AsRef::as_ref))
        })
    }

    /// Whether a map of field values satisfies every term.
    pub fn matches(&self, fields: &BTreeMap<String, String>) -> bool {
        self.matches_fn(|f| fields.get(f).map(String::as_str))
    }

    /// If the selector requires `field` to equal one value, that value (e.g. `metadata.name`
    /// for a direct lookup).
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator == FieldOperator::Equals)
            .map(|r| r.value.as_str())
    }
}

impl fmt::Display for FieldSelector {
    /// The canonical string: terms joined by `,`, values escaped, `==` printed as `=`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl FromStr for FieldSelector {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        let mut reqs = Vec::new();
        for term in split_terms(s) {
            if term.is_empty() {
                continue;
            }
            let Some((field, operator, raw)) = split_term(term) else {
                return Err(ParseError::FieldTerm {
                    selector: s.to_string(),
                    term: term.to_string(),
                });
            };
            reqs.push(FieldRequirement {
                field: field.to_string(),
                operator,
                value: unescape_value(raw)?,
            });
        }
        Ok(Self::from_requirements(reqs))
    }
}

/// Splits at commas not preceded by an escaping backslash.
fn split_terms(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            out.push(&s[start..i]);
            start = i + 1;
        }
    }
    out.push(&s[start..]);
    out
}

/// Splits a term at the first operator; `!=` and `==` win over `=` at the same place.
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (op, kind) in [
            ("!=", FieldOperator::NotEquals),
            ("==", FieldOperator::Equals),
            ("=", FieldOperator::Equals),
        ] {
            if let Some(rhs) = rest.strip_prefix(op) {
                return Some((&term[..i], kind, rhs));
            }
        }
    }
    None
}

/// Escapes `\`, `,` and `=` in a field selector value with a backslash.
pub fn escape_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Reverses [`escape_value`]; errors on other backslash sequences and on bare `,` or `=`.
pub fn unescape_value(value: &str) -> Result<String, ParseError> {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(n @ ('\\' | ',' | '=')) => out.push(n),
                Some(n) => {
                    return Err(ParseError::InvalidEscape {
                        sequence: format!("\\{n}"),
                    });
                }
                None => {
                    return Err(ParseError::InvalidEscape {
                        sequence: "\\".into(),
                    });
                }
            },
            ',' | '=' => return Err(ParseError::UnescapedCharacter { character: c }),
            c => out.push(c),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<FieldSelector, ParseError> {
        s.parse()
    }

    #[test]
    fn operators_and_matching() {
        let get = |f: &str| match f {
            "metadata.name" => Some("foo".to_string()),
            "status.phase" => Some("Running".to_string()),
            _ => None,
        };
        let cases = [
            ("", true),
            ("metadata.name=foo", true),
            ("metadata.name==foo", true),
            ("metadata.name!=foo", false),
            ("metadata.name=bar", false),
            ("metadata.name=foo,status.phase=Running", true),
            ("metadata.name=foo,status.phase!=Running", false),
            ("spec.nodeName=", true),
            ("spec.nodeName!=", false),
            ("spec.nodeName!=x", true),
            (",metadata.name=foo,", true),
        ];
        for (sel, want) in cases {
            let s = parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
            assert_eq!(s.matches_fn(get), want, "{sel}");
        }
    }

    #[test]
    fn first_operator_wins_and_escapes() {
        let s = parse("a=b!=c").unwrap_err();
        assert_eq!(
            s.to_string(),
            "invalid field selector: unescaped character in value: ="
        );
        let s = parse("a!=b\\=c").unwrap();
        assert_eq!(s.requirements()[0].operator, FieldOperator::NotEquals);
        assert_eq!(s.requirements()[0].value, "b=c");
        let s = parse("a==\\\\x").unwrap();
        assert_eq!(s.requirements()[0].value, "\\x");
        assert_eq!(s.to_string(), "a=\\\\x");
        let s = parse("a=x\\,y,b=z").unwrap();
        assert_eq!(s.requires_exact_match("a"), Some("x,y"));
        assert_eq!(s.requires_exact_match("b"), Some("z"));
    }

    #[test]
    fn malformed() {
        for (sel, msg) in [
            ("abc", "invalid selector: 'abc'; can't understand 'abc'"),
            ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
            (
                "a=\\x",
                "invalid field selector: invalid escape sequence: \\x",
            ),
            (
                "a=x\\",
                "invalid field selector: invalid escape sequence: \\",
            ),
        ] {
            assert_eq!(parse(sel).unwrap_err().to_string(), msg, "{sel}");
        }
    }

    #[test]
    fn fields_used() {
        let s = parse("spec.nodeName=n1,metadata.namespace!=kube-system").unwrap();
        let mut f: Vec<_> = s.fields().collect();
        f.sort();
        assert_eq!(f, ["metadata.namespace", "spec.nodeName"]);
        assert!(parse("").unwrap().is_everything());
    }
}
