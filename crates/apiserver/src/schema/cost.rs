//! The static cost estimate of a type-checked rule, as cel-go's `checker/cost.go` (with the
//! Kubernetes libraries' call estimates) computes it when a kube-apiserver compiles a CRD.
//!
//! The estimate is the worst case: identifiers and field selections cost 1, most calls 1
//! plus their arguments, string functions a tenth of a unit per byte they traverse
//! (`matches` and `find` the product of the string and a quarter unit per byte of the regex),
//! `in` on a list its length, list, map and object literals 10, 30 and 40, and a
//! comprehension (`all`, `exists`, `exists_one`, `map`, `filter`) its range's size times the
//! cost of one step. Sizes come from the schema ([`Decl`]): `maxItems`, `maxProperties`,
//! `maxLength` (times 4, bytes per code point), or what fits in a 3 MiB request. The caller
//! multiplies a rule's cost by how many times its node can occur (the product of the
//! enclosing lists' `maxItems` and maps' `maxProperties`, or, when one is unbounded, how many
//! of the node's smallest serialization fit in a request), and refuses a rule over
//! [`PER_RULE_LIMIT`] and a CRD whose rules add up to more than [`PER_CRD_LIMIT`].

use std::collections::HashMap;

use cel::common::ast::{ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue};

use super::check::{Checked, Decl, DeclKind, MAP_KEY, Ty};

/// Upstream's `StaticEstimatedCostLimit`: the most one rule may cost.
pub(crate) const PER_RULE_LIMIT: u64 = 10_000_000;
/// Upstream's `StaticEstimatedCRDCostLimit`: the most the rules of one schema may cost.
pub(crate) const PER_CRD_LIMIT: u64 = 100_000_000;

const STRING_TRAVERSAL: f64 = 0.1;
const REGEX_LENGTH: f64 = 0.25;

/// `size × factor`, rounded up, as cel-go's `MultiplyByCostFactor`.
fn factor(size: u64, f: f64) -> u64 {
    let x = (size as f64 * f).ceil();
    if x >= u64::MAX as f64 {
        u64::MAX
    } else {
        x as u64
    }
}

/// The most `expr` (checked as `checked`, with `self` of type `root`) may cost.
pub(crate) fn estimate(expr: &IdedExpr, checked: &Checked<'_>, root: &Decl) -> u64 {
    let mut c = Coster {
        checked,
        root,
        iter_ranges: Vec::new(),
        paths: HashMap::new(),
        computed: HashMap::new(),
    };
    c.cost(expr)
}

/// A rule's cost times the number of times its node may occur, saturating.
pub(crate) fn times(cost: u64, cardinality: u64) -> u64 {
    if cost == 0 {
        0
    } else {
        cost.saturating_mul(cardinality)
    }
}

