//! Tests of the structural check, pruning, defaulting and validation.

use serde_json::{Value, json};

use super::StructuralSchema;
use crate::cel::parse;

fn schema(spec_props: Value) -> StructuralSchema {
    StructuralSchema::from_value(&json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": spec_props}}
    }))
    .unwrap()
}

/// The `path: message` lines for `spec` validated against `spec_props`.
fn errors(spec_props: Value, spec: Value) -> Vec<String> {
    schema(spec_props)
        .validate(&json!({"apiVersion": "v", "kind": "K", "metadata": {"name": "n"}, "spec": spec}))
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn assert_one(spec_props: Value, spec: Value, want: &str) {
    let got = errors(spec_props, spec);
    assert_eq!(got, [want.to_string()]);
}

fn assert_valid(spec_props: Value, spec: Value) {
    let got = errors(spec_props.clone(), spec.clone());
    assert!(got.is_empty(), "{spec} against {spec_props}: {got:?}");
}

#[test]
fn types() {
    let props = json!({"i": {"type": "integer"}, "n": {"type": "number"}, "s": {"type": "string"},
                       "b": {"type": "boolean"}, "o": {"type": "object"}, "a": {"type": "array", "items": {"type": "string"}}});
    assert_valid(
        props.clone(),
        json!({"i": 1, "n": 1.5, "s": "x", "b": true, "o": {}, "a": ["x"]}),
    );
    assert_valid(props.clone(), json!({"i": 2.0, "n": 3}));
    assert_one(
        props.clone(),
        json!({"i": "string"}),
        r#"spec.i: Invalid value: "string": spec.i in body must be of type integer: "string""#,
    );
    assert_one(
        props.clone(),
        json!({"i": 1.5}),
        r#"spec.i: Invalid value: "number": spec.i in body must be of type integer: "number""#,
    );
    assert_one(
        props.clone(),
        json!({"s": 1}),
        r#"spec.s: Invalid value: "integer": spec.s in body must be of type string: "integer""#,
    );
    assert_one(
        props.clone(),
        json!({"b": "true"}),
        r#"spec.b: Invalid value: "string": spec.b in body must be of type boolean: "string""#,
    );
    assert_one(
        props.clone(),
        json!({"o": []}),
        r#"spec.o: Invalid value: "array": spec.o in body must be of type object: "array""#,
    );
    assert_one(
        props.clone(),
        json!({"a": [1]}),
        r#"spec.a[0]: Invalid value: "integer": spec.a[0] in body must be of type string: "integer""#,
    );
    assert_one(
        props,
        json!({"s": null}),
        r#"spec.s: Invalid value: "null": spec.s in body must be of type string: "null""#,
    );
    assert_valid(
        json!({"s": {"type": "string", "nullable": true}}),
        json!({"s": null}),
    );
}

#[test]
fn required_enum_and_bounds() {
    let props = json!({"r": {"type": "object", "required": ["x", "y"], "properties": {"x": {"type": "string"}, "y": {"type": "string"}}}});
    assert_eq!(
        errors(props, json!({"r": {}})),
        ["spec.r.x: Required value", "spec.r.y: Required value"]
    );
    let props = json!({"e": {"type": "string", "enum": ["a", "b"]}});
    assert_one(
        props.clone(),
        json!({"e": "x"}),
        r#"spec.e: Unsupported value: "x": supported values: "a", "b""#,
    );
    assert_valid(props, json!({"e": "b"}));
    let props = json!({"n": {"type": "integer", "minimum": 1, "maximum": 10},
                       "x": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1, "exclusiveMaximum": true}});
    assert_valid(props.clone(), json!({"n": 10, "x": 0.5}));
    assert_one(
        props.clone(),
        json!({"n": 0}),
        "spec.n: Invalid value: 0: spec.n in body should be greater than or equal to 1",
    );
    assert_one(
        props.clone(),
        json!({"n": 11}),
        "spec.n: Invalid value: 11: spec.n in body should be less than or equal to 10",
    );
    assert_one(
        props.clone(),
        json!({"x": 0}),
        "spec.x: Invalid value: 0: spec.x in body should be greater than 0",
    );
    assert_one(
        props,
        json!({"x": 1}),
        "spec.x: Invalid value: 1: spec.x in body should be less than 1",
    );
    let props = json!({"e": {"type": "integer", "enum": [1, 2]}, "m": {"type": "number", "multipleOf": 0.5}});
    assert_one(
        props.clone(),
        json!({"e": 3}),
        r#"spec.e: Unsupported value: 3: supported values: "1", "2""#,
    );
    assert_valid(props.clone(), json!({"e": 1, "m": 1.5}));
    assert_one(
        props,
        json!({"m": 1.2}),
        "spec.m: Invalid value: 1.2: spec.m in body should be a multiple of 0.5",
    );
    let props =
        json!({"s": {"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^[a-z]+$"}});
    assert_valid(props.clone(), json!({"s": "abc"}));
    assert_one(
        props.clone(),
        json!({"s": "a"}),
        r#"spec.s: Invalid value: "a": spec.s in body should be at least 2 chars long"#,
    );
    assert_one(
        props.clone(),
        json!({"s": "abcd"}),
        "spec.s: Too long: may not be more than 3 bytes",
    );
    assert_one(
        props,
        json!({"s": "AB"}),
        r#"spec.s: Invalid value: "AB": spec.s in body should match '^[a-z]+$'"#,
    );
}

