//! [`LabelSelector`]: the label selector string syntax, its canonical form and matching.
//!
//! The grammar is apimachinery's (`labels.Parse`):
//!
//! ```text
//! <selector>    ::= <requirement> | <requirement> "," <selector>
//! <requirement> ::= [!] KEY [ <set-based> | <exact> | <compare> ]
//! <set-based>   ::= ("in" | "notin") "(" VALUE ("," VALUE)* ")"
//! <exact>       ::= ("=" | "==" | "!=") VALUE
//! <compare>     ::= (">" | "<") INTEGER
//! ```
//!
//! Whitespace (space, tab, CR, LF) separates tokens and is otherwise ignored; `in` and `notin`
//! are keywords only where an operator is expected (`x in (in)` is valid). Values may be empty
//! (`x=`, `x in (,a)`).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::error::{ParseError, RequirementError, quote};
use crate::requirement::{Operator, Requirement};
use crate::validation::is_qualified_name;

/// A parsed label selector: the AND of its requirements, kept sorted by key.
///
/// ```
/// use std::collections::BTreeMap;
/// use crt_labels::LabelSelector;
///
/// let sel: LabelSelector = "app=web, tier in (a,b),!canary".parse().unwrap();
/// assert_eq!(sel.to_string(), "app=web,!canary,tier in (a,b)");
/// let labels = BTreeMap::from([("app".to_string(), "web".to_string()), ("tier".into(), "a".into())]);
/// assert!(sel.matches(&labels));
/// assert!("app in (".parse::<LabelSelector>().is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

/// One entry of a structured selector's `matchExpressions`, independent of any API crate
/// (map a `k8s_openapi` `LabelSelectorRequirement` field by field).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MatchExpression {
    /// The label key.
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// The values (empty for `Exists` and `DoesNotExist`).
    pub values: Vec<String>,
}

impl LabelSelector {
    /// The selector that matches every label set (the empty string).
    pub fn everything() -> Self {
        LabelSelector::default()
    }

    /// Whether this selector has no requirement, so matches everything.
    pub fn is_everything(&self) -> bool {
        self.requirements.is_empty()
    }

    /// A selector from requirements (sorted by key, stable).
    pub fn from_requirements(requirements: impl IntoIterator<Item = Requirement>) -> Self {
        let mut requirements: Vec<Requirement> = requirements.into_iter().collect();
        requirements.sort_by(|a, b| a.key().cmp(b.key()));
        LabelSelector { requirements }
    }

    /// The selector of the structured form (`metav1.LabelSelector`): every `matchLabels` entry
    /// becomes `key=value`, every `matchExpressions` entry a set-based requirement, as
    /// `metav1.LabelSelectorAsSelector` does. Operators other than `In`, `NotIn`, `Exists`
    /// and `DoesNotExist`, invalid keys and values, and wrong value counts are errors.
    ///
    /// Note: a *missing* structured selector selects nothing in some Kubernetes APIs; that
    /// distinction is the caller's. An empty one selects everything.
    ///
    /// ```
    /// use crt_labels::{LabelSelector, MatchExpression};
    /// let sel = LabelSelector::from_parts(
    ///     [("app", "web")],
    ///     [MatchExpression { key: "env".into(), operator: "NotIn".into(), values: vec!["dev".into()] }],
    /// ).unwrap();
    /// assert_eq!(sel.to_string(), "app=web,env notin (dev)");
    /// ```
    pub fn from_parts<K, V>(
        match_labels: impl IntoIterator<Item = (K, V)>,
        match_expressions: impl IntoIterator<Item = MatchExpression>,
    ) -> Result<Self, RequirementError>
    where
        K: AsRef<str>,
        V: Into<String>,
    {
        let mut reqs = Vec::new();
        for (k, v) in match_labels {
            reqs.push(Requirement::new(k.as_ref(), Operator::Equals, [v.into()])?);
        }
        for e in match_expressions {
            let op = Operator::from_match_expression(&e.operator)?;
            reqs.push(Requirement::new(&e.key, op, e.values)?);
        }
        Ok(Self::from_requirements(reqs))
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether a label set satisfies every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_fn(|k| labels.get(k).map(String::as_str))
    }

