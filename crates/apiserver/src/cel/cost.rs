//! The static cost estimate of a type-checked expression, as a kube-apiserver computes it when
//! a CRD is written: cel-go's estimator (`checker/cost.go`) with the Kubernetes libraries' call
//! estimates and apiextensions' size model.
//!
//! Costs and sizes are worst cases. An identifier or a field selection on an object or map
//! costs 1, a literal nothing, a list, map and object literal 10, 30 and 40 plus their parts,
//! `has()` 1 plus its operand, most calls 1 plus their arguments (and target), `&&`, `||` and
//! `?:` only their arguments (the costlier branch). String work costs a tenth of a unit per
//! character: `==`/`!=` and string comparisons the shorter side, `+` on strings the result,
//! `startsWith`/`endsWith` the argument, `contains` the product of both sides, `matches` and
//! `find` the string (plus one) times a quarter unit per character of the regex;
//! `lowerAscii`, `trim`, `url`, `replace`, `split`, `join` and the list functions their
//! inputs; `in` on a list its length. A comprehension (`all`, `exists`, `exists_one`, `map`,
//! `filter`) costs its range, its result, and the range's size times one step (condition and
//! step).
//!
//! A size comes from the expression when it says (a literal, a list built inline, a
//! concatenation, a comprehension's result), else from the schema by the value's path from
//! `self` (`self.spec.items`, `@items` of a comprehension over it): `maxItems`,
//! `maxProperties`, four bytes per `maxLength` code point, the longest `enum` value, or what
//! fits in a 3 MiB request ([`Decl`]); else 1 for a scalar, else unbounded. A path the schema
//! has no node for has no size; one naming no field (an iteration over a literal) takes
//! `self`'s, as upstream's walk does.
//!
//! The caller multiplies a rule's cost by how many times its node can occur (the product of
//! the enclosing lists' `maxItems` and maps' `maxProperties`, or, when one is unbounded, how
//! many of the node's smallest serialization fit in a request), and refuses a rule over
//! [`PER_RULE_LIMIT`] and a CRD whose rules add up to more than [`PER_CRD_LIMIT`].

use std::collections::HashMap;

use cel::common::ast::{ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue};

use super::check::{Checked, Decl, DeclKind, MAP_KEY, Ty, field};

/// Upstream's `StaticEstimatedCostLimit`: the most one rule may cost.
pub(crate) const PER_RULE_LIMIT: u64 = 10_000_000;
/// Upstream's `StaticEstimatedCRDCostLimit`: the most the rules of one schema may cost.
pub(crate) const PER_CRD_LIMIT: u64 = 100_000_000;

/// Cost per character of traversing a string (cel-go's `StringTraversalCostFactor`).
const STRING_TRAVERSAL: f64 = 0.1;
/// Cost per character of a regex (cel-go's `RegexStringLengthCostFactor`).
const REGEX_LENGTH: f64 = 0.25;
/// The longest regex of a named format (`format.dns1123Label()` ...), upstream's
/// `MaxNameFormatRegexSize`.
const MAX_NAME_FORMAT_REGEX_SIZE: f64 = 128.0;

/// `x × factor`, rounded up, saturating (cel-go's `multiplyByCostFactor`).
fn factor(x: u64, f: f64) -> u64 {
    let xf = x as f64;
    if xf > 0.0 && f > 0.0 && xf > u64::MAX as f64 / f {
        return u64::MAX;
    }
    let c = (xf * f).ceil();
    if c >= 18_446_744_073_709_551_616.0 {
        u64::MAX
    } else {
        c as u64
    }
}

/// A size range: characters of a string, bytes, elements of a list or map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Size {
    min: u64,
    max: u64,
}

const UNKNOWN: Size = Size {
    min: 0,
    max: u64::MAX,
};

