//! The checks a CRD's rules pass when it is written, once its schema is structural: every
//! `x-kubernetes-validations` rule (and messageExpression) type-checked against its node's
//! declared type ([`crate::cel::check`], the type derived by `decl`) and its cost estimated
//! ([`crate::cel::cost`]), each rule and the schema's total against upstream's budgets,
//! refused in upstream's words where a real server would refuse them. It walks the compiled
//! [`Node`]s, so it sits above `node`, `rule` and `decl`, none of which imports it.

use cel::Program;

use super::decl::decl_of;
use super::error::FieldError;
use super::node::{ListType, Node};
use crate::cel::check::{MAX_REQUEST_SIZE_BYTES, TypeError};
use crate::cel::cost::PER_CRD_LIMIT;
use crate::cel::parse::error_at;

/// The running total of a schema's rule costs, and its most expensive rules (upstream's
/// `TotalCost`).
#[derive(Default)]
struct Total {
    total: u64,
    most_expensive: Vec<(String, u64)>,
}

impl Total {
    fn observe(&mut self, path: String, cost: u64) {
        self.total = self.total.saturating_add(cost);
        // Rules under 1% of the per-CRD budget are not worth naming.
        if cost < PER_CRD_LIMIT / 100 {
            return;
        }
        self.most_expensive.push((path, cost));
        self.most_expensive
            .sort_by_key(|(_, cost)| std::cmp::Reverse(*cost));
        self.most_expensive.truncate(4);
    }
}

/// Type-checks every rule of the schema under `root` against its node's declared type and
/// estimates its cost, as upstream does when a CRD is written (after the structural checks
/// pass): a type error, a rule that is not a `bool` or a messageExpression that is not a
/// `string` is `Invalid`, a rule or messageExpression over the per-expression budget and a
/// schema over the per-CRD budget are `Forbidden`, with upstream's messages. Paths are
/// relative to `openAPIV3Schema`.
///
/// A transition rule (one naming `oldSelf`) under the items of a list that is not
/// `x-kubernetes-list-type: map`, or under the properties of an `x-kubernetes-map-type: atomic`
/// object, is refused too: there the old value cannot be correlated with the new one.
/// `base` is the schema's own path in the CRD (`spec.versions[0].schema.openAPIV3Schema`),
/// which that message names in full, as upstream's does.
pub(crate) fn check_schema(root: &Node, base: &str, errors: &mut Vec<FieldError>) {
    let mut total = Total::default();
    let at = Where {
        base,
        uncorrelatable: None,
    };
    check_node(root, "", Some(1), true, &at, &mut total, errors);
    if total.total > PER_CRD_LIMIT {
        for (path, _) in &total.most_expensive {
            errors.push(FieldError::new(
                path,
                "FieldValueForbidden",
                "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        errors.push(FieldError::new(
            "",
            "FieldValueForbidden",
            format!(
                "Forbidden: {}",
                crate::cel::cost::over_budget(
                    "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                    total.total,
                    PER_CRD_LIMIT
                )
            ),
        ));
    }
}

/// Where a node sits: the schema's path in the CRD, and the highest enclosing node (its
/// path relative to the schema) under which old and new values cannot be correlated.
struct Where<'a> {
    base: &'a str,
    uncorrelatable: Option<String>,
}

impl Where<'_> {
    /// `path` (relative to the schema) as the CRD names it.
    fn full(&self, path: &str) -> String {
        match (self.base.is_empty(), path.is_empty()) {
            (true, _) => path.to_string(),
            (false, true) => self.base.to_string(),
            (false, false) => format!("{}.{path}", self.base),
        }
    }

    /// The same place for a child, uncorrelatable from `path` on if `forbid` (keeping the
    /// highest such path, as upstream does).
    fn under(&self, path: &str, forbid: bool) -> Where<'_> {
        let uncorrelatable = match &self.uncorrelatable {
            Some(p) => Some(p.clone()),
            None if forbid => Some(path.to_string()),
            None => None,
        };
        Where {
            base: self.base,
            uncorrelatable,
        }
    }
}

