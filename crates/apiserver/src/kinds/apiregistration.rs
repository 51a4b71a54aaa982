//! `apiregistration.k8s.io/v1`: API services (stored; nothing is aggregated).

mod apiservice;

use super::{CAT_API_EXTENSIONS, Row, STATUS, row};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("apiregistration.k8s.io", "v1", "apiservices", "APIService", false).categories(CAT_API_EXTENSIONS).flags(STATUS).strategy(&apiservice::STRATEGY),
];
