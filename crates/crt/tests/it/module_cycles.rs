//! No import cycles between the modules of any crate of the workspace.
//!
//! For every crate (`crates/*/src`, rooted at `lib.rs` and `main.rs`) this test builds the module
//! tree by following `mod x;` declarations (files `x.rs` and `x/mod.rs`, inline `mod x { }`),
//! collects every reference one module makes to another of the same crate (`use crate::a::b`,
//! `use super::x`, `use self::..`, `pub use`, grouped imports `use crate::{a, b::c}` and paths
//! written inline such as `crate::a::f()` or `super::x::Y`), and then, for every parent module,
//! looks at the graph among its child modules: a child's edges are those of all its
//! descendants, each resolved to the sibling it points into. A strongly connected component of
//! more than one child is a cycle, and the test fails naming it with one reference (file:line)
//! per edge.
//!
//! A parent's own file is a node of its graph too, named `self`: a child that refers to an item
//! defined in the parent's file (`super::Thing`, `crate::parent::Thing`; from any depth below
//! the parent) has an edge to `self`, and the parent's file has an edge to each child it refers
//! into. A child may so depend on its parent's own items only while the parent's file uses no
//! child that does; the usual fix is to move the shared item into a leaf module both import. A
//! name the parent imports (`pub use self::store::State`, then `super::State` in a child) is
//! followed to the module that defines it: a re-export counts as the module it re-exports.
//!
//! Test code may reach anywhere: items under `#[cfg(test)]` and modules named `tests` or
//! `*_tests` are skipped.
//!
//! The scan is a small tokenizer (comments, strings and char literals are dropped, so braces
//! and `crate::` inside them do not count), not a compiler: glob imports (`use x::*`) count as a
//! reference to `x` but are not followed when resolving names, macros' expansions are not
//! seen, and a path that starts with neither `crate`, `super` nor `self` counts only when it is a
//! `use` of one of the current module's children. `#[path]` attributes are refused with a
//! message rather than guessed at.
//!
//! Run it alone with `cargo test -p crt --test it module_cycles -- --nocapture` (it prints what it
//! found for every crate).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[test]
fn no_module_import_cycles_in_any_crate() {
    let crates_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut crate_dirs: Vec<PathBuf> = std::fs::read_dir(&crates_dir)
        .expect("crates/ is readable")
        .map(|e| e.expect("crates/ entry").path())
        .filter(|p| p.join("Cargo.toml").is_file() && p.join("src").is_dir())
        .collect();
    crate_dirs.sort();
    assert!(
        crate_dirs.len() >= 4,
        "expected the workspace's crates under {}, found {crate_dirs:?}",
        crates_dir.display()
    );

    let mut failures = String::new();
    for dir in &crate_dirs {
        let name = crate_name(&dir.join("Cargo.toml"));
        let files = read_tree(&dir.join("src"));
        for root in ["lib.rs", "main.rs"] {
            if !files.contains_key(root) {
                continue;
            }
            let graph = match analyze(&files, root) {
                Ok(g) => g,
                Err(e) => {
                    let _ = writeln!(failures, "{name}: cannot scan src/{root}: {e}");
                    continue;
                }
            };
            let cycles = graph.cycles();
            println!(
                "{name} (src/{root}): {} modules, {} cycle(s)",
                graph.modules.len(),
                cycles.len()
            );
            for cycle in &cycles {
                let report = cycle.report(&format!("{name}/src"));
                println!("{report}");
                failures.push_str(&report);
            }
        }
    }
    assert!(failures.is_empty(), "module import cycles:\n{failures}");
}

/// The `name` of a Cargo.toml's `[package]`.
fn crate_name(manifest: &Path) -> String {
    let text = std::fs::read_to_string(manifest).expect("Cargo.toml is readable");
    text.lines()
        .find_map(|l| {
            let rest = l
                .trim()
                .strip_prefix("name")?
                .trim_start()
                .strip_prefix('=')?;
            Some(rest.trim().trim_matches('"').to_string())
        })
        .unwrap_or_else(|| manifest.display().to_string())
}

