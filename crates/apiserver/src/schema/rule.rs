//! The compiled form of one `x-kubernetes-validations` entry: parsing a rule when its CRD is
//! written (see [`validation_rules`](super::validation_rules) for evaluation). A leaf under
//! `node`, which holds the compiled rules of each schema node, and `validation_rules`, which
//! evaluates them.
//!
//! [`parse_rules`] parses each entry as its node is read (syntax errors, undeclared names,
//! reasons) with the parser of [`crate::cel`]; once the whole schema is structural,
//! `crd_rules::check_schema` type-checks every rule and estimates its cost. Both run only when
//! a CRD is written; evaluation never repeats them.

use std::fmt;
use std::sync::Arc;

use cel::Program;
use serde_json::{Map, Value};

use super::error::FieldError;
use crate::cel::parse::{error_at, free_idents, parse};
/// One `x-kubernetes-validations` entry, compiled.
pub(crate) struct Rule {
    /// Its index in the node's `x-kubernetes-validations`.
    pub(super) index: usize,
    pub(super) source: String,
    pub(super) program: Program,
    pub(super) message: Option<String>,
    pub(super) message_expression: Option<Program>,
    pub(super) reason: &'static str,
    pub(super) field_path: Option<String>,
    pub(super) optional_old_self: bool,
    pub(super) transition: bool,
    /// The entry as upstream prints it in a CRD's errors (see [`go_rule`]).
    pub(super) go: String,
    /// The source of `messageExpression`, to point at in its type errors.
    pub(super) message_source: Option<String>,
    /// The rule's static cost estimate at its node, computed (by `runtime_cost`) on its first
    /// evaluation.
    pub(super) static_cost: std::sync::OnceLock<u64>,
    /// The same for its `messageExpression`.
    pub(super) message_static_cost: std::sync::OnceLock<u64>,
}

impl fmt::Debug for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rule").field("rule", &self.source).finish()
    }
}

pub(super) const REASONS: [&str; 4] = [
    "FieldValueInvalid",
    "FieldValueForbidden",
    "FieldValueRequired",
    "FieldValueDuplicate",
];

/// Go's `%#v` of an `apiextensions.ValidationRule`, the value upstream prints in a CRD's
/// rule errors.
pub(super) fn go_rule(m: &Map<String, Value>) -> String {
    let s = |k: &str| super::error::quote(m.get(k).and_then(Value::as_str).unwrap_or(""));
    let reason = match m.get("reason").and_then(Value::as_str) {
        Some(r) => format!("\"{r}\""),
        None => "(*apiextensions.FieldValueErrorReason)(nil)".into(),
    };
    let optional = match m.get("optionalOldSelf").and_then(Value::as_bool) {
        Some(b) => format!("(*bool)({b})"),
        None => "(*bool)(nil)".into(),
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, FieldPath:{}, OptionalOldSelf:{optional}}}",
        s("rule"),
        s("message"),
        s("messageExpression"),
        s("fieldPath"),
    )
}

/// Compiles a rule; the error is worded as upstream's (`compilation failed: ERROR:
/// <input>:1:11: Syntax error: ...`, cel-go's wording, which the cel crate shares).
pub(super) fn compile(src: &str) -> Result<Program, String> {
    let p = parse(src).map_err(|e| format!("compilation failed: {e}"))?;
    let mut undeclared = Vec::new();
    free_idents(p.expression(), &mut Vec::new(), &mut undeclared);
    if let Some((id, name)) = undeclared.first() {
        let at = p.source_info().offset_for(*id);
        return Err(format!(
            "compilation failed: {}",
            error_at(
                src,
                at,
                &format!("undeclared reference to '{name}' (in container '')")
            )
        ));
    }
    Ok(p)
}

pub(super) fn names_old_self(p: &Program) -> bool {
    p.references().has_variable("oldSelf")
}

/// Parses and compiles the `x-kubernetes-validations` of one schema node; problems go to
/// `errors` with paths under `path` (the node's path in the schema).
pub(crate) fn parse_rules(
    m: &Map<String, Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) -> Vec<Arc<Rule>> {
    let at = if path.is_empty() {
        "x-kubernetes-validations".to_string()
    } else {
        format!("{path}.x-kubernetes-validations")
    };
    let list = match m.get("x-kubernetes-validations") {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Array(a)) => a,
        Some(other) => {
            errors.push(FieldError::new(
                &at,
                "FieldValueInvalid",
                format!("Invalid value: {other}: must be a list of validation rules"),
            ));
            return Vec::new();
        }
    };
    let mut rules = Vec::new();
    for (i, entry) in list.iter().enumerate() {
        let here = format!("{at}[{i}]");
        let Value::Object(e) = entry else {
            errors.push(FieldError::new(
                &here,
                "FieldValueInvalid",
                format!("Invalid value: {entry}: must be a validation rule"),
            ));
            continue;
        };
        let str_of = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_string);
        let source = str_of("rule").unwrap_or_default();
        if source.trim().is_empty() {
            errors.push(FieldError::new(
                &format!("{here}.rule"),
                "FieldValueRequired",
                "Required value: rule is not specified",
            ));
            continue;
        }
        let program = match compile(&source) {
            Ok(p) => p,
            Err(why) => {
                errors.push(FieldError::new(
                    &format!("{here}.rule"),
                    "FieldValueInvalid",
                    format!("Invalid value: {}: {why}", go_rule(e)),
                ));
                continue;
            }
        };
        let message_expression = match str_of("messageExpression") {
            None => None,
            Some(src) => match compile(&src) {
                Ok(p) => Some(p),
                Err(why) => {
                    errors.push(FieldError::new(
                        &format!("{here}.messageExpression"),
                        "FieldValueInvalid",
                        format!("Invalid value: {}: messageExpression {why}", go_rule(e)),
                    ));
                    continue;
                }
            },
        };
        let reason = match str_of("reason") {
            None => "FieldValueInvalid",
            Some(r) => match REASONS.iter().find(|x| **x == r) {
                Some(x) => x,
                None => {
                    let supported: Vec<String> =
                        REASONS.iter().map(|x| super::error::quote(x)).collect();
                    errors.push(FieldError::new(
                        &format!("{here}.reason"),
                        "FieldValueNotSupported",
                        format!(
                            "Unsupported value: {}: supported values: {}",
                            super::error::quote(&r),
                            supported.join(", ")
                        ),
                    ));
                    continue;
                }
            },
        };
        let transition = names_old_self(&program);
        let optional_old_self = e.get("optionalOldSelf").and_then(Value::as_bool) == Some(true);
        if optional_old_self && !transition {
            errors.push(FieldError::new(
                &format!("{here}.optionalOldSelf"),
                "FieldValueForbidden",
                "Forbidden: may not be set if rule does not use oldSelf",
            ));
            continue;
        }
        rules.push(Arc::new(Rule {
            index: i,
            source,
            program,
            message: str_of("message")
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty()),
            message_expression,
            reason,
            field_path: str_of("fieldPath").filter(|s| !s.is_empty()),
            optional_old_self,
            transition,
            go: go_rule(e),
            message_source: str_of("messageExpression"),
            static_cost: Default::default(),
            message_static_cost: Default::default(),
        }));
    }
    rules
}
