//! One label selector requirement: a key, an operator and a set of values.

use std::fmt;

use crate::error::{RequirementError, quote};
use crate::validation::{is_qualified_name, is_valid_label_value};

/// The operators of label selectors (`k8s.io/apimachinery/pkg/selection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operator {
    /// `key in (a,b)`: the label exists and its value is one of the values.
    In,
    /// `key notin (a,b)`: the label is absent or its value is none of the values.
    NotIn,
    /// `key=a`: the label exists with exactly this value.
    Equals,
    /// `key==a`: the same as [`Operator::Equals`], kept apart so that printing round-trips.
    DoubleEquals,
    /// `key!=a`: the label is absent or has another value.
    NotEquals,
    /// `key`: the label exists.
    Exists,
    /// `!key`: the label does not exist.
    DoesNotExist,
    /// `key>1`: the label exists and its value is an integer greater than the value.
    GreaterThan,
    /// `key<1`: the label exists and its value is an integer less than the value.
    LessThan,
}

impl Operator {
    /// The operator of a structured `matchExpressions` entry (`In`, `NotIn`, `Exists`,
    /// `DoesNotExist`), as `metav1.LabelSelectorAsSelector` accepts them.
    pub fn from_match_expression(op: &str) -> Result<Self, RequirementError> {
        match op {
            "In" => Ok(Operator::In),
            "NotIn" => Ok(Operator::NotIn),
            "Exists" => Ok(Operator::Exists),
            "DoesNotExist" => Ok(Operator::DoesNotExist),
            other => Err(RequirementError::UnsupportedOperator {
                value: other.to_string(),
            }),
        }
    }

    /// The name of the operator in `k8s.io/apimachinery/pkg/selection` (`in`, `notin`, `=`,
    /// `==`, `!=`, `exists`, `!`, `gt`, `lt`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One requirement of a label selector. Built only through [`Requirement::new`] (or parsing),
/// so every `Requirement` is valid.
///
/// ```
/// use crt_labels::{Operator, Requirement};
/// let r = Requirement::new("tier", Operator::In, ["web", "api"]).unwrap();
/// assert_eq!(r.to_string(), "tier in (api,web)");
/// assert!(Requirement::new("tier", Operator::Exists, ["x"]).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    /// Sorted and without duplicates (a set, as upstream).
    values: Vec<String>,
}