#[test]
fn formats_and_int_or_string() {
    let props = json!({"t": {"type": "string", "format": "date-time"}, "i": {"type": "integer", "format": "int32"},
                       "p": {"x-kubernetes-int-or-string": true}});
    assert_valid(
        props.clone(),
        json!({"t": "2024-01-01T00:00:00Z", "i": 5, "p": 80}),
    );
    assert_valid(props.clone(), json!({"p": "http"}));
    assert_one(
        props.clone(),
        json!({"t": "soon"}),
        r#"spec.t: Invalid value: "soon": spec.t in body must be of type date-time: "soon""#,
    );
    assert_one(
        props.clone(),
        json!({"i": 4294967296_i64}),
        "spec.i: Invalid value: 4294967296: spec.i in body must be of type int32: 4294967296",
    );
    assert_one(
        props,
        json!({"p": true}),
        r#"spec.p: Invalid value: "boolean": spec.p in body must be of type integer,string: "boolean""#,
    );
}

#[test]
fn property_counts() {
    let props = json!({
        "m": {"type": "object", "minProperties": 1, "maxProperties": 2,
              "additionalProperties": {"type": "string"}}
    });
    assert_valid(props.clone(), json!({"m": {"a": "1"}}));
    assert_one(
        props.clone(),
        json!({"m": {}}),
        "spec.m: Invalid value: 0: spec.m in body should have at least 1 properties",
    );
    assert_one(
        props,
        json!({"m": {"a": "1", "b": "2", "c": "3"}}),
        "spec.m: Too many: 3: must have at most 2 items",
    );
}

#[test]
fn arrays_and_list_types() {
    let props = json!({
        "a": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string"}},
        "u": {"type": "array", "uniqueItems": true, "items": {"type": "integer"}},
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}}
    });
    assert_valid(
        props.clone(),
        json!({"a": ["x"], "u": [1, 2], "set": ["a", "b"], "map": [{"name": "a", "v": 1}, {"name": "b", "v": 1}]}),
    );
    assert_one(
        props.clone(),
        json!({"a": []}),
        "spec.a: Invalid value: 0: spec.a in body should have at least 1 items",
    );
    assert_one(
        props.clone(),
        json!({"a": ["1", "2", "3"]}),
        "spec.a: Too many: 3: must have at most 2 items",
    );
    assert_one(
        props.clone(),
        json!({"u": [1, 2, 1]}),
        "spec.u[2]: Duplicate value: 1",
    );
    assert_one(
        props.clone(),
        json!({"set": ["a", "a"]}),
        r#"spec.set[1]: Duplicate value: "a""#,
    );
    assert_one(
        props,
        json!({"map": [{"name": "a", "v": 1}, {"name": "a", "v": 2}]}),
        r#"spec.map[1]: Duplicate value: {"name":"a"}"#,
    );
}

