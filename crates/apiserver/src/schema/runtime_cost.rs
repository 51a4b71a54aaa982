//! The runtime cost limits on CRD validation rules, as apiextensions-apiserver applies them on
//! every write of a custom object: each rule evaluation may cost at most [`PER_CALL_LIMIT`]
//! (upstream's `PerCallLimit`, set on every program with `cel.CostLimit`), and all the rule
//! evaluations of one object together at most [`RUNTIME_BUDGET`] (upstream's
//! `RuntimeCELCostBudget`). A rule over the per-call limit fails with `'operation cancelled:
//! actual cost limit exceeded': no further validation rules will be run due to call cost
//! exceeds limit for rule: <rule>`; an object whose budget runs out gets `validation failed due
//! to running out of cost budget, no further validation rules will be run`. Both are
//! `Invalid` at the rule's node with the node's type as the value, and both stop validation.
//! The `messageExpression` of a failed rule is charged too, with upstream's
//! `messageExpression evaluation failed due to running out of cost budget, ...` and `no
//! further validation rules will be run due to call cost exceeds limit for messageExpression:
//! "<source>"` at the rule's field.
//!
//! The cel crate counts no cost while it evaluates, so the cost of an evaluation is computed
//! before it runs, by the static estimator ([`cost`](super::cost), cel-go's `checker/cost.go`
//! with the Kubernetes library costs) applied to the *actual* sizes: the rule is type-checked
//! against a declaration whose lists, maps, strings and bytes are as long as the longest value
//! at that place in the object (and its old value) rather than as long as the schema allows.
//! That is cel-go's runtime accounting (`interpreter/runtimecost.go`: one per step, each
//! comprehension iteration, string and list work by actual size) for everything that always
//! runs; it is an upper bound where cel-go would stop early: a short-circuited `&&`, `||` or
//! `?:` is charged its costlier side, and an `all`/`exists` that ends at its first
//! false/true element is charged for every element. Rules that iterate their whole input and
//! take no early exit (the shapes upstream's budget tests use) cost what upstream charges, so
//! the budget trips at the same element; rules with early exits may trip it sooner.
//!
//! Cheap objects pay nothing for this: validation first runs with each rule charged its
//! static estimate (computed once per rule). Only when that upper bound could reach a limit
//! is the object validated again with the actual-size accounting, which checks each rule's
//! cost before evaluating it (so an over-limit rule never runs).

use serde_json::Value;

use super::check::{Decl, DeclKind, check};
use super::cost::estimate;
use super::node::Node;
use super::rule::Rule;

/// Upstream's `RuntimeCELCostBudget`: what all the rule evaluations of one object may cost.
pub(crate) const RUNTIME_BUDGET: u64 = 10_000_000;
/// Upstream's `PerCallLimit`: what one rule evaluation may cost.
pub(crate) const PER_CALL_LIMIT: u64 = 1_000_000;

/// How rule evaluations are charged during one validation pass.
pub(crate) enum Meter {
    /// Each rule charged its static estimate; `stop` once the bound could reach a limit.
    Bound { spent: u64, stop: bool },
    /// Each rule charged its cost at the object's actual sizes; `stop` once a limit is hit.
    Exact { remaining: u64, stop: bool },
}

/// Which expression of a rule is evaluated.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    /// The rule itself.
    Rule,
    /// Its `messageExpression`, evaluated when the rule fails.
    Message,
}

/// What a meter says of one rule evaluation.
pub(crate) enum Charge {
    /// Evaluate the rule.
    Run,
    /// The bound pass gives up: validate again with exact costs.
    Recount,
    /// The object's budget ran out.
    OutOfBudget,
    /// The rule alone is over the per-call limit.
    OverCallLimit,
}

impl Meter {
    /// A meter for the first, cheap pass.
    pub(crate) fn bound() -> Meter {
        Meter::Bound {
            spent: 0,
            stop: false,
        }
    }

