//! `authentication.k8s.io/v1`: the reviews about who a token or the caller is, answered on
//! create by `http::reviews` and never stored.

use super::{CREATE, Row, row};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", false).verbs(CREATE),
    row("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", false).verbs(CREATE),
];
