//! CRD validation rules (`x-kubernetes-validations`) on custom-object writes, with CRDs
//! modelled on Cluster API and Gateway API.

use super::*;

/// A CRD `machinepools.example.com` (kind `MachinePool`), its spec guarded by CEL rules.
fn pool_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "machinepools.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "machinepools", "kind": "MachinePool"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "object",
                    "x-kubernetes-validations": [
                        {"rule": "self.minReplicas <= self.maxReplicas"},
                    ],
                    "properties": {
                        "minReplicas": {"type": "integer"},
                        "maxReplicas": {"type": "integer"},
                        "clusterName": {"type": "string", "x-kubernetes-validations": [
                            {"rule": "self == oldSelf", "message": "Value is immutable"}]},
                        "class": {"type": "string", "x-kubernetes-validations": [
                            {"rule": "self.matches('^[a-z]+$')"}]},
                        "listeners": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "required": ["name"], "properties": {
                                "name": {"type": "string"}, "port": {"type": "integer"}}},
                            "x-kubernetes-validations": [{
                                "rule": "self.all(l1, self.exists_one(l2, l1.port == l2.port))",
                                "message": "Listener port must be unique",
                                "reason": "FieldValueDuplicate",
                            }],
                        },
                    },
                }}}},
            }],
        },
    })
}

fn pool(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "MachinePool",
           "metadata": {"name": name}, "spec": spec})
}

fn install(s: &Storage) -> ResourceInfo {
    let crds = res(s, "apiextensions.k8s.io", "customresourcedefinitions");
    s.create(&crds, None, pool_crd(), &w()).unwrap();
    s.resolve("example.com", "v1", "machinepools").unwrap()
}

fn valid_spec() -> Value {
    json!({"minReplicas": 1, "maxReplicas": 3, "clusterName": "c1", "class": "small",
           "listeners": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]})
}

/// The 422 a rule failure answers, with one cause per `(field, reason, message)`.
fn assert_invalid(err: &ApiError, name: &str, causes: &[(&str, &str, &str)]) {
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"), "{err:?}");
    let joined: Vec<String> = causes.iter().map(|(f, _, m)| format!("{f}: {m}")).collect();
    let summary = match joined.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    assert_eq!(
        err.message,
        format!("MachinePool.example.com {name:?} is invalid: {summary}")
    );
    let want: Vec<Value> = causes
        .iter()
        .map(|(f, r, m)| json!({"field": f, "reason": r, "message": m}))
        .collect();
    let details = err.details.as_ref().expect("details");
    assert_eq!(details["causes"], Value::from(want));
    assert_eq!(details["kind"], "MachinePool");
    assert_eq!(details["group"], "example.com");
    assert_eq!(details["name"], name);
}

#[test]
fn valid_objects_pass_the_rules() {
    let s = store();
    let pools = install(&s);
    let created = s
        .create(&pools, Some("default"), pool("p", valid_spec()), &w())
        .unwrap();
    assert_eq!(created["spec"]["maxReplicas"], 3);
    let mut upd = created.clone();
    upd["spec"]["maxReplicas"] = json!(5);
    s.update(&pools, Some("default"), "p", None, upd, &w())
        .unwrap();
}

#[test]
fn a_failed_rule_is_a_422_naming_the_field() {
    let s = store();
    let pools = install(&s);
    let mut spec = valid_spec();
    spec["minReplicas"] = json!(5);
    spec["class"] = json!("Large");
    let err = fails_unchanged(&s, 422, || {
        s.create(&pools, Some("default"), pool("bad", spec), &w())
    });
    assert_invalid(
        &err,
        "bad",
        &[
            (
                "spec",
                "FieldValueInvalid",
                r#"Invalid value: "object": failed rule: self.minReplicas <= self.maxReplicas"#,
            ),
            (
                "spec.class",
                "FieldValueInvalid",
                r#"Invalid value: "string": failed rule: self.matches('^[a-z]+$')"#,
            ),
        ],
    );
    let mut dup = valid_spec();
    dup["listeners"][1]["port"] = json!(80);
    let err = fails_unchanged(&s, 422, || {
        s.create(&pools, Some("default"), pool("dup", dup), &w())
    });
    assert_invalid(
        &err,
        "dup",
        &[(
            "spec.listeners",
            "FieldValueDuplicate",
            r#"Duplicate value: "array""#,
        )],
    );
}

