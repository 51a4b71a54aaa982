//! Type checking of CEL expressions against the declared type of `self`, as cel-go's checker
//! does when a kube-apiserver compiles a CRD's `x-kubernetes-validations` rules.
//!
//! The cel crate parses but checks no types, so this module types a parsed rule over its AST:
//! `self` and `oldSelf` get a [`Decl`] (the CRD code derives it from the structural schema,
//! as upstream's `SchemaDeclType`: objects with their fields, `map(string, T)`, `list(T)`,
//! scalars by type and format, `dyn`). It reports what cel-go reports, in its words:
//! `undefined field 'foo'`, `found no matching overload for '_+_' applied to '(int,
//! string)'`, `type 'string' does not support field selection`, a comprehension over a
//! scalar. Functions it does not model, and every value of type `dyn`, type as `dyn` and are
//! never refused: a rule a real server accepts is accepted here, while a few it refuses may
//! pass (the evaluation then fails on write instead).
//!
//! [`Decl`] also carries upstream's size estimates (`maxItems`, `maxLength`, or what fits in a
//! 3 MiB request), which [`cost`](super::cost) reads.

use std::collections::{BTreeMap, HashMap};

use cel::common::ast::{ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue, SelectExpr};

/// The largest request body a kube-apiserver accepts, which bounds every unbounded list, map
/// and string (`apiserver/pkg/apis/cel.MaxRequestSizeBytes`).
pub(crate) const MAX_REQUEST_SIZE_BYTES: u64 = 3 * 1024 * 1024;

/// The declared type of a schema node, with its size bounds (upstream's `DeclType`).
#[derive(Debug)]
pub(crate) struct Decl {
    pub kind: DeclKind,
    /// The fewest bytes a value of this type takes serialized to JSON.
    pub min_size: u64,
    /// The most elements (items, properties, bytes of a string) a value may hold.
    pub max_elements: u64,
}

/// What a [`Decl`] is.
#[derive(Debug)]
pub(crate) enum DeclKind {
    Dyn,
    Bool,
    Int,
    Double,
    String,
    Bytes,
    Timestamp,
    Duration,
    List(Box<Decl>),
    /// `map(string, T)`.
    Map(Box<Decl>),
    /// An object with declared fields; `open` when unknown fields are preserved (this
    /// checker then lets rules select undeclared fields, as `dyn`).
    Object {
        fields: BTreeMap<String, Decl>,
        open: bool,
    },
}

/// A map's key type, as upstream's size estimator sees it (no size bound recorded).
pub(crate) static MAP_KEY: Decl = Decl {
    kind: DeclKind::String,
    min_size: 2,
    max_elements: 0,
};

impl Decl {
    /// A declaration of `kind` with its size bounds.
    pub(crate) fn new(kind: DeclKind, min_size: u64, max_elements: u64) -> Decl {
        Decl {
            kind,
            min_size,
            max_elements,
        }
    }
}