#[test]
fn additional_properties_and_junctors() {
    let props = json!({"m": {"type": "object", "additionalProperties": {"type": "integer"}},
                       "any": {"type": "string", "anyOf": [{"pattern": "^a"}, {"pattern": "^b"}]},
                       "not": {"type": "string", "not": {"enum": ["x"]}}});
    assert_valid(
        props.clone(),
        json!({"m": {"a": 1, "b": 2}, "any": "bee", "not": "y"}),
    );
    assert_one(
        props.clone(),
        json!({"m": {"a": "x"}}),
        r#"spec.m.a: Invalid value: "string": spec.m.a in body must be of type integer: "string""#,
    );
    // A junctor's own error names no field (upstream's `field.Invalid` at the root, of value
    // ""), the value's path quoted in its message; the failing branch's errors follow.
    assert_eq!(
        errors(props.clone(), json!({"any": "c"})),
        [
            r#"Invalid value: "": "spec.any" must validate at least one schema (anyOf)"#,
            r#"spec.any: Invalid value: "c": spec.any in body should match '^a'"#,
        ]
    );
    assert_one(
        props,
        json!({"not": "x"}),
        r#"Invalid value: "": "spec.not" must not validate the schema (not)"#,
    );
}

/// The errors of `spec` as `(field, reason, message)`.
fn causes(spec_props: Value, spec: Value) -> Vec<(String, String, String)> {
    schema(spec_props)
        .validate(&json!({"apiVersion": "v", "kind": "K", "metadata": {"name": "n"}, "spec": spec}))
        .into_iter()
        .map(|e| (e.path, e.reason.to_string(), e.message))
        .collect()
}

fn cause(field: &str, message: &str) -> (String, String, String) {
    (field.into(), "FieldValueInvalid".into(), message.into())
}

#[test]
fn one_of_reports_why_no_branch_held() {
    // An address is an IPv4 or an IPv6 address: a value that is neither fails both branches,
    // and the first (of equal weight) is the one reported, beside the oneOf error.
    let props = json!({"addresses": {"type": "array", "items": {"type": "object",
        "properties": {"type": {"type": "string"}, "value": {"type": "string"}},
        "oneOf": [{"properties": {"value": {"format": "ipv4"}}},
                  {"properties": {"value": {"format": "ipv6"}}}]}}});
    assert_valid(
        props.clone(),
        json!({"addresses": [{"value": "10.0.0.1"}, {"value": "fd00::1"}]}),
    );
    assert_eq!(
        causes(
            props.clone(),
            json!({"addresses": [{"value": "10.0.0.1"}, {"value": "gw"}]})
        ),
        [
            cause(
                "",
                r#"Invalid value: "": "spec.addresses[1]" must validate one and only one schema (oneOf). Found none valid"#
            ),
            cause(
                "spec.addresses[1].value",
                r#"Invalid value: "gw": spec.addresses[1].value in body must be of type ipv4: "gw""#
            ),
        ]
    );
    // Two branches holding: only the oneOf error, with their count.
    let props = json!({"port": {"type": "integer",
        "oneOf": [{"minimum": 1}, {"maximum": 1000}, {"multipleOf": 2}]}});
    assert_eq!(
        causes(props.clone(), json!({"port": 80})),
        [cause(
            "",
            r#"Invalid value: "": "spec.port" must validate one and only one schema (oneOf). Found 3 valid alternatives"#
        )]
    );
    assert_eq!(
        causes(props.clone(), json!({"port": 2000})),
        [cause(
            "",
            r#"Invalid value: "": "spec.port" must validate one and only one schema (oneOf). Found 2 valid alternatives"#
        )]
    );
    assert_valid(props, json!({"port": 1001}));
}

