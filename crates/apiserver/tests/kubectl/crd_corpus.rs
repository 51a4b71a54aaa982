//! A corpus of CustomResourceDefinition shapes found in real projects' CRDs (controller-gen's
//! root `metadata: {type: object}`, embedded resources, int-or-string, list types, CEL with
//! `messageExpression`/`reason`/`fieldPath`, transition rules, defaults, junctors, formats,
//! printer columns, selectable fields, scale at custom paths, several versions, kube-derive's
//! schemars output), each fixture written here, driven through the real kubectl.
//!
//! A fixture is `tests/manifests/crds/<family>.yaml`: multi-document YAML whose first document is
//! the CRD, then objects and commands. Comment lines `# key: value` at the top of a document
//! say what to expect of it:
//!
//! - an object without `expect-error` is good: applied twice client-side and twice server-side
//!   with `--validate=strict`, server-side under a fresh name (`<name>-ssa`, unless `ssa-copy:
//!   no`); `ways: ...` picks among `create`, `csa` and `ssa` (`create` for objects with explicit
//!   nulls, which kubectl's client-side apply drops before sending); `field-manager: <name>`
//!   applies as that manager; each answer (the stored object) keeps its name, labels and annotations;
//!   `expect: <json>` is a subset the stored object must contain (defaults), `absent: a.b.c` a
//!   field it must not have (pruning), `expect-warning: <text>` a warning kubectl prints;
//! - an object with `expect-error: <text>` (one line per text; `expect-error[csa]` or
//!   `expect-error[ssa]` for one way only) is refused both ways (or the `ways` it names), each
//!   refusal containing every text; an object refused on create is then not found;
//! - a document with `run: <kubectl arguments>` and no object runs kubectl (arguments split on
//!   spaces): it must succeed, unless `expect-error` lines say how it fails; `stdout: <text>`
//!   must appear in its output, `columns: A B C` is its table's header and `row: a b` the start
//!   of one of its rows.
//!
//! A case this server still gets wrong says so in `known-defect: <why>`: it must fail (its
//! panic is caught and reported), and the test fails once it passes, so the marker goes.
//!
//! The expected messages are upstream's (apiextensions-apiserver's validation, kube-openapi's
//! validate errors, apimachinery's field errors), never this server's own words.

use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use serde_json::{Value, json};

use super::Kubectl;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/manifests/crds");

/// One document of a fixture: its `# key: value` lines and its object, if any.
struct Doc {
    directives: Vec<(String, String)>,
    object: Option<Value>,
    /// The document's first line, to name it in failures.
    label: String,
}

