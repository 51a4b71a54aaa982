//! Compiles the built-in kinds' protobuf definitions into a descriptor set.
//!
//! The definitions are upstream's `generated.proto` files (one per API group version, plus
//! apimachinery's meta, runtime, resource and intstr packages) as the `k8s-rs-pb` package ships
//! them, under `src/v1_33/` with packages named after their directories (`api.core.v1`,
//! `apimachinery.pkg.apis.meta.v1`). `protox` (a protobuf compiler in Rust, no `protoc`) turns
//! them into one `FileDescriptorSet`, written to `$OUT_DIR/kinds.pb` for `src/http/protobuf`
//! to include and decode once at run time.
//!
//! The package's directory is found with `cargo metadata`, the way cargo itself names a
//! dependency's source (or, failing that, among the registry sources cargo extracted).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Kubernetes version whose definitions are compiled: the one the server serves.
const VERSION_DIR: &str = "src/v1_33";

/// The `k8s-rs-pb` package's directory: as `cargo metadata` names it, or, where that cannot
/// resolve this package on its own (`cargo package` verifies it against a temporary registry
/// of the workspace's crates), the newest `k8s-rs-pb-0.5.*` cargo extracted to build it.
fn package_dir() -> PathBuf {
    metadata_dir().unwrap_or_else(|why| {
        registry_dir().unwrap_or_else(|| panic!("k8s-rs-pb's sources not found: {why}"))
    })
}

fn metadata_dir() -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"))
        .join("Cargo.toml");
    // Only this target's packages: the others (other platforms' dependencies) may not have
    // been downloaded.
    let target = std::env::var("TARGET").expect("TARGET");
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", &target, "--manifest-path"])
        .arg(&manifest)
        .output()
        .map_err(|e| format!("cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata: {e}"))?;
    let path = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "k8s-rs-pb")
        .and_then(|p| p["manifest_path"].as_str())
        .ok_or("cargo metadata lists no k8s-rs-pb")?;
    Ok(Path::new(path).parent().expect("a directory").to_path_buf())
}

fn registry_dir() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))?;
    let mut found: Vec<(u64, PathBuf)> = Vec::new();
    for index in std::fs::read_dir(home.join("registry/src")).ok()?.flatten() {
        for pkg in std::fs::read_dir(index.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = pkg.file_name().to_string_lossy().into_owned();
            let Some(version) = name.strip_prefix("k8s-rs-pb-0.5.") else {
                continue;
            };
            if let Ok(patch) = version.parse::<u64>() {
                found.push((patch, pkg.path()));
            }
        }
    }
    found.sort();
    found.pop().map(|(_, path)| path)
}

fn protos(dir: &Path, root: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read proto directory")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            protos(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "proto") {
            let rel = path.strip_prefix(root).expect("under root");
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let root = package_dir().join(VERSION_DIR);
    let mut files = Vec::new();
    protos(&root, &root, &mut files);
    // The test group of apimachinery is no API the server serves.
    files.retain(|f| !f.contains("testapigroup"));
    assert!(
        !files.is_empty(),
        "no .proto files under {}",
        root.display()
    );
    let mut compiler = protox::Compiler::new([&root]).expect("protox compiler");
    compiler.include_source_info(false).include_imports(true);
    compiler
        .open_files(&files)
        .expect("compile the kinds' .proto files");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("kinds.pb");
    std::fs::write(out, compiler.encode_file_descriptor_set()).expect("write kinds.pb");
}