    /// A meter for the exact pass.
    pub(crate) fn exact() -> Meter {
        Meter::Exact {
            remaining: RUNTIME_BUDGET,
            stop: false,
        }
    }

    /// Whether the pass must stop before any more rules run.
    pub(crate) fn stopped(&self) -> bool {
        match self {
            Meter::Bound { stop, .. } | Meter::Exact { stop, .. } => *stop,
        }
    }

    /// Whether the bound pass gave up (its errors are not to be used).
    pub(crate) fn recount(&self) -> bool {
        matches!(self, Meter::Bound { stop: true, .. })
    }

    /// Charges the evaluation of `rule`'s expression `which` on `node` (a resource root if
    /// `resource_root`) with `self` = `v` and `oldSelf` = `old`.
    pub(crate) fn charge(
        &mut self,
        rule: &Rule,
        which: Which,
        node: &Node,
        resource_root: bool,
        v: &Value,
        old: Option<&Value>,
    ) -> Charge {
        match self {
            Meter::Bound { spent, stop } => {
                let cost = static_cost(rule, which, node, resource_root);
                *spent = spent.saturating_add(cost);
                if cost > PER_CALL_LIMIT || *spent > RUNTIME_BUDGET {
                    *stop = true;
                    return Charge::Recount;
                }
                Charge::Run
            }
            Meter::Exact { remaining, stop } => {
                // Upstream refuses a node with rules once nothing is left.
                if *remaining == 0 {
                    *stop = true;
                    return Charge::OutOfBudget;
                }
                let cost = actual_cost(rule, which, node, resource_root, v, old);
                // cel-go cancels an evaluation as soon as it passes the per-call limit, so
                // that is the most one evaluation can have spent.
                let charged = cost.min(PER_CALL_LIMIT + 1);
                if charged > *remaining {
                    *stop = true;
                    return Charge::OutOfBudget;
                }
                *remaining -= charged;
                if cost > PER_CALL_LIMIT {
                    *stop = true;
                    return Charge::OverCallLimit;
                }
                Charge::Run
            }
        }
    }
}

/// The static estimate of a rule's expression at its node (as when the CRD was written),
/// computed once.
fn static_cost(rule: &Rule, which: Which, node: &Node, resource_root: bool) -> u64 {
    let slot = match which {
        Which::Rule => &rule.static_cost,
        Which::Message => &rule.message_static_cost,
    };
    *slot.get_or_init(|| {
        let decl = Decl::of(node, resource_root);
        cost_at(rule, which, &decl)
    })
}

/// The rule's cost with `self` (and `oldSelf`) as long as they actually are.
fn actual_cost(
    rule: &Rule,
    which: Which,
    node: &Node,
    resource_root: bool,
    v: &Value,
    old: Option<&Value>,
) -> u64 {
    let declared = Decl::of(node, resource_root);
    let mut values = vec![v];
    if rule.transition {
        values.extend(old);
    }
    let decl = sized(&declared, &values);
    cost_at(rule, which, &decl)
}

fn cost_at(rule: &Rule, which: Which, decl: &Decl) -> u64 {
    let program = match which {
        Which::Rule => &rule.program,
        Which::Message => match &rule.message_expression {
            Some(p) => p,
            None => return 0,
        },
    };
    let expr = program.expression();
    // A rule that does not check was refused with its CRD; charge it nothing here.
    match check(expr, decl, rule.optional_old_self) {
        Ok(checked) => estimate(expr, &checked, decl),
        Err(_) => 0,
    }
}