#[test]
fn one_of_reports_the_branch_with_the_most_checks() {
    // Exactly one of `uri` or `secret`: the second branch checks more of the value (a
    // property's own schema), so its errors are the ones reported.
    let props = json!({"source": {"type": "object",
        "properties": {"uri": {"type": "string"}, "secret": {"type": "string"}},
        "oneOf": [{"required": ["uri"]},
                  {"required": ["secret"], "properties": {"secret": {"minLength": 3}}}]}});
    assert_valid(props.clone(), json!({"source": {"uri": "https://x"}}));
    assert_eq!(
        causes(props.clone(), json!({"source": {"secret": "ab"}})),
        [
            cause(
                "",
                r#"Invalid value: "": "spec.source" must validate one and only one schema (oneOf). Found none valid"#
            ),
            cause(
                "spec.source.secret",
                r#"Invalid value: "ab": spec.source.secret in body should be at least 3 chars long"#
            ),
        ]
    );
    // Neither set: both branches weigh the same, the first one's `Required value` is shown.
    let errs = causes(props, json!({"source": {}}));
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert_eq!(errs[1].0, "spec.source.uri");
    assert_eq!(errs[1].1, "FieldValueRequired");
}

#[test]
fn any_of_and_all_of_report_their_branches() {
    let props = json!({"name": {"type": "string",
        "anyOf": [{"maxLength": 3}, {"pattern": "^x-"}],
        "allOf": [{"minLength": 2}, {"pattern": "^[a-z-]+$"}]}});
    assert_valid(props.clone(), json!({"name": "abc"}));
    assert_valid(props.clone(), json!({"name": "x-long-name"}));
    assert_eq!(
        causes(props.clone(), json!({"name": "LONGER"})),
        [
            cause(
                "",
                r#"Invalid value: "": "spec.name" must validate at least one schema (anyOf)"#
            ),
            (
                "spec.name".into(),
                "FieldValueTooLong".into(),
                "Too long: may not be more than 3 bytes".into()
            ),
            cause(
                "spec.name",
                r#"Invalid value: "LONGER": spec.name in body should match '^[a-z-]+$'"#
            ),
            cause(
                "",
                r#"Invalid value: "": "spec.name" must validate all the schemas (allOf)"#
            ),
        ]
    );
    let errs = causes(props, json!({"name": "A"}));
    assert_eq!(
        errs.last().unwrap().2,
        r#"Invalid value: "": "spec.name" must validate all the schemas (allOf). None validated"#,
        "{errs:?}"
    );
}

