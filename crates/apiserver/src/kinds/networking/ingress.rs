//! Ingresses.

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::table::columns::*;
use serde_json::json;

/// The Ingress strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    columns: ingress_columns,
    ..DEFAULT
};

fn ingress_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Class", |o| or_none(string(o, "/spec/ingressClassName"))),
        ("Hosts", ingress_hosts),
        ("Address", ingress_address),
        ("Ports", |o| {
            json!(if count(o, "/spec/tls") > 0 {
                "80, 443"
            } else {
                "80"
            })
        }),
    ]
}