/// Upstream's `getCostErrorMessage`: how far over `limit` a cost is.
pub(crate) fn over_budget(what: &str, cost: u64, limit: u64) -> String {
    let f = cost as f64 / limit as f64;
    let by = if f > 100.0 {
        "more than 100x".to_string()
    } else if f < 1.5 {
        format!("{f:.6}x")
    } else {
        format!("{f:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {by} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

struct Coster<'c, 'a> {
    checked: &'c Checked<'a>,
    root: &'a Decl,
    /// The comprehension variables in scope, innermost last, with their range's id (none for
    /// an accumulator).
    iter_ranges: Vec<(String, Option<u64>)>,
    /// The schema path of an expression that names schema data (`self.spec.items`,
    /// a comprehension variable's `@items`).
    paths: HashMap<u64, Vec<String>>,
    /// Sizes computed for call and comprehension results.
    computed: HashMap<u64, u64>,
}

impl Coster<'_, '_> {
    fn ty(&self, id: u64) -> Ty<'_> {
        self.checked.ty(id)
    }

    /// The largest size (length, elements) the value of `e` can have.
    fn size(&self, e: &IdedExpr) -> u64 {
        if let Some(s) = self.computed.get(&e.id) {
            return *s;
        }
        match &e.expr {
            Expr::Literal(LiteralValue::String(s)) => return s.chars().count() as u64,
            Expr::Literal(LiteralValue::Bytes(b)) => return b.len() as u64,
            Expr::Literal(_) => return 1,
            Expr::List(l) => return l.elements.len() as u64,
            Expr::Map(m) => return m.entries.len() as u64,
            _ => {}
        }
        if let Some(s) = self.paths.get(&e.id).and_then(|p| self.size_at(p)) {
            return s;
        }
        if self.ty(e.id).is_scalar() {
            1
        } else {
            u64::MAX
        }
    }

    /// The size bound of the schema node at `path` (its first segment names `self`).
    fn size_at(&self, path: &[String]) -> Option<u64> {
        if path.is_empty() {
            return None;
        }
        let mut node = self.root;
        for seg in &path[1..] {
            node = match (seg.as_str(), &node.kind) {
                ("@items" | "@values", DeclKind::List(e) | DeclKind::Map(e)) => e,
                ("@keys", DeclKind::Map(_)) => &MAP_KEY,
                (name, DeclKind::Object { fields, .. }) => fields.get(name)?,
                _ => return None,
            };
        }
        Some(node.max_elements)
    }

    fn cost(&mut self, e: &IdedExpr) -> u64 {
        match &e.expr {
            Expr::Literal(_) | Expr::Unspecified => 0,
            Expr::Ident(name) => {
                let path = match self.iter_ranges.iter().rev().find(|(n, _)| n == name) {
                    // A comprehension's accumulator names no schema data.
                    Some((_, None)) => None,
                    Some((_, Some(range))) => {
                        let range = *range;
                        let seg = match self.ty(range) {
                            Ty::List(_) => Some("@items"),
                            Ty::Map(..) => Some("@keys"),
                            _ => None,
                        };
                        seg.map(|s| {
                            let mut p = self.paths.get(&range).cloned().unwrap_or_default();
                            p.push(s.to_string());
                            p
                        })
                    }
                    None => Some(vec![name.clone()]),
                };
                if let Some(p) = path {
                    self.paths.insert(e.id, p);
                }
                1
            }
            Expr::Select(s) => {
                let mut sum = self.cost(&s.operand);
                if matches!(self.ty(s.operand.id), Ty::Map(..) | Ty::Object(_)) {
                    sum = sum.saturating_add(1);
                }
                if s.test {
                    return sum.saturating_add(1);
                }
                if let Some(p) = self.paths.get(&s.operand.id) {
                    let mut p = p.clone();
                    p.push(s.field.clone());
                    self.paths.insert(e.id, p);
                }
                sum
            }
            Expr::Call(c) => {
                let arg_costs: Vec<u64> = c.args.iter().map(|a| self.cost(a)).collect();
                let target_cost = c.target.as_ref().map_or(0, |t| self.cost(t));
                let (cost, size) =
                    self.call(&c.func_name, c.target.as_deref(), &c.args, &arg_costs);
                if let Some(size) = size {
                    self.computed.insert(e.id, size);
                }
                // An element of a list or map is sized by the schema as its container is.
                if let ("_[_]", [container, _]) = (c.func_name.as_str(), c.args.as_slice()) {
                    let seg = match self.ty(container.id) {
                        Ty::List(_) => Some("@items"),
                        Ty::Map(..) => Some("@values"),
                        _ => None,
                    };
                    if let (Some(seg), Some(p)) = (seg, self.paths.get(&container.id)) {
                        let mut p = p.clone();
                        p.push(seg.to_string());
                        self.paths.insert(e.id, p);
                    }
                }
                target_cost.saturating_add(cost)
            }
            Expr::List(l) => l
                .elements
                .iter()
                .fold(10u64, |acc, x| acc.saturating_add(self.cost(x))),
            Expr::Map(m) => {
                let mut sum = 30u64;
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        sum = sum.saturating_add(self.cost(&me.key));
                        sum = sum.saturating_add(self.cost(&me.value));
                    }
                }
                sum
            }
            Expr::Struct(st) => {
                let mut sum = 40u64;
                for entry in &st.entries {
                    match &entry.expr {
                        EntryExpr::StructField(f) => sum = sum.saturating_add(self.cost(&f.value)),
                        EntryExpr::MapEntry(me) => {
                            sum = sum.saturating_add(self.cost(&me.key));
                            sum = sum.saturating_add(self.cost(&me.value));
                        }
                    }
                }
                sum
            }
            Expr::Comprehension(c) => self.comprehension(e.id, c),
        }
    }

    fn comprehension(&mut self, id: u64, c: &ComprehensionExpr) -> u64 {
        let mut sum = self.cost(&c.iter_range);
        sum = sum.saturating_add(self.cost(&c.accu_init));
        self.iter_ranges.push((c.accu_var.clone(), None));
        self.iter_ranges
            .push((c.iter_var.clone(), Some(c.iter_range.id)));
        let looped = self.cost(&c.loop_cond);
        let step = self.cost(&c.loop_step);
        self.iter_ranges.pop();
        sum = sum.saturating_add(self.cost(&c.result));
        self.iter_ranges.pop();
        let range = self.size(&c.iter_range);
        self.computed.insert(id, range);
        sum.saturating_add(range.saturating_mul(step.saturating_add(looped)))
    }

    /// The cost of calling `name` (its arguments' costs included, its target's not), and the
    /// size of its result when known.
    fn call(
        &self,
        name: &str,
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
        arg_costs: &[u64],
    ) -> (u64, Option<u64>) {
        let arg_sum = arg_costs.iter().fold(0u64, |a, c| a.saturating_add(*c));
        let plus_args = |c: u64| c.saturating_add(arg_sum);
        let stringy = |e: &IdedExpr| matches!(self.ty(e.id), Ty::String | Ty::Bytes | Ty::Dyn);
        match (name, target, args) {
            ("_&&_" | "_||_", None, [_, _]) => (arg_sum, None),
            ("dyn", None, [x]) => (plus_args(1), Some(self.size(x))),
            ("_?_:_", None, [_, a, b]) => {
                let size = self.size(a).max(self.size(b));
                let cost = arg_costs[0].saturating_add(arg_costs[1].max(arg_costs[2]));
                (cost, Some(size))
            }
            ("matches", Some(t), [re]) if stringy(t) => {
                let s = factor(self.size(t).saturating_add(1), STRING_TRAVERSAL);
                let r = factor(self.size(re), REGEX_LENGTH);
                (plus_args(s.saturating_mul(r)), None)
            }
            ("find" | "findAll", Some(t), [re, ..]) => {
                let s = factor(self.size(t).saturating_add(1), STRING_TRAVERSAL);
                let r = factor(self.size(re), REGEX_LENGTH);
                (plus_args(s.saturating_mul(r)), Some(self.size(t)))
            }
            ("contains", Some(t), [x]) if stringy(t) => {
                let s = factor(self.size(t), STRING_TRAVERSAL);
                let x = factor(self.size(x), STRING_TRAVERSAL);
                (plus_args(s.saturating_mul(x)), None)
            }
            ("startsWith" | "endsWith", Some(_), [x]) => {
                (plus_args(factor(self.size(x), STRING_TRAVERSAL)), None)
            }
            ("lowerAscii" | "upperAscii" | "substring" | "trim" | "format", Some(t), _) => {
                let size = self.size(t);
                (plus_args(factor(size, STRING_TRAVERSAL)), Some(size))
            }
            ("replace", Some(t), _) => {
                let size = self.size(t);
                (plus_args(factor(size, 2.0 * STRING_TRAVERSAL)), Some(size))
            }
            ("split", Some(t), _) => {
                let size = self.size(t);
                (plus_args(factor(size, 2.0 * STRING_TRAVERSAL)), Some(size))
            }
            ("join", Some(t), sep) => {
                // The separators between the elements (Kubernetes' estimate counts no more).
                let n = self.size(t);
                let sep = sep.first().map_or(0, |s| self.size(s));
                let size = sep.saturating_mul(n.saturating_sub(1)).saturating_add(n);
                (plus_args(factor(size, STRING_TRAVERSAL)), Some(size))
            }
            ("indexOf" | "lastIndexOf", Some(t), _) if matches!(self.ty(t.id), Ty::String) => {
                (plus_args(factor(self.size(t), STRING_TRAVERSAL)), None)
            }
            ("isSorted" | "sum" | "min" | "max" | "indexOf" | "lastIndexOf", Some(t), _) => {
                (plus_args(self.size(t)), None)
            }
            // Kubernetes sizes only `url` by its argument among its global parsers.
            ("url", None, [x]) => (plus_args(factor(self.size(x), STRING_TRAVERSAL)), Some(1)),
            ("@in", None, [_, l]) => match self.ty(l.id) {
                Ty::List(_) | Ty::Dyn => (plus_args(self.size(l)), None),
                _ => (plus_args(1), None),
            },
            ("_+_", None, [a, b]) => {
                let size = self.size(a).saturating_add(self.size(b));
                let (ta, tb) = (self.ty(a.id), self.ty(b.id));
                let lists = matches!(ta, Ty::List(_)) || matches!(tb, Ty::List(_));
                let strings =
                    matches!(ta, Ty::String | Ty::Bytes) || matches!(tb, Ty::String | Ty::Bytes);
                let dyn_only = ta.is_dyn() && tb.is_dyn();
                if strings || dyn_only {
                    (plus_args(factor(size, STRING_TRAVERSAL)), Some(size))
                } else if lists {
                    (plus_args(1), Some(size))
                } else {
                    (plus_args(1), None)
                }
            }
            ("_==_" | "_!=_", None, [a, b]) => {
                let smallest = self.size(a).min(self.size(b));
                (plus_args(factor(smallest, STRING_TRAVERSAL)), None)
            }
            ("_<_" | "_<=_" | "_>_" | "_>=_", None, [a, b]) if stringy(a) && stringy(b) => {
                let smallest = self.size(a).min(self.size(b));
                (plus_args(factor(smallest, STRING_TRAVERSAL)), None)
            }
            _ if STANDARD.contains(&name) => (plus_args(1), None),
            // A library function this estimator does not model (quantity, url, ip, format,
            // optionals): cost 1 and a result of size 1, never more than upstream's estimate.
            _ => (plus_args(1), Some(1)),
        }
    }
}