fn check_node(
    node: &Node,
    path: &str,
    cardinality: Option<u64>,
    resource_root: bool,
    at_crd: &Where<'_>,
    total: &mut Total,
    errors: &mut Vec<FieldError>,
) {
    use super::node::Additional;
    use crate::cel::check::{Ty, check};
    use crate::cel::cost::{PER_RULE_LIMIT, estimate, over_budget, times};

    let child = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    if !node.rules.is_empty() {
        let decl = decl_of(node, resource_root);
        // Where an enclosing list or map is unbounded: how many of this node fit a request.
        let cardinality = cardinality.unwrap_or(MAX_REQUEST_SIZE_BYTES / (decl.min_size + 1));
        for rule in &node.rules {
            let at = child(&format!("x-kubernetes-validations[{}]", rule.index));
            let invalid = |field: &str, detail: String| {
                FieldError::new(
                    &format!("{at}.{field}"),
                    "FieldValueInvalid",
                    format!("Invalid value: {}: {detail}", rule.go),
                )
            };
            let expr = rule.program.expression();
            let checked = match check(expr, &decl, rule.optional_old_self) {
                Ok(c) => c,
                Err(errs) => {
                    errors.push(invalid(
                        "rule",
                        format!(
                            "compilation failed: {}",
                            display(&rule.source, &rule.program, errs)
                        ),
                    ));
                    continue;
                }
            };
            if !matches!(checked.ty(expr.id), Ty::Bool | Ty::Dyn) {
                errors.push(invalid(
                    "rule",
                    "cel expression must evaluate to a bool".into(),
                ));
                continue;
            }
            let cost = times(estimate(expr, &checked, &decl), cardinality);
            if cost > PER_RULE_LIMIT {
                errors.push(FieldError::new(
                    &format!("{at}.rule"),
                    "FieldValueForbidden",
                    format!(
                        "Forbidden: {}",
                        over_budget("estimated rule cost", cost, PER_RULE_LIMIT)
                    ),
                ));
            }
            total.observe(format!("{at}.rule"), cost);
            if rule.transition
                && let Some(within) = &at_crd.uncorrelatable
            {
                errors.push(FieldError::new(
                    &format!("{at}.rule"),
                    "FieldValueInvalid",
                    format!(
                        "Invalid value: {}: oldSelf cannot be used on the uncorrelatable portion of the schema within {}",
                        super::error::quote(&rule.source),
                        at_crd.full(within)
                    ),
                ));
            }
            let (Some(program), Some(src)) = (&rule.message_expression, &rule.message_source)
            else {
                continue;
            };
            let mexpr = program.expression();
            let checked = match check(mexpr, &decl, rule.optional_old_self) {
                Ok(c) => c,
                Err(errs) => {
                    errors.push(invalid(
                        "messageExpression",
                        format!(
                            "messageExpression compilation failed: {}",
                            display(src, program, errs)
                        ),
                    ));
                    continue;
                }
            };
            if !matches!(checked.ty(mexpr.id), Ty::String | Ty::Dyn) {
                errors.push(invalid(
                    "messageExpression",
                    "messageExpression must evaluate to a string".into(),
                ));
                continue;
            }
            let cost = estimate(mexpr, &checked, &decl);
            if cost > PER_RULE_LIMIT {
                errors.push(FieldError::new(
                    &format!("{at}.messageExpression"),
                    "FieldValueForbidden",
                    format!(
                        "Forbidden: {}",
                        over_budget("estimated messageExpression cost", cost, PER_RULE_LIMIT)
                    ),
                ));
            }
            total.observe(format!("{at}.messageExpression"), cost);
        }
    }
    // How many times each child may occur per occurrence of this node: once for an object's
    // properties, unbounded without maxProperties (maxItems) for a map (list), as upstream's
    // extractMaxElements (an object with any additionalProperties counts as a map).
    let per_node = match node.ty.as_deref() {
        Some("object") if node.additional.is_some() => node.max_properties,
        Some("array") => node.max_items,
        _ => Some(1),
    };
    let cardinality = cardinality.and_then(|c| per_node.map(|m| c.saturating_mul(m)));
    // An atomic map's properties, and the items of any list but a map list, have no old
    // value to correlate with (upstream: `withForbidOldSelfValidations`).
    let props_at = at_crd.under(path, node.map_atomic);
    for (k, p) in &node.properties {
        let here = format!("{}[{k}]", child("properties"));
        check_node(p, &here, cardinality, p.embedded, &props_at, total, errors);
    }
    if let Some(Additional::Schema(s)) = &node.additional {
        let here = child("additionalProperties");
        check_node(s, &here, cardinality, s.embedded, at_crd, total, errors);
    }
    if let Some(items) = &node.items {
        let items_at = at_crd.under(path, node.list_type != Some(ListType::Map));
        check_node(
            items,
            &child("items"),
            cardinality,
            items.embedded,
            &items_at,
            total,
            errors,
        );
    }
}

/// Type errors as cel-go lists them: by position, one `ERROR:` block each.
fn display(src: &str, program: &Program, mut errs: Vec<TypeError>) -> String {
    let offset = |id: u64| program.source_info().offset_for(id);
    errs.sort_by_key(|e| offset(e.id).map_or(0, |(start, _)| start));
    let parts: Vec<String> = errs
        .iter()
        .map(|e| error_at(src, offset(e.id), &e.message))
        .collect();
    parts.join("\n")
}
