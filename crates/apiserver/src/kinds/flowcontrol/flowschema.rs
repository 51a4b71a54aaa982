//! FlowSchemas: a status write keeps all metadata; the table shows the priority level, the
//! matching precedence, the distinguisher and whether the priority level is missing, its rows
//! in the order the schemas match (`kubectl get flowschemas`, as upstream's printer).

use serde_json::{Value, json};

use crate::json;
use crate::kinds::{StatusStrategy, Strategy, strategy::DEFAULT};
use crate::table::columns::CellFn;

/// The FlowSchema strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    status: StatusStrategy::SpecAndMetadata,
    columns,
    columns_after_age,
    row_order: Some(by_precedence),
    ..DEFAULT
};

/// The order schemas are matched in: lowest `matchingPrecedence` first, then by name.
fn by_precedence(a: &Value, b: &Value) -> std::cmp::Ordering {
    let precedence = |o: &Value| {
        json::at(o, &["spec", "matchingPrecedence"])
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    let name = |o: &Value| json::str_at(o, &["metadata", "name"]).to_owned();
    (precedence(a), name(a)).cmp(&(precedence(b), name(b)))
}

fn columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("PriorityLevel", |o| {
            json!(json::str_at(
                o,
                &["spec", "priorityLevelConfiguration", "name"]
            ))
        }),
        ("MatchingPrecedence", |o| {
            json!(
                json::at(o, &["spec", "matchingPrecedence"])
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            )
        }),
        ("DistinguisherMethod", |o| {
            match json::at(o, &["spec", "distinguisherMethod"]) {
                Some(m) if !m.is_null() => json!(json::str_at(m, &["type"])),
                _ => json!("<none>"),
            }
        }),
    ]
}

/// `MissingPL`: the status of the `Dangling` condition, `?` before the first is written.
fn columns_after_age() -> Vec<(&'static str, CellFn)> {
    vec![("MissingPL", |o| {
        let dangling = json::array_at(o, &["status", "conditions"])
            .iter()
            .find(|c| json::str_at(c, &["type"]) == "Dangling");
        json!(dangling.map_or("?", |c| json::str_at(c, &["status"])))
    })]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn the_table_prints_what_upstream_prints() {
        let fs = json!({"spec": {"priorityLevelConfiguration": {"name": "workload-low"},
            "matchingPrecedence": 9000, "distinguisherMethod": {"type": "ByUser"}},
            "status": {"conditions": [{"type": "Dangling", "status": "False"}]}});
        let cells: Vec<_> = (super::STRATEGY.columns)()
            .into_iter()
            .chain((super::STRATEGY.columns_after_age)())
            .map(|(name, cell)| (name, cell(&fs)))
            .collect();
        assert_eq!(
            cells,
            vec![
                ("PriorityLevel", json!("workload-low")),
                ("MatchingPrecedence", json!(9000)),
                ("DistinguisherMethod", json!("ByUser")),
                ("MissingPL", json!("False")),
            ]
        );
        let bare = json!({"spec": {"priorityLevelConfiguration": {"name": "x"}}});
        let mut list = json!({"items": [
            {"metadata": {"name": "b"}, "spec": {"matchingPrecedence": 500}},
            {"metadata": {"name": "z"}, "spec": {"matchingPrecedence": 1}},
            {"metadata": {"name": "a"}, "spec": {"matchingPrecedence": 500}},
        ]});
        super::STRATEGY.printer().sort_rows(&mut list);
        let names: Vec<_> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["metadata"]["name"].clone())
            .collect();
        assert_eq!(
            names,
            vec![json!("z"), json!("a"), json!("b")],
            "by precedence, then name"
        );
        assert_eq!(((super::STRATEGY.columns)()[2].1)(&bare), json!("<none>"));
        assert_eq!(
            ((super::STRATEGY.columns_after_age)()[0].1)(&bare),
            json!("?")
        );
    }
}