/// A CEL type as the checker sees it.
#[derive(Debug, Clone)]
pub(crate) enum Ty<'a> {
    Dyn,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Timestamp,
    Duration,
    Type,
    List(Box<Ty<'a>>),
    Map(Box<Ty<'a>>, Box<Ty<'a>>),
    Object(&'a Decl),
}

impl<'a> Ty<'a> {
    /// The type a value of `d` has in CEL.
    pub(crate) fn of(d: &'a Decl) -> Ty<'a> {
        match &d.kind {
            DeclKind::Dyn => Ty::Dyn,
            DeclKind::Bool => Ty::Bool,
            DeclKind::Int => Ty::Int,
            DeclKind::Double => Ty::Double,
            DeclKind::String => Ty::String,
            DeclKind::Bytes => Ty::Bytes,
            DeclKind::Timestamp => Ty::Timestamp,
            DeclKind::Duration => Ty::Duration,
            DeclKind::List(e) => Ty::List(Box::new(Ty::of(e))),
            DeclKind::Map(v) => Ty::Map(Box::new(Ty::String), Box::new(Ty::of(v))),
            DeclKind::Object { .. } => Ty::Object(d),
        }
    }

    pub(crate) fn is_dyn(&self) -> bool {
        matches!(self, Ty::Dyn)
    }

    /// A scalar, in cel-go's cost model: sized 1 when nothing better is known.
    pub(crate) fn is_scalar(&self) -> bool {
        matches!(
            self,
            Ty::Bool | Ty::Int | Ty::Uint | Ty::Double | Ty::Timestamp | Ty::Duration
        )
    }

    fn is_number(&self) -> bool {
        matches!(self, Ty::Int | Ty::Uint | Ty::Double)
    }

    /// The type's name as cel-go prints it in errors (an object's generated type name is
    /// not stable upstream; `object` here).
    pub(crate) fn name(&self) -> String {
        match self {
            Ty::Dyn => "dyn".into(),
            Ty::Null => "null_type".into(),
            Ty::Bool => "bool".into(),
            Ty::Int => "int".into(),
            Ty::Uint => "uint".into(),
            Ty::Double => "double".into(),
            Ty::String => "string".into(),
            Ty::Bytes => "bytes".into(),
            Ty::Timestamp => "google.protobuf.Timestamp".into(),
            Ty::Duration => "google.protobuf.Duration".into(),
            Ty::Type => "type".into(),
            Ty::List(e) => format!("list({})", e.name()),
            Ty::Map(k, v) => format!("map({}, {})", k.name(), v.name()),
            Ty::Object(_) => "object".into(),
        }
    }
}

/// Whether values of `a` and `b` may be compared, or be the two branches of a conditional:
/// the same type, or `dyn` (or `null`) on either side.
fn compatible(a: &Ty<'_>, b: &Ty<'_>) -> bool {
    match (a, b) {
        (Ty::Dyn, _) | (_, Ty::Dyn) | (Ty::Null, _) | (_, Ty::Null) => true,
        (Ty::List(x), Ty::List(y)) => compatible(x, y),
        (Ty::Map(k1, v1), Ty::Map(k2, v2)) => compatible(k1, k2) && compatible(v1, v2),
        (Ty::Object(_), Ty::Object(_) | Ty::Map(..)) | (Ty::Map(..), Ty::Object(_)) => true,
        _ => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

/// Of two compatible types, the more precise.
fn join<'a>(a: &Ty<'a>, b: &Ty<'a>) -> Ty<'a> {
    match a {
        Ty::Dyn | Ty::Null => b.clone(),
        _ => a.clone(),
    }
}

/// The result of checking a rule: every expression's type, by expression id.
pub(crate) struct Checked<'a> {
    pub types: HashMap<u64, Ty<'a>>,
}

impl<'a> Checked<'a> {
    /// The type of expression `id` (`dyn` when unknown).
    pub(crate) fn ty(&self, id: u64) -> Ty<'a> {
        self.types.get(&id).cloned().unwrap_or(Ty::Dyn)
    }
}

/// A type error: the expression it is about, and cel-go's message.
pub(crate) struct TypeError {
    pub id: u64,
    pub message: String,
}

struct Checker<'a> {
    this: Ty<'a>,
    old: Ty<'a>,
    scopes: Vec<(String, Ty<'a>)>,
    types: HashMap<u64, Ty<'a>>,
    errors: Vec<TypeError>,
}

/// Types `expr` with `self` of type `root` (and `oldSelf` too, or `dyn` as an optional
/// under `optionalOldSelf`); on failure, every error found.
pub(crate) fn check<'a>(
    expr: &IdedExpr,
    root: &'a Decl,
    optional_old_self: bool,
) -> Result<Checked<'a>, Vec<TypeError>> {
    let this = Ty::of(root);
    let old = if optional_old_self {
        Ty::Dyn
    } else {
        this.clone()
    };
    let mut c = Checker {
        this,
        old,
        scopes: Vec::new(),
        types: HashMap::new(),
        errors: Vec::new(),
    };
    c.check(expr);
    if c.errors.is_empty() {
        Ok(Checked { types: c.types })
    } else {
        Err(c.errors)
    }
}

