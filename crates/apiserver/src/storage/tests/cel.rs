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
                        // Bounded as Gateway API bounds them: unbounded, the O(n²) rule
                        // below is over the cost budget and the CRD is refused.
                        "listeners": {
                            "type": "array",
                            "maxItems": 64,
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
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    );
    assert_eq!(causes[0]["reason"], "FieldValueInvalid");
    let msg = causes[0]["message"].as_str().unwrap();
    assert!(
        msg.starts_with(r#"Invalid value: apiextensions.ValidationRule{Rule:"self.minReplicas <=", Message:"", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:20: Syntax error: mismatched input '<EOF>' expecting "#),
        "{msg}"
    );
    assert!(
        err.message.starts_with(
            r#"CustomResourceDefinition.apiextensions.k8s.io "machinepools.example.com" is invalid: spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: "#
        ),
        "{}",
        err.message
    );
    assert!(s.resolve("example.com", "v1", "machinepools").is_none());
}

/// A CRD whose rules use Kubernetes' quantity, url, ip/cidr and format libraries, in the
/// shapes Cluster API (machine resources, pod CIDRs) and Gateway API (hostnames, URLs)
/// publish.
fn network_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "networks.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "networks", "kind": "Network"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "object",
                    "x-kubernetes-validations": [{
                        "rule": "quantity(self.memoryRequest).compareTo(quantity(self.memoryLimit)) <= 0",
                        "message": "memoryRequest must not exceed memoryLimit",
                    }],
                    "properties": {
                        "memoryRequest": {"type": "string", "x-kubernetes-validations": [
                            {"rule": "isQuantity(self)", "message": "must be a quantity"}]},
                        "memoryLimit": {"type": "string"},
                        "podCIDR": {"type": "string", "x-kubernetes-validations": [
                            {"rule": "isCIDR(self) && cidr(self).ip().family() == 4",
                             "message": "must be an IPv4 CIDR"}]},
                        "gateway": {"type": "string", "x-kubernetes-validations": [{
                            "rule": "isIP(self) && cidr('10.0.0.0/8').containsIP(self)",
                            "messageExpression": "'gateway ' + self + ' is outside 10.0.0.0/8'"}]},
                        "endpoint": {"type": "string", "x-kubernetes-validations": [{
                            "rule": "isURL(self) && url(self).getScheme() == 'https'",
                            "message": "must be an https URL"}]},
                        // Bounded: a named format's check of an unbounded string is over
                        // the cost budget. A list the expression computes has no bound on its
                        // strings, so the message is the first error, not all of them joined.
                        "hostname": {"type": "string", "maxLength": 253, "x-kubernetes-validations": [{
                            "rule": "!format.dns1123Subdomain().validate(self).hasValue()",
                            "messageExpression": "format.dns1123Subdomain().validate(self).value()[0]"}]},
                    },
                }}}},
            }],
        },
    })
}

#[test]
fn kubernetes_cel_libraries_in_crd_rules() {
    let s = store();
    let crds = res(&s, "apiextensions.k8s.io", "customresourcedefinitions");
    s.create(&crds, None, network_crd(), &w()).unwrap();
    let nets = s.resolve("example.com", "v1", "networks").unwrap();
    let net = |name: &str, spec: Value| {
        json!({"apiVersion": "example.com/v1", "kind": "Network",
               "metadata": {"name": name}, "spec": spec})
    };
    let valid = json!({"memoryRequest": "512Mi", "memoryLimit": "1Gi", "podCIDR": "192.168.0.0/16",
                       "gateway": "10.1.2.3", "endpoint": "https://example.com:8443/api",
                       "hostname": "api.example.com"});
    s.create(&nets, Some("default"), net("good", valid.clone()), &w())
        .unwrap();

    let mut bad = valid.clone();
    bad["memoryRequest"] = json!("2Gi");
    bad["podCIDR"] = json!("fd00::/8");
    bad["gateway"] = json!("192.168.1.1");
    bad["endpoint"] = json!("http://example.com");
    bad["hostname"] = json!("Not_A_Host");
    let err = fails_unchanged(&s, 422, || {
        s.create(&nets, Some("default"), net("bad", bad), &w())
    });
    let causes: Vec<(String, String)> = err.details.as_ref().unwrap()["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap().to_string(),
                c["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        (
            "spec",
            r#"Invalid value: "object": memoryRequest must not exceed memoryLimit"#,
        ),
        (
            "spec.endpoint",
            r#"Invalid value: "string": must be an https URL"#,
        ),
        (
            "spec.gateway",
            r#"Invalid value: "string": gateway 192.168.1.1 is outside 10.0.0.0/8"#,
        ),
        (
            "spec.hostname",
            "Invalid value: \"string\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
        (
            "spec.podCIDR",
            r#"Invalid value: "string": must be an IPv4 CIDR"#,
        ),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(f, m)| (f.to_string(), m.to_string()))
        .collect();
    assert_eq!(causes, want);

    // A value the library cannot parse fails the rule through an evaluation error.
    let mut unparsable = valid;
    unparsable["memoryLimit"] = json!("lots");
    let err = fails_unchanged(&s, 422, || {
        s.create(&nets, Some("default"), net("unparsable", unparsable), &w())
    });
    assert!(
        err.message
            .contains("quantities must match the regular expression"),
        "{}",
        err.message
    );
}

/// A CRD `tags.example.com` whose spec carries `rule` over a list of strings.
fn tags_crd(list: Value, rule: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "tags.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "tags", "kind": "Tag"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "object",
                    "properties": {"replicas": {"type": "integer"}, "tags": list},
                    "x-kubernetes-validations": [{"rule": rule}],
                }}}},
            }],
        },
    })
}

