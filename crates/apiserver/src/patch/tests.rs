//! Table tests of the three patch kinds, including upstream's documented examples.

use serde_json::{Value, json};

use super::{MergeKeys, PatchError, PatchKind, apply_patch};

fn smp(group: &str, kind: &str, original: Value, patch: Value) -> Result<Value, PatchError> {
    let keys = MergeKeys::builtin(group, kind);
    apply_patch(
        PatchKind::StrategicMerge,
        &original,
        patch.to_string().as_bytes(),
        Some(&keys),
    )
}

fn pod_smp(original: Value, patch: Value) -> Value {
    smp("", "Pod", original, patch).unwrap()
}

fn names(list: &Value, key: &str) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|v| match &v[key] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

#[test]
fn merge_patch_rfc7386() {
    // The RFC's appendix A table, a few rows, and its worked example.
    let cases = [
        (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
        (
            json!({"a": "b"}),
            json!({"b": "c"}),
            json!({"a": "b", "b": "c"}),
        ),
        (json!({"a": "b"}), json!({"a": null}), json!({})),
        (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
        (
            json!({"a": {"b": "c"}}),
            json!({"a": {"b": "d", "c": null}}),
            json!({"a": {"b": "d"}}),
        ),
        (
            json!({"a": [{"b": "c"}]}),
            json!({"a": [1]}),
            json!({"a": [1]}),
        ),
        (
            json!({"title": "Goodbye!", "author": {"givenName": "John", "familyName": "Doe"}, "tags": ["example", "sample"]}),
            json!({"title": "Hello!", "author": {"familyName": null}, "tags": ["example"], "phoneNumber": "+01-123-456-7890"}),
            json!({"title": "Hello!", "author": {"givenName": "John"}, "tags": ["example"], "phoneNumber": "+01-123-456-7890"}),
        ),
    ];
    for (orig, patch, want) in cases {
        let got = apply_patch(PatchKind::Merge, &orig, patch.to_string().as_bytes(), None).unwrap();
        assert_eq!(got, want, "{patch}");
    }
}

#[test]
fn merge_patch_errors() {
    let orig = json!({"a": 1});
    let e = apply_patch(PatchKind::Merge, &orig, b"{bad", None).unwrap_err();
    assert_eq!((e.code(), e.reason()), (400, "BadRequest"));
    let e = apply_patch(PatchKind::Merge, &orig, b"[1]", None).unwrap_err();
    assert_eq!(e.code(), 400);
    assert!(e.to_string().contains("array"), "{e}");
}

#[test]
fn json_patch_operations() {
    let orig = json!({"metadata": {"name": "x", "labels": {"a": "1"}}, "spec": {"list": [1, 2]}});
    let ops = json!([
        {"op": "test", "path": "/metadata/name", "value": "x"},
        {"op": "add", "path": "/metadata/labels/b", "value": "2"},
        {"op": "remove", "path": "/metadata/labels/a"},
        {"op": "replace", "path": "/spec/list/0", "value": 9},
        {"op": "add", "path": "/spec/list/-", "value": 3},
        {"op": "copy", "from": "/metadata/name", "path": "/spec/name"},
        {"op": "move", "from": "/spec/name", "path": "/spec/moved"}
    ]);
    let got = apply_patch(PatchKind::Json, &orig, ops.to_string().as_bytes(), None).unwrap();
    assert_eq!(
        got,
        json!({"metadata": {"name": "x", "labels": {"b": "2"}}, "spec": {"list": [9, 2, 3], "moved": "x"}})
    );
}

#[test]
fn a_json_patch_operation_repeating_a_field_keeps_the_last() {
    let orig = json!({"spec": {}});
    let ops = br#"[{"op": "add", "path": "/spec/a", "path": "/spec/b", "value": 1, "extra": 0}]"#;
    let got = apply_patch(PatchKind::Json, &orig, ops, None).unwrap();
    assert_eq!(got, json!({"spec": {"b": 1}}));
}

#[test]
fn json_patch_errors() {
    let orig = json!({"metadata": {"name": "x"}});
    let cases: [(&[u8], u16); 7] = [
        (
            br#"[{"op": "test", "path": "/metadata/name", "value": "y"}]"#,
            422,
        ),
        (br#"[{"op": "remove", "path": "/spec/missing"}]"#, 422),
        (br#"[{"op": "replace", "path": "/nope", "value": 1}]"#, 422),
        (br#"[{"op": "frobnicate", "path": "/a"}]"#, 400),
        (br#"{"op": "add"}"#, 400),
        (b"not json", 400),
        (br#"[{"op": "replace", "path": "", "value": 1}]"#, 400),
    ];
    for (body, code) in cases {
        let e = apply_patch(PatchKind::Json, &orig, body, None).unwrap_err();
        assert_eq!(e.code(), code, "{} -> {e}", String::from_utf8_lossy(body));
    }
    let many: Vec<Value> = (0..10_001)
        .map(|_| json!({"op": "test", "path": "/metadata/name", "value": "x"}))
        .collect();
    let e = apply_patch(
        PatchKind::Json,
        &orig,
        Value::from(many).to_string().as_bytes(),
        None,
    )
    .unwrap_err();
    assert_eq!((e.code(), e.reason()), (413, "RequestEntityTooLarge"));
}

#[test]
fn content_types() {
    assert_eq!(
        PatchKind::from_content_type("application/json-patch+json"),
        Some(PatchKind::Json)
    );
    assert_eq!(
        PatchKind::from_content_type("Application/Strategic-Merge-Patch+JSON"),
        Some(PatchKind::StrategicMerge)
    );
    assert_eq!(PatchKind::from_content_type("application/json"), None);
    for k in [PatchKind::Json, PatchKind::Merge, PatchKind::StrategicMerge] {
        assert_eq!(PatchKind::from_content_type(k.content_type()), Some(k));
    }
}

#[test]
fn smp_unsupported_for_custom_resources() {
    let e = apply_patch(PatchKind::StrategicMerge, &json!({}), b"{}", None).unwrap_err();
    assert_eq!((e.code(), e.reason()), (415, "UnsupportedMediaType"));
}

#[test]
fn smp_containers_merge_by_name() {
    // The upstream documentation's example: patching a container list adds, it does not
    // replace, and (as the documented output shows) the new container comes first.
    let orig = json!({"spec": {"containers": [{"name": "patch-demo-ctr", "image": "nginx"}]}});
    let got = pod_smp(
        orig,
        json!({"spec": {"containers": [{"name": "patch-demo-ctr-2", "image": "redis"}]}}),
    );
    assert_eq!(
        names(&got["spec"]["containers"], "name"),
        ["patch-demo-ctr-2", "patch-demo-ctr"]
    );
    // Merging one container by name keeps its other fields and merges its env by name.
    let orig = json!({"spec": {"containers": [
        {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}],
         "ports": [{"containerPort": 80}], "args": ["x", "y"]},
        {"name": "b", "image": "b:1"}
    ]}});
    let got = pod_smp(
        orig,
        json!({"spec": {"containers": [{"name": "a", "image": "a:2",
            "env": [{"name": "Y", "value": "3"}, {"name": "Z", "value": "4"}],
            "ports": [{"containerPort": 443}], "args": ["z"]}]}}),
    );
    let a = &got["spec"]["containers"][0];
    assert_eq!(a["image"], "a:2");
    assert_eq!(
        a["env"],
        json!([{"name": "X", "value": "1"}, {"name": "Y", "value": "3"}, {"name": "Z", "value": "4"}])
    );
    assert_eq!(names(&a["ports"], "containerPort"), ["443", "80"]);
    assert_eq!(
        a["args"],
        json!(["z"]),
        "lists without a merge strategy are replaced"
    );
    assert_eq!(got["spec"]["containers"][1]["image"], "b:1");
}

#[test]
fn smp_directives_in_lists_and_maps() {
    let orig = json!({"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "a", "image": "a"}, {"name": "b", "image": "b"}],
        "volumes": [{"name": "v", "emptyDir": {}}],
        "nodeSelector": {"x": "1", "y": "2"}
    }});
    // $patch: delete of a list element.
    let got = pod_smp(
        orig.clone(),
        json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}),
    );
    assert_eq!(names(&got["spec"]["containers"], "name"), ["b"]);
    // $patch: replace of a list.
    let got = pod_smp(
        orig.clone(),
        json!({"spec": {"containers": [{"name": "c", "image": "c"}, {"$patch": "replace"}]}}),
    );
    assert_eq!(
        got["spec"]["containers"],
        json!([{"name": "c", "image": "c"}])
    );
    // $patch: replace of a map.
    let got = pod_smp(
        orig.clone(),
        json!({"spec": {"nodeSelector": {"z": "3", "$patch": "replace"}}}),
    );
    assert_eq!(got["spec"]["nodeSelector"], json!({"z": "3"}));
    // $patch: delete of a map empties it.
    let got = pod_smp(
        orig.clone(),
        json!({"spec": {"nodeSelector": {"$patch": "delete"}}}),
    );
    assert_eq!(got["spec"]["nodeSelector"], json!({}));
    // $patch: merge in a map is the default.
    let got = pod_smp(
        orig.clone(),
        json!({"spec": {"nodeSelector": {"z": "3", "$patch": "merge"}}}),
    );
    assert_eq!(
        got["spec"]["nodeSelector"],
        json!({"x": "1", "y": "2", "z": "3"})
    );
    // $retainKeys drops what is not listed (a Deployment strategy switch, as kubectl sends it).
    let dep =
        json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
    let got = smp(
        "apps",
        "Deployment",
        dep,
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
    )
    .unwrap();
    assert_eq!(got["spec"]["strategy"], json!({"type": "Recreate"}));
    // Null deletes; nulls and directives in new values never reach the result.
    let got = pod_smp(
        orig,
        json!({"metadata": {"name": null, "labels": {"a": "1", "gone": null}},
               "spec": {"containers": [{"name": "n", "image": "n", "env": [{"name": "E", "$patch": "delete"}], "x": null}]}}),
    );
    assert!(got["metadata"].get("name").is_none());
    assert_eq!(got["metadata"]["labels"], json!({"a": "1"}));
    assert_eq!(
        got["spec"]["containers"][0],
        json!({"name": "n", "image": "n", "env": []})
    );
    assert!(!got.to_string().contains('$'));
}

#[test]
fn smp_set_element_order_as_kubectl_apply_sends_it() {
    let orig = json!({"spec": {"containers": [
        {"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}, {"name": "c", "image": "c:1"}
    ]}});
    // Reorder to c, a (b deleted) and update a.
    let got = pod_smp(
        orig.clone(),
        json!({"spec": {
            "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}],
            "containers": [{"name": "a", "image": "a:2"}, {"name": "b", "$patch": "delete"}]
        }}),
    );
    assert_eq!(
        got["spec"]["containers"],
        json!([{"name": "c", "image": "c:1"}, {"name": "a", "image": "a:2"}])
    );
    // Order only, no list in the patch: the listed elements take the given order and the
    // server-only one goes before the first listed element that followed it on the server
    // (upstream's mergeSortedSlice).
    let got = pod_smp(
        orig,
        json!({"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}]}}),
    );
    assert_eq!(names(&got["spec"]["containers"], "name"), ["b", "c", "a"]);
}

#[test]
fn smp_primitive_lists_merge_or_replace() {
    let orig = json!({"metadata": {"finalizers": ["a", "b"]},
                      "spec": {"tolerations": [{"key": "k1"}], "containers": [{"name": "c", "command": ["x", "y"]}]}});
    // finalizers merge as a set.
    let got = pod_smp(
        orig.clone(),
        json!({"metadata": {"finalizers": ["c", "a"]}}),
    );
    let mut f: Vec<&str> = got["metadata"]["finalizers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    f.sort();
    assert_eq!(f, ["a", "b", "c"]);
    // An empty merge list changes nothing; null removes the field.
    let got = pod_smp(orig.clone(), json!({"metadata": {"finalizers": []}}));
    assert_eq!(got["metadata"]["finalizers"], json!(["a", "b"]));
    let got = pod_smp(orig.clone(), json!({"metadata": {"finalizers": null}}));
    assert!(got["metadata"].get("finalizers").is_none());
    // $deleteFromPrimitiveList removes, with $setElementOrder keeping the order.
    let got = pod_smp(
        orig.clone(),
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "$setElementOrder/finalizers": ["b", "c"], "finalizers": ["c"]}}),
    );
    assert_eq!(got["metadata"]["finalizers"], json!(["b", "c"]));
    // tolerations and command have no strategy: replaced.
    let got = pod_smp(
        orig,
        json!({"spec": {"tolerations": [{"key": "k2"}], "containers": [{"name": "c", "command": ["z"]}]}}),
    );
    assert_eq!(got["spec"]["tolerations"], json!([{"key": "k2"}]));
    assert_eq!(got["spec"]["containers"][0]["command"], json!(["z"]));
}

#[test]
fn smp_merge_keys_of_builtin_kinds() {
    // Deployment template containers and volumes.
    let dep = json!({"spec": {"template": {"spec": {
        "containers": [{"name": "app", "image": "v1", "volumeMounts": [{"mountPath": "/a", "name": "x"}]}],
        "volumes": [{"name": "x", "emptyDir": {}}]
    }}}});
    let got = smp(
        "apps",
        "Deployment",
        dep,
        json!({"spec": {"template": {"spec": {
            "containers": [{"name": "app", "volumeMounts": [{"mountPath": "/b", "name": "y"}]}],
            "volumes": [{"name": "y", "configMap": {"name": "cm"}}]
        }}}}),
    )
    .unwrap();
    let t = &got["spec"]["template"]["spec"];
    assert_eq!(t["containers"][0]["image"], "v1");
    assert_eq!(
        names(&t["containers"][0]["volumeMounts"], "mountPath"),
        ["/b", "/a"]
    );
    assert_eq!(names(&t["volumes"], "name"), ["y", "x"]);
    // CronJob: spec.jobTemplate.spec.template.spec.containers.
    let cj = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b"}]}}}}}});
    let got = smp("batch", "CronJob", cj, json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "2"}]}}}}}})).unwrap();
    assert_eq!(
        names(
            &got["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"],
            "name"
        ),
        ["a", "b"]
    );
    // ownerReferences by uid, on any kind.
    let cm = json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]}});
    let got = smp(
        "",
        "ConfigMap",
        cm,
        json!({"metadata": {"ownerReferences": [{"uid": "2", "name": "b"}]}}),
    )
    .unwrap();
    assert_eq!(
        names(&got["metadata"]["ownerReferences"], "uid"),
        ["2", "1"]
    );
    // Service ports by port.
    let svc =
        json!({"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}});
    let got = smp(
        "",
        "Service",
        svc,
        json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}]}}),
    )
    .unwrap();
    assert_eq!(
        got["spec"]["ports"][0],
        json!({"port": 80, "name": "http", "targetPort": 8080})
    );
    assert_eq!(got["spec"]["ports"][1]["port"], 443);
    // status.conditions by type (a status patch, as controllers send it).
    let status = json!({"status": {"conditions": [{"type": "Available", "status": "False"}, {"type": "Progressing", "status": "True"}]}});
    let got = smp(
        "apps",
        "Deployment",
        status,
        json!({"status": {"conditions": [{"type": "Available", "status": "True"}]}}),
    )
    .unwrap();
    assert_eq!(
        got["status"]["conditions"][0],
        json!({"type": "Available", "status": "True"})
    );
    assert_eq!(got["status"]["conditions"][1]["type"], "Progressing");
    // The table's public view.
    let keys = MergeKeys::builtin("", "Pod");
    assert_eq!(keys.merge_key(&["spec", "hostAliases"]), Some("ip"));
    assert_eq!(
        keys.merge_key(&["spec", "topologySpreadConstraints"]),
        Some("topologyKey")
    );
    assert_eq!(
        keys.merge_key(&["spec", "containers", "volumeDevices"]),
        Some("devicePath")
    );
    assert_eq!(keys.merge_key(&["spec", "containers", "envFrom"]), None);
    assert!(!keys.is_merged_list(&["spec", "containers", "envFrom"]));
    assert!(keys.is_merged_list(&["metadata", "finalizers"]));
}