    /// Whether the labels given by a lookup function satisfy every requirement; lets callers
    /// match without building a map (e.g. straight from a JSON object).
    pub fn matches_fn<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements
            .iter()
            .all(|r| r.matches_value(get(r.key())))
    }

    /// If the selector requires `label` to have one exact value (`=`, `==`, or `in` with a
    /// single value), that value; lets a store use an index.
    pub fn requires_exact_match(&self, label: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key() == label)?;
        match r.operator() {
            Operator::Equals | Operator::DoubleEquals | Operator::In if r.values().len() == 1 => {
                Some(&r.values()[0])
            }
            _ => None,
        }
    }
}

impl fmt::Display for LabelSelector {
    /// The canonical string: requirements sorted by key, joined by `,` (empty for everything).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl FromStr for LabelSelector {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        let tokens = lex(s);
        let reqs = Parser { tokens, pos: 0 }.parse()?;
        Ok(Self::from_requirements(reqs))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    End,
    ClosedPar,
    Comma,
    Not,
    DoubleEquals,
    Equals,
    Greater,
    Identifier,
    In,
    Less,
    NotEquals,
    NotIn,
    OpenPar,
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    tok: Tok,
    text: &'a str,
    pos: usize,
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits the selector into tokens; identifiers are maximal runs of non-special,
/// non-whitespace bytes (all delimiters are ASCII, so slices stay on char boundaries).
fn lex(s: &str) -> Vec<Token<'_>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < b.len() && is_whitespace(b[i]) {
            i += 1;
        }
        if i >= b.len() {
            out.push(Token {
                tok: Tok::End,
                text: "",
                pos: i,
            });
            return out;
        }
        let start = i;
        let tok = if is_special(b[i]) {
            let two = b.get(i + 1).copied();
            let (tok, len) = match (b[i], two) {
                (b'!', Some(b'=')) => (Tok::NotEquals, 2),
                (b'=', Some(b'=')) => (Tok::DoubleEquals, 2),
                (b'!', _) => (Tok::Not, 1),
                (b'=', _) => (Tok::Equals, 1),
                (b'(', _) => (Tok::OpenPar, 1),
                (b')', _) => (Tok::ClosedPar, 1),
                (b',', _) => (Tok::Comma, 1),
                (b'>', _) => (Tok::Greater, 1),
                _ => (Tok::Less, 1),
            };
            i += len;
            tok
        } else {
            while i < b.len() && !is_special(b[i]) && !is_whitespace(b[i]) {
                i += 1;
            }
            match &s[start..i] {
                "in" => Tok::In,
                "notin" => Tok::NotIn,
                _ => Tok::Identifier,
            }
        };
        out.push(Token {
            tok,
            text: &s[start..i],
            pos: start,
        });
    }
}

/// Whether the keywords count as identifiers (inside values and at a key's place) or as
/// operators (after a key).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    KeyAndOperator,
    Values,
}

struct Parser<'a> {
    tokens: Vec<Token<'a>>,
    pos: usize,
}

type ReqResult<T> = Result<T, RequirementError>;

fn unexpected(found: &str, expected: &'static str) -> RequirementError {
    RequirementError::Unexpected {
        found: found.to_string(),
        expected,
    }
}

