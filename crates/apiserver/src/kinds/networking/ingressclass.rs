//! IngressClasses.

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::table::columns::*;
use serde_json::json;

/// The IngressClass strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
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