#[test]
fn smp_bad_bodies_are_errors() {
    let orig = json!({"metadata": {"labels": {}}, "spec": {"containers": [{"name": "a"}]}});
    let cases: Vec<(Value, u16)> = vec![
        (json!({"spec": {"$patch": "explode"}}), 400),
        (json!({"spec": {"containers": [{"image": "no-name"}]}}), 400),
        (json!({"spec": {"containers": [{"$patch": "delete"}]}}), 400),
        (
            json!({"spec": {"containers": [{"name": "a", "$patch": "merge"}]}}),
            400,
        ),
        (json!({"spec": {"containers": ["a-string"]}}), 400),
        (json!({"metadata": {"finalizers": [["nested"]]}}), 422),
        (json!({"spec": {"$retainKeys": "notalist"}}), 400),
        (json!({"spec": {"$retainKeys": ["a"], "b": 1}}), 422),
        (json!({"spec": {"$setElementOrder/containers": "x"}}), 400),
        (
            json!({"spec": {"$setElementOrder/containers": [{"name": "a"}], "containers": [{"name": "b"}]}}),
            400,
        ),
        (
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "x"}}),
            400,
        ),
        (json!({"metadata": {"finalizers": [{"a": 1}]}}), 400),
    ];
    for (patch, code) in cases {
        let e = smp("", "Pod", orig.clone(), patch.clone()).unwrap_err();
        assert_eq!(e.code(), code, "{patch} -> {e}");
    }
    let keys = MergeKeys::builtin("", "Pod");
    for body in [&b"[]"[..], b"nope", b"\"s\"", b""] {
        let e = apply_patch(PatchKind::StrategicMerge, &orig, body, Some(&keys)).unwrap_err();
        assert_eq!(e.code(), 400);
    }
}

