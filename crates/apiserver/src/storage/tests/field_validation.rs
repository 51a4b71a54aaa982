//! `fieldValidation`: unknown fields of custom objects under `Strict`, `Warn` and `Ignore`.

use super::crd::{install, widget};
use super::*;

fn with(mode: FieldValidation) -> WriteOptions {
    WriteOptions {
        field_validation: mode,
        ..Default::default()
    }
}

/// A widget with two fields its schema does not declare.
fn typoed(name: &str) -> Value {
    let mut w = widget(name);
    w["spec"]["sise"] = json!(3);
    w["extra"] = json!(true);
    w
}

#[test]
fn strict_refuses_unknown_fields_naming_each() {
    let s = store();
    let (_, widgets) = install(&s);
    let opts = with(FieldValidation::Strict);
    let err = fails_unchanged(&s, 400, || {
        s.create(&widgets, Some("default"), typoed("a"), &opts)
    });
    assert_eq!(err.reason, "BadRequest");
    assert_eq!(
        err.message,
        "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: \
         unknown field \"extra\", unknown field \"spec.sise\""
    );
    // Known fields only: accepted, no warnings.
    s.create(&widgets, Some("default"), widget("a"), &opts)
        .unwrap();
    assert!(opts.warnings.take().is_empty());
    // A merge patch is worded without the create/update prefix.
    let err = fails_unchanged(&s, 400, || {
        s.patch(
            &widgets,
            Some("default"),
            "a",
            None,
            PatchType::Merge,
            br#"{"spec":{"colour":"red"}}"#,
            &opts,
        )
    });
    assert_eq!(
        err.message,
        "strict decoding error: unknown field \"spec.colour\""
    );
}

#[test]
fn strict_apply_refuses_undeclared_fields_as_the_field_manager_words_it() {
    let s = store();
    let (_, widgets) = install(&s);
    let opts = WriteOptions {
        field_manager: Some("me".into()),
        ..with(FieldValidation::Strict)
    };
    let body = serde_json::to_vec(&typoed("a")).unwrap();
    let err = fails_unchanged(&s, 500, || {
        s.patch(
            &widgets,
            Some("default"),
            "a",
            None,
            PatchType::Apply,
            &body,
            &opts,
        )
    });
    assert_eq!(
        err.message,
        "failed to create typed patch object (default/a; example.com/v1, Kind=Widget): \
         errors:\n  .extra: field not declared in schema\n  .spec.sise: field not declared in schema"
    );
}

#[test]
fn warn_prunes_and_reports_each_field() {
    let s = store();
    let (_, widgets) = install(&s);
    let opts = with(FieldValidation::Warn);
    let created = s
        .create(&widgets, Some("default"), typoed("a"), &opts)
        .unwrap();
    assert!(created.get("extra").is_none());
    assert!(created["spec"].get("sise").is_none());
    assert_eq!(
        opts.warnings.take(),
        ["unknown field \"extra\"", "unknown field \"spec.sise\""]
    );
    // An update reports what it drops too, and only that.
    let mut next = created.clone();
    next["spec"]["items"] = json!([1]);
    s.update(&widgets, Some("default"), "a", None, next, &opts)
        .unwrap();
    assert_eq!(opts.warnings.take(), ["unknown field \"spec.items\""]);
}

#[test]
fn ignore_prunes_silently_and_built_ins_are_not_checked() {
    let s = store();
    let (_, widgets) = install(&s);
    let opts = with(FieldValidation::Ignore);
    let created = s
        .create(&widgets, Some("default"), typoed("a"), &opts)
        .unwrap();
    assert!(created.get("extra").is_none());
    assert!(opts.warnings.take().is_empty());
    // Built-in kinds keep their behaviour under Strict.
    let strict = with(FieldValidation::Strict);
    let mut body = cm("c", json!({"a": "1"}));
    body["junk"] = json!(1);
    s.create(&res(&s, "", "configmaps"), Some("default"), body, &strict)
        .unwrap();
}

#[test]
fn the_directive_parses_as_upstream_spells_it() {
    assert_eq!(
        FieldValidation::parse("Ignore"),
        Some(FieldValidation::Ignore)
    );
    assert_eq!(FieldValidation::parse("Warn"), Some(FieldValidation::Warn));
    assert_eq!(FieldValidation::parse(""), Some(FieldValidation::Warn));
    assert_eq!(
        FieldValidation::parse("Strict"),
        Some(FieldValidation::Strict)
    );
    assert_eq!(FieldValidation::parse("strict"), None);
    assert_eq!(FieldValidation::default(), FieldValidation::Warn);
}
