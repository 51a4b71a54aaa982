//! Every fuzz target, on stable: its committed corpus replayed, then a bounded run of mutated
//! inputs (see `crt_fuzz::driver`). A panic fails the test, naming the file the input was
//! written to. `CRT_FUZZ_ITERS=N` or `CRT_FUZZ_SECS=S` run longer; `CRT_FUZZ_REPLAY=path` runs
//! one input (a crash file) through the test's target instead.

use crt_fuzz::driver::{self, Budget};

/// Mutated inputs per target by default: the whole file runs in well under a minute on a debug
/// build (the targets that go through the server's handler are the slow ones).
fn fuzz(name: &str, iterations: u64) {
    let (_, target) = crt_fuzz::TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .expect("a target of that name");
    if let Some(path) = std::env::var_os("CRT_FUZZ_REPLAY") {
        let input = std::fs::read(&path).expect("the input to replay");
        if let Err(msg) = driver::catch(*target, &input) {
            panic!("{name} panicked on {}: {msg}", path.to_string_lossy());
        }
        return;
    }
    match driver::run(name, *target, Budget::from_env(iterations)) {
        Ok(report) => eprintln!(
            "{name}: {} executions ({} corpus entries) in {:.1} s",
            report.executions,
            report.corpus,
            report.elapsed.as_secs_f64()
        ),
        Err(crash) => panic!("{crash}"),
    }
}

#[test]
fn every_target_has_a_test_and_a_corpus() {
    let source = include_str!("fuzz.rs");
    for (name, _) in crt_fuzz::TARGETS {
        assert!(
            source.contains(&format!("fn {name}() {{")),
            "no test runs the target {name}"
        );
        assert!(
            !driver::corpus(name).is_empty(),
            "the target {name} has no corpus (crates/fuzz/corpus/{name}/)"
        );
    }
}

/// The server targets reach the server: a read of a seeded object, a dry-run create, patch and
/// apply are answered with success, and a dry run leaves the object as it was.
#[test]
fn the_server_targets_reach_the_handler() {
    use crt_fuzz::server::{OBJECTS, send};
    let get = |path: &str| send("GET", path.as_bytes(), &[], Vec::new()).expect("a valid URI");
    let before = get(OBJECTS[2]);
    assert_eq!(
        before.status,
        200,
        "{}",
        String::from_utf8_lossy(&before.body)
    );
    let created = send(
        "POST",
        b"/api/v1/namespaces/default/configmaps?dryRun=All",
        &[("content-type", b"application/json".as_slice())],
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"new"}}"#.to_vec(),
    )
    .expect("a valid request");
    assert_eq!(
        created.status,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let patched = send(
        "PATCH",
        format!("{}?dryRun=All", OBJECTS[2]).as_bytes(),
        &[("content-type", b"application/merge-patch+json".as_slice())],
        br#"{"data":{"k":"changed"}}"#.to_vec(),
    )
    .expect("a valid request");
    assert_eq!(
        patched.status,
        200,
        "{}",
        String::from_utf8_lossy(&patched.body)
    );
    let applied = send(
        "PATCH",
        format!("{}?dryRun=All&fieldManager=fuzz&force=true", OBJECTS[2]).as_bytes(),
        &[("content-type", b"application/apply-patch+yaml".as_slice())],
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: applied\n".to_vec(),
    )
    .expect("a valid request");
    assert_eq!(
        applied.status,
        200,
        "{}",
        String::from_utf8_lossy(&applied.body)
    );
    assert_eq!(
        get(OBJECTS[2]).body,
        before.body,
        "a dry run changed nothing"
    );
    assert_eq!(get("/api/v1/namespaces/default/configmaps/new").status, 404);
    let watch = get("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0");
    assert_eq!(watch.status, 200);
    assert!(
        String::from_utf8_lossy(&watch.body).contains(r#""type":"ADDED""#),
        "a watch answers what is ready without waiting for its end"
    );
}

#[test]
fn request() {
    fuzz("request", 5000);
}

#[test]
fn selectors() {
    fuzz("selectors", 5000);
}

#[test]
fn json_body() {
    fuzz("json_body", 5000);
}

#[test]
fn patch() {
    fuzz("patch", 5000);
}

#[test]
fn apply() {
    fuzz("apply", 5000);
}

#[test]
fn protobuf() {
    fuzz("protobuf", 10000);
}

#[test]
fn crd_schema() {
    fuzz("crd_schema", 10000);
}

#[test]
fn watch_lines() {
    fuzz("watch_lines", 10000);
}