#[test]
fn transition_rules_on_update_patch_and_apply() {
    let s = store();
    let pools = install(&s);
    let created = s
        .create(&pools, Some("default"), pool("p", valid_spec()), &w())
        .unwrap();
    let immutable = [(
        "spec.clusterName",
        "FieldValueInvalid",
        r#"Invalid value: "string": Value is immutable"#,
    )];
    let mut upd = created.clone();
    upd["spec"]["clusterName"] = json!("c2");
    let err = fails_unchanged(&s, 422, || {
        s.update(&pools, Some("default"), "p", None, upd, &w())
    });
    assert_invalid(&err, "p", &immutable);
    let err = fails_unchanged(&s, 422, || {
        s.patch(
            &pools,
            Some("default"),
            "p",
            None,
            PatchType::Merge,
            br#"{"spec":{"clusterName":"c3"}}"#,
            &w(),
        )
    });
    assert_invalid(&err, "p", &immutable);
    let apply_opts = WriteOptions {
        field_manager: Some("m".into()),
        force: true,
        ..Default::default()
    };
    let config = br#"{"apiVersion":"example.com/v1","kind":"MachinePool","metadata":{"name":"p"},"spec":{"clusterName":"c4"}}"#;
    let err = fails_unchanged(&s, 422, || {
        s.patch(
            &pools,
            Some("default"),
            "p",
            None,
            PatchType::Apply,
            config,
            &apply_opts,
        )
    });
    assert_invalid(&err, "p", &immutable);
    // Apply creates too, and runs the non-transition rules then.
    let bad_new = br#"{"apiVersion":"example.com/v1","kind":"MachinePool","metadata":{"name":"q"},"spec":{"minReplicas":2,"maxReplicas":1}}"#;
    let err = fails_unchanged(&s, 422, || {
        s.patch(
            &pools,
            Some("default"),
            "q",
            None,
            PatchType::Apply,
            bad_new,
            &apply_opts,
        )
    });
    assert_invalid(
        &err,
        "q",
        &[(
            "spec",
            "FieldValueInvalid",
            r#"Invalid value: "object": failed rule: self.minReplicas <= self.maxReplicas"#,
        )],
    );
}

#[test]
fn an_unchanged_invalid_value_ratchets() {
    let s = store();
    // Store an object whose class breaks a rule added later to the CRD.
    let crds = res(&s, "apiextensions.k8s.io", "customresourcedefinitions");
    let mut lax = pool_crd();
    let props = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/class";
    *lax.pointer_mut(props).unwrap() = json!({"type": "string"});
    let crd = s.create(&crds, None, lax, &w()).unwrap();
    let pools = s.resolve("example.com", "v1", "machinepools").unwrap();
    let mut spec = valid_spec();
    spec["class"] = json!("Legacy");
    let created = s
        .create(&pools, Some("default"), pool("old", spec), &w())
        .unwrap();
    let mut strict = pool_crd();
    strict["metadata"] = crd["metadata"].clone();
    s.update(&crds, None, "machinepools.example.com", None, strict, &w())
        .unwrap();
    // Another field changes; the invalid class is kept as it was.
    let mut upd = created.clone();
    upd["spec"]["maxReplicas"] = json!(4);
    let updated = s
        .update(&pools, Some("default"), "old", None, upd, &w())
        .unwrap();
    assert_eq!(updated["spec"]["class"], "Legacy");
    // Changing it to another invalid value is refused.
    let mut upd = updated.clone();
    upd["spec"]["class"] = json!("Other");
    let err = fails_unchanged(&s, 422, || {
        s.update(&pools, Some("default"), "old", None, upd, &w())
    });
    assert_invalid(
        &err,
        "old",
        &[(
            "spec.class",
            "FieldValueInvalid",
            r#"Invalid value: "string": failed rule: self.matches('^[a-z]+$')"#,
        )],
    );
}

#[test]
fn a_crd_with_a_rule_that_does_not_compile_is_refused() {
    let s = store();
    let crds = res(&s, "apiextensions.k8s.io", "customresourcedefinitions");
    let mut bad = pool_crd();
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"]
        [0]["rule"] = json!("self.minReplicas <=");
    let err = fails_unchanged(&s, 422, || s.create(&crds, None, bad, &w()));
    assert_eq!(err.reason, "Invalid");
    let causes = &err.details.as_ref().unwrap()["causes"];
    assert_eq!(causes.as_array().unwrap().len(), 1, "{causes}");
    assert_eq!(
        causes[0]["field"],
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    );
    assert_eq!(causes[0]["reason"], "FieldValueInvalid");
    let msg = causes[0]["message"].as_str().unwrap();
    assert!(
        msg.starts_with(r#"Invalid value: apiextensions.ValidationRule{Rule:"self.minReplicas <=", Message:"", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:20: Syntax error: mismatched input '<EOF>' expecting "#),
        "{msg}"
    );
    assert!(
        err.message.starts_with(
            r#"CustomResourceDefinition.apiextensions.k8s.io "machinepools.example.com" is invalid: spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: "#
        ),
        "{}",
        err.message
    );
    assert!(s.resolve("example.com", "v1", "machinepools").is_none());
}