/// A small random JSON value drawn from keys and values that exercise every directive and
/// merge key, so that malformed combinations come up often.
fn random_value(rng: &mut rand::rngs::StdRng, depth: u32) -> Value {
    use rand::Rng;
    const KEYS: [&str; 14] = [
        "spec",
        "containers",
        "name",
        "env",
        "metadata",
        "finalizers",
        "$patch",
        "$retainKeys",
        "$setElementOrder/containers",
        "$deleteFromPrimitiveList/finalizers",
        "ports",
        "containerPort",
        "image",
        "volumes",
    ];
    const STRINGS: [&str; 6] = ["a", "b", "replace", "delete", "merge", "x"];
    let pick = if depth == 0 {
        rng.random_range(0..4)
    } else {
        rng.random_range(0..7)
    };
    match pick {
        0 => Value::Null,
        1 => Value::from(rng.random_range(0..3)),
        2 | 3 => Value::from(STRINGS[rng.random_range(0..STRINGS.len())]),
        4 | 5 => {
            let mut m = serde_json::Map::new();
            for _ in 0..rng.random_range(0..4) {
                let k = KEYS[rng.random_range(0..KEYS.len())];
                m.insert(k.to_string(), random_value(rng, depth - 1));
            }
            Value::Object(m)
        }
        _ => Value::Array(
            (0..rng.random_range(0..4))
                .map(|_| random_value(rng, depth - 1))
                .collect(),
        ),
    }
}