/// Every `.rs` file under `src`, by its path relative to `src` with `/` separators.
fn read_tree(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("source directory is readable") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src).expect("under src");
                let rel = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                let text = std::fs::read_to_string(&path).expect("source file is readable");
                out.insert(rel, text);
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Tokens

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// An identifier or keyword (`r#x` is `x`), or a number.
    Ident(String),
    /// `::`
    PathSep,
    /// Any other punctuation character; literals become `Punct('"')`.
    Punct(char),
}

/// The tokens of `src` with their 1-based line numbers; comments, string, byte-string, raw
/// string and char literals' contents are dropped.
fn tokenize(src: &str) -> Vec<(Tok, usize)> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let n = chars.len();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < n {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < n && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < n {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if c == '"'
            || (c == 'b' && at(i + 1) == '"')
            || ((c == 'r' || (c == 'b' && at(i + 1) == 'r'))
                && {
                    let mut j = i + if c == 'b' { 2 } else { 1 };
                    while at(j) == '#' {
                        j += 1;
                    }
                    at(j) == '"'
                }
                && (i == 0 || !is_ident_char(at(i - 1))))
        {
            let start_line = line;
            let mut j = i;
            if chars[j] == 'b' {
                j += 1;
            }
            if chars[j] == 'r' {
                j += 1;
                let mut hashes = 0;
                while at(j) == '#' {
                    hashes += 1;
                    j += 1;
                }
                j += 1; // opening quote
                loop {
                    if j >= n {
                        break;
                    }
                    if chars[j] == '"' && (1..=hashes).all(|k| at(j + k) == '#') {
                        j += 1 + hashes;
                        break;
                    }
                    if chars[j] == '\n' {
                        line += 1;
                    }
                    j += 1;
                }
            } else {
                j += 1; // opening quote
                while j < n && chars[j] != '"' {
                    if chars[j] == '\\' {
                        j += 1;
                    }
                    if at(j) == '\n' {
                        line += 1;
                    }
                    j += 1;
                }
                j += 1;
            }
            out.push((Tok::Punct('"'), start_line));
            i = j;
        } else if c == '\'' || (c == 'b' && at(i + 1) == '\'') {
            // A char literal ('x', '\n', '\u{1F600}', b'x') or a lifetime ('a).
            let q = if c == 'b' { i + 1 } else { i };
            if at(q + 1) == '\\' {
                let mut j = q + 3;
                while j < n && chars[j] != '\'' {
                    j += 1;
                }
                out.push((Tok::Punct('"'), line));
                i = j + 1;
            } else if at(q + 2) == '\'' {
                out.push((Tok::Punct('"'), line));
                i = q + 3;
            } else {
                // A lifetime or label: skip the quote, the name follows as an identifier.
                out.push((Tok::Punct('\''), line));
                i = q + 1;
            }
        } else if is_ident_char(c) {
            let mut j = i;
            while j < n && is_ident_char(chars[j]) {
                j += 1;
            }
            let mut word: String = chars[i..j].iter().collect();
            if word == "r" && at(j) == '#' && is_ident_char(at(j + 1)) {
                let mut k = j + 1;
                while k < n && is_ident_char(chars[k]) {
                    k += 1;
                }
                word = chars[j + 1..k].iter().collect();
                j = k;
            }
            out.push((Tok::Ident(word), line));
            i = j;
        } else if c == ':' && at(i + 1) == ':' {
            out.push((Tok::PathSep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(c), line));
            i += 1;
        }
    }
    out
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

// ---------------------------------------------------------------------------------------------
// Module tree and references

/// A module path from the crate root (`[]` is the root).
type ModPath = Vec<String>;

/// One reference from a module to a path of the same crate.
#[derive(Debug, Clone)]
struct Reference {
    from: ModPath,
    /// The path as written.
    to: Vec<String>,
    file: String,
    line: usize,
    text: String,
}

/// What a crate's scan yields.
#[derive(Debug, Default)]
struct Scan {
    modules: BTreeSet<ModPath>,
    /// Per module, the names its module-level `use` items bring in, and the paths they stand for
    /// (as written).
    imports: BTreeMap<ModPath, BTreeMap<String, Vec<String>>>,
    references: Vec<Reference>,
}

/// The graph of a crate: per parent module, the references between its children.
#[derive(Debug, Default)]
struct Graph {
    modules: BTreeSet<ModPath>,
    /// parent -> (from child, to child) -> the first reference found for that edge.
    edges: BTreeMap<ModPath, BTreeMap<(String, String), Reference>>,
}

/// The node of a parent's graph that stands for the parent's own file (no module can be named
/// `self`).
const OWN_FILE: &str = "self";

/// A strongly connected component of more than one child of `parent` (its own file counting
/// as the child [`OWN_FILE`]).
#[derive(Debug)]
struct Cycle {
    parent: ModPath,
    members: Vec<String>,
    /// Every edge among the members, with one reference each.
    edges: Vec<(String, String, Reference)>,
    /// One closed walk through members, first member repeated at the end.
    walk: Vec<String>,
}

impl Cycle {
    fn parent_name(&self) -> String {
        if self.parent.is_empty() {
            "crate".to_string()
        } else {
            self.parent.join("::")
        }
    }

    fn report(&self, src_dir: &str) -> String {
        let mut s = format!(
            "  cycle in {} among {{{}}}: {}\n",
            self.parent_name(),
            self.members.join(", "),
            self.walk.join(" -> ")
        );
        for (a, b, r) in &self.edges {
            let _ = writeln!(
                s,
                "    {a} -> {b}: {src_dir}/{}:{}: {}",
                r.file, r.line, r.text
            );
        }
        s
    }
}

fn is_test_module(name: &str) -> bool {
    name == "tests" || name.ends_with("_tests")
}

/// Scans the crate whose files are `files` (paths relative to `src/`), from `root`.
fn scan(files: &BTreeMap<String, String>, root: &str) -> Result<Scan, String> {
    let mut out = Scan::default();
    out.modules.insert(Vec::new());
    // (file, module path, directory that holds its child module files)
    let mut queue = vec![(root.to_string(), ModPath::new(), String::new())];
    while let Some((file, path, dir)) = queue.pop() {
        let text = files
            .get(&file)
            .ok_or_else(|| format!("{file}: file not found"))?;
        scan_file(&file, text, &path, &dir, files, &mut out, &mut queue)?;
    }
    Ok(out)
}

/// One open module body in a file: its path, the directory of its children's files, and the
/// brace depth inside its body.
struct Frame {
    path: ModPath,
    dir: String,
    depth: usize,
}

fn scan_file(
    file: &str,
    text: &str,
    path: &ModPath,
    dir: &str,
    files: &BTreeMap<String, String>,
    out: &mut Scan,
    queue: &mut Vec<(String, ModPath, String)>,
) -> Result<(), String> {
    let toks = tokenize(text);
    let ident = |i: usize| match toks.get(i) {
        Some((Tok::Ident(s), _)) => Some(s.as_str()),
        _ => None,
    };
    let is = |i: usize, t: &Tok| toks.get(i).is_some_and(|(x, _)| x == t);
    let mut frames = vec![Frame {
        path: path.clone(),
        dir: dir.to_string(),
        depth: 0,
    }];
    let mut depth = 0usize;
    let mut test_attr = false;
    let mut i = 0;
    while i < toks.len() {
        let line = toks[i].1;
        match &toks[i].0 {
            Tok::Punct('#') => {
                // An attribute: `#[...]` or `#![...]`.
                let inner = is(i + 1, &Tok::Punct('!'));
                let open = if inner { i + 2 } else { i + 1 };
                if !is(open, &Tok::Punct('[')) {
                    i += 1;
                    continue;
                }
                let close = matching(&toks, open)?;
                let body: Vec<&Tok> = toks[open + 1..close].iter().map(|(t, _)| t).collect();
                let cfg_test = body
                    == [
                        &Tok::Ident("cfg".into()),
                        &Tok::Punct('('),
                        &Tok::Ident("test".into()),
                        &Tok::Punct(')'),
                    ];
                if body.first() == Some(&&Tok::Ident("path".into())) {
                    return Err(format!(
                        "{file}:{line}: #[path] is not supported by this checker"
                    ));
                }
                if cfg_test && inner {
                    // The whole enclosing module is test code.
                    if frames.len() == 1 {
                        return Ok(());
                    }
                    return Err(format!(
                        "{file}:{line}: #![cfg(test)] inside an inline module is not supported"
                    ));
                }
                test_attr |= cfg_test;
                i = close + 1;
            }
            Tok::Punct('{') => {
                depth += 1;
                i += 1;
            }
            Tok::Punct('}') => {
                if frames.len() > 1 && frames.last().is_some_and(|f| f.depth == depth) {
                    frames.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
            }
            _ if test_attr => {
                // Skip the item the `#[cfg(test)]` applies to.
                test_attr = false;
                i = end_of_item(&toks, i)?;
            }
            Tok::Ident(kw) if kw == "mod" && ident(i + 1).is_some() => {
                let name = ident(i + 1).unwrap_or_default().to_string();
                let frame = frames.last().expect("a frame");
                let mut child = frame.path.clone();
                child.push(name.clone());
                let child_dir = format!("{}{name}/", frame.dir);
                if is_test_module(&name) {
                    i = end_of_item(&toks, i)?;
                    continue;
                }
                out.modules.insert(child.clone());
                if is(i + 2, &Tok::Punct(';')) {
                    let flat = format!("{}{name}.rs", frame.dir);
                    let nested = format!("{}{name}/mod.rs", frame.dir);
                    let found = if files.contains_key(&flat) {
                        flat
                    } else if files.contains_key(&nested) {
                        nested
                    } else {
                        return Err(format!(
                            "{file}:{line}: mod {name}: neither {flat} nor {nested} exists"
                        ));
                    };
                    queue.push((found, child, child_dir));
                    i += 3;
                } else if is(i + 2, &Tok::Punct('{')) {
                    depth += 1;
                    frames.push(Frame {
                        path: child,
                        dir: child_dir,
                        depth,
                    });
                    i += 3;
                } else {
                    i += 2;
                }
            }
            Tok::Ident(kw)
                if kw == "use"
                    && (ident(i + 1).is_some()
                        || is(i + 1, &Tok::PathSep)
                        || is(i + 1, &Tok::Punct('{'))) =>
            {
                let end = (i..toks.len())
                    .find(|&j| is(j, &Tok::Punct(';')))
                    .ok_or_else(|| format!("{file}:{line}: `use` without `;`"))?;
                let frame = frames.last().expect("a frame");
                let module_level = frame.depth == depth;
                let mut leaves = Vec::new();
                parse_use_tree(&toks[i + 1..end], &mut Vec::new(), &mut leaves);
                for (written, name) in leaves {
                    if module_level && let Some(name) = name {
                        out.imports
                            .entry(frame.path.clone())
                            .or_default()
                            .insert(name, written.clone());
                    }
                    out.references.push(Reference {
                        from: frame.path.clone(),
                        to: written.clone(),
                        file: file.to_string(),
                        line,
                        text: format!("use {}", written.join("::")),
                    });
                }
                i = end + 1;
            }
            Tok::Ident(kw)
                if (kw == "crate" || kw == "super" || kw == "self") && is(i + 1, &Tok::PathSep) =>
            {
                let mut written = vec![kw.clone()];
                let mut j = i + 1;
                while is(j, &Tok::PathSep) {
                    match ident(j + 1) {
                        Some(seg) => {
                            written.push(seg.to_string());
                            j += 2;
                        }
                        None => break,
                    }
                }
                let frame = frames.last().expect("a frame");
                out.references.push(Reference {
                    from: frame.path.clone(),
                    text: written.join("::"),
                    to: written,
                    file: file.to_string(),
                    line,
                });
                i = j;
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// The index of the bracket closing the one at `open`.
fn matching(toks: &[(Tok, usize)], open: usize) -> Result<usize, String> {
    let mut depth = 0i32;
    for (j, (t, _)) in toks.iter().enumerate().skip(open) {
        match t {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return Ok(j);
                }
            }
            _ => {}
        }
    }
    Err(format!("line {}: unbalanced brackets", toks[open].1))
}

/// The index of the token after the item starting at `start`: after its `;` or its body's
/// closing brace, whichever comes first outside brackets.
fn end_of_item(toks: &[(Tok, usize)], start: usize) -> Result<usize, String> {
    let mut j = start;
    while j < toks.len() {
        match &toks[j].0 {
            Tok::Punct(';') => return Ok(j + 1),
            Tok::Punct('{') => return Ok(matching(toks, j)? + 1),
            Tok::Punct('(' | '[') => j = matching(toks, j)? + 1,
            _ => j += 1,
        }
    }
    Err(format!("line {}: unterminated item", toks[start].1))
}

/// Expands a `use` tree (the tokens between `use` and `;`) into its leaves: each full path and
/// the name it brings into scope (`None` for globs and `_`).
fn parse_use_tree(
    toks: &[(Tok, usize)],
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    // Split at top-level commas.
    let mut parts: Vec<&[(Tok, usize)]> = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (j, (t, _)) in toks.iter().enumerate() {
        match t {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => depth -= 1,
            Tok::Punct(',') if depth == 0 => {
                parts.push(&toks[start..j]);
                start = j + 1;
            }
            _ => {}
        }
    }
    parts.push(&toks[start..]);
    for part in parts {
        let mut segs = Vec::new();
        let mut j = 0;
        // A leading `::` names an external crate.
        if matches!(part.first(), Some((Tok::PathSep, _))) && prefix.is_empty() {
            continue;
        }
        while j < part.len() {
            match &part[j].0 {
                Tok::Ident(s) if s == "as" => {
                    let alias = match part.get(j + 1) {
                        Some((Tok::Ident(a), _)) if a != "_" => Some(a.clone()),
                        _ => None,
                    };
                    let mut path = prefix.clone();
                    path.extend(segs.iter().cloned());
                    out.push((path, alias));
                    segs.clear();
                    j = part.len();
                    continue;
                }
                Tok::Ident(s) => segs.push(s.clone()),
                Tok::PathSep => {}
                Tok::Punct('*') => {
                    let mut path = prefix.clone();
                    path.extend(segs.iter().cloned());
                    out.push((path, None));
                    segs.clear();
                    j = part.len();
                    continue;
                }
                Tok::Punct('{') => {
                    let close = part.len()
                        - 1
                        - part
                            .iter()
                            .rev()
                            .position(|(t, _)| *t == Tok::Punct('}'))
                            .unwrap_or(0);
                    let len = prefix.len();
                    prefix.extend(segs.iter().cloned());
                    parse_use_tree(&part[j + 1..close], prefix, out);
                    prefix.truncate(len);
                    segs.clear();
                    j = part.len();
                    continue;
                }
                _ => {}
            }
            j += 1;
        }
        if segs.is_empty() {
            continue;
        }
        let mut path = prefix.clone();
        path.extend(segs.iter().cloned());
        // `use a::b::{self}` imports `b`.
        if path.last().is_some_and(|s| s == "self") && path.len() > 1 {
            path.pop();
        }
        let name = path.last().cloned();
        out.push((path, name));
    }
}

/// `written` made absolute from module `at`: `crate::`, `super::` and `self::` resolved, and a
/// path starting with one of `at`'s children taken as relative. `None` for anything else (an
/// external crate, a local name).
fn absolute(written: &[String], at: &ModPath, modules: &BTreeSet<ModPath>) -> Option<Vec<String>> {
    let first = written.first()?;
    let mut base: Vec<String>;
    let mut rest = written;
    match first.as_str() {
        "crate" => {
            base = Vec::new();
            rest = &written[1..];
        }
        "self" => {
            base = at.clone();
            rest = &written[1..];
        }
        "super" => {
            base = at.clone();
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        child => {
            let mut p = at.clone();
            p.push(child.to_string());
            if !modules.contains(&p) {
                return None;
            }
            base = at.clone();
        }
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The module an absolute path points into: its segments walked down the module tree, names a
/// module imports followed to where they point.
fn target(
    path: &[String],
    modules: &BTreeSet<ModPath>,
    imports: &BTreeMap<ModPath, BTreeMap<String, Vec<String>>>,
    hops: usize,
) -> ModPath {
    let mut cur = ModPath::new();
    for (k, seg) in path.iter().enumerate() {
        let mut child = cur.clone();
        child.push(seg.clone());
        if modules.contains(&child) {
            cur = child;
            continue;
        }
        if hops < 8
            && let Some(to) = imports.get(&cur).and_then(|m| m.get(seg))
            && to.as_slice() != &path[..=k]
        {
            let mut next = to.clone();
            next.extend(path[k + 1..].iter().cloned());
            return target(&next, modules, imports, hops + 1);
        }
        break;
    }
    cur
}

/// Scans the crate and builds its per-parent graphs.
fn analyze(files: &BTreeMap<String, String>, root: &str) -> Result<Graph, String> {
    let scan = scan(files, root)?;
    let mut graph = Graph {
        modules: scan.modules.clone(),
        ..Graph::default()
    };
    // Imports and references made absolute now that every module is known.
    let imports: BTreeMap<ModPath, BTreeMap<String, Vec<String>>> = scan
        .imports
        .iter()
        .map(|(at, names)| {
            let names = names
                .iter()
                .filter_map(|(n, w)| Some((n.clone(), absolute(w, at, &scan.modules)?)))
                .collect();
            (at.clone(), names)
        })
        .collect();
    for r in &scan.references {
        let Some(abs) = absolute(&r.to, &r.from, &scan.modules) else {
            continue;
        };
        let to = target(&abs, &scan.modules, &imports, 0);
        let common = r.from.iter().zip(&to).take_while(|(a, b)| a == b).count();
        // In the graph of the deepest module both are in: the child each side is in, or the
        // module's own file when that side is the module itself.
        let side = |path: &ModPath| {
            path.get(common)
                .cloned()
                .unwrap_or_else(|| OWN_FILE.to_string())
        };
        let (a, b) = (side(&r.from), side(&to));
        if a != b {
            graph
                .edges
                .entry(r.from[..common].to_vec())
                .or_default()
                .entry((a, b))
                .or_insert_with(|| r.clone());
        }
    }
    Ok(graph)
}

impl Graph {
    /// Every strongly connected component of more than one child, per parent.
    fn cycles(&self) -> Vec<Cycle> {
        let mut out = Vec::new();
        for (parent, edges) in &self.edges {
            let mut adj: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for (a, b) in edges.keys() {
                adj.entry(a).or_default().push(b);
                adj.entry(b).or_default();
            }
            for comp in tarjan(&adj) {
                if comp.len() < 2 {
                    continue;
                }
                let members: BTreeSet<&str> = comp.iter().copied().collect();
                let cycle_edges = edges
                    .iter()
                    .filter(|((a, b), _)| {
                        members.contains(a.as_str()) && members.contains(b.as_str())
                    })
                    .map(|((a, b), r)| (a.clone(), b.clone(), r.clone()))
                    .collect();
                out.push(Cycle {
                    parent: parent.clone(),
                    members: members.iter().map(|s| s.to_string()).collect(),
                    edges: cycle_edges,
                    walk: closed_walk(&adj, &members),
                });
            }
        }
        out
    }
}

/// Tarjan's strongly connected components.
fn tarjan<'a>(adj: &BTreeMap<&'a str, Vec<&'a str>>) -> Vec<Vec<&'a str>> {
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(v: &'a str, adj: &BTreeMap<&'a str, Vec<&'a str>>, s: &mut State<'a>) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for &w in &adj[v] {
            if !s.index.contains_key(w) {
                visit(w, adj, s);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                comp.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(comp);
        }
    }
    let mut s = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in adj.keys() {
        if !s.index.contains_key(v) {
            visit(v, adj, &mut s);
        }
    }
    s.out
}

/// A shortest cycle through the first member of a strongly connected component.
fn closed_walk(adj: &BTreeMap<&str, Vec<&str>>, members: &BTreeSet<&str>) -> Vec<String> {
    let start = *members.iter().next().expect("a member");
    let mut prev: BTreeMap<&str, &str> = BTreeMap::new();
    let mut frontier = std::collections::VecDeque::from([start]);
    while let Some(v) = frontier.pop_front() {
        for &w in &adj[v] {
            if !members.contains(w) || prev.contains_key(w) {
                continue;
            }
            prev.insert(w, v);
            if w == start {
                let mut walk = vec![start.to_string()];
                let mut cur = v;
                while cur != start {
                    walk.push(cur.to_string());
                    cur = prev[cur];
                }
                walk.push(start.to_string());
                walk.reverse();
                return walk;
            }
            frontier.push_back(w);
        }
    }
    members.iter().map(|s| s.to_string()).collect()
}

// ---------------------------------------------------------------------------------------------
// The checker's own tests, on small crates.

fn crate_of(files: &[(&str, &str)]) -> BTreeMap<String, String> {
    files
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect()
}

fn cycles_of(files: &[(&str, &str)]) -> Vec<Cycle> {
    analyze(&crate_of(files), "lib.rs").expect("scans").cycles()
}

#[test]
fn finds_a_cycle_between_two_siblings_with_one_reference_per_edge() {
    let cycles = cycles_of(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "use crate::b::B;\npub struct A;\n"),
        (
            "b.rs",
            "pub struct B;\n\nfn f() {\n    let _ = crate::a::A;\n}\n",
        ),
    ]);
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    let c = &cycles[0];
    assert_eq!(c.parent_name(), "crate");
    assert_eq!(c.members, ["a", "b"]);
    assert_eq!(c.walk, ["a", "b", "a"]);
    let report = c.report("x/src");
    assert!(
        report.contains("a -> b: x/src/a.rs:1: use crate::b::B"),
        "{report}"
    );
    assert!(
        report.contains("b -> a: x/src/b.rs:4: crate::a::A"),
        "{report}"
    );
}

#[test]
fn super_to_a_parent_that_uses_no_child_is_no_cycle() {
    let cycles = cycles_of(&[
        ("lib.rs", "mod store;\nmod watch;\npub struct Shared;\n"),
        ("store.rs", "use super::Shared;\nuse crate::watch::W;\n"),
        ("watch.rs", "use super::*;\npub struct W(super::Shared);\n"),
    ]);
    assert!(cycles.is_empty(), "{cycles:?}");
}

#[test]
fn a_child_using_its_parents_own_items_while_the_parent_uses_it_is_a_cycle() {
    // storage.rs defines `Options` and calls into `write`, whose child `commit` reads
    // `Options` through `super::super` and `crate::storage`.
    let files = [
        ("lib.rs", "pub mod storage;\n"),
        (
            "storage.rs",
            "mod read;\nmod write;\npub struct Options;\npub use write::put;\n",
        ),
        ("storage/write.rs", "mod commit;\npub fn put() {}\n"),
        (
            "storage/write/commit.rs",
            "use super::super::Options;\nfn f() { let _ = crate::storage::Options; }\n",
        ),
        ("storage/read.rs", "use super::Options;\n"),
    ];
    let cycles = cycles_of(&files);
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert_eq!(cycles[0].parent_name(), "storage");
    // `read` uses the parent's item too, but the parent does not use `read`.
    assert_eq!(cycles[0].members, ["self", "write"]);
    let report = cycles[0].report("src");
    assert!(
        report.contains("self -> write: src/storage.rs:4: use write::put"),
        "{report}"
    );
    assert!(
        report.contains("write -> self: src/storage/write/commit.rs:1: use super::super::Options"),
        "{report}"
    );
}

#[test]
fn a_parents_re_export_counts_as_the_leaf_it_re_exports() {
    // The same crate with `Options` in a leaf the parent re-exports: no cycle.
    let cycles = cycles_of(&[
        ("lib.rs", "pub mod storage;\n"),
        (
            "storage/mod.rs",
            "mod options;\nmod write;\npub use options::Options;\npub use write::put;\n",
        ),
        ("storage/options.rs", "pub struct Options;\n"),
        ("storage/write.rs", "use super::Options;\npub fn put() {}\n"),
    ]);
    assert!(cycles.is_empty(), "{cycles:?}");
    // The crate root counts the same way: `crate::Thing` defined in lib.rs, used by a module
    // that lib.rs uses.
    let cycles = cycles_of(&[
        ("lib.rs", "mod a;\npub struct Thing;\npub use a::f;\n"),
        ("a.rs", "pub fn f(_: crate::Thing) {}\n"),
    ]);
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert_eq!(cycles[0].parent_name(), "crate");
    assert_eq!(cycles[0].members, ["a", "self"]);
}

#[test]
fn a_childs_edges_include_its_descendants_and_point_into_the_sibling() {
    // storage/write/commit.rs -> storage/apply/x.rs and storage/apply.rs -> storage/write.rs.
    let cycles = cycles_of(&[
        ("lib.rs", "pub mod storage;\n"),
        ("storage/mod.rs", "mod apply;\nmod write;\n"),
        ("storage/write.rs", "mod commit;\n"),
        (
            "storage/write/commit.rs",
            "fn f() { super::super::apply::x::g(); }\n",
        ),
        ("storage/apply.rs", "pub mod x;\nuse super::write;\n"),
        ("storage/apply/x.rs", "pub fn g() {}\n"),
    ]);
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert_eq!(cycles[0].parent_name(), "storage");
    assert_eq!(cycles[0].members, ["apply", "write"]);
    // The edge is in storage's graph only: inside `write`, `commit` pointing out is no edge.
    let report = cycles[0].report("src");
    assert!(
        report.contains("write -> apply: src/storage/write/commit.rs:1: super::super::apply::x::g"),
        "{report}"
    );
}

#[test]
fn grouped_imports_and_re_exports_are_followed() {
    // b imports `State` through the parent's re-export: the edge is b -> a, closing the cycle.
    let cycles = cycles_of(&[
        ("lib.rs", "mod m;\n"),
        (
            "m/mod.rs",
            "mod a;\nmod b;\nmod c;\npub use self::a::State;\n",
        ),
        (
            "m/a.rs",
            "use crate::m::{c, b::{self as bee, Thing}};\npub struct State;\n",
        ),
        ("m/b.rs", "use super::State;\npub struct Thing;\n"),
        ("m/c.rs", "pub(crate) use super::a::State as S;\n"),
    ]);
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert_eq!(cycles[0].members, ["a", "b", "c"]);
}

#[test]
fn test_code_comments_and_strings_are_not_references() {
    let cycles = cycles_of(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "use crate::b::B;\n"),
        (
            "b.rs",
            "pub struct B;\n\
             // crate::a::x\n\
             /* use crate::a; */\n\
             const S: &str = \"crate::a::x { \";\n\
             const C: char = '{';\n\
             fn f<'a>(x: &'a str) -> &'a str { x }\n\
             #[cfg(test)]\n\
             use crate::a as _;\n\
             #[cfg(test)]\n\
             mod tests {\n    use crate::a::*;\n    fn g() { crate::a::h() }\n}\n\
             #[cfg(test)]\n\
             fn helper() { crate::a::h(); }\n\
             mod b_tests;\n",
        ),
    ]);
    assert!(cycles.is_empty(), "{cycles:?}");
}

#[test]
fn inline_modules_and_relative_uses_resolve() {
    // `inner` is an inline module of a; `use inner::X` is relative; super:: inside it is `a`.
    let cycles = cycles_of(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "mod inner {\n    pub use super::super::b::B as X;\n}\nuse inner::X;\n",
        ),
        (
            "b.rs",
            "pub struct B;\nfn f() { let _ = crate::a::inner::X; }\n",
        ),
    ]);
    // b -> a (crate::a::inner::X follows the alias to b itself: no edge from b) — a -> b only.
    assert!(cycles.is_empty(), "{cycles:?}");

    let cycles = cycles_of(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "mod inner {\n    pub fn g() { super::super::b::f() }\n}\n",
        ),
        ("b.rs", "pub fn f() { crate::a::inner::g() }\n"),
    ]);
    assert_eq!(cycles.len(), 1, "{cycles:?}");
}

#[test]
fn a_missing_module_file_is_an_error_not_a_pass() {
    let err = analyze(&crate_of(&[("lib.rs", "mod gone;\n")]), "lib.rs").unwrap_err();
    assert!(err.contains("mod gone"), "{err}");
}