impl<'a> Parser<'a> {
    fn peek(&self, ctx: Ctx) -> Token<'a> {
        // The last token is always End, and parsing stops there.
        let mut t = self.tokens[self.pos.min(self.tokens.len() - 1)];
        if ctx == Ctx::Values && matches!(t.tok, Tok::In | Tok::NotIn) {
            t.tok = Tok::Identifier;
        }
        t
    }

    fn next(&mut self, ctx: Ctx) -> Token<'a> {
        let t = self.peek(ctx);
        if self.pos < self.tokens.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn parse(mut self) -> Result<Vec<Requirement>, ParseError> {
        let mut reqs = Vec::new();
        loop {
            let t = self.peek(Ctx::Values);
            match t.tok {
                Tok::Identifier | Tok::Not => {
                    let r = self
                        .requirement()
                        .map_err(|source| ParseError::Requirement {
                            position: t.pos,
                            source,
                        })?;
                    reqs.push(r);
                    let after = self.next(Ctx::Values);
                    match after.tok {
                        Tok::End => return Ok(reqs),
                        Tok::Comma => {
                            let n = self.peek(Ctx::Values);
                            if !matches!(n.tok, Tok::Identifier | Tok::Not) {
                                return Err(ParseError::Unexpected {
                                    found: n.text.to_string(),
                                    expected: "identifier after ','",
                                    position: n.pos,
                                });
                            }
                        }
                        _ => {
                            return Err(ParseError::Unexpected {
                                found: after.text.to_string(),
                                expected: "',' or 'end of string'",
                                position: after.pos,
                            });
                        }
                    }
                }
                Tok::End => return Ok(reqs),
                _ => {
                    return Err(ParseError::Unexpected {
                        found: t.text.to_string(),
                        expected: "!, identifier, or 'end of string'",
                        position: t.pos,
                    });
                }
            }
        }
    }

    fn requirement(&mut self) -> ReqResult<Requirement> {
        let mut t = self.next(Ctx::Values);
        let negated = t.tok == Tok::Not;
        if negated {
            t = self.next(Ctx::Values);
        }
        if t.tok != Tok::Identifier {
            return Err(unexpected(t.text, "identifier"));
        }
        let key = t.text;
        let errs = is_qualified_name(key);
        if !errs.is_empty() {
            return Err(RequirementError::Invalid {
                field: String::new(),
                value: quote(key),
                reason: errs.join("; "),
            });
        }
        if negated {
            return Requirement::new(key, Operator::DoesNotExist, Vec::<String>::new());
        }
        if matches!(self.peek(Ctx::Values).tok, Tok::End | Tok::Comma) {
            return Requirement::new(key, Operator::Exists, Vec::<String>::new());
        }
        let op_tok = self.next(Ctx::KeyAndOperator);
        let op = match op_tok.tok {
            Tok::In => Operator::In,
            Tok::NotIn => Operator::NotIn,
            Tok::Equals => Operator::Equals,
            Tok::DoubleEquals => Operator::DoubleEquals,
            Tok::NotEquals => Operator::NotEquals,
            Tok::Greater => Operator::GreaterThan,
            Tok::Less => Operator::LessThan,
            _ => {
                return Err(unexpected(op_tok.text, "in, notin, =, ==, !=, gt, lt"));
            }
        };
        let values = match op {
            Operator::In | Operator::NotIn => self.set_values()?,
            _ => vec![self.exact_value()?],
        };
        Requirement::new(key, op, values)
    }

    /// `( v1, v2, ... )`, where values may be empty: `()`, `(,a)`, `(a,)`, `(a,,b)`.
    fn set_values(&mut self) -> ReqResult<Vec<String>> {
        let t = self.next(Ctx::Values);
        if t.tok != Tok::OpenPar {
            return Err(unexpected(t.text, "'('"));
        }
        let t = self.peek(Ctx::Values);
        match t.tok {
            Tok::ClosedPar => {
                self.next(Ctx::Values);
                return Ok(vec![String::new()]);
            }
            Tok::Identifier | Tok::Comma => {}
            _ => return Err(unexpected(t.text, "',', ')' or identifier")),
        }
        let mut values = Vec::new();
        // Whether the last thing consumed was a value (vs. the opening paren or a comma).
        let mut after_value = false;
        loop {
            let t = self.next(Ctx::Values);
            match (t.tok, after_value) {
                (Tok::Identifier, false) => {
                    values.push(t.text.to_string());
                    after_value = true;
                }
                (Tok::Comma, _) => {
                    if !after_value {
                        values.push(String::new());
                    }
                    after_value = false;
                }
                (Tok::ClosedPar, _) => {
                    if !after_value {
                        values.push(String::new());
                    }
                    return Ok(values);
                }
                (_, true) => return Err(unexpected(t.text, "',' or ')'")),
                (_, false) => return Err(unexpected(t.text, "',', or identifier")),
            }
        }
    }

    /// The single value after `=`, `==`, `!=`, `>`, `<`; empty when the requirement ends.
    fn exact_value(&mut self) -> ReqResult<String> {
        let t = self.peek(Ctx::Values);
        if matches!(t.tok, Tok::End | Tok::Comma) {
            return Ok(String::new());
        }
        let t = self.next(Ctx::Values);
        if t.tok == Tok::Identifier {
            Ok(t.text.to_string())
        } else {
            Err(unexpected(t.text, "identifier"))
        }
    }
}