/// How a call's argument types resolve.
enum Resolved<'a> {
    Ok(Ty<'a>),
    NoMatch,
}

impl<'a> Checker<'a> {
    fn error(&mut self, id: u64, message: String) {
        self.errors.push(TypeError { id, message });
    }

    fn check(&mut self, e: &IdedExpr) -> Ty<'a> {
        let t = match &e.expr {
            Expr::Unspecified => Ty::Dyn,
            Expr::Literal(l) => match l {
                LiteralValue::Boolean(_) => Ty::Bool,
                LiteralValue::Bytes(_) => Ty::Bytes,
                LiteralValue::Double(_) => Ty::Double,
                LiteralValue::Int(_) => Ty::Int,
                LiteralValue::Null => Ty::Null,
                LiteralValue::String(_) => Ty::String,
                LiteralValue::UInt(_) => Ty::Uint,
            },
            Expr::Ident(name) => self.ident(name),
            Expr::Select(s) => self.select(e.id, s),
            Expr::Call(c) => {
                let target = c.target.as_ref().map(|t| self.check(t));
                let args: Vec<Ty<'a>> = c.args.iter().map(|a| self.check(a)).collect();
                match resolve(&c.func_name, target.as_ref(), &args) {
                    Resolved::Ok(t) => t,
                    Resolved::NoMatch => {
                        let mut sig = String::new();
                        if let Some(t) = &target {
                            sig.push_str(&t.name());
                            sig.push('.');
                        }
                        let names: Vec<String> = args.iter().map(Ty::name).collect();
                        sig.push_str(&format!("({})", names.join(", ")));
                        self.error(
                            e.id,
                            format!(
                                "found no matching overload for '{}' applied to '{sig}'",
                                c.func_name
                            ),
                        );
                        Ty::Dyn
                    }
                }
            }
            Expr::List(l) => {
                let elems: Vec<Ty<'a>> = l.elements.iter().map(|x| self.check(x)).collect();
                Ty::List(Box::new(homogeneous(&elems)))
            }
            Expr::Map(m) => {
                let mut keys = Vec::new();
                let mut values = Vec::new();
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        keys.push(self.check(&me.key));
                        values.push(self.check(&me.value));
                    }
                }
                Ty::Map(Box::new(homogeneous(&keys)), Box::new(homogeneous(&values)))
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    match &entry.expr {
                        EntryExpr::StructField(f) => {
                            self.check(&f.value);
                        }
                        EntryExpr::MapEntry(me) => {
                            self.check(&me.key);
                            self.check(&me.value);
                        }
                    }
                }
                Ty::Dyn
            }
            Expr::Comprehension(c) => self.comprehension(c),
        };
        self.types.insert(e.id, t.clone());
        t
    }

    fn ident(&self, name: &str) -> Ty<'a> {
        if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return t.clone();
        }
        match name {
            "self" => self.this.clone(),
            "oldSelf" => self.old.clone(),
            "int" | "uint" | "double" | "bool" | "string" | "bytes" | "list" | "map"
            | "null_type" | "type" => Ty::Type,
            _ => Ty::Dyn,
        }
    }

    fn select(&mut self, id: u64, s: &SelectExpr) -> Ty<'a> {
        let operand = self.check(&s.operand);
        let found = match &operand {
            Ty::Object(d) => match &d.kind {
                DeclKind::Object { fields, open } => match field(fields, &s.field) {
                    Some(f) => Ty::of(f),
                    None if *open => Ty::Dyn,
                    None => {
                        self.error(id, format!("undefined field '{}'", s.field));
                        Ty::Dyn
                    }
                },
                _ => Ty::Dyn,
            },
            Ty::Map(_, v) => (**v).clone(),
            Ty::Dyn => Ty::Dyn,
            other => {
                let message = format!("type '{}' does not support field selection", other.name());
                self.error(id, message);
                Ty::Dyn
            }
        };
        if s.test { Ty::Bool } else { found }
    }

    fn comprehension(&mut self, c: &ComprehensionExpr) -> Ty<'a> {
        let range = self.check(&c.iter_range);
        let (first, second) = match &range {
            Ty::List(e) if c.iter_var2.is_some() => (Ty::Int, (**e).clone()),
            Ty::List(e) => ((**e).clone(), Ty::Dyn),
            Ty::Map(k, v) => ((**k).clone(), (**v).clone()),
            Ty::Dyn | Ty::Object(_) => (Ty::Dyn, Ty::Dyn),
            other => {
                let message = format!(
                    "expression of type '{}' cannot be range of a comprehension (must be list, map, or dynamic)",
                    other.name()
                );
                self.error(c.iter_range.id, message);
                (Ty::Dyn, Ty::Dyn)
            }
        };
        let init = self.check(&c.accu_init);
        let before = self.scopes.len();
        self.scopes.push((c.accu_var.clone(), init.clone()));
        self.scopes.push((c.iter_var.clone(), first));
        if let Some(v2) = &c.iter_var2 {
            self.scopes.push((v2.clone(), second));
        }
        self.check(&c.loop_cond);
        let step = self.check(&c.loop_step);
        // `[]` starts a map or filter as list(dyn); the step tells the element type.
        if let (Ty::List(e), Ty::List(_)) = (&init, &step)
            && e.is_dyn()
        {
            self.scopes[before].1 = step;
        }
        self.scopes.truncate(before + 1);
        let result = self.check(&c.result);
        self.scopes.truncate(before);
        result
    }
}

