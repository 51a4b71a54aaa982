//! The `meta.k8s.io/v1 Table` form `kubectl get` asks for (`Accept: application/json;as=Table`),
//! and the `PartialObjectMetadata` form metadata-only clients ask for.
//!
//! Built-in kinds get the columns kubectl users know (pods READY/STATUS/RESTARTS, deployments
//! READY/UP-TO-DATE/AVAILABLE, ...); custom resources get their CRD's
//! `additionalPrinterColumns` (a JSONPath subset: `.a.b`, `[N]`, `[?(@.k=="v")]`), else NAME and
//! AGE, as the real server does.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::resource::ResourceInfo;

pub(crate) mod columns;

pub use columns::{age, eval_json_path};

/// What each row carries besides its cells (the `includeObject` query parameter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IncludeObject {
    /// No object.
    None,
    /// The object's metadata as a `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parses `includeObject`; unknown values are the default.
    pub fn parse(value: Option<&str>) -> Self {
        match value {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

/// One column: its definition and how to compute its cell.
pub struct Column {
    name: String,
    kind: &'static str,
    format: &'static str,
    description: String,
    priority: i64,
    cell: Cell,
}

enum Cell {
    Name,
    Age,
    Builtin(fn(&Value) -> Value),
    Path { path: String, date: bool },
}

impl Column {
    fn builtin(name: &str, cell: fn(&Value) -> Value) -> Column {
        Column {
            name: name.into(),
            kind: "string",
            format: "",
            description: String::new(),
            priority: 0,
            cell: Cell::Builtin(cell),
        }
    }
}

/// The table columns of a built-in kind, as its strategy lists them: what [`columns_for`]
/// prints for a resource that is not custom.
#[derive(Clone, Copy, Debug)]
pub struct Printer {
    /// A table of its own replacing NAME, the columns and AGE: these columns, then NAME at
    /// priority 1 and no AGE (Events, led by LAST SEEN).
    pub(crate) table: Option<columns::Table>,
    /// Columns between NAME and AGE.
    pub(crate) columns: columns::Columns,
    /// Priority-0 columns after AGE.
    pub(crate) columns_after_age: columns::Columns,
    /// `-o wide` columns (priority 1), after AGE.
    pub(crate) columns_wide: columns::Columns,
    /// The order of a list's rows, when the kind's printer sorts them (`None`: the list's).
    pub(crate) row_order: Option<RowOrder>,
}

/// Compares two objects for a table's row order.
pub type RowOrder = fn(&Value, &Value) -> std::cmp::Ordering;

impl Printer {
    /// Sorts a list answer's `items` into the printer's row order, if it has one.
    pub fn sort_rows(&self, answer: &mut Value) {
        if let (Some(order), Some(items)) = (
            self.row_order,
            answer.get_mut("items").and_then(Value::as_array_mut),
        ) {
            items.sort_by(order);
        }
    }
}

/// The columns of a resource. `printer_columns` is the served version's
/// `additionalPrinterColumns` for a custom resource; `builtin` the columns of the kind of a
/// built-in one.
pub fn columns_for(
    res: &ResourceInfo,
    printer_columns: Option<&Value>,
    builtin: &Printer,
) -> Vec<Column> {
    let name = Column {
        name: "Name".into(),
        kind: "string",
        format: "name",
        description: "Name must be unique within a namespace.".into(),
        priority: 0,
        cell: Cell::Name,
    };
    let age = Column {
        name: "Age".into(),
        kind: "string",
        format: "",
        description: "CreationTimestamp is a timestamp representing the server time when this object was created.".into(),
        priority: 0,
        cell: Cell::Age,
    };
    if !res.custom
        && let Some(table) = builtin.table
    {
        // Events lead with LAST SEEN and keep their (generated) name for `-o wide`.
        let mut cols: Vec<Column> = table()
            .into_iter()
            .map(|(n, f, priority)| Column {
                priority,
                ..Column::builtin(n, f)
            })
            .collect();
        cols.push(Column {
            priority: 1,
            ..name
        });
        return cols;
    }
    let mut cols = vec![name];
    if res.custom {
        match printer_columns
            .and_then(Value::as_array)
            .filter(|c| !c.is_empty())
        {
            Some(defs) => {
                cols.extend(defs.iter().map(|d| {
                    let ty = d.get("type").and_then(Value::as_str).unwrap_or("string");
                    let date = ty == "date";
                    Column {
                        name: d
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        kind: match ty {
                            "integer" => "integer",
                            "number" => "number",
                            "boolean" => "boolean",
                            _ => "string",
                        },
                        format: "",
                        description: d
                            .get("description")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        priority: d.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        cell: Cell::Path {
                            path: d
                                .get("jsonPath")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_string(),
                            date,
                        },
                    }
                }));
                return cols;
            }
            None => {
                cols.push(age);
                return cols;
            }
        }
    }
    cols.extend(
        (builtin.columns)()
            .into_iter()
            .map(|(n, f)| Column::builtin(n, f)),
    );
    cols.push(age);
    cols.extend(
        (builtin.columns_after_age)()
            .into_iter()
            .map(|(n, f)| Column::builtin(n, f)),
    );
    // The `-o wide` columns (priority 1) come after AGE, as on the real server.
    cols.extend((builtin.columns_wide)().into_iter().map(|(n, f)| Column {
        priority: 1,
        ..Column::builtin(n, f)
    }));
    cols
}

fn column_definitions(cols: &[Column]) -> Vec<Value> {
    cols.iter()
        .map(|c| {
            json!({ "name": c.name, "type": c.kind, "format": c.format, "description": c.description, "priority": c.priority })
        })
        .collect()
}

fn row(cols: &[Column], obj: &Value, include: IncludeObject, now: DateTime<Utc>) -> Value {
    let cells: Vec<Value> = cols
        .iter()
        .map(|c| match &c.cell {
            Cell::Name => obj.pointer("/metadata/name").cloned().unwrap_or(json!("")),
            Cell::Age => json!(age(obj.pointer("/metadata/creationTimestamp"), now)),
            Cell::Builtin(f) => f(obj),
            Cell::Path { path, date } => {
                let v = eval_json_path(obj, path).unwrap_or(Value::Null);
                if *date { json!(age(Some(&v), now)) } else { v }
            }
        })
        .collect();
    let mut row = json!({ "cells": cells });
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => row["object"] = partial_metadata(obj),
        IncludeObject::Object => row["object"] = obj.clone(),
    }
    row
}

/// A Table of `objects` (a list's items, or one object), with the list's metadata.
pub fn table(
    cols: &[Column],
    objects: &[Value],
    list_meta: Value,
    include: IncludeObject,
) -> Value {
    let now = Utc::now();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": column_definitions(cols),
        "rows": objects.iter().map(|o| row(cols, o, include, now)).collect::<Vec<_>>(),
    })
}

/// Turns a get or list answer into a Table.
pub fn to_table(cols: &[Column], answer: &Value, include: IncludeObject) -> Value {
    match answer.get("items").and_then(Value::as_array) {
        Some(items) => {
            let meta = answer.get("metadata").cloned().unwrap_or(json!({}));
            table(cols, items, meta, include)
        }
        None => {
            let rv = answer
                .pointer("/metadata/resourceVersion")
                .cloned()
                .unwrap_or(json!(""));
            table(
                cols,
                std::slice::from_ref(answer),
                json!({ "resourceVersion": rv }),
                include,
            )
        }
    }
}

/// An object's `PartialObjectMetadata`.
pub fn partial_metadata(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or(json!({})),
    })
}

/// Turns a get or list answer into `PartialObjectMetadata` / `PartialObjectMetadataList`.
pub fn to_metadata(answer: &Value) -> Value {
    match answer.get("items").and_then(Value::as_array) {
        Some(items) => json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": answer.get("metadata").cloned().unwrap_or(json!({})),
            "items": items.iter().map(partial_metadata).collect::<Vec<_>>(),
        }),
        None => partial_metadata(answer),
    }
}

#[cfg(test)]
mod tests;