impl Size {
    fn fixed(n: u64) -> Size {
        Size { min: n, max: n }
    }
    fn add(self, o: Size) -> Size {
        Size {
            min: self.min.saturating_add(o.min),
            max: self.max.saturating_add(o.max),
        }
    }
    fn mul(self, o: Size) -> Size {
        Size {
            min: self.min.saturating_mul(o.min),
            max: self.max.saturating_mul(o.max),
        }
    }
    fn union(self, o: Size) -> Size {
        Size {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }
    /// The worst-case cost of traversing this size at `f` per unit.
    fn cost(self, f: f64) -> u64 {
        factor(self.max, f)
    }
}

/// The sizes of a container's keys (indexes) and values, when an expression says them.
#[derive(Debug, Clone, Copy)]
struct Entry {
    list: bool,
    key: Size,
    val: Size,
}

impl Entry {
    fn union(a: Option<Entry>, b: Option<Entry>) -> Option<Entry> {
        let (a, b) = (a?, b?);
        Some(Entry {
            list: a.list,
            key: a.key.union(b.key),
            val: a.val.union(b.val),
        })
    }
}

/// A comprehension or bind variable in scope.
struct Local {
    path: Vec<String>,
    size: Option<Size>,
    entry: Option<Entry>,
}

/// The most `expr` (checked as `checked`, with `self` of type `root`) may cost.
pub(crate) fn estimate(expr: &IdedExpr, checked: &Checked<'_>, root: &Decl) -> u64 {
    let mut c = Coster {
        checked,
        root,
        paths: HashMap::new(),
        locals: HashMap::new(),
        sizes: HashMap::new(),
        entries: HashMap::new(),
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

/// The names a macro's accumulator takes; upstream gives them no schema path.
fn is_accumulator(name: &str) -> bool {
    name == "@result" || name == "__result__"
}

struct Coster<'c, 'a> {
    checked: &'c Checked<'a>,
    root: &'a Decl,
    /// The schema path of an expression that names schema data (`self.spec.items`,
    /// `self.items[0]` as `self.items.@items`), its first segment a variable.
    paths: HashMap<u64, Vec<String>>,
    /// The variables in scope by name, innermost last.
    locals: HashMap<String, Vec<Local>>,
    /// Sizes computed for calls, comprehensions and schema lookups.
    sizes: HashMap<u64, Size>,
    /// Entry sizes of containers built by the expression.
    entries: HashMap<u64, Entry>,
}

/// What a call's estimate says: its cost (its arguments' included, not its target's) and,
/// when known, the size of its result.
struct Call {
    cost: u64,
    size: Option<Size>,
}

impl Coster<'_, '_> {
    fn ty(&self, id: u64) -> Ty<'_> {
        self.checked.ty(id)
    }

    fn local(&self, name: &str) -> Option<&Local> {
        self.locals.get(name).and_then(|v| v.last())
    }

    fn path(&self, e: &IdedExpr) -> Vec<String> {
        if let Expr::Ident(name) = &e.expr
            && let Some(l) = self.local(name)
        {
            return l.path.clone();
        }
        self.paths.get(&e.id).cloned().unwrap_or_default()
    }

    /// Upstream's schema walk (`sizeEstimator.EstimateSize`): the node at `path` after its
    /// first segment, from `self`'s type; its `maxElements`.
    fn schema_size(&self, path: &[String]) -> Option<Size> {
        if path.is_empty() {
            return None;
        }
        let mut node = self.root;
        for seg in &path[1..] {
            node = match (seg.as_str(), &node.kind) {
                ("@items" | "@values", DeclKind::List(e) | DeclKind::Map(e)) => e,
                ("@items" | "@values", _) => return None,
                ("@keys", DeclKind::Map(_)) => &MAP_KEY,
                ("@keys", _) => return None,
                (name, DeclKind::Object { fields, .. }) => field(fields, name)?,
                _ => return None,
            };
        }
        Some(Size {
            min: 0,
            max: node.max_elements,
        })
    }

    /// The size an expression says it has: literals and inline lists and maps.
    fn literal_size(e: &IdedExpr) -> Option<Size> {
        let n = match &e.expr {
            Expr::Literal(LiteralValue::String(s)) => s.chars().count() as u64,
            Expr::Literal(LiteralValue::Bytes(b)) => b.len() as u64,
            Expr::Literal(_) => 1,
            Expr::List(l) => l.elements.len() as u64,
            Expr::Map(m) => m.entries.len() as u64,
            _ => return None,
        };
        Some(Size::fixed(n))
    }

    /// cel-go's `computeSize`: computed, literal, from the schema, scalar, or a variable's.
    fn size(&mut self, e: &IdedExpr) -> Option<Size> {
        if let Some(s) = self.sizes.get(&e.id) {
            return Some(*s);
        }
        if let Some(s) = Self::literal_size(e) {
            return Some(s);
        }
        if let Some(s) = self.schema_size(&self.path(e)) {
            self.sizes.insert(e.id, s);
            return Some(s);
        }
        if self.ty(e.id).is_scalar() {
            return Some(Size::fixed(1));
        }
        if let Expr::Ident(name) = &e.expr {
            return self.local(name).and_then(|l| l.size);
        }
        None
    }

    fn size_or_unknown(&mut self, e: &IdedExpr) -> Size {
        self.size(e).unwrap_or(UNKNOWN)
    }

    fn entry(&self, e: &IdedExpr) -> Option<Entry> {
        if let Some(s) = self.entries.get(&e.id) {
            return Some(*s);
        }
        if let Expr::Ident(name) = &e.expr {
            return self.local(name).and_then(|l| l.entry);
        }
        None
    }

    fn set_size(&mut self, id: u64, size: Option<Size>) {
        if let Some(s) = size {
            self.sizes.insert(id, s);
        }
    }

    fn set_entry(&mut self, id: u64, entry: Option<Entry>) {
        if let Some(s) = entry {
            self.entries.insert(id, s);
        }
    }

    fn push(&mut self, name: &str, local: Local) {
        self.locals.entry(name.to_string()).or_default().push(local);
    }

    fn pop(&mut self, name: &str) {
        if let Some(v) = self.locals.get_mut(name) {
            v.pop();
        }
    }

    /// A bound variable (a comprehension's accumulator, a `cel.bind`), sized as its value.
    fn push_value(&mut self, name: &str, e: &IdedExpr) {
        let local = Local {
            path: self.path(e),
            entry: self.entry(e),
            size: self.size(e),
        };
        self.push(name, local);
    }

    /// A comprehension's iteration variable: an element (`@items`) of a list, a key
    /// (`@keys`) of a map; `value` for the second variable of a two-variable comprehension.
    fn push_iter(&mut self, name: &str, range: &IdedExpr, second: Option<bool>) {
        let entry = self.entry(range);
        let list = match entry {
            Some(en) => en.list,
            None => matches!(self.ty(range.id), Ty::List(_)),
        };
        let (seg, size) = match (second, list) {
            (None, true) | (Some(true), true) => ("@items", entry.map(|e| e.val)),
            (None, false) | (Some(false), false) => ("@keys", entry.map(|e| e.key)),
            (Some(false), true) => ("@indices", entry.map(|e| e.key)),
            (Some(true), false) => ("@values", entry.map(|e| e.val)),
        };
        let mut path = self.path(range);
        path.push(seg.to_string());
        self.push(
            name,
            Local {
                path,
                size,
                entry: None,
            },
        );
    }

    fn cost(&mut self, e: &IdedExpr) -> u64 {
        match &e.expr {
            Expr::Literal(_) | Expr::Unspecified => 0,
            Expr::Ident(name) => {
                let path = match self.local(name) {
                    Some(l) => l.path.clone(),
                    None => vec![name.clone()],
                };
                self.paths.insert(e.id, path);
                1
            }
            Expr::Select(s) => {
                if s.test {
                    // `has()`: the presence test costs 1, the selection nothing more.
                    return self.cost(&s.operand).saturating_add(1);
                }
                let mut sum = self.cost(&s.operand);
                if matches!(self.ty(s.operand.id), Ty::Map(..) | Ty::Object(_)) {
                    sum = sum.saturating_add(1);
                }
                let mut p = self.path(&s.operand);
                p.push(s.field.clone());
                self.paths.insert(e.id, p);
                sum
            }
            Expr::Call(_) => self.call(e),
            Expr::List(l) => {
                let mut sum = 10u64;
                let mut item = if l.elements.is_empty() {
                    Size { min: 0, max: 0 }
                } else {
                    Size {
                        min: u64::MAX,
                        max: 0,
                    }
                };
                for x in &l.elements {
                    sum = sum.saturating_add(self.cost(x));
                    item = item.union(self.size_or_unknown(x));
                }
                self.entries.insert(
                    e.id,
                    Entry {
                        list: true,
                        key: Size::fixed(1),
                        val: item,
                    },
                );
                sum
            }
            Expr::Map(m) => {
                let mut sum = 30u64;
                let empty = Size { min: 0, max: 0 };
                let none = Size {
                    min: u64::MAX,
                    max: 0,
                };
                let (mut key, mut val) = if m.entries.is_empty() {
                    (empty, empty)
                } else {
                    (none, none)
                };
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        sum = sum.saturating_add(self.cost(&me.key));
                        sum = sum.saturating_add(self.cost(&me.value));
                        key = key.union(self.size_or_unknown(&me.key));
                        val = val.union(self.size_or_unknown(&me.value));
                    }
                }
                self.entries.insert(
                    e.id,
                    Entry {
                        list: false,
                        key,
                        val,
                    },
                );
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
            Expr::Comprehension(c) if is_bind(c) => self.bind(e.id, c),
            Expr::Comprehension(c) => self.comprehension(e.id, c),
        }
    }

    fn bind(&mut self, id: u64, c: &ComprehensionExpr) -> u64 {
        let mut sum = self.cost(&c.iter_range);
        sum = sum.saturating_add(self.cost(&c.accu_init));
        self.push_value(&c.accu_var, &c.accu_init);
        sum = sum.saturating_add(self.cost(&c.result));
        self.pop(&c.accu_var);
        let size = self.size(&c.result);
        self.set_size(id, size);
        let entry = self.entry(&c.result);
        self.set_entry(id, entry);
        sum
    }

    fn comprehension(&mut self, id: u64, c: &ComprehensionExpr) -> u64 {
        let mut sum = self.cost(&c.iter_range);
        sum = sum.saturating_add(self.cost(&c.accu_init));
        self.push_value(&c.accu_var, &c.accu_init);
        match &c.iter_var2 {
            Some(v2) => {
                self.push_iter(&c.iter_var, &c.iter_range, Some(false));
                self.push_iter(v2, &c.iter_range, Some(true));
            }
            None => self.push_iter(&c.iter_var, &c.iter_range, None),
        }
        let looped = self.cost(&c.loop_cond);
        let step = self.cost(&c.loop_step);
        self.pop(&c.iter_var);
        if let Some(v2) = &c.iter_var2 {
            self.pop(v2);
        }
        sum = sum.saturating_add(self.cost(&c.result));
        self.pop(&c.accu_var);
        let range = self.size_or_unknown(&c.iter_range);
        sum = sum.saturating_add(range.max.saturating_mul(step.saturating_add(looped)));
        match &c.accu_init.expr {
            Expr::Literal(_) => {
                let size = self.size(&c.accu_init);
                self.set_size(id, size);
            }
            Expr::List(_) | Expr::Map(_) => {
                self.set_size(id, Some(range));
                let entry = self.entry(&c.loop_step);
                self.set_entry(id, entry);
            }
            _ => {}
        }
        sum
    }

    fn call(&mut self, e: &IdedExpr) -> u64 {
        let Expr::Call(c) = &e.expr else {
            return 0;
        };
        // `dyn(x)` only turns type checking off: 1 plus its argument, sized as it.
        if c.func_name == "dyn" && c.target.is_none() && c.args.len() == 1 {
            let cost = self.cost(&c.args[0]).saturating_add(1);
            let size = self.size(&c.args[0]);
            self.set_size(e.id, size);
            let entry = self.entry(&c.args[0]);
            self.set_entry(e.id, entry);
            return cost;
        }
        let mut arg_costs = Vec::with_capacity(c.args.len());
        let mut args = Vec::with_capacity(c.args.len());
        for a in &c.args {
            arg_costs.push(self.cost(a));
            args.push(self.node(a));
        }
        // `format.dns1123Label()`, `strings.quote(s)`: a function in a namespace, which
        // upstream's checker resolves by its qualified name, without a target.
        let qualified = match c.target.as_deref() {
            Some(IdedExpr {
                expr: Expr::Ident(ns),
                ..
            }) if self.local(ns).is_none() && ns != "self" && ns != "oldSelf" => {
                Some(format!("{ns}.{}", c.func_name))
            }
            _ => None,
        };
        let name = qualified.as_deref().unwrap_or(&c.func_name);
        let mut sum = 0u64;
        let target = match c.target.as_deref().filter(|_| qualified.is_none()) {
            Some(t) => {
                sum = self.cost(t);
                Some(self.node(t))
            }
            None => None,
        };
        let arg_sum = arg_costs.iter().fold(0u64, |a, c| a.saturating_add(*c));
        let est = self
            .library(name, target.as_ref(), &args)
            .map(|(cost, size)| Call {
                cost: cost.saturating_add(arg_sum),
                size,
            })
            .unwrap_or_else(|| self.standard(e.id, name, c, target.as_ref(), &args, &arg_costs));
        let mut size = est.size;
        if c.func_name == "_[_]" && c.target.is_none() && c.args.len() == 2 {
            let container = &c.args[0];
            // Upstream tries each overload the checker matched: a `dyn` container matches
            // both, the map's last.
            let seg = match self.ty(container.id) {
                Ty::List(_) => Some("@items"),
                Ty::Map(..) | Ty::Dyn => Some("@values"),
                _ => None,
            };
            if let Some(seg) = seg {
                size = self.entry(container).map(|en| en.val);
                let mut p = self.path(container);
                p.push(seg.to_string());
                self.paths.insert(e.id, p);
            }
        }
        if size.is_none() {
            size = self.size(e);
        }
        self.set_size(e.id, size);
        sum.saturating_add(est.cost)
    }

    /// What a call's estimator sees of an argument or target: its type, schema path (none
    /// for an accumulator) and size at that point.
    fn node(&mut self, e: &IdedExpr) -> Arg {
        let mut path = self.path(e);
        if path.first().is_some_and(|p| is_accumulator(p)) {
            path.clear();
        }
        let size = self.size(e);
        Arg {
            id: e.id,
            path,
            size,
            k8s: kubernetes_type(e),
            literal_int: match &e.expr {
                Expr::Literal(LiteralValue::Int(i)) => Some(*i.inner()),
                _ => None,
            },
        }
    }

    /// The Kubernetes libraries' size of an argument: its own, else the schema's by its path.
    fn arg_size(&self, a: &Arg) -> Size {
        a.size
            .or_else(|| self.schema_size(&a.path))
            .unwrap_or(UNKNOWN)
    }

    /// The size of a list argument's elements, from the schema by the list's path.
    fn element_size(&self, list: &Arg) -> Size {
        if list.path.is_empty() {
            return UNKNOWN;
        }
        let mut p = list.path.clone();
        p.push("@items".into());
        self.schema_size(&p).unwrap_or(UNKNOWN)
    }

    /// The Kubernetes libraries' estimates (`library.CostEstimator.EstimateCallCost`), by
    /// function name: the call's own cost (without its arguments) and result size.
    fn library(
        &self,
        name: &str,
        target: Option<&Arg>,
        args: &[Arg],
    ) -> Option<(u64, Option<Size>)> {
        let nominal = Some((1, None));
        match name {
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" => {
                let t = target?;
                match self.ty(t.id) {
                    Ty::List(elem) => {
                        let mut el = Size::fixed(1);
                        if matches!(*elem, Ty::String | Ty::Bytes) {
                            let c = self.element_size(t).cost(STRING_TRAVERSAL);
                            el = el.add(Size::fixed(c));
                        }
                        Some((self.arg_size(t).max.saturating_mul(el.max), None))
                    }
                    _ => Some((self.arg_size(t).cost(STRING_TRAVERSAL), None)),
                }
            }
            "url" | "jsonpatch.escapeKey" if args.len() == 1 => {
                let sz = self.arg_size(&args[0]);
                Some((sz.cost(STRING_TRAVERSAL), Some(sz)))
            }
            "lowerAscii" | "upperAscii" | "substring" | "trim" => {
                let sz = self.arg_size(target?);
                Some((sz.cost(STRING_TRAVERSAL), Some(sz)))
            }
            "replace" if target.is_some() && args.len() >= 2 => {
                let sz = self.arg_size(target?);
                let from = self.arg_size(&args[0]);
                let with = self.arg_size(&args[1]);
                let (mut count, mut kept) = (Size { min: 0, max: 0 }, Size { min: 0, max: 0 });
                if from.min == 0 {
                    count.max = sz.max.saturating_add(1);
                    kept.max = sz.max;
                } else if with.max <= from.min {
                    kept.max = sz.max;
                } else {
                    count.max = (sz.max as f64 / from.min as f64).ceil() as u64;
                }
                if from.max == 0 {
                    count.min = sz.min.saturating_add(1);
                    kept.min = sz.min;
                } else if from.max <= with.min {
                    kept.min = sz.min;
                } else {
                    count.min = (sz.min as f64 / from.max as f64).ceil() as u64;
                }
                let size = count.mul(with).add(kept);
                Some((sz.cost(2.0 * STRING_TRAVERSAL), Some(size)))
            }
            "split" => {
                let sz = self.arg_size(target?);
                let max = match args.get(1).and_then(|a| a.literal_int) {
                    Some(n) => n as u64,
                    None => sz.max,
                };
                Some((sz.cost(2.0 * STRING_TRAVERSAL), Some(Size { min: 0, max })))
            }
            "join" => {
                let t = target?;
                let n = self.arg_size(t);
                let mut sz = Size { min: 0, max: 0 };
                if let Ty::List(_) = self.ty(t.id) {
                    sz = n.mul(self.element_size(t));
                }
                if let Some(sep) = args.first() {
                    let seps = Size {
                        min: n.min.saturating_sub(1),
                        max: n.max.saturating_sub(1),
                    };
                    sz = sz.add(self.arg_size(sep).mul(seps));
                }
                Some((sz.cost(STRING_TRAVERSAL), Some(sz)))
            }
            "find" | "findAll" if target.is_some() && !args.is_empty() => {
                let sz = self.arg_size(target?);
                let s = sz.add(Size::fixed(1)).cost(STRING_TRAVERSAL);
                let r = self.arg_size(&args[0]).cost(REGEX_LENGTH);
                Some((
                    s.saturating_mul(r),
                    Some(Size {
                        min: 0,
                        max: sz.max,
                    }),
                ))
            }
            "cidr" | "isIP" | "isCIDR" | "quantity" | "isQuantity" | "semver" | "isSemver"
                if target.is_some() && !args.is_empty() =>
            {
                Some((self.arg_size(&args[0]).cost(STRING_TRAVERSAL), None))
            }
            "ip" if target.is_some() => match args.first() {
                Some(a) => Some((self.arg_size(a).cost(STRING_TRAVERSAL), None)),
                None => nominal,
            },
            "ip.isCanonical" if target.is_some() && !args.is_empty() => {
                Some((self.arg_size(&args[0]).cost(2.0 * STRING_TRAVERSAL), None))
            }
            "containsIP" | "containsCIDR" if target.is_some() && !args.is_empty() => {
                let ip = Size { min: 4, max: 16 };
                let mut c = ip.add(ip).cost(STRING_TRAVERSAL);
                if name == "containsCIDR" {
                    c = c
                        .saturating_add(ip.cost(STRING_TRAVERSAL))
                        .saturating_add(1);
                }
                if matches!(self.ty(args[0].id), Ty::String) {
                    c = c.saturating_add(self.arg_size(&args[0]).cost(STRING_TRAVERSAL));
                }
                Some((c, None))
            }
            // A named format's check: the string against a regex of up to 128 characters.
            "validate" if target.is_some() && !args.is_empty() => {
                let c = self.arg_size(&args[0]).cost(STRING_TRAVERSAL);
                Some((factor(c, MAX_NAME_FORMAT_REGEX_SIZE * REGEX_LENGTH), None))
            }
            // Equality of two values of one Kubernetes type: constant, but for URLs (the
            // right side's length; upstream compares it with itself).
            "_==_" if args.len() == 2 && args[0].k8s.is_some() && args[0].k8s == args[1].k8s => {
                if args[0].k8s == Some("URL") {
                    let size = args[1].size.unwrap_or(Size::fixed(1));
                    Some((factor(size.max, STRING_TRAVERSAL), None))
                } else {
                    nominal
                }
            }
            "masked"
            | "prefixLength"
            | "family"
            | "isUnspecified"
            | "isLoopback"
            | "isLinkLocalMulticast"
            | "isLinkLocalUnicast"
            | "isGlobalUnicast"
            | "format.named"
            | "sign"
            | "asInteger"
            | "isInteger"
            | "asApproximateFloat"
            | "isGreaterThan"
            | "isLessThan"
            | "compareTo"
            | "add"
            | "sub"
            | "major"
            | "minor"
            | "patch"
            | "getScheme"
            | "getHostname"
            | "getHost"
            | "getPort"
            | "getEscapedPath"
            | "getQuery" => nominal,
            _ => None,
        }
    }

