//! `networking.k8s.io/v1`: ingresses, network policies and the service IP ranges.

mod servicecidr;

use super::{GENERATION, Row, STATUS, Strategy, row, strategy::DEFAULT};
use crate::table::columns::*;
use serde_json::json;

const G: &str = "networking.k8s.io";

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row(G, "v1", "ingressclasses", "IngressClass", false).flags(GENERATION).strategy(&INGRESS_CLASSES),
    row(G, "v1", "ingresses", "Ingress", true).short(&["ing"]).flags(STATUS | GENERATION).strategy(&INGRESSES),
    row(G, "v1", "ipaddresses", "IPAddress", false).short(&["ip"]),
    row(G, "v1", "networkpolicies", "NetworkPolicy", true).short(&["netpol"]).flags(GENERATION).strategy(&NETWORK_POLICIES),
    row(G, "v1", "servicecidrs", "ServiceCIDR", false).flags(STATUS).strategy(&servicecidr::STRATEGY),
];

// ---- ingressclasses

/// IngressClasses.
pub(super) const INGRESS_CLASSES: Strategy = Strategy {
    columns: ingress_class_columns,
    ..DEFAULT
};

fn ingress_class_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Controller", |o| string(o, "/spec/controller")),
        ("Parameters", |o| match get(o, "/spec/parameters") {
            Some(p) if p.is_object() => {
                let group = p["apiGroup"].as_str().unwrap_or("");
                let kind = p["kind"].as_str().unwrap_or("");
                let name = p["name"].as_str().unwrap_or("");
                json!(if group.is_empty() {
                    format!("{kind}/{name}")
                } else {
                    format!("{kind}.{group}/{name}")
                })
            }
            _ => json!("<none>"),
        }),
    ]
}

// ---- ingresses

/// Ingresses.
pub(super) const INGRESSES: Strategy = Strategy {
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

// ---- networkpolicies

/// NetworkPolicies.
pub(super) const NETWORK_POLICIES: Strategy = Strategy {
    columns: network_policy_columns,
    ..DEFAULT
};

fn network_policy_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Pod-Selector", |o| match get(o, "/spec/podSelector") {
        Some(sel) if sel.as_object().is_some_and(|m| !m.is_empty()) => {
            let labels = selector(&json!({"spec": {"selector": sel}}));
            if labels == json!("<none>") {
                json!("")
            } else {
                labels
            }
        }
        _ => json!("<none>"),
    })]
}