/// The standard functions whose results have no size estimate upstream either (a list or
/// string they return may be as large as any).
const STANDARD: [&str; 24] = [
    "!_",
    "-_",
    "_-_",
    "_*_",
    "_/_",
    "_%_",
    "_<_",
    "_<=_",
    "_>_",
    "_>=_",
    "_[_]",
    "@not_strictly_false",
    "size",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "timestamp",
    "duration",
    "dyn",
    "type",
    "matches",
];

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::over_budget;
    use crate::schema::{FieldError, StructuralSchema};

    fn errors(spec: Value) -> Vec<FieldError> {
        let schema = json!({"type": "object", "properties": {"spec": spec}});
        match StructuralSchema::from_value(&schema) {
            Ok(_) => Vec::new(),
            Err(e) => e.errors,
        }
    }

    const HINT: &str = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";

    #[test]
    fn factors_as_upstream_prints_them() {
        assert_eq!(
            over_budget("estimated rule cost", 12_000_000, 10_000_000),
            format!("estimated rule cost exceeds budget by factor of 1.200000x {HINT}")
        );
        assert_eq!(
            over_budget("estimated rule cost", 25_000_000, 10_000_000),
            format!("estimated rule cost exceeds budget by factor of 2.5x {HINT}")
        );
        assert_eq!(
            over_budget("x", u64::MAX, 10_000_000),
            format!("x exceeds budget by factor of more than 100x {HINT}")
        );
    }

    #[test]
    fn an_unbounded_list_of_unbounded_strings_is_over_budget() {
        let rule = json!([{"rule": "self.all(x, x.matches('^[a-z]+$'))"}]);
        let errs = errors(json!({"type": "array", "items": {"type": "string"},
            "x-kubernetes-validations": rule}));
        let at = "properties[spec].x-kubernetes-validations[0].rule";
        assert_eq!(errs.len(), 3, "{errs:?}");
        assert_eq!(
            (errs[0].path.as_str(), errs[0].reason, errs[0].message.as_str()),
            (
                at,
                "FieldValueForbidden",
                format!(
                    "Forbidden: estimated rule cost exceeds budget by factor of more than 100x {HINT}"
                )
                .as_str()
            )
        );
        // Over the per-CRD budget too: the rule is named, and the schema refused.
        assert_eq!(errs[1].path, at);
        assert_eq!(
            errs[1].message,
            "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
        );
        assert_eq!(errs[2].path, "");
        assert_eq!(
            errs[2].message,
            format!(
                "Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {HINT}"
            )
        );
        // Bounded, it fits.
        let bounded = errors(json!({"type": "array", "maxItems": 10,
            "items": {"type": "string", "maxLength": 20}, "x-kubernetes-validations": rule}));
        assert!(bounded.is_empty(), "{bounded:?}");
        // maxItems alone is not enough: each string may still be 3 MiB.
        let half = errors(json!({"type": "array", "maxItems": 20,
            "items": {"type": "string"}, "x-kubernetes-validations": rule}));
        assert_eq!(half.len(), 1, "{half:?}");
        assert_eq!(
            half[0].message,
            format!("Forbidden: estimated rule cost exceeds budget by factor of 1.258300x {HINT}")
        );
    }

    #[test]
    fn rules_under_unbounded_lists_are_multiplied() {
        let item = json!({"type": "string", "maxLength": 64,
            "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$')"}]});
        // 53 per item, times the 1048576 strings a request can hold.
        let errs = errors(json!({"type": "object", "properties": {
            "names": {"type": "array", "items": item}}}));
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(
            errs[0].path,
            "properties[spec].properties[names].items.x-kubernetes-validations[0].rule"
        );
        assert_eq!(
            errs[0].message,
            format!("Forbidden: estimated rule cost exceeds budget by factor of 5.6x {HINT}")
        );
        let bounded = errors(json!({"type": "object", "properties": {
            "names": {"type": "array", "maxItems": 1000, "items": item}}}));
        assert!(bounded.is_empty(), "{bounded:?}");
        // The values of a map without maxProperties, the same.
        let errs = errors(json!({"type": "object", "properties": {
            "labels": {"type": "object", "additionalProperties": item}}}));
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(
            errs[0].path,
            "properties[spec].properties[labels].additionalProperties.x-kubernetes-validations[0].rule"
        );
        let bounded = errors(json!({"type": "object", "properties": {
            "labels": {"type": "object", "maxProperties": 100, "additionalProperties": item}}}));
        assert!(bounded.is_empty(), "{bounded:?}");
    }

    #[test]
    fn elements_and_comprehension_variables_are_sized_by_the_schema() {
        let names = json!({"type": "array", "maxItems": 4,
            "items": {"type": "string", "maxLength": 64}});
        for rule in [
            "self.names[0].matches('^[a-z]+$')",
            "self.names.exists(n, n.matches('^[a-z]+$'))",
            "self.labels['a'].matches('^[a-z]+$')",
        ] {
            let errs = errors(json!({"type": "object", "properties": {
                "names": names,
                "labels": {"type": "object", "maxProperties": 4,
                           "additionalProperties": {"type": "string", "maxLength": 64}}},
                "x-kubernetes-validations": [{"rule": rule}]}));
            assert!(errs.is_empty(), "{rule}: {errs:?}");
        }
        // Unbounded strings: the regex alone is 629146 a string, times 32 strings.
        let errs = errors(json!({"type": "object", "properties": {
            "names": {"type": "array", "maxItems": 32, "items": {"type": "string"}}},
            "x-kubernetes-validations": [{"rule": "self.names.exists(n, n.matches('^a$'))"}]}));
        assert_eq!(errs.len(), 1, "{errs:?}");
    }

    #[test]
    fn the_rules_of_a_schema_share_a_budget() {
        // 803 per item (a 4001-byte string through a 2-unit regex, and `self`), 12000 items:
        // each rule fits its own budget, eleven of them do not fit the schema's.
        let list = json!({"type": "array", "maxItems": 12000,
            "items": {"type": "string", "maxLength": 1000,
                      "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$')"}]}});
        let props: serde_json::Map<String, Value> = (0..11)
            .map(|i| (format!("l{i:02}"), list.clone()))
            .collect();
        let errs = errors(json!({"type": "object", "properties": props}));
        assert_eq!(errs.len(), 5, "{errs:?}");
        for e in &errs[..4] {
            assert!(
                e.path.ends_with(".items.x-kubernetes-validations[0].rule"),
                "{e}"
            );
            assert_eq!(e.reason, "FieldValueForbidden");
        }
        assert_eq!(errs[4].path, "");
        assert_eq!(
            errs[4].message,
            format!(
                "Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 1.059960x {HINT}"
            )
        );
        let ten: serde_json::Map<String, Value> = (0..10)
            .map(|i| (format!("l{i:02}"), list.clone()))
            .collect();
        assert!(errors(json!({"type": "object", "properties": ten})).is_empty());
    }
}