    /// cel-go's own estimates (`coster.functionCost`), by the overload the checker chose (or
    /// the widest of those it could have, for `dyn` operands).
    fn standard(
        &mut self,
        id: u64,
        name: &str,
        c: &cel::common::ast::CallExpr,
        target: Option<&Arg>,
        args: &[Arg],
        arg_costs: &[u64],
    ) -> Call {
        let arg_sum = arg_costs.iter().fold(0u64, |a, c| a.saturating_add(*c));
        let plus = |cost: u64| cost.saturating_add(arg_sum);
        let size = |a: &Arg| a.size.unwrap_or(UNKNOWN);
        let ty = |a: &Arg| self.ty(a.id);
        let stringy = |t: &Ty<'_>| matches!(t, Ty::String | Ty::Bytes);
        let default = Call {
            cost: plus(1),
            size: None,
        };
        match (name, target, args) {
            ("format", Some(t), _) if matches!(ty(t), Ty::String) => Call {
                cost: plus(size(t).cost(STRING_TRAVERSAL)),
                size: None,
            },
            ("bytes", None, [a]) if matches!(ty(a), Ty::String) => {
                let sz = size(a);
                Call {
                    cost: plus(sz.cost(STRING_TRAVERSAL)),
                    size: Some(Size {
                        min: sz.min,
                        max: sz.max.saturating_mul(4),
                    }),
                }
            }
            ("string", None, [a]) if matches!(ty(a), Ty::Bytes) => {
                let sz = size(a);
                Call {
                    cost: plus(sz.cost(STRING_TRAVERSAL)),
                    size: Some(Size {
                        min: sz.min / 4,
                        max: sz.max,
                    }),
                }
            }
            ("strings.quote", None, [a]) => {
                let sz = size(a);
                Call {
                    cost: plus(sz.cost(STRING_TRAVERSAL)),
                    size: Some(Size {
                        min: sz.min.saturating_add(2),
                        max: sz.max.saturating_mul(2).saturating_add(2),
                    }),
                }
            }
            ("startsWith" | "endsWith", Some(_), [a]) => Call {
                cost: plus(size(a).cost(STRING_TRAVERSAL)),
                size: None,
            },
            ("@in", None, [_, l]) => match ty(l) {
                Ty::List(_) => Call {
                    cost: plus(size(l).cost(1.0)),
                    size: None,
                },
                Ty::Dyn => Call {
                    cost: plus(size(l).cost(1.0).max(1)),
                    size: None,
                },
                _ => default,
            },
            ("matches", Some(t), [re]) => {
                let s = size(t).add(Size::fixed(1)).cost(STRING_TRAVERSAL);
                let r = size(re).cost(REGEX_LENGTH);
                Call {
                    cost: plus(s.saturating_mul(r)),
                    size: None,
                }
            }
            ("contains", Some(t), [x]) => {
                let s = size(t).cost(STRING_TRAVERSAL);
                let x = size(x).cost(STRING_TRAVERSAL);
                Call {
                    cost: plus(s.saturating_mul(x)),
                    size: None,
                }
            }
            ("_&&_" | "_||_", None, [_, _]) => Call {
                cost: arg_costs[0].saturating_add(arg_costs[1]),
                size: None,
            },
            ("_?_:_", None, [_, a, b]) => {
                let sz = size(a).union(size(b));
                let entry = Entry::union(self.entry(&c.args[1]), self.entry(&c.args[2]));
                self.set_entry(id, entry);
                Call {
                    cost: arg_costs[0].saturating_add(arg_costs[1].max(arg_costs[2])),
                    size: Some(sz),
                }
            }
            ("_+_", None, [a, b]) => {
                let (ta, tb) = (ty(a), ty(b));
                let strings = stringy(&ta) || stringy(&tb);
                let lists = matches!(ta, Ty::List(_)) || matches!(tb, Ty::List(_));
                let both_dyn = ta.is_dyn() && tb.is_dyn();
                if !(strings || lists || both_dyn) {
                    return default;
                }
                let sz = size(a).add(size(b));
                let entry = Entry::union(self.entry(&c.args[0]), self.entry(&c.args[1]));
                self.set_entry(id, entry);
                let cost = if strings {
                    sz.cost(STRING_TRAVERSAL)
                } else if lists {
                    1
                } else {
                    // Every `+` overload applies: the widest is the string's.
                    sz.cost(STRING_TRAVERSAL).max(1)
                };
                Call {
                    cost: plus(cost),
                    size: Some(sz),
                }
            }
            ("_==_" | "_!=_", None, [a, b]) => Call {
                cost: plus(factor(size(a).max.min(size(b).max), STRING_TRAVERSAL)),
                size: None,
            },
            ("_<_" | "_<=_" | "_>_" | "_>=_", None, [a, b]) => {
                let (ta, tb) = (ty(a), ty(b));
                let m = factor(size(a).max.min(size(b).max), STRING_TRAVERSAL);
                if stringy(&ta) || stringy(&tb) {
                    Call {
                        cost: plus(m),
                        size: None,
                    }
                } else if ta.is_dyn() && tb.is_dyn() {
                    Call {
                        cost: plus(m.max(1)),
                        size: None,
                    }
                } else {
                    default
                }
            }
            _ => default,
        }
    }
}