#[test]
fn pruning() {
    let s = StructuralSchema::from_value(&json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {
                "known": {"type": "string"},
                "nested": {"type": "object", "properties": {"a": {"type": "string"}}},
                "list": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"p": {"type": "object", "properties": {}}}},
                "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "embedded": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}}
            }}
        }
    }))
    .unwrap();
    let mut obj = json!({
        "apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n", "labels": {"a": "b"}},
        "unknownTop": 1,
        "spec": {
            "known": "k", "unknown": 1,
            "nested": {"a": "a", "b": "b"},
            "list": [{"a": "a", "b": "b"}],
            "free": {"anything": {"deep": 1}, "p": {"gone": 1}},
            "map": {"k": {"a": "a", "b": "b"}},
            "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": 1}, "extra": 1}
        }
    });
    s.prune(&mut obj);
    assert_eq!(
        obj,
        json!({
            "apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n", "labels": {"a": "b"}},
            "spec": {
                "known": "k",
                "nested": {"a": "a"},
                "list": [{"a": "a"}],
                "free": {"anything": {"deep": 1}, "p": {}},
                "map": {"k": {"a": "a"}},
                "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
            }
        })
    );
    // An embedded resource must say what it is.
    let errs = s.validate(&json!({"spec": {"embedded": {"spec": {}}}}));
    let errs: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(
        errs,
        [
            "spec.embedded.apiVersion: Required value: must not be empty",
            "spec.embedded.kind: Required value: must not be empty"
        ]
    );
    // Its metadata is ObjectMeta, checked as such (its name is optional).
    let errs = s.validate(
        &json!({"spec": {"embedded": {"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "a/b", "labels": {"-x-": "1"}, "annotations": {"ok": "1"}}}}}),
    );
    let errs: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert_eq!(
        errs[0],
        r#"spec.embedded.metadata.name: Invalid value: "a/b": may not contain '/'"#
    );
    assert!(
        errs[1].starts_with(r#"spec.embedded.metadata.labels: Invalid value: "-x-": name part must consist of alphanumeric characters"#),
        "{errs:?}"
    );
    // Preserving at the root keeps everything.
    let free = StructuralSchema::from_value(
        &json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    )
    .unwrap();
    let mut obj = json!({"a": {"b": 1}});
    free.prune(&mut obj);
    assert_eq!(obj, json!({"a": {"b": 1}}));
}

#[test]
fn defaulting() {
    let s = schema(json!({
        "replicas": {"type": "integer", "default": 1},
        "mode": {"type": "string", "nullable": true, "default": "a"},
        "strategy": {"type": "object", "default": {}, "properties": {"type": {"type": "string", "default": "Rolling"}}},
        "items": {"type": "array", "items": {"type": "object", "properties": {"w": {"type": "integer", "default": 5}}}}
    }));
    let mut obj = json!({"spec": {"items": [{}, {"w": 2}], "replicas": null, "mode": null}});
    s.apply_defaults(&mut obj);
    assert_eq!(
        obj["spec"]["replicas"], 1,
        "a null non-nullable field is defaulted"
    );
    assert_eq!(
        obj["spec"]["mode"],
        Value::Null,
        "a null nullable field is kept"
    );
    assert_eq!(
        obj["spec"]["strategy"],
        json!({"type": "Rolling"}),
        "defaults apply inside defaults"
    );
    assert_eq!(obj["spec"]["items"], json!([{"w": 5}, {"w": 2}]));
    let mut empty = json!({});
    s.apply_defaults(&mut empty);
    assert_eq!(empty, json!({}), "no spec, nothing to default below it");
}

#[test]
fn non_structural_schemas_are_rejected() {
    let cases = [
        (
            json!({"type": "object", "properties": {"spec": {"properties": {}}}}),
            "properties[spec].type: Required value: must not be empty for specified object fields",
        ),
        (
            json!({"type": "object", "properties": {"l": {"type": "array"}}}),
            "properties[l].items: Required value: must be specified",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}),
            "additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
        ),
        (
            json!({"type": "object", "properties": {"p": {"type": "string", "x-kubernetes-int-or-string": true}}}),
            "properties[p].type: Invalid value: \"string\": must be empty to be structural if x-kubernetes-int-or-string is true",
        ),
        (
            json!({"type": "object", "properties": {"p": {"type": "strin"}}}),
            "properties[p].type: Unsupported value: \"strin\": supported values: \"object\", \"array\", \"string\", \"integer\", \"number\", \"boolean\"",
        ),
        (
            json!({"type": "object", "properties": {"p": {"type": "string", "pattern": "("}}}),
            "properties[p].pattern: Invalid value: \"(\": must be a valid regular expression",
        ),
        (
            json!({"type": "object", "properties": {"p": {"$ref": "#/x"}}}),
            "properties[p].$ref: Forbidden: $ref is not supported",
        ),
        (
            json!({"type": "object", "properties": {"l": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}}}),
            "properties[l].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
        ),
        (
            json!({"type": "object", "properties": {"e": {"type": "string", "x-kubernetes-embedded-resource": true}}}),
            "properties[e].type: Invalid value: \"string\": must be object if x-kubernetes-embedded-resource is true",
        ),
        (
            json!({"type": "string"}),
            "type: Invalid value: \"string\": must be object at the root",
        ),
        (
            json!({"properties": {}}),
            "type: Required value: must not be empty at the root",
        ),
        (
            json!("nope"),
            "Invalid value: \"nope\": must be a schema object",
        ),
        (
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"n": {"type": "integer", "default": "one"}}}}}),
            "properties[spec].properties[n].default: Invalid value: \"string\": spec.n in body must be of type integer: \"string\"",
        ),
        (
            json!({"type": "object", "properties": {"o": {"type": "object", "default": {"x": 1}, "properties": {"y": {"type": "integer"}}}}}),
            "properties[o].default: Invalid value: {\"x\":1}: must not have unknown fields",
        ),
    ];
    for (s, want) in cases {
        let err = StructuralSchema::from_value(&s).unwrap_err();
        assert!(
            err.to_string().contains(want),
            "{s}: got {err}, want {want}"
        );
    }
    // Preserve-unknown and int-or-string nodes need no type.
    StructuralSchema::from_value(&json!({"type": "object", "properties": {
        "a": {"x-kubernetes-preserve-unknown-fields": true},
        "b": {"x-kubernetes-int-or-string": true}}}))
    .unwrap();
}

