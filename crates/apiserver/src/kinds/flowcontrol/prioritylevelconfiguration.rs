//! PriorityLevelConfigurations: a status write keeps all metadata; the table shows the type,
//! the nominal concurrency shares and the queuing parameters (`<none>` where a level has none),
//! as upstream's printer.

use serde_json::{Value, json};

use crate::json;
use crate::kinds::{StatusStrategy, Strategy, strategy::DEFAULT};
use crate::table::columns::CellFn;

/// The PriorityLevelConfiguration strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    status: StatusStrategy::SpecAndMetadata,
    columns,
    ..DEFAULT
};

/// A number under `spec.limited`, `<none>` when absent.
fn limited(o: &Value, path: &[&str]) -> Value {
    let mut full = vec!["spec", "limited"];
    full.extend_from_slice(path);
    json::at(o, &full)
        .filter(|v| v.is_number())
        .cloned()
        .unwrap_or_else(|| json!("<none>"))
}

fn columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Type", |o| json!(json::str_at(o, &["spec", "type"]))),
        ("NominalConcurrencyShares", |o| {
            limited(o, &["nominalConcurrencyShares"])
        }),
        ("Queues", |o| {
            limited(o, &["limitResponse", "queuing", "queues"])
        }),
        ("HandSize", |o| {
            limited(o, &["limitResponse", "queuing", "handSize"])
        }),
        ("QueueLengthLimit", |o| {
            limited(o, &["limitResponse", "queuing", "queueLengthLimit"])
        }),
    ]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    fn cells(obj: &serde_json::Value) -> Vec<serde_json::Value> {
        (super::STRATEGY.columns)()
            .into_iter()
            .map(|(_, cell)| cell(obj))
            .collect()
    }

    #[test]
    fn the_table_prints_what_upstream_prints() {
        let names: Vec<_> = (super::STRATEGY.columns)().iter().map(|c| c.0).collect();
        assert_eq!(
            names,
            [
                "Type",
                "NominalConcurrencyShares",
                "Queues",
                "HandSize",
                "QueueLengthLimit"
            ]
        );
        let queuing = json!({"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 30,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 6,
            "queueLengthLimit": 50}}}}});
        assert_eq!(
            cells(&queuing),
            vec![json!("Limited"), json!(30), json!(64), json!(6), json!(50)]
        );
        let rejecting = json!({"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
            "limitResponse": {"type": "Reject"}}}});
        assert_eq!(
            cells(&rejecting),
            vec![
                json!("Limited"),
                json!(5),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
        let exempt = json!({"spec": {"type": "Exempt", "exempt": {}}});
        assert_eq!(cells(&exempt)[1], json!("<none>"));
    }
}
