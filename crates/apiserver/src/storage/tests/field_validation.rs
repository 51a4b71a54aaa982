//! `fieldValidation`: unknown fields of custom and built-in objects under `Strict`, `Warn` and
//! `Ignore`.

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

/// controller-gen's CRDs say `metadata: {type: object}` at the root: a strict create keeps the
/// whole ObjectMeta (nothing of it is an unknown field), and only a field ObjectMeta lacks is
/// refused, named under `metadata.`.
#[test]
fn a_controller_gen_root_metadata_keeps_object_meta_under_strict() {
    let s = store();
    let crds = res(&s, "apiextensions.k8s.io", "customresourcedefinitions");
    let mut body = super::crd::crd_body();
    body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"] =
        json!({"type": "object"});
    s.create(&crds, None, body, &w()).unwrap();
    let widgets = s.resolve("example.com", "v1", "widgets").unwrap();
    let opts = with(FieldValidation::Strict);
    let mut obj = widget("a");
    obj["metadata"]["labels"] = json!({"app": "x"});
    obj["metadata"]["annotations"] = json!({"note": "kept"});
    obj["metadata"]["creationTimestamp"] = Value::Null;
    let created = s.create(&widgets, Some("default"), obj, &opts).unwrap();
    assert!(opts.warnings.take().is_empty());
    assert_eq!(created["metadata"]["name"], "a");
    assert_eq!(created["metadata"]["labels"], json!({"app": "x"}));
    assert_eq!(created["metadata"]["annotations"], json!({"note": "kept"}));
    assert!(created["metadata"]["uid"].is_string());
    assert!(created["metadata"]["creationTimestamp"].is_string());

    let mut odd = widget("b");
    odd["metadata"]["colour"] = json!("red");
    let err = fails_unchanged(&s, 400, || {
        s.create(&widgets, Some("default"), odd.clone(), &opts)
    });
    assert_eq!(
        err.message,
        "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: \
         unknown field \"metadata.colour\""
    );
    // Warn (the default for API clients) drops it and says so.
    let warn = with(FieldValidation::Warn);
    let created = s.create(&widgets, Some("default"), odd, &warn).unwrap();
    assert_eq!(warn.warnings.take(), ["unknown field \"metadata.colour\""]);
    assert!(created["metadata"].get("colour").is_none());
    assert_eq!(created["metadata"]["name"], "b");
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
fn strict_apply_of_a_built_in_kind_refuses_undeclared_fields_too() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let strict = WriteOptions {
        field_manager: Some("me".into()),
        ..with(FieldValidation::Strict)
    };
    let body = serde_json::to_vec(&junk_cm("a")).unwrap();
    let apply = |opts: &WriteOptions| {
        s.patch(
            &cms,
            Some("default"),
            "a",
            None,
            PatchType::Apply,
            &body,
            opts,
        )
    };
    let err = fails_unchanged(&s, 500, || apply(&strict));
    assert_eq!(
        err.message,
        "failed to create typed patch object (default/a; /v1, Kind=ConfigMap): \
         .junk: field not declared in schema"
    );
    // Under Warn the field is dropped, with a warning.
    let warn = WriteOptions {
        field_manager: Some("me".into()),
        ..with(FieldValidation::Warn)
    };
    let applied = apply(&warn).unwrap();
    assert!(applied.get("junk").is_none(), "{applied}");
    assert_eq!(warn.warnings.take(), ["unknown field \"junk\""]);
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
fn ignore_prunes_silently() {
    let s = store();
    let (_, widgets) = install(&s);
    let opts = with(FieldValidation::Ignore);
    let created = s
        .create(&widgets, Some("default"), typoed("a"), &opts)
        .unwrap();
    assert!(created.get("extra").is_none());
    assert!(opts.warnings.take().is_empty());
}

/// A ConfigMap with a field its kind does not declare.
fn junk_cm(name: &str) -> Value {
    let mut body = cm(name, json!({"a": "1"}));
    body["junk"] = json!(1);
    body
}

#[test]
fn built_in_kinds_follow_the_directive_too() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    let strict = with(FieldValidation::Strict);
    let err = fails_unchanged(&s, 400, || {
        s.create(&cms, Some("default"), junk_cm("c"), &strict)
    });
    assert_eq!(err.reason, "BadRequest");
    assert_eq!(
        err.message,
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: \
         unknown field \"junk\""
    );
    let warn = with(FieldValidation::Warn);
    let created = s
        .create(&cms, Some("default"), junk_cm("w"), &warn)
        .unwrap();
    assert!(created.get("junk").is_none(), "{created}");
    assert_eq!(created["data"], json!({"a": "1"}));
    assert_eq!(warn.warnings.take(), ["unknown field \"junk\""]);
    let ignore = with(FieldValidation::Ignore);
    let created = s
        .create(&cms, Some("default"), junk_cm("i"), &ignore)
        .unwrap();
    assert!(created.get("junk").is_none(), "{created}");
    assert!(ignore.warnings.take().is_empty());
    // An update under Strict, and a patch (worded without the create/update prefix).
    let mut body = s.get(&cms, Some("default"), "w", None).unwrap();
    body["junk"] = json!(1);
    let err = fails_unchanged(&s, 400, || {
        s.update(&cms, Some("default"), "w", None, body.clone(), &strict)
    });
    assert_eq!(
        err.message,
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: \
         unknown field \"junk\""
    );
    let err = fails_unchanged(&s, 400, || {
        s.patch(
            &cms,
            Some("default"),
            "w",
            None,
            PatchType::Merge,
            br#"{"data": {"b": "2"}, "colour": "red"}"#,
            &strict,
        )
    });
    assert_eq!(
        err.message,
        "strict decoding error: unknown field \"colour\""
    );
}

#[test]
fn built_in_values_of_the_wrong_type_are_refused_as_go_words_it() {
    let s = store();
    let cms = res(&s, "", "configmaps");
    for mode in [FieldValidation::Ignore, FieldValidation::Strict] {
        let err = fails_unchanged(&s, 400, || {
            s.create(&cms, Some("default"), cm("n", json!({"a": 1})), &with(mode))
        });
        assert_eq!(err.reason, "BadRequest");
        assert_eq!(
            err.message,
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot \
             unmarshal number into Go struct field ConfigMap.data of type string"
        );
    }
    let created = s
        .create(
            &cms,
            Some("default"),
            cm("n", json!({"a": "1"})),
            &with(FieldValidation::Warn),
        )
        .unwrap();
    let mut body = created.clone();
    body["immutable"] = json!("yes");
    let err = fails_unchanged(&s, 400, || {
        s.update(
            &cms,
            Some("default"),
            "n",
            None,
            body.clone(),
            &with(FieldValidation::Warn),
        )
    });
    assert_eq!(
        err.message,
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot \
         unmarshal string into Go struct field ConfigMap.immutable of type bool"
    );
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