#[test]
fn metadata_is_not_validated_or_pruned_by_the_schema() {
    let s = schema(json!({}));
    let obj = json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": 5}});
    assert!(s.validate(&obj).is_empty());
}

/// controller-gen writes `metadata: {type: object}` at the root of every CRD it generates (and
/// in every embedded pod template). The object keeps its whole `ObjectMeta`; only fields
/// `ObjectMeta` does not have are pruned, and reported under `metadata.`.
#[test]
fn a_root_metadata_of_type_object_keeps_the_object_meta() {
    let s = StructuralSchema::from_value(&json!({"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {"type": "object", "properties": {"template": {
            "type": "object", "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"metadata": {"type": "object"}}}}}}}))
    .unwrap();
    let meta = json!({"name": "n", "namespace": "default", "generateName": "n-",
        "labels": {"app": "x"}, "annotations": {"a": "b"}, "creationTimestamp": null,
        "finalizers": ["example.com/f"], "resourceVersion": "7", "uid": "u",
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u2"}],
        "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "x/v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]});
    let mut obj = json!({"apiVersion": "x/v1", "kind": "K", "metadata": meta.clone(),
        "spec": {"template": {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "b"}}}}});
    let before = obj.clone();
    assert_eq!(s.prune_reporting(&mut obj), Vec::<String>::new());
    assert_eq!(obj, before, "nothing of ObjectMeta is pruned");
    assert!(s.validate(&obj).is_empty(), "{:?}", s.validate(&obj));

    obj["metadata"]["colour"] = json!("red");
    obj["spec"]["template"]["metadata"]["shade"] = json!(1);
    assert_eq!(
        s.prune_reporting(&mut obj),
        ["metadata.colour", "spec.template.metadata.shade"]
    );
    assert_eq!(obj, before, "only the fields ObjectMeta lacks are dropped");
}

/// At the root a schema may constrain `metadata.name` and `metadata.generateName`, and the
/// constraints apply.
#[test]
fn a_root_metadata_schema_constrains_the_name() {
    let s = StructuralSchema::from_value(&json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"}}}}}))
    .unwrap();
    let obj = |name: &str| json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": name, "labels": {"a": "b"}}});
    assert!(s.validate(&obj("abc")).is_empty());
    let errs: Vec<String> = s
        .validate(&obj("abcdef9"))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errs,
        [
            r#"metadata.name: Too long: may not be more than 5 bytes"#,
            r#"metadata.name: Invalid value: "abcdef9": metadata.name in body should match '^[a-z]+$'"#,
        ]
    );
}

/// The structural rules on resource fields (upstream's `validateStructuralInvariants` and
/// `validateStructuralMetadataInvariants`), with upstream's paths and messages.
#[test]
fn resource_fields_are_restricted_in_the_schema() {
    let refused = |schema: Value| -> Vec<String> {
        StructuralSchema::from_value(&schema)
            .unwrap_err()
            .errors
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    assert_eq!(
        refused(json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}})),
        [
            "properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
        ]
    );
    assert_eq!(
        refused(json!({"type": "object", "properties": {
            "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})),
        [
            "properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
        ]
    );
    assert_eq!(
        refused(json!({"type": "object", "properties": {"metadata": {"type": "string"}}})),
        [r#"properties[metadata].type: Invalid value: "string": must be object"#]
    );
    assert_eq!(
        refused(json!({"type": "object", "properties": {"kind": {"type": "integer"}}})),
        [r#"properties[kind].type: Invalid value: "integer": must be string"#]
    );
    assert_eq!(
        refused(
            json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"metadata": {"type": "object"}},
            "anyOf": [{"properties": {"metadata": {"required": ["name"]}}}]}}})
        ),
        [
            "properties[spec].anyOf[0].properties[metadata]: Forbidden: must not be specified in a nested context"
        ]
    );
    // Accepted: name and generateName constraints at the root; anything below a non-resource
    // field called metadata; an embedded resource's metadata with properties.
    for ok in [
        json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 63}, "generateName": {"type": "string"}}}}}),
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"labels": {"type": "object",
                "additionalProperties": {"type": "string"}}}}}}}}),
        json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-embedded-resource": true, "properties": {
                "metadata": {"type": "object", "properties": {"labels": {"type": "object",
                    "additionalProperties": {"type": "string"}}}}}}}}),
    ] {
        StructuralSchema::from_value(&ok).unwrap();
    }
}

