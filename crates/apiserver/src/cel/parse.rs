//! Parsing CEL expressions as cel-go's parser does: the environment every expression
//! compiles in ([`ENV`]: the standard library, the strings and lists extensions and
//! Kubernetes' list `indexOf`/`lastIndexOf`), cel-go's limits on size and nesting
//! ([`parse`]), cel-go's wording of errors ([`error_at`], [`position`]) and the names an
//! expression uses without declaring them ([`free_idents`]), which the cel crate does not
//! check.

use std::sync::{Arc, LazyLock};

use cel::common::ast::{EntryExpr, Expr, IdedEntryExpr};
use cel::{Env, IdedExpr, Program, Value as Cel};

/// The environment every expression (CRD rule or admission policy) compiles and runs in.
pub(crate) static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    // Both extensions only declare overloads; neither fails on a fresh stdlib.
    let _ = env.add_extension(cel::extensions::strings);
    let _ = env.add_extension(cel::extensions::lists);
    // Kubernetes' list indexOf/lastIndexOf, beside the strings extension's.
    for (name, last) in [("indexOf", false), ("lastIndexOf", true)] {
        let op: cel::common::functions::Function = if last {
            |args| list_index_of(args, true)
        } else {
            |args| list_index_of(args, false)
        };
        let _ = env.add_member_overload(
            name,
            &format!("list.{name}(dyn)"),
            cel::common::types::LIST_TYPE,
            vec![cel::common::types::DYN_TYPE],
            op,
        );
    }
    Arc::new(env)
});

/// `list.indexOf(x)` / `list.lastIndexOf(x)`: the index of the first (last) element equal to
/// `x`, or -1.
fn list_index_of<'b, 'v>(
    args: Vec<cel::common::value::CowVal<'b, 'v>>,
    last: bool,
) -> Result<cel::common::value::CowVal<'b, 'v>, cel::ExecutionError> {
    let [list, x] = args.as_slice() else {
        return Err(cel::ExecutionError::invalid_argument_count(2, args.len()));
    };
    let list = Cel::try_from(list.as_ref())?;
    let x = Cel::try_from(x.as_ref())?;
    let Cel::List(items) = list else {
        return Err(cel::ExecutionError::function_error("indexOf", "not a list"));
    };
    let found = if last {
        items.iter().rposition(|i| *i == x)
    } else {
        items.iter().position(|i| *i == x)
    };
    let i = found.map_or(-1, |i| i as i64);
    Ok(cel::common::value::CowVal::owned(
        cel::common::types::CelInt::from(i),
    ))
}

/// The deepest an expression nests (each operator, call, selection, list, map or macro is a
/// level), as cel-go's parser limits it (`parser.MaxRecursionDepth`, 250 by default; neither
/// apiextensions nor admission changes it).
pub(crate) const MAX_DEPTH: usize = 250;

/// The most code points an expression may have, as cel-go's parser limits it
/// (`parser.ExpressionSizeCodePointLimit`, 100,000 by default; neither apiextensions nor
/// admission changes it).
pub(crate) const MAX_CODE_POINTS: usize = 100_000;

/// Sources longer than this (in bytes) parse on a thread of their own with
/// [`PARSE_STACK`] bytes of stack; shorter ones cannot nest deep enough to need it.
const INLINE_PARSE_BYTES: usize = 256;

/// The stack of the thread a long source parses on. The cel crate's parser and its drop of
/// the parse tree recurse once per operand of a chain such as `1 + 1 + ... + 1` or
/// `a.b.c...`, which its own nesting limit does not count. The worst source within
/// [`MAX_CODE_POINTS`] (a 50,000-term `1<1<...`) needs about 25 MiB in a debug build
/// (`schema::tests::measure_parse_stack`); this leaves over twice that. The stack is
/// reserved, not committed: only the pages a parse touches are used.
const PARSE_STACK: usize = 64 << 20;

/// Parses one CEL expression with cel-go's parser limits: every caller that compiles CEL
/// (CRD rules and their `messageExpression`s, ValidatingAdmissionPolicy expressions) goes
/// through here. The error is cel-go's display (`ERROR: <input>:line:col: message`):
///
/// - more than [`MAX_CODE_POINTS`]: `expression code point size exceeds limit: size: N,
///   limit 100000`, checked before parsing, as cel-go does;
/// - nested past [`MAX_DEPTH`]: `max recursion depth exceeded: 250`, so that the checker,
///   the cost estimate and the evaluation, which all recurse, stay within their stack.
///
/// A long source parses on a dedicated thread with a large stack, where an expression too
/// deep to keep is also dropped: no input within the size limit overflows the caller's
/// stack.
pub(crate) fn parse(src: &str) -> Result<Program, String> {
    let size = src.chars().count();
    if size > MAX_CODE_POINTS {
        return Err(format!(
            "ERROR: <input>:-1:0: expression code point size exceeds limit: size: {size}, limit {MAX_CODE_POINTS}"
        ));
    }
    if src.len() <= INLINE_PARSE_BYTES {
        return parse_checked(src);
    }
    let owned = src.to_string();
    std::thread::Builder::new()
        .name("cel-parse".into())
        .stack_size(PARSE_STACK)
        .spawn(move || parse_checked(&owned))
        .map_err(|e| format!("ERROR: <input>:-1:0: cannot start the parser: {e}"))?
        .join()
        .unwrap_or_else(|_| Err("ERROR: <input>:-1:0: the parser failed".to_string()))
}