/// `declared` with each size bound replaced by the largest size among `values` at that place.
pub(crate) fn sized(declared: &Decl, values: &[&Value]) -> Decl {
    let kind = match &declared.kind {
        DeclKind::List(e) => {
            let items: Vec<&Value> = values
                .iter()
                .filter_map(|v| v.as_array())
                .flatten()
                .collect();
            DeclKind::List(Box::new(sized(e, &items)))
        }
        DeclKind::Map(e) => {
            let items: Vec<&Value> = values
                .iter()
                .filter_map(|v| v.as_object())
                .flat_map(|m| m.values())
                .collect();
            DeclKind::Map(Box::new(sized(e, &items)))
        }
        DeclKind::Object { fields, open } => DeclKind::Object {
            fields: fields
                .iter()
                .map(|(name, d)| {
                    let at: Vec<&Value> = values.iter().filter_map(|v| v.get(name)).collect();
                    (name.clone(), sized(d, &at))
                })
                .collect(),
            open: *open,
        },
        other => scalar_kind(other),
    };
    let max_elements = match &declared.kind {
        DeclKind::Int | DeclKind::Double | DeclKind::Bool => declared.max_elements,
        DeclKind::Timestamp | DeclKind::Duration => declared.max_elements,
        DeclKind::Object { .. } => declared.max_elements,
        DeclKind::Bytes => values
            .iter()
            .map(|v| v.as_str().map_or(0, |s| s.len() as u64 * 3 / 4))
            .max()
            .unwrap_or(0),
        _ => values.iter().map(|v| size_of(v)).max().unwrap_or(0),
    };
    Decl {
        kind,
        min_size: declared.min_size,
        max_elements,
    }
}

/// cel-go's `actualSize`: code points of a string, elements of a list or map, else 1.
fn size_of(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.chars().count() as u64,
        Value::Array(a) => a.len() as u64,
        Value::Object(m) => m.len() as u64,
        _ => 1,
    }
}