/// A field of an object by its CEL name: the property's name, or its escaped form
/// (`__dash__` for `-`, `__dot__` for `.`, `__slash__` for `/`, `__underscores__` for `_`,
/// `__name__` for a reserved word).
pub(crate) fn field<'d>(fields: &'d BTreeMap<String, Decl>, name: &str) -> Option<&'d Decl> {
    if let Some(f) = fields.get(name) {
        return Some(f);
    }
    let unescaped = name
        .replace("__underscores__", "_")
        .replace("__dash__", "-")
        .replace("__dot__", ".")
        .replace("__slash__", "/");
    let unescaped = match unescaped
        .strip_prefix("__")
        .and_then(|s| s.strip_suffix("__"))
    {
        Some(word) if !word.is_empty() => word.to_string(),
        _ => unescaped,
    };
    fields.get(&unescaped)
}

/// The element type of a list literal: the one type all elements share, else `dyn`.
fn homogeneous<'a>(elems: &[Ty<'a>]) -> Ty<'a> {
    let mut out = Ty::Dyn;
    for (i, t) in elems.iter().enumerate() {
        if i == 0 {
            out = t.clone();
        } else if std::mem::discriminant(t) != std::mem::discriminant(&out) {
            return Ty::Dyn;
        }
    }
    out
}

/// `t` is `want`, or `dyn`.
fn fits(t: &Ty<'_>, want: &Ty<'_>) -> bool {
    t.is_dyn() || std::mem::discriminant(t) == std::mem::discriminant(want)
}