impl Requirement {
    /// Checks and builds a requirement, with the rules of apimachinery's `NewRequirement`: the
    /// key is a qualified name; `in`/`notin` need at least one value; `=`, `==`, `!=` exactly
    /// one; `exists`/`!` none; `gt`/`lt` exactly one integer; every value is a valid label
    /// value (the empty string is valid). Values are kept as a sorted set.
    pub fn new<I, S>(key: &str, operator: Operator, values: I) -> Result<Self, RequirementError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let raw: Vec<String> = values.into_iter().map(Into::into).collect();
        let key_errs = is_qualified_name(key);
        if !key_errs.is_empty() {
            return Err(RequirementError::Invalid {
                field: "key".into(),
                value: quote(key),
                reason: key_errs.join("; "),
            });
        }
        let invalid_count = |reason: &str| RequirementError::Invalid {
            field: "values".into(),
            value: format!("{raw:?}"),
            reason: reason.into(),
        };
        match operator {
            Operator::In | Operator::NotIn if raw.is_empty() => {
                return Err(invalid_count(
                    "for 'in', 'notin' operators, values set can't be empty",
                ));
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals if raw.len() != 1 => {
                return Err(invalid_count(
                    "exact-match compatibility requires one single value",
                ));
            }
            Operator::Exists | Operator::DoesNotExist if !raw.is_empty() => {
                return Err(invalid_count(
                    "values set must be empty for exists and does not exist",
                ));
            }
            Operator::GreaterThan | Operator::LessThan => {
                if raw.len() != 1 {
                    return Err(invalid_count(
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                if raw[0].parse::<i64>().is_err() {
                    return Err(RequirementError::Invalid {
                        field: "values[0]".into(),
                        value: quote(&raw[0]),
                        reason: "for 'Gt', 'Lt' operators, the value must be an integer".into(),
                    });
                }
            }
            _ => {}
        }
        for (i, v) in raw.iter().enumerate() {
            let errs = is_valid_label_value(v);
            if !errs.is_empty() {
                return Err(RequirementError::Invalid {
                    field: format!("values[{i}][{key}]"),
                    value: quote(v),
                    reason: errs.join("; "),
                });
            }
        }
        let mut values = raw;
        values.sort();
        values.dedup();
        Ok(Requirement {
            key: key.to_string(),
            operator,
            values,
        })
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, sorted and without duplicates (empty for `exists` and `!`).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    fn has_value(&self, v: &str) -> bool {
        self.values.iter().any(|x| x == v)
    }

    /// Whether the value of this requirement's key (`None` when the label is absent)
    /// satisfies it.
    pub fn matches_value(&self, value: Option<&str>) -> bool {
        match (self.operator, value) {
            (Operator::In | Operator::Equals | Operator::DoubleEquals, Some(v)) => {
                self.has_value(v)
            }
            (Operator::In | Operator::Equals | Operator::DoubleEquals, None) => false,
            (Operator::NotIn | Operator::NotEquals, Some(v)) => !self.has_value(v),
            (Operator::NotIn | Operator::NotEquals, None) => true,
            (Operator::Exists, v) => v.is_some(),
            (Operator::DoesNotExist, v) => v.is_none(),
            (Operator::GreaterThan | Operator::LessThan, None) => false,
            (op @ (Operator::GreaterThan | Operator::LessThan), Some(v)) => {
                let (Ok(have), Some(Ok(want))) = (
                    v.parse::<i64>(),
                    self.values.first().map(|w| w.parse::<i64>()),
                ) else {
                    return false;
                };
                if op == Operator::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    /// The canonical form: `!key`, `key`, `key=v`, `key==v`, `key!=v`, `key>1`, `key<1`,
    /// `key in (a,b)`, `key notin (a,b)` with sorted values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operator {
            Operator::DoesNotExist => return write!(f, "!{}", self.key),
            Operator::Exists => return f.write_str(&self.key),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
        };
        let joined = self.values.join(",");
        match self.operator {
            Operator::In | Operator::NotIn => write!(f, "{}{op}({joined})", self.key),
            _ => write!(f, "{}{op}{joined}", self.key),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructor_rules() {
        assert!(Requirement::new("a", Operator::In, Vec::<String>::new()).is_err());
        assert!(Requirement::new("a", Operator::Equals, ["x", "y"]).is_err());
        assert!(Requirement::new("a", Operator::DoesNotExist, ["x"]).is_err());
        assert!(Requirement::new("a", Operator::GreaterThan, ["x"]).is_err());
        assert!(Requirement::new("a", Operator::GreaterThan, ["1", "2"]).is_err());
        assert!(Requirement::new("a b", Operator::Exists, Vec::<String>::new()).is_err());
        assert!(Requirement::new("a", Operator::In, ["-x"]).is_err());
        let r = Requirement::new("a", Operator::In, ["b", "a", "b"]).unwrap();
        assert_eq!(r.values(), ["a", "b"]);
        let e = Requirement::new("a", Operator::In, ["ok", "b c"]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("values[1][a]: Invalid value: \"b c\": a valid label must be"),
            "{e}"
        );
    }

    #[test]
    fn operators_from_match_expressions() {
        assert_eq!(Operator::from_match_expression("In").unwrap(), Operator::In);
        assert_eq!(
            Operator::from_match_expression("Gt")
                .unwrap_err()
                .to_string(),
            "\"Gt\" is not a valid label selector operator"
        );
    }
}
