//! Errors of selector parsing and requirement construction.
//!
//! The messages follow `k8s.io/apimachinery` word for word where a client may show them (the
//! API server answers a malformed `labelSelector` with them in a 400 `Status`), and every error
//! also carries the byte position in the selector string where the problem starts.

/// Why a label or field selector (or one requirement of it) is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A token that does not fit the grammar, outside a requirement.
    #[error("found '{found}', expected: {expected}")]
    Unexpected {
        /// The text of the token found (empty at the end of the string).
        found: String,
        /// What the grammar allows here.
        expected: &'static str,
        /// Byte offset of the token in the selector string.
        position: usize,
    },
    /// One requirement (`key op values`) is invalid.
    #[error("unable to parse requirement: {source}")]
    Requirement {
        /// Byte offset where the requirement starts in the selector string.
        position: usize,
        /// What is wrong with it.
        #[source]
        source: RequirementError,
    },
    /// A field selector term has no `=`, `==` or `!=`.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    FieldTerm {
        /// The whole field selector.
        selector: String,
        /// The term without an operator.
        term: String,
    },
    /// A field selector value has a backslash not followed by `\`, `,` or `=`.
    #[error("invalid field selector: invalid escape sequence: {sequence}")]
    InvalidEscape {
        /// The offending sequence, e.g. `\x` (or `\` at the end of the value).
        sequence: String,
    },
    /// A field selector value holds an unescaped `,` or `=`.
    #[error("invalid field selector: unescaped character in value: {character}")]
    UnescapedCharacter {
        /// The character that must be escaped.
        character: char,
    },
}

impl ParseError {
    /// Byte offset in the selector string where the problem was found, when known.
    pub fn position(&self) -> Option<usize> {
        match self {
            ParseError::Unexpected { position, .. } | ParseError::Requirement { position, .. } => {
                Some(*position)
            }
            _ => None,
        }
    }
}

/// Why a single requirement is invalid (its key, operator or values).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequirementError {
    /// A token that does not fit the requirement grammar.
    #[error("found '{found}', expected: {expected}")]
    Unexpected {
        /// The text of the token found (empty at the end of the string).
        found: String,
        /// What the grammar allows here.
        expected: &'static str,
    },
    /// The key, or a value, or the value count is invalid.
    #[error("{}Invalid value: {value}: {reason}", field_prefix(.field))]
    Invalid {
        /// Where in the requirement (`key`, `values`, `values[0][app]`), or empty for the key
        /// as written in a selector string.
        field: String,
        /// The offending value, quoted as the API server quotes it.
        value: String,
        /// Why it is invalid.
        reason: String,
    },
    /// The operator is not one of the operators of label selectors.
    #[error("{value:?} is not a valid label selector operator")]
    UnsupportedOperator {
        /// The operator as given.
        value: String,
    },
}

fn field_prefix(field: &str) -> String {
    if field.is_empty() {
        String::new()
    } else {
        format!("{field}: ")
    }
}

/// Quotes a string the way Go's `%q` does for the ASCII range (enough for error messages).
pub(crate) fn quote(s: &str) -> String {
    format!("{s:?}")
}