/// The result type of a call to `name` on `target` with `args`, for the functions this
/// checker models; anything else, and any call with a `dyn` argument that could match,
/// resolves.
fn resolve<'a>(name: &str, target: Option<&Ty<'a>>, args: &[Ty<'a>]) -> Resolved<'a> {
    use Resolved::{NoMatch, Ok};
    let check = |ok: bool, t: Ty<'a>| if ok { Ok(t) } else { NoMatch };
    match (name, target, args) {
        ("_&&_" | "_||_", None, [a, b]) => {
            check(fits(a, &Ty::Bool) && fits(b, &Ty::Bool), Ty::Bool)
        }
        ("!_", None, [a]) => check(fits(a, &Ty::Bool), Ty::Bool),
        ("@not_strictly_false", None, _) => Ok(Ty::Bool),
        ("-_", None, [a]) => match a {
            Ty::Int | Ty::Double | Ty::Dyn => Ok(a.clone()),
            _ => NoMatch,
        },
        ("_+_" | "_-_" | "_*_" | "_/_" | "_%_", None, [a, b]) => arithmetic(name, a, b),
        ("_<_" | "_<=_" | "_>_" | "_>=_", None, [a, b]) => {
            let ordered = |t: &Ty<'_>| {
                matches!(
                    t,
                    Ty::Int
                        | Ty::Uint
                        | Ty::Double
                        | Ty::String
                        | Ty::Bytes
                        | Ty::Bool
                        | Ty::Timestamp
                        | Ty::Duration
                )
            };
            let ok = a.is_dyn()
                || b.is_dyn()
                || (a.is_number() && b.is_number())
                || (ordered(a) && std::mem::discriminant(a) == std::mem::discriminant(b));
            check(ok, Ty::Bool)
        }
        ("_==_" | "_!=_", None, [a, b]) => check(compatible(a, b), Ty::Bool),
        ("_?_:_", None, [c, a, b]) => check(fits(c, &Ty::Bool) && compatible(a, b), join(a, b)),
        ("_[_]", None, [container, index]) => match container {
            Ty::List(e) => check(matches!(index, Ty::Int | Ty::Uint | Ty::Dyn), (**e).clone()),
            Ty::Map(k, v) => check(compatible(k, index), (**v).clone()),
            Ty::Dyn | Ty::Object(_) => Ok(Ty::Dyn),
            _ => NoMatch,
        },
        ("@in", None, [x, container]) => match container {
            Ty::List(e) => check(compatible(x, e), Ty::Bool),
            Ty::Map(k, _) => check(compatible(x, k), Ty::Bool),
            Ty::Dyn | Ty::Object(_) => Ok(Ty::Bool),
            _ => NoMatch,
        },
        ("size", None, [x]) | ("size", Some(x), []) => check(
            matches!(
                x,
                Ty::String | Ty::Bytes | Ty::List(_) | Ty::Map(..) | Ty::Object(_) | Ty::Dyn
            ),
            Ty::Int,
        ),
        ("int", None, [_]) => Ok(Ty::Int),
        ("uint", None, [_]) => Ok(Ty::Uint),
        ("double", None, [_]) => Ok(Ty::Double),
        ("string", None, [_]) => Ok(Ty::String),
        ("bytes", None, [_]) => Ok(Ty::Bytes),
        ("bool", None, [_]) => Ok(Ty::Bool),
        ("timestamp", None, [_]) => Ok(Ty::Timestamp),
        ("duration", None, [_]) => Ok(Ty::Duration),
        ("type", None, [_]) => Ok(Ty::Type),
        ("dyn", None, [_]) => Ok(Ty::Dyn),
        ("matches", None, [s, re]) => {
            check(fits(s, &Ty::String) && fits(re, &Ty::String), Ty::Bool)
        }
        ("contains" | "startsWith" | "endsWith" | "matches", Some(s), [x]) => {
            check(fits(s, &Ty::String) && fits(x, &Ty::String), Ty::Bool)
        }
        ("lowerAscii" | "upperAscii" | "trim", Some(s), []) => {
            check(fits(s, &Ty::String), Ty::String)
        }
        ("replace", Some(s), [a, b, rest @ ..]) if rest.len() <= 1 => check(
            fits(s, &Ty::String)
                && fits(a, &Ty::String)
                && fits(b, &Ty::String)
                && rest.iter().all(|n| fits(n, &Ty::Int)),
            Ty::String,
        ),
        ("split", Some(s), [sep, rest @ ..]) if rest.len() <= 1 => check(
            fits(s, &Ty::String)
                && fits(sep, &Ty::String)
                && rest.iter().all(|n| fits(n, &Ty::Int)),
            Ty::List(Box::new(Ty::String)),
        ),
        ("substring", Some(s), [a, rest @ ..]) if rest.len() <= 1 => check(
            fits(s, &Ty::String) && fits(a, &Ty::Int) && rest.iter().all(|n| fits(n, &Ty::Int)),
            Ty::String,
        ),
        ("charAt", Some(s), [i]) => check(fits(s, &Ty::String) && fits(i, &Ty::Int), Ty::String),
        ("indexOf" | "lastIndexOf", Some(t), [x, rest @ ..]) if rest.len() <= 1 => match t {
            Ty::String => check(
                fits(x, &Ty::String) && rest.iter().all(|n| fits(n, &Ty::Int)),
                Ty::Int,
            ),
            Ty::List(e) => check(rest.is_empty() && compatible(e, x), Ty::Int),
            Ty::Dyn => Ok(Ty::Int),
            _ => NoMatch,
        },
        ("join", Some(l), rest) if rest.len() <= 1 => check(
            match l {
                Ty::List(e) => fits(e, &Ty::String),
                Ty::Dyn => true,
                _ => false,
            } && rest.iter().all(|s| fits(s, &Ty::String)),
            Ty::String,
        ),
        ("find", Some(s), [re]) => check(fits(s, &Ty::String) && fits(re, &Ty::String), Ty::String),
        ("findAll", Some(s), [re, rest @ ..]) if rest.len() <= 1 => check(
            fits(s, &Ty::String) && fits(re, &Ty::String) && rest.iter().all(|n| fits(n, &Ty::Int)),
            Ty::List(Box::new(Ty::String)),
        ),
        ("isSorted", Some(l), []) => check(matches!(l, Ty::List(_) | Ty::Dyn), Ty::Bool),
        ("sum" | "min" | "max", Some(l), []) => match l {
            Ty::List(e) => Ok((**e).clone()),
            Ty::Dyn => Ok(Ty::Dyn),
            _ => NoMatch,
        },
        (
            "getFullYear" | "getMonth" | "getDate" | "getDayOfMonth" | "getDayOfWeek"
            | "getDayOfYear" | "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds",
            Some(t),
            _,
        ) => check(matches!(t, Ty::Timestamp | Ty::Duration | Ty::Dyn), Ty::Int),
        _ => Ok(Ty::Dyn),
    }
}

