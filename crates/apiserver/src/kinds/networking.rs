//! `networking.k8s.io/v1`: ingresses, network policies and the service IP ranges.

mod ingress;
mod ingressclass;
mod networkpolicy;
mod servicecidr;

use super::{GENERATION, Row, STATUS, row};

const G: &str = "networking.k8s.io";

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row(G, "v1", "ingressclasses", "IngressClass", false).flags(GENERATION).strategy(&ingressclass::STRATEGY),
    row(G, "v1", "ingresses", "Ingress", true).short(&["ing"]).flags(STATUS | GENERATION).strategy(&ingress::STRATEGY),
    row(G, "v1", "ipaddresses", "IPAddress", false).short(&["ip"]),
    row(G, "v1", "networkpolicies", "NetworkPolicy", true).short(&["netpol"]).flags(GENERATION).strategy(&networkpolicy::STRATEGY),
    row(G, "v1", "servicecidrs", "ServiceCIDR", false).flags(STATUS).strategy(&servicecidr::STRATEGY),
];