#[test]
fn random_strategic_patches_never_panic() {
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let keys = MergeKeys::builtin("", "Pod");
    let (mut ok, mut err) = (0, 0);
    for _ in 0..3000 {
        let original = random_value(&mut rng, 4);
        let patch = random_value(&mut rng, 4);
        for kind in [PatchKind::StrategicMerge, PatchKind::Merge, PatchKind::Json] {
            match apply_patch(kind, &original, patch.to_string().as_bytes(), Some(&keys)) {
                Ok(v) => {
                    assert!(v.is_object());
                    // Directives come from the patch only: the original may hold
                    // anything.
                    if kind == PatchKind::StrategicMerge && !original.to_string().contains("\"$") {
                        assert!(!v.to_string().contains("\"$"), "a directive survived: {v}");
                    }
                    ok += 1;
                }
                Err(e) => {
                    assert!(matches!(e.code(), 400 | 413 | 415 | 422));
                    err += 1;
                }
            }
        }
    }
    // Both outcomes are exercised.
    assert!(ok > 100 && err > 100, "ok {ok}, err {err}");
}

#[test]
fn smp_keeps_key_order() {
    let orig = json!({"metadata": {"labels": {"a": "1", "b": "2", "c": "3", "d": "4"}}});
    let got = pod_smp(orig, json!({"metadata": {"labels": {"b": null, "e": "5"}}}));
    let keys: Vec<&String> = got["metadata"]["labels"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["a", "c", "d", "e"]);
}