/// The Kubernetes library type (`Quantity`, `URL`, `IP`, `CIDR`, `Semver`) a call returns,
/// which upstream's checker knows and this one types `dyn`.
fn kubernetes_type(e: &IdedExpr) -> Option<&'static str> {
    let Expr::Call(c) = &e.expr else {
        return None;
    };
    let target = c.target.as_deref().and_then(kubernetes_type);
    match (c.func_name.as_str(), target, c.args.len()) {
        ("quantity", None, 1) => Some("Quantity"),
        ("url", None, 1) => Some("URL"),
        ("ip", None, 1) => Some("IP"),
        ("cidr", None, 1) => Some("CIDR"),
        ("semver", None, 1 | 2) => Some("Semver"),
        ("ip", Some("CIDR"), 0) => Some("IP"),
        ("masked", Some("CIDR"), 0) => Some("CIDR"),
        ("add" | "sub", Some("Quantity"), 1) => Some("Quantity"),
        _ => None,
    }
}

/// What an estimate sees of a call's argument or target.
struct Arg {
    id: u64,
    /// Its Kubernetes library type, when it has one.
    k8s: Option<&'static str>,
    path: Vec<String>,
    size: Option<Size>,
    literal_int: Option<i64>,
}

/// Whether a comprehension is a `cel.bind`: an empty range, a false condition, and an
/// accumulator of its own name.
fn is_bind(c: &ComprehensionExpr) -> bool {
    matches!(&c.iter_range.expr, Expr::List(l) if l.elements.is_empty())
        && matches!(&c.loop_cond.expr, Expr::Literal(LiteralValue::Boolean(b)) if !*b.inner())
        && !is_accumulator(&c.accu_var)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{PER_CRD_LIMIT, over_budget};
    use crate::schema::{FieldError, StructuralSchema};

    fn errors(spec: Value) -> Vec<FieldError> {
        let schema = json!({"type": "object", "properties": {"spec": spec}});
        match StructuralSchema::from_value(&schema) {
            Ok(_) => Vec::new(),
            Err(e) => e.errors,
        }
    }

    const HINT: &str = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";

    /// The estimate of `rule` on a node of `schema` (not a resource root), as upstream's
    /// `Compile` reports it in `MaxCost`.
    fn cost_of(schema: &Value, rule: &str) -> u64 {
        use crate::cel::check::check;
        let decl = crate::schema::decl::decl_of_value(schema);
        let program = crate::cel::parse::parse(rule).expect(rule);
        let Ok(checked) = check(program.expression(), &decl, false) else {
            panic!("{rule} does not type-check on {schema}");
        };
        super::estimate(program.expression(), &checked, &decl)
    }

    /// A value schema by the names upstream's tests give them.
    fn scalar(ty: &str) -> Value {
        match ty {
            "duration" | "date" | "date-time" => json!({"type": "string", "format": ty}),
            "int-or-string" => json!({"x-kubernetes-int-or-string": true}),
            _ => json!({"type": ty}),
        }
    }

    /// `v` with `key: max` when `max` is set.
    fn with(mut v: Value, key: &str, max: Option<u64>) -> Value {
        if let Some(m) = max {
            v[key] = json!(m);
        }
        v
    }

    fn required_optional() -> Value {
        json!({"type": "object", "required": ["required"], "properties": {
            "required": {"type": "string"}, "optional": {"type": "string"}}})
    }

    type Gen = fn(Option<u64>) -> Value;

    /// Upstream's `TestCostEstimation` table (apiextensions-apiserver
    /// `pkg/apiserver/schema/cel/compilation_test.go`): a schema generator (given the
    /// maxItems/maxProperties/maxLength it sets, or none), a rule, its cost without the
    /// bound, the bound, and its cost with it.
    #[allow(clippy::type_complexity)]
    fn upstream_table() -> Vec<(&'static str, Gen, &'static str, u64, u64, u64)> {
        fn array_of(ty: &'static str) -> impl Fn(Option<u64>) -> Value {
            move |m| with(json!({"type": "array", "items": scalar(ty)}), "maxItems", m)
        }
        fn map_of(ty: &'static str) -> impl Fn(Option<u64>) -> Value {
            move |m| {
                let v = json!({"type": "object", "additionalProperties": scalar(ty)});
                with(v, "maxProperties", m)
            }
        }
        fn string(m: Option<u64>) -> Value {
            with(json!({"type": "string"}), "maxLength", m)
        }
        let numbers: Gen = |m| array_of("number")(m);
        let strings: Gen = |m| array_of("string")(m);
        let booleans: Gen = |m| array_of("boolean")(m);
        let ios: Gen = |m| array_of("int-or-string")(m);
        let durations: Gen = |m| array_of("duration")(m);
        let dates: Gen = |m| array_of("date")(m);
        let date_times: Gen = |m| array_of("date-time")(m);
        let number_map: Gen = |m| map_of("number")(m);
        let string_map: Gen = |m| map_of("string")(m);
        let boolean_map: Gen = |m| map_of("boolean")(m);
        let integer_map: Gen = |m| map_of("integer")(m);
        let ios_map: Gen = |m| map_of("int-or-string")(m);
        let duration_map: Gen = |m| map_of("duration")(m);
        let date_map: Gen = |m| map_of("date")(m);
        let date_time_map: Gen = |m| map_of("date-time")(m);
        let arrays: Gen = |m| {
            let v =
                json!({"type": "array", "items": {"type": "array", "items": {"type": "number"}}});
            with(v, "maxItems", m)
        };
        let objects: Gen = |m| {
            with(
                json!({"type": "array", "items": required_optional()}),
                "maxItems",
                m,
            )
        };
        let number_maps: Gen = |m| {
            let v = json!({"type": "array", "items": {"type": "object",
                "additionalProperties": {"type": "number"}}});
            with(v, "maxItems", m)
        };
        let bytes: Gen = |m| with(json!({"type": "string", "format": "byte"}), "maxLength", m);
        let nested_spec: Gen = |m| {
            let v = json!({"type": "object", "additionalProperties": string(m)});
            with(v, "maxProperties", m)
        };
        let all_max_nested: Gen = |m| {
            let object = with(required_optional(), "maxProperties", m);
            let map = with(
                json!({"type": "object", "additionalProperties": object}),
                "maxProperties",
                m,
            );
            with(json!({"type": "array", "items": map}), "maxItems", m)
        };
        let one_max_nested: Gen = |m| {
            let map = with(
                json!({"type": "object", "additionalProperties": required_optional()}),
                "maxProperties",
                m,
            );
            json!({"type": "array", "items": map})
        };
        let object_map: Gen = |m| {
            let v = json!({"type": "object", "additionalProperties": required_optional()});
            with(v, "maxProperties", m)
        };
        let map_map: Gen = |m| {
            let v = json!({"type": "object", "additionalProperties": {"type": "object",
                "additionalProperties": {"type": "number"}}});
            with(v, "maxProperties", m)
        };
        let array_map: Gen = |m| {
            let v = json!({"type": "object", "additionalProperties": {"type": "array",
                "items": {"type": "number"}}});
            with(v, "maxProperties", m)
        };
        let bounded_strings: Gen =
            |m| with(json!({"type": "array", "items": string(m)}), "maxItems", m);
        let replace: Gen = |m| {
            json!({"type": "object", "properties": {"str": string(m),
                "before": string(Some(2)), "after": string(Some(4))}})
        };
        let split: Gen =
            |m| json!({"type": "object", "properties": {"str": string(m), "separator": string(m)}});
        let enumeration: Gen = |m| {
            with(
                json!({"type": "string", "enum": ["A", "B", "C", "LongValue"]}),
                "maxLength",
                m,
            )
        };
        vec![
            (
                "number array with all",
                numbers,
                "self.all(x, true)",
                4718591,
                10,
                32,
            ),
            (
                "string array with all",
                strings,
                "self.all(x, true)",
                3145727,
                20,
                62,
            ),
            (
                "boolean array with all",
                booleans,
                "self.all(x, true)",
                1887437,
                5,
                17,
            ),
            (
                "array of number arrays with all",
                arrays,
                "self.all(x, true)",
                3145727,
                100,
                302,
            ),
            (
                "array of objects with all",
                objects,
                "self.all(x, true)",
                555128,
                50,
                152,
            ),
            (
                "map of numbers with all",
                number_map,
                "self.all(x, true)",
                1348169,
                10,
                32,
            ),
            (
                "map of strings with all",
                string_map,
                "self.all(x, true)",
                1179647,
                3,
                11,
            ),
            (
                "map of booleans with all",
                boolean_map,
                "self.all(x, true)",
                943718,
                100,
                302,
            ),
            (
                "string with contains",
                string,
                "self.contains('test')",
                314574,
                10,
                5,
            ),
            (
                "string with startsWith",
                string,
                "self.startsWith('test')",
                2,
                15,
                2,
            ),
            (
                "string with endsWith",
                string,
                "self.endsWith('test')",
                2,
                30,
                2,
            ),
            (
                "concat string",
                string,
                r#"size(self + "hello") > size("hello")"#,
                314578,
                4,
                7,
            ),
            (
                "index of array with numbers",
                numbers,
                "self[1] == 0.0",
                2,
                5000,
                2,
            ),
            (
                "index of array with strings",
                strings,
                "self[1] == self[1]",
                314577,
                8,
                314577,
            ),
            (
                "O(n^2) loop with numbers",
                numbers,
                "self.all(x, self.all(y, true))",
                0,
                10,
                352,
            ),
            (
                "O(n^3) loop with numbers",
                numbers,
                "self.all(x, self.all(y, self.all(z, true)))",
                0,
                10,
                3552,
            ),
            (
                "regex matches simple",
                string,
                r#"self.matches("x")"#,
                314574,
                50,
                22,
            ),
            (
                "regex matches empty string",
                string,
                r#""".matches("(((((((((())))))))))[0-9]")"#,
                7,
                10,
                7,
            ),
            (
                "regex matches empty regex",
                string,
                r#"self.matches("")"#,
                1,
                100,
                1,
            ),
            (
                "map of strings with value length",
                nested_spec,
                "self.all(x, x.contains(self[x]))",
                2752507,
                10,
                72,
            ),
            (
                "set array maxLength to zero",
                numbers,
                "self[3] == 0.0",
                2,
                0,
                2,
            ),
            (
                "set map maxLength to zero",
                number_map,
                r#"self["x"] == 0.0"#,
                2,
                0,
                2,
            ),
            (
                "set string maxLength to zero",
                string,
                r#"self == "x""#,
                2,
                0,
                1,
            ),
            (
                "set bytes maxLength to zero",
                bytes,
                r#"self == b"x""#,
                2,
                0,
                1,
            ),
            (
                "set maxLength greater than estimated maxLength",
                numbers,
                "self.all(x, x == 0.0)",
                6291454,
                3 * 1024 * 2048,
                25165826,
            ),
            (
                "nested types with root rule with all supporting maxLength",
                all_max_nested,
                r#"self.all(x, x["y"].required == "z")"#,
                7340027,
                10,
                72,
            ),
            (
                "nested types with root rule with one supporting maxLength",
                one_max_nested,
                r#"self.all(x, x["y"].required == "z")"#,
                7340027,
                10,
                7340027,
            ),
            (
                "int-or-string array with all",
                ios,
                "self.all(x, true)",
                4718591,
                10,
                32,
            ),
            (
                "index of array with int-or-strings",
                ios,
                "self[0] == 5",
                3,
                10,
                3,
            ),
            (
                "index of array with booleans",
                booleans,
                "self[0] == false",
                2,
                25,
                2,
            ),
            (
                "index of array of objects",
                objects,
                "self[0] == null",
                2,
                422,
                2,
            ),
            (
                "index of array of array of numbers",
                arrays,
                "self[0][0] == -1.0",
                3,
                51,
                3,
            ),
            (
                "array of number maps with all",
                number_maps,
                "self.all(x, x.y == 25.2)",
                6291452,
                12,
                74,
            ),
            (
                "index of array of number maps",
                number_maps,
                "self[0].x > 2.0",
                4,
                3000,
                4,
            ),
            (
                "duration array with all",
                durations,
                "self.all(x, true)",
                2359295,
                5,
                17,
            ),
            (
                "index of duration array",
                durations,
                "self[0].getHours() == 2",
                4,
                525,
                4,
            ),
            (
                "date array with all",
                dates,
                "self.all(x, true)",
                725936,
                15,
                47,
            ),
            (
                "index of date array",
                dates,
                "self[2].getDayOfMonth() == 13",
                4,
                42,
                4,
            ),
            (
                "date-time array with all",
                date_times,
                "self.all(x, true)",
                428963,
                25,
                77,
            ),
            (
                "index of date-time array",
                date_times,
                "self[2].getMinutes() == 45",
                4,
                99,
                4,
            ),
            (
                "map of int-or-strings with all",
                ios_map,
                "self.all(x, true)",
                1348169,
                15,
                47,
            ),
            (
                "map of objects with all",
                object_map,
                "self.all(x, true)",
                428963,
                20,
                62,
            ),
            (
                "map of number maps with all",
                map_map,
                "self.all(x, true)",
                1179647,
                10,
                32,
            ),
            (
                "map of number arrays with all",
                array_map,
                "self.all(x, true)",
                1179647,
                25,
                77,
            ),
            (
                "map of durations with all",
                duration_map,
                "self.all(x, true)",
                1048577,
                5,
                17,
            ),
            (
                "map of dates with all",
                date_map,
                "self.all(x, true)",
                524288,
                10,
                32,
            ),
            (
                "map of date-times with all",
                date_time_map,
                "self.all(x, true)",
                349526,
                25,
                77,
            ),
            (
                "extended library regex find",
                string,
                "self.find('[0-9]+') == ''",
                629147,
                10,
                11,
            ),
            (
                "extended library join",
                bounded_strings,
                "self.join(' ') == 'aa bb'",
                329853068905,
                10,
                43,
            ),
            (
                "extended library isSorted",
                bounded_strings,
                "self.isSorted() == true",
                329854432052,
                10,
                52,
            ),
            (
                "extended library replace",
                replace,
                "self.str.replace(self.before, self.after) == 'does not matter'",
                629154,
                4,
                12,
            ),
            (
                "extended library split",
                split,
                "self.str.split(self.separator) == []",
                629160,
                10,
                22,
            ),
            (
                "extended library lowerAscii",
                string,
                "self.lowerAscii() == 'lower!'",
                314575,
                10,
                6,
            ),
            (
                "check cost of size call",
                integer_map,
                "oldSelf.size() == self.size()",
                5,
                10,
                5,
            ),
            (
                "check cost of timestamp comparison",
                date_time_map,
                r#"self["a"] == self["b"]"#,
                8,
                7,
                8,
            ),
            (
                "check cost of duration comparison",
                duration_map,
                r#"self["c"] == self["d"]"#,
                8,
                42,
                8,
            ),
            (
                "enums with maxLength equals to the longest possible value",
                enumeration,
                "self.contains('A')",
                2,
                1000,
                401,
            ),
        ]
    }

    #[test]
    fn estimates_equal_upstreams() {
        let mut wrong = Vec::new();
        for (name, schema, rule, unbounded, bound, bounded) in upstream_table() {
            let calc = cost_of(&schema(None), rule);
            // Upstream only requires the unbounded O(n^2) and O(n^3) loops to be over its limit.
            let calc_ok = if unbounded == 0 {
                calc > PER_CRD_LIMIT
            } else {
                calc == unbounded
            };
            if !calc_ok {
                wrong.push(format!("{name}: unbounded {calc}, upstream {unbounded}"));
            }
            let set = cost_of(&schema(Some(bound)), rule);
            if set != bounded {
                wrong.push(format!(
                    "{name}: bounded by {bound}: {set}, upstream {bounded}"
                ));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    /// cel-go's `TestCost` rows (`checker/cost_test.go`) that need no variables: on an
    /// object `self`, whose size upstream's schema walk takes as 0, they cost what cel-go's
    /// own estimator says.
    #[test]
    fn literal_expressions_cost_what_cel_go_says() {
        let object = json!({"type": "object"});
        let rows: [(&str, u64); 22] = [
            (r#""Hello World!""#, 0),
            ("[1, 2, 3]", 10),
            (r#"{"a": 1, "b": 2, "c": 3}"#, 30),
            ("[1, 2, 3].all(x, true)", 20),
            ("'123'.matches('[0-9]')", 2),
            ("true || false", 0),
            ("true && false", 0),
            ("1 < 2", 1),
            ("1 == 2", 1),
            ("2 in [1, 2, 3]", 13),
            ("1 + 1", 1),
            ("true ? 1 : 2", 0),
            (r#"size("123")"#, 1),
            (r#"size(b"123")"#, 1),
            ("string(1)", 1),
            ("((5 != 6) == (1 == 2)) == ((3 <= 4) == (9 != 9))", 7),
            ("[1,2,3,4,5].filter(x, x % 2 == 0)", 101),
            ("[1,2,3,4,5].map(x, x)", 86),
            ("[1,2,3,4,5].map(x, x).filter(x, x % 2 == 0)", 177),
            ("[1,2,3,4,5].map(x, x).map(x, x)", 162),
            ("[1,2,3,4,5].map(x, x)[4]", 87),
            ("[[1,2],[1,2],[1,2],[1,2],[1,2]][4]", 61),
        ];
        let mut wrong = Vec::new();
        for (rule, want) in rows {
            let got = cost_of(&object, rule);
            if got != want {
                wrong.push(format!("{rule}: {got}, cel-go {want}"));
            }
        }
        // A named format's check (Kubernetes' estimate): a 253-character string is 1012
        // bytes, 102 to traverse, times 32 for the regex; plus 1 for each call and `self`.
        let host = json!({"type": "string", "maxLength": 253});
        let rule = "!format.dns1123Subdomain().validate(self).hasValue()";
        if cost_of(&host, rule) != 102 * 32 + 4 {
            wrong.push(format!(
                "{rule}: {}, upstream {}",
                cost_of(&host, rule),
                102 * 32 + 4
            ));
        }
        // Two values of one Kubernetes type compare at a constant 1 (URLs by length), but
        // only with `==`: `!=` is cel-go's, by their sizes, which it does not know.
        let two = json!({"type": "object", "properties": {
            "a": {"type": "string", "maxLength": 10}, "b": {"type": "string", "maxLength": 10}}});
        for (rule, want) in [
            ("quantity(self.a) == quantity(self.b)", 2 + 2 + 2 + 1),
            ("cidr(self.a).ip() == ip(self.b)", 2 + 3 + 2 + 1),
            ("url(self.a) == url(self.b)", (2 + 4) * 2 + 4),
        ] {
            if cost_of(&two, rule) != want {
                wrong.push(format!("{rule}: {}, upstream {want}", cost_of(&two, rule)));
            }
        }
        if cost_of(&two, "quantity(self.a) != quantity(self.b)") < PER_CRD_LIMIT {
            wrong.push("quantity(self.a) != quantity(self.b) is bounded".into());
        }
        let map = "{'a': [1,2], 'b': [1,2], 'c': [1,2], 'd': [1,2], 'e': [1,2]}.b";
        if cost_of(&object, map) != 81 {
            wrong.push(format!("{map}: {}, cel-go 81", cost_of(&object, map)));
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    /// The Gateway API routes' uniqueness rules: a nested `all` (or `exists_one`) over a list
    /// of at most 32 references with bounded strings, selecting a field by its escaped name
    /// (`__namespace__`). Upstream's estimate, by hand: `==` on two 253-character strings
    /// costs 102 (a tenth of their 1012 bytes) plus the four selections; the inner loop
    /// 2 + 32 × (3 + body), the outer the same around it.
    #[test]
    fn nested_loops_over_bounded_references_fit() {
        let refs = |max: u64| {
            json!({"type": "array", "maxItems": max, "items": {"type": "object",
                "required": ["name"], "properties": {
                    "group": {"type": "string", "maxLength": 253},
                    "name": {"type": "string", "maxLength": 253},
                    "namespace": {"type": "string", "maxLength": 63},
                    "port": {"type": "integer"}}}})
        };
        let all = "self.all(a, self.all(b, a.group == b.group && a.name == b.name \
                   && has(a.__namespace__) == has(b.__namespace__) ? a.port == b.port : true))";
        // Body: 106 + 106 + 5, then 4 for the ports: 221.
        assert_eq!(cost_of(&refs(32), all), 2 + 32 * (3 + (2 + 32 * (3 + 221))));
        let one = "self.all(a, self.exists_one(b, a.name == b.name \
                   && a.__namespace__ == b.__namespace__))";
        // Body: 106 + 30; a step of exists_one is the body and 2, its result 2.
        assert_eq!(cost_of(&refs(32), one), 2 + 32 * (3 + (3 + 32 * (136 + 2))));
        // Both fit a rule's budget, on a CRD too.
        for rule in [all, one] {
            let mut spec = refs(32);
            spec["x-kubernetes-validations"] = json!([{"rule": rule}]);
            let errs = errors(json!({"type": "object", "properties": {"parentRefs": spec}}));
            assert!(errs.is_empty(), "{rule}: {errs:?}");
        }
        // Without maxItems, the same rule is far over it.
        let mut spec = json!({"type": "array", "items": refs(32)["items"].clone()});
        spec["x-kubernetes-validations"] = json!([{"rule": all}]);
        let errs = errors(json!({"type": "object", "properties": {"parentRefs": spec}}));
        assert!(
            errs.iter()
                .any(|e| e.message.contains("by factor of more than 100x")),
            "{errs:?}"
        );
    }

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
        // A list the rule computes has no path into the schema: its strings are unbounded,
        // and searching them (each comparison a tenth of a unit per character) is too.
        let names = json!({"type": "array", "maxItems": 4, "items": {"type": "object",
            "properties": {"name": {"type": "string", "maxLength": 8}}}});
        let errs = errors(json!({"type": "object", "properties": {"names": names},
            "x-kubernetes-validations": [{"rule": "self.names.map(n, n.name).indexOf('a') < 0"}]}));
        assert_eq!(errs.len(), 3, "{errs:?}");
        assert!(errs[0].message.contains("more than 100x"), "{errs:?}");
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