fn arithmetic<'a>(name: &str, a: &Ty<'a>, b: &Ty<'a>) -> Resolved<'a> {
    use Resolved::{NoMatch, Ok};
    if a.is_dyn() || b.is_dyn() {
        return Ok(Ty::Dyn);
    }
    let same = std::mem::discriminant(a) == std::mem::discriminant(b);
    let numeric = match name {
        "_%_" => matches!(a, Ty::Int | Ty::Uint),
        _ => a.is_number(),
    };
    if same && numeric {
        return Ok(a.clone());
    }
    match (name, a, b) {
        ("_+_", Ty::String, Ty::String) => Ok(Ty::String),
        ("_+_", Ty::Bytes, Ty::Bytes) => Ok(Ty::Bytes),
        ("_+_", Ty::List(x), Ty::List(y)) if compatible(x, y) => Ok(Ty::List(Box::new(join(x, y)))),
        ("_+_", Ty::Timestamp, Ty::Duration) | ("_+_", Ty::Duration, Ty::Timestamp) => {
            Ok(Ty::Timestamp)
        }
        ("_+_" | "_-_", Ty::Duration, Ty::Duration) => Ok(Ty::Duration),
        ("_-_", Ty::Timestamp, Ty::Timestamp) => Ok(Ty::Duration),
        ("_-_", Ty::Timestamp, Ty::Duration) => Ok(Ty::Timestamp),
        _ => NoMatch,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::schema::{FieldError, StructuralSchema};

    /// The schema errors of a CRD whose `spec` has `props` and `rules`.
    fn refused(props: Value, rules: Value) -> Vec<FieldError> {
        let schema = json!({"type": "object", "properties": {"spec": {
            "type": "object", "properties": props, "x-kubernetes-validations": rules}}});
        match StructuralSchema::from_value(&schema) {
            Ok(_) => Vec::new(),
            Err(e) => e.errors,
        }
    }

    fn props() -> Value {
        json!({
            "replicas": {"type": "integer"},
            "ratio": {"type": "number"},
            "name": {"type": "string"},
            "port-name": {"type": "string"},
            "labels": {"type": "object", "maxProperties": 16,
                       "additionalProperties": {"type": "string"}},
            "names": {"type": "array", "maxItems": 16,
                      "items": {"type": "string", "maxLength": 64}},
            "value": {"x-kubernetes-int-or-string": true},
            "q": {"type": "string"},
            "blob": {"type": "string", "format": "byte"},
            "at": {"type": "string", "format": "date-time"},
            "timeout": {"type": "string", "format": "duration"},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                         "properties": {"spec": {"type": "object"}}},
        })
    }

    /// The one error of `rule`, as `path: message` with the rule's Go form elided.
    fn error_of(rule: &str) -> String {
        let errs = refused(props(), json!([{"rule": rule}]));
        assert_eq!(errs.len(), 1, "{rule}: {errs:?}");
        let msg = &errs[0].message;
        let detail = msg.split_once("}: ").map_or(msg.as_str(), |(_, d)| d);
        format!("{}: {detail}", errs[0].path)
    }

    const AT: &str = "properties[spec].x-kubernetes-validations[0].rule";

    #[test]
    fn rules_real_servers_accept_are_accepted() {
        for rule in [
            "self.replicas >= 0 && self.ratio > 0 && self.ratio <= 1.0",
            "self.ratio == 0.5 || self.replicas == 2",
            "self.name.startsWith('a') && self.name.size() < 10 && size(self.name) > 0",
            "self.port__dash__name != ''",
            "self.labels.all(k, k.startsWith('a') && self.labels[k] != '')",
            "'app' in self.labels && self.labels.app == 'x'",
            "self.names.exists_one(n, n == 'a') && self.names.map(n, n.size()).sum() < 10",
            "self.names.filter(n, n.matches('^a')).size() <= 1",
            "self.names.map(n, n.lowerAscii()).all(n, n.size() > 0)",
            "self.names.join(',').split(',').size() >= 0",
            "self.value == 1 || self.value == '1%'",
            "type(self.value) == string ? self.value.endsWith('%') : self.value > 0",
            "quantity(self.q).isGreaterThan(quantity('1Gi'))",
            "isURL(self.name) && url(self.name).getHost() != ''",
            "self.at < timestamp('2030-01-01T00:00:00Z') && self.timeout > duration('1s')",
            "self.extra.anything == 1 && has(self.extra.other)",
            "self.template.kind == 'Pod' && self.template.metadata.name != ''",
            "has(self.name) ? self.name != '' : true",
            "[1, 2].all(i, i > 0) && {'a': 1}.a == 1",
            "self == oldSelf",
        ] {
            let errs = refused(props(), json!([{"rule": rule}]));
            assert!(errs.is_empty(), "{rule}: {errs:?}");
        }
        let root = StructuralSchema::from_value(&json!({"type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.metadata.name.startsWith('a') && self.apiVersion != ''"}]}));
        assert!(root.is_ok(), "{root:?}");
        // A root that declares its type and object meta itself (as far as the structural
        // rules let it: `name` and `generateName`) keeps its declarations.
        let declared = StructuralSchema::from_value(&json!({"type": "object",
            "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "metadata": {"type": "object", "properties": {
                    "name": {"type": "string"}, "generateName": {"type": "string"}}}},
            "x-kubernetes-validations": [{"rule": "has(self.metadata.generateName)"}]}));
        assert!(declared.is_ok(), "{declared:?}");
        let optional = refused(
            props(),
            json!([{"rule": "!oldSelf.hasValue() || oldSelf.value() == self",
                    "optionalOldSelf": true}]),
        );
        assert!(optional.is_empty(), "{optional:?}");
    }

    #[test]
    fn undefined_fields() {
        assert_eq!(
            error_of("self.missing == 1"),
            format!(
                "{AT}: compilation failed: ERROR: <input>:1:5: undefined field 'missing'\n | self.missing == 1\n | ....^"
            )
        );
        assert!(
            error_of("has(self.template.spec.x) && self.template.status == 1")
                .contains("undefined field 'status'")
        );
    }

    #[test]
    fn no_matching_overloads() {
        assert_eq!(
            error_of("self.replicas + self.name == 1"),
            format!(
                "{AT}: compilation failed: ERROR: <input>:1:15: found no matching overload for '_+_' applied to '(int, string)'\n | self.replicas + self.name == 1\n | ..............^"
            )
        );
        assert!(
            error_of("self.ratio == 1")
                .contains("found no matching overload for '_==_' applied to '(double, int)'")
        );
        assert!(
            error_of("self.replicas.startsWith('1')")
                .contains("found no matching overload for 'startsWith' applied to 'int.(string)'")
        );
        assert!(
            error_of("self.blob.size() > 0 && self.blob.startsWith('a')").contains(
                "found no matching overload for 'startsWith' applied to 'bytes.(string)'"
            )
        );
        assert!(error_of("self.at.startsWith('2024')").contains(
            "found no matching overload for 'startsWith' applied to 'google.protobuf.Timestamp.(string)'"
        ));
        assert!(
            error_of("self.names.all(n, n > 1)")
                .contains("found no matching overload for '_>_' applied to '(string, int)'")
        );
        assert!(
            error_of("self.name.foo == 'a'")
                .contains("type 'string' does not support field selection")
        );
        // has() of something that is not a field.
        assert!(
            error_of("has(self.replicas.value)")
                .contains("type 'int' does not support field selection")
        );
        assert!(
            error_of("has(self.names.first)")
                .contains("type 'list(string)' does not support field selection")
        );
        assert!(error_of("self.replicas.all(x, x > 0)").contains(
            "expression of type 'int' cannot be range of a comprehension (must be list, map, or dynamic)"
        ));
    }

    #[test]
    fn results_must_be_bool_and_messages_strings() {
        assert_eq!(
            error_of("self.replicas + 1"),
            format!("{AT}: cel expression must evaluate to a bool")
        );
        let errs = refused(
            props(),
            json!([{"rule": "self.replicas > 1", "messageExpression": "self.replicas"}]),
        );
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(
            errs[0].path,
            "properties[spec].x-kubernetes-validations[0].messageExpression"
        );
        assert_eq!(
            errs[0].message,
            "Invalid value: apiextensions.ValidationRule{Rule:\"self.replicas > 1\", Message:\"\", MessageExpression:\"self.replicas\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: messageExpression must evaluate to a string"
        );
        let errs = refused(
            props(),
            json!([{"rule": "self.replicas > 1", "messageExpression": "'n: ' + self.nope"}]),
        );
        assert!(
            errs[0].message.ends_with(
                ": messageExpression compilation failed: ERROR: <input>:1:13: undefined field 'nope'\n | 'n: ' + self.nope\n | ............^"
            ),
            "{errs:?}"
        );
    }
}
