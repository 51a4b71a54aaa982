//! Services: DNS-1035 names, a cluster IP allocated on create.

use crate::kinds::{Strategy, defaults::*, strategy::DEFAULT};
use crate::patch::MergeRoot;
use crate::table::columns::*;
use crate::validation;
use crate::validation::NameFormat;
use serde_json::{Value, json};

/// The Service strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    name_format: NameFormat::Dns1035,
    defaults: Some(service_defaults),
    validate: Some(validation::core::service),
    initial_status: Some(|| json!({"loadBalancer": {}})),
    merge_root: MergeRoot::Service,
    columns: service_columns,
    delete_returns_object: true,
    ..DEFAULT
};

fn service_defaults(obj: &mut Value, next_cluster_ip: &mut u32) {
    default_at(obj, ".spec.type", json!("ClusterIP"));
    default_at(obj, ".spec.sessionAffinity", json!("None"));
    let kind = get_path(obj, ".spec.type")
        .and_then(Value::as_str)
        .unwrap_or("");
    if kind != "ExternalName"
        && get_path(obj, ".spec.clusterIP")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        let n = *next_cluster_ip;
        *next_cluster_ip += 1;
        let ip = format!("10.96.{}.{}", (n >> 8) & 0xff, n & 0xff);
        set_path(obj, ".spec.clusterIP", json!(ip));
    }
    if let Some(ip) = get_path(obj, ".spec.clusterIP").cloned() {
        default_at(obj, ".spec.clusterIPs", json!([ip]));
    }
    if let Some(ports) = obj.pointer_mut("/spec/ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter(|p| p.is_object()) {
            default_at(p, "protocol", json!("TCP"));
            if let Some(port) = p.get("port").cloned() {
                default_at(p, "targetPort", port);
            }
        }
    }
}

fn service_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Type", |o| {
            json!(
                get(o, "/spec/type")
                    .and_then(Value::as_str)
                    .unwrap_or("ClusterIP")
            )
        }),
        ("Cluster-IP", |o| or_none(string(o, "/spec/clusterIP"))),
        ("External-IP", |_| json!("<none>")),
        ("Port(s)", |o| {
            let ports: Vec<String> = get(o, "/spec/ports")
                .and_then(Value::as_array)
                .map(|ps| {
                    ps.iter()
                        .map(|p| {
                            format!("{}/{}", p["port"], p["protocol"].as_str().unwrap_or("TCP"))
                        })
                        .collect()
                })
                .unwrap_or_default();
            or_none(json!(ports.join(",")))
        }),
    ]
}