const TAGS_RULE: &str =
    "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule";

#[test]
fn a_crd_with_a_rule_that_does_not_type_check_is_refused() {
    let s = store();
    let crds = res(&s, "apiextensions.k8s.io", "customresourcedefinitions");
    let list =
        json!({"type": "array", "maxItems": 8, "items": {"type": "string", "maxLength": 16}});
    for (rule, detail) in [
        (
            "self.replica > 0",
            "compilation failed: ERROR: <input>:1:5: undefined field 'replica'\n | self.replica > 0\n | ....^",
        ),
        (
            "self.replicas + self.tags[0] > 0",
            "compilation failed: ERROR: <input>:1:15: found no matching overload for '_+_' applied to '(int, string)'\n | self.replicas + self.tags[0] > 0\n | ..............^",
        ),
        ("self.tags.size()", "cel expression must evaluate to a bool"),
    ] {
        let bad = tags_crd(list.clone(), rule);
        let err = fails_unchanged(&s, 422, || s.create(&crds, None, bad, &w()));
        assert_eq!(err.reason, "Invalid");
        let causes = &err.details.as_ref().unwrap()["causes"];
        assert_eq!(causes.as_array().unwrap().len(), 1, "{causes}");
        assert_eq!(causes[0]["field"], TAGS_RULE);
        assert_eq!(causes[0]["reason"], "FieldValueInvalid");
        let want = format!(
            "Invalid value: apiextensions.ValidationRule{{Rule:{rule:?}, Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}: {detail}"
        );
        assert_eq!(causes[0]["message"], want.as_str());
        assert_eq!(
            err.message,
            format!(
                "CustomResourceDefinition.apiextensions.k8s.io \"tags.example.com\" is invalid: {TAGS_RULE}: {want}"
            )
        );
    }
    // Fixed, the CRD installs and its rule runs.
    let fixed = tags_crd(list, "self.replicas > 0 && self.tags.all(t, t.size() > 1)");
    s.create(&crds, None, fixed, &w()).unwrap();
    let tags = s.resolve("example.com", "v1", "tags").unwrap();
    let tag = |spec: Value| {
        json!({"apiVersion": "example.com/v1", "kind": "Tag",
               "metadata": {"name": "t", "namespace": "default"}, "spec": spec})
    };
    let err = s
        .create(
            &tags,
            Some("default"),
            tag(json!({"replicas": 1, "tags": ["a"]})),
            &w(),
        )
        .unwrap_err();
    assert_eq!(err.code, 422);
    s.create(
        &tags,
        Some("default"),
        tag(json!({"replicas": 1, "tags": ["ab"]})),
        &w(),
    )
    .unwrap();
}

#[test]
fn a_crd_with_a_rule_over_the_cost_budget_is_refused() {
    let s = store();
    let crds = res(&s, "apiextensions.k8s.io", "customresourcedefinitions");
    let rule = "self.tags.all(x, x.matches('^[a-z]+$'))";
    let hint = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";
    let unbounded = json!({"type": "array", "items": {"type": "string"}});
    let err = fails_unchanged(&s, 422, || {
        s.create(&crds, None, tags_crd(unbounded, rule), &w())
    });
    assert_eq!(err.reason, "Invalid");
    let causes = &err.details.as_ref().unwrap()["causes"];
    assert_eq!(
        causes,
        &json!([
            {"field": TAGS_RULE, "reason": "FieldValueForbidden",
             "message": format!("Forbidden: estimated rule cost exceeds budget by factor of more than 100x {hint}")},
            {"field": TAGS_RULE, "reason": "FieldValueForbidden",
             "message": "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"},
            {"field": "spec.validation.openAPIV3Schema", "reason": "FieldValueForbidden",
             "message": format!("Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {hint}")},
        ])
    );
    assert!(s.resolve("example.com", "v1", "tags").is_none());
    // With maxItems and maxLength the same rule fits the budget.
    let bounded = json!({"type": "array", "maxItems": 32,
                         "items": {"type": "string", "maxLength": 63}});
    s.create(&crds, None, tags_crd(bounded, rule), &w())
        .unwrap();
    assert!(s.resolve("example.com", "v1", "tags").is_some());
}