/// [`parse`] on the current thread, after the size check.
pub(crate) fn parse_checked(src: &str) -> Result<Program, String> {
    let p = ENV.compile(src).map_err(|e| display(&e))?;
    if depth(p.expression()) > MAX_DEPTH {
        return Err(error_at(
            src,
            None,
            &format!("max recursion depth exceeded: {MAX_DEPTH}"),
        ));
    }
    Ok(p)
}

/// The cel crate's display of parse errors (`ERROR: <input>:1:3: message`, the line, and a
/// caret under the column), written here because the crate's own panics on a column past
/// 65,535 (a formatting width out of range), which a long single-line rule reaches.
fn display(errors: &cel::ParseErrors) -> String {
    let mut out = String::new();
    for (i, e) in errors.errors.iter().enumerate() {
        if i != 0 {
            out.push('\n');
        }
        let (line, col) = e.pos;
        out.push_str(&format!("ERROR: <input>:{line}:{col}: {}", e.msg));
        if let Some(text) = e.source_info.as_ref().and_then(|s| s.snippet(line - 1)) {
            let dots = ".".repeat(usize::try_from(col).unwrap_or(0).saturating_sub(1));
            out.push_str(&format!("\n| {text}\n| {dots}^"));
        }
    }
    out
}

/// How deep `e` nests, counted without recursion (so that any depth is safe to measure).
pub(crate) fn depth(e: &IdedExpr) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(e, 1)];
    while let Some((e, d)) = stack.pop() {
        deepest = deepest.max(d);
        stack.extend(children(e).into_iter().map(|c| (c, d + 1)));
    }
    deepest
}

/// The subexpressions of `e`.
fn children(e: &IdedExpr) -> Vec<&IdedExpr> {
    fn entries<'a>(es: &'a [IdedEntryExpr], out: &mut Vec<&'a IdedExpr>) {
        for e in es {
            match &e.expr {
                EntryExpr::StructField(f) => out.push(&f.value),
                EntryExpr::MapEntry(m) => out.extend([&m.key, &m.value]),
            }
        }
    }
    let mut out = Vec::new();
    match &e.expr {
        Expr::Call(c) => {
            out.extend(c.target.as_deref());
            out.extend(&c.args);
        }
        Expr::Comprehension(c) => out.extend([
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]),
        Expr::List(l) => out.extend(&l.elements),
        Expr::Map(m) => entries(&m.entries, &mut out),
        Expr::Struct(st) => entries(&st.entries, &mut out),
        Expr::Select(sel) => out.push(&sel.operand),
        _ => {}
    }
    out
}

/// One error as cel-go displays it: `ERROR: <input>:line:col: message`, the line, and a
/// caret under the column.
pub(crate) fn error_at(src: &str, at: Option<(u32, u32)>, message: &str) -> String {
    let (line, col, text) = position(src, at);
    format!(
        "ERROR: <input>:{line}:{col}: {message}\n | {text}\n | {}^",
        ".".repeat(col - 1)
    )
}

/// Names a rule may use without declaring them: its variables and the type names.
const DECLARED: [&str; 15] = [
    "self",
    "oldSelf",
    // The format library's entry point (`format.dns1123Label()`), and the ip library's
    // namespace (`ip.isCanonical(s)`).
    "format",
    "ip",
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "optional",
];

/// The identifiers of `e` that are neither declared nor bound by a macro's comprehension,
/// with their expression ids: the cel crate checks no names when it parses, cel-go does.
pub(crate) fn free_idents(e: &IdedExpr, bound: &mut Vec<String>, out: &mut Vec<(u64, String)>) {
    match &e.expr {
        Expr::Ident(name)
            if !name.starts_with('@')
                && !DECLARED.contains(&name.as_str())
                && !bound.contains(name) =>
        {
            out.push((e.id, name.clone()));
        }
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                free_idents(t, bound, out);
            }
            for a in &c.args {
                free_idents(a, bound, out);
            }
        }
        Expr::Comprehension(c) => {
            free_idents(&c.iter_range, bound, out);
            let before = bound.len();
            bound.push(c.iter_var.clone());
            bound.extend(c.iter_var2.clone());
            bound.push(c.accu_var.clone());
            for x in [&c.accu_init, &c.loop_cond, &c.loop_step, &c.result] {
                free_idents(x, bound, out);
            }
            bound.truncate(before);
        }
        Expr::List(l) => {
            for x in &l.elements {
                free_idents(x, bound, out);
            }
        }
        Expr::Map(m) => entries(&m.entries, bound, out),
        Expr::Struct(st) => entries(&st.entries, bound, out),
        Expr::Select(sel) => free_idents(&sel.operand, bound, out),
        _ => {}
    }
}

fn entries(es: &[IdedEntryExpr], bound: &mut Vec<String>, out: &mut Vec<(u64, String)>) {
    for e in es {
        match &e.expr {
            EntryExpr::StructField(f) => free_idents(&f.value, bound, out),
            EntryExpr::MapEntry(m) => {
                free_idents(&m.key, bound, out);
                free_idents(&m.value, bound, out);
            }
        }
    }
}

/// 1-based line and column of a character offset in `src`, and that line's text.
pub(crate) fn position(src: &str, offset: Option<(u32, u32)>) -> (usize, usize, &str) {
    let at = offset.map_or(0, |(start, _)| start as usize);
    let mut seen = 0;
    for (i, line) in src.split('\n').enumerate() {
        let len = line.chars().count();
        if at <= seen + len {
            return (i + 1, at - seen + 1, line);
        }
        seen += len + 1;
    }
    (1, 1, src)
}