/// Found by fuzzing (crates/fuzz, target `crd_schema`): a rule of a thousand-term sum parsed
/// (the parser limits parentheses, not chains) and then overflowed the type checker's stack,
/// aborting the process. It is refused as cel-go refuses it, past 250 levels.
#[test]
fn a_rule_nested_past_the_depth_limit_is_refused_without_overflowing_the_stack() {
    let schema = |terms: usize| {
        json!({"type": "object", "x-kubernetes-validations": [
            {"rule": format!("1{} > 0", " + 1".repeat(terms))}]})
    };
    let err = StructuralSchema::from_value(&schema(1000)).unwrap_err();
    let message = &err.errors[0].message;
    assert!(
        message
            .contains("compilation failed: ERROR: <input>:1:1: max recursion depth exceeded: 250"),
        "{message}"
    );
    let ok = StructuralSchema::from_value(&schema(200)).unwrap();
    assert!(ok.validate(&json!({})).is_empty());
}

/// Found by fuzzing: a rule of 20,000 terms (80 KB) overflowed the stack inside the cel
/// crate's parser, before the depth check; a syntax error past column 65,535 panicked in the
/// cel crate's display of it. Now the first is refused as cel-go refuses it, the second is
/// reported, and a rule over cel-go's 100,000 code points is refused before parsing.
#[test]
fn long_rules_are_refused_with_upstreams_errors_without_overflowing_the_stack() {
    let rule = |src: String| {
        let schema = json!({"type": "object", "x-kubernetes-validations": [{"rule": src}]});
        let err = StructuralSchema::from_value(&schema).unwrap_err();
        err.errors[0].message.clone()
    };
    let deep = rule(format!("1{} > 0", " + 1".repeat(20_000)));
    assert!(
        deep.contains("compilation failed: ERROR: <input>:1:1: max recursion depth exceeded: 250"),
        "{}",
        &deep[..200]
    );
    let late = rule(format!("{}1 )", "1+".repeat(33_000)));
    assert!(
        late.contains("compilation failed: ERROR: <input>:1:66003: Syntax error: extraneous input ')' expecting <EOF>"),
        "{}",
        late.lines()
            .filter(|l| l.contains("ERROR"))
            .map(|l| &l[l.find("ERROR").unwrap()..])
            .collect::<Vec<_>>()
            .join("; ")
    );
    let large = rule(format!("'{}'", "é".repeat(99_999)));
    assert!(
        large.contains(
            "compilation failed: ERROR: <input>:-1:0: expression code point size exceeds limit: size: 100001, limit 100000"
        ),
        "{}",
        &large[..200]
    );
    // At the limit, counted in code points (200,000 bytes), it compiles.
    let at_limit = json!({"type": "object", "x-kubernetes-validations": [
        {"rule": format!("'{}' != ''", "é".repeat(99_992))}]});
    assert!(StructuralSchema::from_value(&at_limit).is_ok());
}

