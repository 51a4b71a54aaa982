//! The runtime cost limits on CEL evaluations, as apiextensions-apiserver applies them to CRD
//! validation rules on every write of a custom object: each rule evaluation may cost at most [`PER_CALL_LIMIT`]
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

use super::check::{Decl, DeclKind};

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

    /// Charges one evaluation: `static_cost` is its static estimate (computed once per
    /// expression by the caller), `actual_cost` its cost at the values' actual sizes (see
    /// [`sized`]); each is called only by the pass that needs it.
    pub(crate) fn charge(
        &mut self,
        static_cost: impl FnOnce() -> u64,
        actual_cost: impl FnOnce() -> u64,
    ) -> Charge {
        match self {
            Meter::Bound { spent, stop } => {
                let cost = static_cost();
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
                let cost = actual_cost();
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
