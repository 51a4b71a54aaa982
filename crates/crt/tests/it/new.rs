//! `crt new`: the crate it writes is the operator template, every file of it, under the names
//! given, depending on the controller-runtime of this checkout; bad names and non-empty
//! directories are refused. (That the written crate's own tests pass is a step of `.ci/run`: a
//! nested `cargo test` builds a whole operator.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn crt_new(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_crt"))
        .arg("new")
        .args(args)
        .output()
        .unwrap()
}

fn template_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/operator")
}

/// Every file under `dir` (but `target/`), relative, with `/` separators.
fn files(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if path.is_dir() {
                if relative != "target" {
                    walk(root, &path, out);
                }
            } else {
                out.push(relative);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn new_writes_the_template_under_the_names_given() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my-op");
    let out = crt_new(&[
        "my-op",
        "--dir",
        dir.to_str().unwrap(),
        "--group",
        "acme.io",
        "--kind",
        "Policy",
    ]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("cargo test"), "{stdout}");

    // Every template file, renamed where its path names the kind.
    let want: Vec<String> = files(&template_dir())
        .into_iter()
        .map(|p| p.replace("memo.rs", "policy.rs"))
        .collect();
    assert_eq!(files(&dir), want);

    let read = |p: &str| std::fs::read_to_string(dir.join(p)).unwrap();
    for path in files(&dir) {
        let text = read(&path);
        assert!(
            !text
                .to_ascii_lowercase()
                .replace("memory", "")
                .replace("volumemount", "")
                .contains("memo"),
            "{path} still names the template's kind or crate:\n{text}"
        );
        assert!(!text.contains("example.com"), "{path}:\n{text}");
    }
    let toml = read("Cargo.toml");
    assert!(toml.contains("name = \"my-op\""), "{toml}");
    // A path dependency on this checkout's controller-runtime, absolute: the crate builds
    // wherever it was written.
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../controller-runtime")
        .canonicalize()
        .unwrap();
    let dependency = format!(
        "controller-runtime = {{ path = {:?} }}",
        checkout.display().to_string()
    );
    assert!(toml.contains(&dependency), "{toml}");
    assert!(!toml.contains("../../crates"), "{toml}");
    let lock = read("Cargo.lock");
    assert!(lock.contains("name = \"my-op\""), "{lock}");

    let lib = read("src/lib.rs");
    assert!(lib.contains("group = \"acme.io\""), "{lib}");
    assert!(lib.contains("kind = \"Policy\""), "{lib}");
    assert!(lib.contains("pub struct PolicySpec"), "{lib}");
    assert!(lib.contains("\"policies.acme.io/index\""), "{lib}");
    let tests = read("tests/policy.rs");
    assert!(tests.contains("use my_op::{"), "{tests}");
    // The ClusterRole names the plural the derive gives.
    let role = read("config/rbac/role.yaml");
    assert!(role.contains("resources: [policies]"), "{role}");
    assert!(role.contains("resources: [policies/status]"), "{role}");
    // The image builds the crate's binary.
    let dockerfile = read("Dockerfile");
    assert!(dockerfile.contains("--bin my-op "), "{dockerfile}");

    // The directory is not empty any more: a second run refuses to write into it.
    let again = crt_new(&["my-op", "--dir", dir.to_str().unwrap()]);
    assert!(!again.status.success());
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(stderr.contains("exists and is not empty"), "{stderr}");
}

#[test]
fn new_with_a_version_depends_on_the_registry() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("op");
    let out = crt_new(&[
        "op",
        "--dir",
        dir.to_str().unwrap(),
        "--controller-runtime-version",
        "0.1",
    ]);
    assert!(out.status.success(), "{out:?}");
    let toml = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(
        toml.contains("controller-runtime = { version = \"0.1\" }"),
        "{toml}"
    );
    assert!(!dir.join("Cargo.lock").exists());
}