/// Every kind of nesting at cel-go's size limit compiles or is refused; none overflows.
#[test]
fn the_deepest_rules_within_the_size_limit_do_not_overflow_the_stack() {
    let depth = "compilation failed: ERROR: <input>:1:1: max recursion depth exceeded: 250";
    for (kind, src) in deepest_sources() {
        let schema = json!({"type": "object", "x-kubernetes-validations": [{"rule": src}]});
        let outcome = match StructuralSchema::from_value(&schema) {
            Ok(_) => "compiles".to_string(),
            Err(e) if e.errors[0].message.contains(depth) => "too deep".to_string(),
            Err(e)
                if e.errors[0]
                    .message
                    .contains("Recursion limit of 96 exceeded") =>
            {
                "too deep for the parser".to_string()
            }
            Err(e) if e.errors[0].message.contains("compilation failed:") => {
                "does not compile".to_string()
            }
            // `---...1` and a string are not booleans: refused by the type check.
            Err(e) => e.errors[0].message.chars().take(200).collect(),
        };
        let expected = match kind {
            "and" | "not" => "compiles",
            "sum" | "product" | "comparison" | "select" | "index" | "method" => "too deep",
            "negate" | "string" => {
                assert!(outcome.contains("Invalid value:"), "{kind}: {outcome}");
                continue;
            }
            _ => "too deep for the parser",
        };
        assert_eq!(outcome, expected, "{kind}");
    }
}

/// The sources that nest deepest within cel-go's 100,000 code point limit, one per kind of
/// nesting: the chains the parser's own nesting limit does not count (`1 + 1 + ...`,
/// `self.a.a...`, indexes, method calls, comparisons, `!!!...`, `---...`), and those it does
/// (parentheses, lists, maps, calls).
pub(crate) fn deepest_sources() -> Vec<(&'static str, String)> {
    let n = parse::MAX_CODE_POINTS;
    let nest = |open: &str, inner: &str, close: &str| {
        let k = (n - inner.len()) / (open.len() + close.len());
        format!("{}{inner}{}", open.repeat(k), close.repeat(k))
    };
    vec![
        ("sum", format!("1{}", "+1".repeat((n - 1) / 2))),
        ("product", format!("1{}", "*1".repeat((n - 1) / 2))),
        ("comparison", format!("1{}", "<1".repeat((n - 1) / 2))),
        ("and", format!("true{}", "&&true".repeat((n - 4) / 6))),
        ("select", format!("self{}", ".a".repeat((n - 4) / 2))),
        ("index", format!("self{}", "[0]".repeat((n - 4) / 3))),
        ("method", format!("self{}", ".f()".repeat((n - 4) / 4))),
        ("not", format!("{}true", "!".repeat(n - 4))),
        ("negate", format!("{}1", "-".repeat(n - 1))),
        ("parens", nest("(", "1", ")")),
        ("negate-parens", nest("-(", "1", ")")),
        ("list", nest("[", "1", "]")),
        ("map", nest("{1:", "1", "}")),
        ("call", nest("f(", "1", ")")),
        ("ternary", format!("{}1", "true?1:".repeat((n - 1) / 7))),
        ("string", format!("'{}'", "a".repeat(n - 2))),
    ]
}

/// Measures the stack the parser needs for [`deepest_sources`]: `CEL_STACK_KB=<kb>
/// CEL_KIND=<kind> cargo test -p crt-apiserver --lib measure_parse_stack -- --ignored`
/// aborts when `kb` is too little.
#[test]
#[ignore = "a measurement, run by hand"]
fn measure_parse_stack() {
    let kb: usize = std::env::var("CEL_STACK_KB").unwrap().parse().unwrap();
    let kind = std::env::var("CEL_KIND").unwrap();
    let (_, src) = deepest_sources()
        .into_iter()
        .find(|(k, _)| *k == kind)
        .unwrap();
    let r = std::thread::Builder::new()
        .stack_size(kb << 10)
        .spawn(move || {
            parse::parse_checked(&src)
                .map(|p| parse::depth(p.expression()))
                .map_err(|e| {
                    (
                        e.len(),
                        e.lines().count(),
                        e.chars().take(200).collect::<String>(),
                    )
                })
        })
        .unwrap()
        .join()
        .unwrap();
    eprintln!("{kind}: {r:?}");
}
