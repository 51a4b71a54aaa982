//! `authorization.k8s.io/v1`: the access reviews, answered on create by `http::reviews` and
//! never stored.

use super::{CREATE, Row, row};

const G: &str = "authorization.k8s.io";

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row(G, "v1", "localsubjectaccessreviews", "LocalSubjectAccessReview", true).verbs(CREATE),
    row(G, "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", false).verbs(CREATE),
    row(G, "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", false).verbs(CREATE),
    row(G, "v1", "subjectaccessreviews", "SubjectAccessReview", false).verbs(CREATE),
];