#[test]
fn new_with_a_path_takes_a_checkout_or_the_crate() {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("op");
    let out = crt_new(&[
        "op",
        "--dir",
        dir.to_str().unwrap(),
        "--path",
        checkout.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let toml = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(toml.contains("crates/controller-runtime\" }"), "{toml}");

    let out = crt_new(&[
        "op",
        "--dir",
        tmp.path().join("other").to_str().unwrap(),
        "--path",
        "/",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("neither a controller-runtime-rs checkout"),
        "{stderr}"
    );
}

#[test]
fn new_refuses_a_bad_name_before_writing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("x");
    let out = crt_new(&["My_Op", "--dir", dir.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("invalid crate name \"My_Op\""), "{stderr}");
    assert!(!dir.exists());
}

/// `crt new --api` adds a kind to a crate `crt new` wrote: its module and test, and the lines
/// wiring them into the library, the CRDs, the binary and the ClusterRole; the rest of the
/// crate is untouched. The same kind again, or a directory that is no such crate, is refused
/// without writing. (`.ci/run` builds and tests a crate with an added kind.)
#[test]
fn new_api_adds_a_kind_to_a_generated_crate() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my-op");
    let out = crt_new(&["my-op", "--dir", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let before: Vec<(String, String)> = files(&dir)
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(dir.join(&p)).unwrap();
            (p, text)
        })
        .collect();

    let out = crt_new(&[
        "--api",
        "acme.io/v1beta1/CronTab",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let read = |p: &str| std::fs::read_to_string(dir.join(p)).unwrap();

    let mut want: Vec<String> = before.iter().map(|(p, _)| p.clone()).collect();
    want.extend(["src/crontab.rs".to_string(), "tests/crontab.rs".to_string()]);
    want.sort();
    assert_eq!(files(&dir), want);
    let changed = [
        "src/lib.rs",
        "src/manifests.rs",
        "src/main.rs",
        "config/rbac/role.yaml",
    ];
    for (path, text) in &before {
        if !changed.contains(&path.as_str()) {
            assert_eq!(&read(path), text, "{path} changed");
        }
    }

    let module = read("src/crontab.rs");
    for want in [
        "group = \"acme.io\"",
        "version = \"v1beta1\"",
        "kind = \"CronTab\"",
        "status = \"CronTabStatus\"",
        "pub struct CronTabSpec",
        "pub async fn add_controller(mgr: &Manager)",
        ".for_(Input::<CronTab>::new())",
    ] {
        assert!(module.contains(want), "no {want:?} in:\n{module}");
    }
    assert!(!module.contains("__"), "a placeholder left:\n{module}");
    let test = read("tests/crontab.rs");
    assert!(
        test.contains("use my_op::crontab::{CronTab, CronTabSpec};"),
        "{test}"
    );
    assert!(
        test.contains("async fn a_crontab_becomes_ready()"),
        "{test}"
    );
    assert!(!test.contains("__"), "a placeholder left:\n{test}");

    // Each wiring line once, next to the template's own.
    let lib = read("src/lib.rs");
    assert_eq!(lib.matches("pub mod crontab;\n").count(), 1, "{lib}");
    let manifests = read("src/manifests.rs");
    assert!(
        manifests.contains("vec![crate::crontab::CronTab::crd(), Memo::crd()]"),
        "{manifests}"
    );
    let main = read("src/main.rs");
    assert!(
        main.contains(
            "my_op::add_controller(&mgr).await?;\n    my_op::crontab::add_controller(&mgr).await?;\n"
        ),
        "{main}"
    );
    let role = read("config/rbac/role.yaml");
    assert!(
        role.ends_with(
            "- apiGroups: [acme.io]\n  resources: [crontabs]\n  verbs: [get, list, watch, patch]\n\
             - apiGroups: [acme.io]\n  resources: [crontabs/status]\n  verbs: [update]\n"
        ),
        "{role}"
    );

    // Again: refused, nothing written.
    let again = crt_new(&[
        "--api",
        "acme.io/v1/CronTab",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert!(!again.status.success());
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(stderr.contains("already has a kind CronTab"), "{stderr}");
    assert_eq!(read("src/lib.rs"), lib);
    // Not a crate crt new wrote.
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = crt_new(&[
        "--api",
        "acme.io/v1/Widget",
        "--dir",
        empty.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Cargo.toml"));
    // A bad spec.
    let out = crt_new(&["--api", "acme.io/CronTab", "--dir", dir.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("GROUP/VERSION/KIND"));
}