impl Doc {
    fn all(&self, key: &str) -> impl Iterator<Item = &str> {
        self.directives
            .iter()
            .filter(move |(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn one(&self, key: &str) -> Option<&str> {
        self.all(key).next()
    }

    /// The texts a refusal by way `way` (`csa` or `ssa`) must contain.
    fn errors(&self, way: &str) -> Vec<&str> {
        let qualified = format!("expect-error[{way}]");
        self.all("expect-error")
            .chain(self.all(&qualified))
            .collect()
    }

    fn is_bad(&self) -> bool {
        self.directives
            .iter()
            .any(|(k, _)| k.starts_with("expect-error"))
    }
}

fn parse(text: &str) -> Vec<Doc> {
    let mut docs = Vec::new();
    for chunk in text.split("\n---\n") {
        let mut directives = Vec::new();
        for line in chunk.lines() {
            let Some(rest) = line.strip_prefix("# ") else {
                continue;
            };
            let Some((key, value)) = rest.split_once(": ") else {
                continue;
            };
            if !key.contains(' ') {
                directives.push((key.to_string(), value.trim().to_string()));
            }
        }
        let object: Value = serde_yaml_ng::from_str(chunk).expect("a fixture document parses");
        let object = (!object.is_null()).then_some(object);
        let label = chunk
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_default()
            .to_string();
        docs.push(Doc {
            directives,
            object,
            label,
        });
    }
    docs
}

/// Whether `got` holds everything `want` says: objects by key, arrays element by element.
fn contains(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => w
            .iter()
            .all(|(k, v)| g.get(k).is_some_and(|gv| contains(gv, v))),
        (Value::Array(g), Value::Array(w)) => {
            g.len() == w.len() && g.iter().zip(w).all(|(g, w)| contains(g, w))
        }
        _ => got == want,
    }
}

/// Checks what the fixture says of `out`, the object as kubectl printed it (`-o json`).
fn check_object(out: &str, doc: &Doc, object: &Value, how: &str) {
    let mut got: Value = serde_json::from_str(out).unwrap();
    // One object read through `-f` may come back as a one-item List.
    if got["kind"] == "List" {
        got = got["items"][0].take();
    }
    let label = &doc.label;
    let meta = &object["metadata"];
    assert_eq!(
        got["metadata"]["name"], meta["name"],
        "{label} ({how}): the name"
    );
    for field in ["labels", "annotations"] {
        if let Some(want) = meta.get(field) {
            assert!(
                contains(&got["metadata"][field], want),
                "{label} ({how}): metadata.{field} {} kept, got {}",
                want,
                got["metadata"]
            );
        }
    }
    assert!(
        got["metadata"]["uid"].is_string() && got["metadata"]["creationTimestamp"].is_string(),
        "{label} ({how}): server-set metadata {}",
        got["metadata"]
    );
    for want in doc.all("expect") {
        let want: Value = serde_json::from_str(want).expect("an `expect` line is JSON");
        assert!(
            contains(&got, &want),
            "{label} ({how}): expected {want} in {got:#}"
        );
    }
    for path in doc.all("absent") {
        let mut v = &got;
        for part in path.split('.') {
            v = &v[part];
        }
        assert!(
            v.is_null(),
            "{label} ({how}): {path} should be pruned: {got:#}"
        );
    }
}

fn warnings_ok(doc: &Doc, stderr: &str, how: &str) {
    for want in doc.all("expect-warning") {
        assert!(
            stderr.contains(want),
            "{} ({how}): warning {want:?} missing from {stderr}",
            doc.label
        );
    }
}

async fn good(k: &Kubectl, doc: &Doc, object: &Value, seen: &mut Vec<String>) {
    let label = &doc.label;
    let name = object["metadata"]["name"].as_str().unwrap().to_string();
    let manager = doc
        .one("field-manager")
        .map(|m| format!("--field-manager={m}"));
    let ways = doc.one("ways").unwrap_or("csa ssa");
    // Server-side apply after client-side apply of one object is kubectl's migration, which
    // upstream refuses when defaults changed an atomic list: each way gets its own object.
    let copy = doc.one("ssa-copy") != Some("no") && ways.contains("csa") && ways.contains("ssa");
    for (way, args) in [
        ("create", &["create", "--validate=strict", "-f", "-"][..]),
        ("csa", &["apply", "--validate=strict", "-f", "-"][..]),
        (
            "ssa",
            &["apply", "--server-side", "--validate=strict", "-f", "-"][..],
        ),
    ] {
        if !ways.contains(way) {
            continue;
        }
        let mut target = object.clone();
        if way == "ssa" && copy {
            target["metadata"]["name"] = json!(format!("{name}-ssa"));
        }
        let mut args = args.to_vec();
        args.extend(manager.as_deref());
        // Applying twice: the second apply changes nothing and still succeeds. Each answer
        // (`-o json`: the object as the server stored it; for a client-side apply that changes
        // nothing, kubectl's read of it) is checked.
        args.extend(["-o", "json"]);
        let times = if way == "create" { 1 } else { 2 };
        for _ in 0..times {
            let out = k.run(&args, Some(&target.to_string())).await;
            assert!(
                out.ok,
                "{label}: {way} of {} failed: {}{}",
                target["metadata"]["name"], out.stdout, out.stderr
            );
            warnings_ok(doc, &out.stderr, way);
            check_object(&out.stdout, doc, &target, way);
        }
        seen.push(target["metadata"]["name"].as_str().unwrap().to_string());
    }
}

async fn bad(k: &Kubectl, doc: &Doc, object: &Value, seen: &[String]) {
    let label = &doc.label;
    let text = object.to_string();
    let ways = doc.one("ways").unwrap_or("csa ssa");
    for (way, args) in [
        ("create", &["create", "--validate=strict", "-f", "-"][..]),
        ("csa", &["apply", "--validate=strict", "-f", "-"][..]),
        (
            "ssa",
            &["apply", "--server-side", "--validate=strict", "-f", "-"][..],
        ),
    ] {
        if !ways.contains(way) {
            continue;
        }
        let out = k.run(args, Some(&text)).await;
        assert!(!out.ok, "{label}: {way} should be refused: {}", out.stdout);
        for want in doc.errors(way) {
            assert!(
                out.stderr.contains(want),
                "{label}: {way} refusal lacks {want:?}: {}",
                out.stderr
            );
        }
    }
    let name = object["metadata"]["name"].as_str().unwrap().to_string();
    if !seen.contains(&name) {
        let out = k.run(&["get", "-f", "-"], Some(&text)).await;
        assert!(
            !out.ok,
            "{label}: a refused object was stored: {}{}",
            out.stdout, out.stderr
        );
    }
}

async fn command(k: &Kubectl, doc: &Doc, args: &str) {
    let args: Vec<&str> = args.split(' ').filter(|a| !a.is_empty()).collect();
    let out = k.run(&args, None).await;
    if doc.is_bad() {
        assert!(!out.ok, "kubectl {args:?} should fail: {}", out.stdout);
        for want in doc.errors("csa") {
            assert!(
                out.stderr.contains(want),
                "kubectl {args:?}: {want:?} missing from {}",
                out.stderr
            );
        }
        return;
    }
    assert!(
        out.ok,
        "kubectl {args:?} failed: {}{}",
        out.stdout, out.stderr
    );
    warnings_ok(doc, &out.stderr, "command");
    for want in doc.all("stdout") {
        assert!(
            out.stdout.contains(want),
            "kubectl {args:?}: {want:?} missing from {}",
            out.stdout
        );
    }
    if let Some(want) = doc.one("columns") {
        let header: Vec<&str> = out
            .stdout
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        let want: Vec<&str> = want.split_whitespace().collect();
        assert_eq!(header, want, "kubectl {args:?}: {}", out.stdout);
    }
    for want in doc.all("row") {
        let want: Vec<&str> = want.split_whitespace().collect();
        assert!(
            out.stdout.lines().any(|line| {
                let cells: Vec<&str> = line.split_whitespace().collect();
                cells.starts_with(&want)
            }),
            "kubectl {args:?}: no row starting {want:?} in {}",
            out.stdout
        );
    }
}

/// Installs a CRD and waits until it is Established.
async fn install(k: &Kubectl, crd: &Value) {
    let name = crd["metadata"]["name"].as_str().unwrap();
    k.ok_with(&["create", "-f", "-"], Some(&crd.to_string()))
        .await;
    k.ok(&[
        "wait",
        "--for=condition=established",
        &format!("crd/{name}"),
        "--timeout=30s",
    ])
    .await;
}

/// Runs one fixture file against a fresh server.
async fn run(file: &str) {
    let text = std::fs::read_to_string(format!("{DIR}/{file}")).unwrap();
    let docs = parse(&text);
    let server = crate::common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    let mut seen = Vec::new();
    for doc in &docs {
        let step = async {
            match (&doc.object, doc.one("run")) {
                (Some(o), _) if doc.is_bad() => bad(&k, doc, o, &seen).await,
                (Some(o), _) if o["kind"] == "CustomResourceDefinition" => install(&k, o).await,
                (Some(o), _) => good(&k, doc, o, &mut seen).await,
                (None, Some(args)) => command(&k, doc, args).await,
                (None, None) => {}
            }
        };
        let Some(defect) = doc.one("known-defect") else {
            step.await;
            continue;
        };
        // A case this server still gets wrong: it must still fail, so that its fix is noticed.
        let failed = AssertUnwindSafe(step).catch_unwind().await.is_err();
        assert!(
            failed,
            "{}: passes now; remove its `known-defect: {defect}`",
            doc.label
        );
        eprintln!("known defect, still failing: {defect}");
    }
}

macro_rules! corpus {
    ($($test:ident => $file:literal,)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() {
            run($file).await;
        }
    )*};
}

corpus! {
    root_metadata => "root-metadata.yaml",
    metadata_name => "metadata-name.yaml",
    embedded_resources => "embedded.yaml",
    int_or_string => "int-or-string.yaml",
    preserve_unknown_fields => "preserve-unknown.yaml",
    list_types => "list-types.yaml",
    cel_rules => "cel.yaml",
    defaults => "defaults.yaml",
    value_validations => "values.yaml",
    printer_columns_and_selectable_fields => "printing.yaml",
    status_and_scale_subresources => "subresources.yaml",
    versions_and_deprecation => "versions.yaml",
    kube_derive_output => "kube-derive.yaml",
}

/// A CRD of over 1 MiB, as the largest real operators ship (long descriptions on every field of
/// embedded pod templates): client-side apply is refused because its last-applied annotation
/// alone exceeds ObjectMeta's 256 KiB annotation budget, while create and server-side apply,
/// which write no such annotation, install it, and its objects are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_very_large_crd() {
    let mut fields = serde_json::Map::new();
    for i in 0..400 {
        let description = format!("Field number {i} of a very large schema. ").repeat(70);
        fields.insert(
            format!("field{i:03}"),
            json!({"type": "string", "maxLength": 64, "description": description}),
        );
    }
    let crd = |plural: &str| {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.corpus.example.com")},
            "spec": {
                "group": "corpus.example.com",
                "scope": "Namespaced",
                "names": {"plural": plural, "singular": &plural[..plural.len() - 1], "kind": "Huge"},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "metadata": {"type": "object"},
                            "spec": {"type": "object", "properties": fields.clone()},
                        },
                    }},
                }],
            },
        })
    };
    let text = crd("huges").to_string();
    assert!(text.len() > 1024 * 1024, "{} bytes", text.len());

    let server = crate::common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    let err = k
        .fails(&["apply", "--validate=strict", "-f", "-"], Some(&text))
        .await;
    assert!(
        err.contains("metadata.annotations: Too long: may not be more than 262144 bytes"),
        "{err}"
    );
    let out = k
        .run(&["get", "crd", "huges.corpus.example.com"], None)
        .await;
    assert!(!out.ok && out.stderr.contains("NotFound"), "{}", out.stderr);

    install(&k, &crd("huges")).await;
    let applied = crd("hugeapplies")
        .to_string()
        .replace("\"kind\":\"Huge\"", "\"kind\":\"HugeApply\"");
    k.ok_with(
        &["apply", "--server-side", "--validate=strict", "-f", "-"],
        Some(&applied),
    )
    .await;
    k.ok(&[
        "wait",
        "--for=condition=established",
        "crd/hugeapplies.corpus.example.com",
        "--timeout=30s",
    ])
    .await;
    let stored = k.json(&["get", "crd", "huges.corpus.example.com"]).await;
    assert_eq!(
        stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"]
            .as_object()
            .map(|m| m.len()),
        Some(400)
    );
    assert!(
        stored["metadata"]["annotations"]
            .get("kubectl.kubernetes.io/last-applied-configuration")
            .is_none()
    );

    let object = json!({
        "apiVersion": "corpus.example.com/v1", "kind": "Huge",
        "metadata": {"name": "h1", "labels": {"size": "xl"}},
        "spec": {"field000": "a", "field399": "b"},
    });
    let doc = Doc {
        directives: vec![(
            "expect".into(),
            r#"{"spec":{"field000":"a","field399":"b"}}"#.into(),
        )],
        object: Some(object.clone()),
        label: "a Huge".into(),
    };
    good(&k, &doc, &object, &mut Vec::new()).await;
    let mut long = object.clone();
    long["metadata"]["name"] = json!("h2");
    long["spec"]["field200"] = json!("x".repeat(65));
    let err = k
        .fails(&["apply", "-f", "-"], Some(&long.to_string()))
        .await;
    assert!(
        err.contains("spec.field200: Too long: may not be more than 64 bytes"),
        "{err}"
    );
}