fn scalar_kind(k: &DeclKind) -> DeclKind {
    match k {
        DeclKind::Bool => DeclKind::Bool,
        DeclKind::Int => DeclKind::Int,
        DeclKind::Double => DeclKind::Double,
        DeclKind::String => DeclKind::String,
        DeclKind::Bytes => DeclKind::Bytes,
        DeclKind::Timestamp => DeclKind::Timestamp,
        DeclKind::Duration => DeclKind::Duration,
        _ => DeclKind::Dyn,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::schema::StructuralSchema;

    fn schema(spec: Value) -> StructuralSchema {
        StructuralSchema::from_value(&json!({"type": "object", "properties": {"spec": spec}}))
            .unwrap()
    }

    fn errors(s: &StructuralSchema, spec: Value) -> Vec<String> {
        s.validate(&json!({"spec": spec}))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_rule_over_the_per_call_limit_stops_validation() {
        // Upstream's conformance test: the CRD is accepted (its estimate is under the
        // static limit), and an object with all 725 elements is refused at run time.
        let rule = "self.largeArray.all(x, self.largeArray.all(y, y == x))";
        let s = schema(json!({"type": "object",
            "x-kubernetes-validations": [{"rule": "self.x + self.y > 0"}, {"rule": rule}],
            "properties": {
                "x": {"type": "integer"}, "y": {"type": "integer"},
                "largeArray": {"type": "array", "maxItems": 725, "items": {"type": "integer"}}}}));
        let small: Vec<i64> = vec![20; 100];
        assert!(errors(&s, json!({"x": 1, "y": 1, "largeArray": small})).is_empty());
        let large: Vec<i64> = vec![20; 725];
        assert_eq!(
            errors(&s, json!({"x": 0, "y": 0, "largeArray": large})),
            [
                r#"spec: Invalid value: "object": failed rule: self.x + self.y > 0"#.to_string(),
                format!(
                    r#"spec: Invalid value: "object": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {rule}"#
                ),
            ]
        );
    }

    /// A list of lists of up to 100 elements, two rules on each costing up to 50,502 (cel-go's
    /// count for a nested `all` over n elements: 5n² + 5n + 2); the CRD's static bounds pass.
    fn lists() -> StructuralSchema {
        schema(json!({"type": "object", "properties": {"lists": {
            "type": "array", "maxItems": 190, "items": {
                "type": "array", "maxItems": 100, "items": {"type": "integer"},
                "x-kubernetes-validations": [
                    {"rule": "self.all(x, self.all(y, y == x))"},
                    {"rule": "self.all(x, self.all(y, x == y))"}]}}}}))
    }

    #[test]
    fn the_object_budget_runs_out_at_the_rule_that_overdraws_it() {
        // Ten rules on each string: `==` on strings costs a tenth per character, so 100,002
        // on a string of a million characters. The CRD's static bounds pass (four bytes per
        // character: 400,002 a rule, 24 strings, 9.6M a rule, 96M in all).
        let rules: Vec<Value> = (0..10).map(|_| json!({"rule": "self == self"})).collect();
        let s = schema(json!({"type": "object", "properties": {"strings": {
            "type": "array", "maxItems": 24, "items": {
                "type": "string", "maxLength": 1_000_000, "x-kubernetes-validations": rules}}}}));
        let long = "a".repeat(1_000_000);
        // Nine strings cost 9 × 1,000,020: within the budget.
        assert!(errors(&s, json!({"strings": vec![long.clone(); 9]})).is_empty());
        // The tenth string's last rule (100,002) overdraws the 99,802 left: validation stops
        // there, with one error, and the later strings are not looked at.
        assert_eq!(
            errors(&s, json!({"strings": vec![long; 24]})),
            [
                r#"spec.strings[9]: Invalid value: "string": validation failed due to running out of cost budget, no further validation rules will be run"#
            ]
        );
    }

    #[test]
    fn actual_sizes_not_schema_bounds_are_charged() {
        let s = lists();
        // 190 lists of 10 elements cost 190 × 2 × 552: the static bound (19.2M) is over the
        // budget, the actual cost is not, and the rules still run.
        let mut short = vec![vec![7; 10]; 190];
        assert!(errors(&s, json!({"lists": short.clone()})).is_empty());
        short[3][1] = 8;
        assert_eq!(
            errors(&s, json!({"lists": short})),
            [
                r#"spec.lists[3]: Invalid value: "array": failed rule: self.all(x, self.all(y, y == x))"#,
                r#"spec.lists[3]: Invalid value: "array": failed rule: self.all(x, self.all(y, x == y))"#
            ]
        );
    }

    #[test]
    fn costs_at_actual_sizes() {
        use super::{Which, actual_cost, static_cost};
        let s = lists();
        let node = s.root.properties["spec"].properties["lists"]
            .items
            .as_deref()
            .unwrap();
        let rule = &node.rules[0];
        let cost = |n: usize| actual_cost(rule, Which::Rule, node, false, &json!(vec![1; n]), None);
        assert_eq!((cost(1), cost(10), cost(100)), (12, 552, 50_502));
        assert_eq!(static_cost(rule, Which::Rule, node, false), 50_502);
    }

    #[test]
    fn a_failed_rules_message_expression_is_charged_too() {
        // Three `==` rules (100,002 each on a million characters), one that fails (3), and
        // its messageExpression, a concatenation costing a tenth per character of its
        // result (200,002): 500,011 a string. After 19 strings 499,791 is left; the 20th
        // string's rules leave 199,782, less than its messageExpression costs.
        let s = schema(json!({"type": "object", "properties": {"strings": {
            "type": "array", "maxItems": 24, "items": {
                "type": "string", "maxLength": 1_000_000, "x-kubernetes-validations": [
                    {"rule": "self == self"}, {"rule": "self == self"}, {"rule": "self == self"},
                    {"rule": "self == 'x'", "messageExpression": "self + self"}]}}}}));
        let long = "a".repeat(1_000_000);
        let got = errors(&s, json!({"strings": vec![long; 24]}));
        assert_eq!(got.len(), 20, "{:?}", &got[got.len().saturating_sub(2)..]);
        assert_eq!(
            got[19],
            r#"spec.strings[19]: Invalid value: "string": messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run"#
        );
    }
}
