//! Embeds the operator template (`templates/operator` of the repository) into `crt new`: the
//! template's files are the one source of what `crt new` writes, listed here at build time and
//! included with `include_str!`, so a change to the template changes the next `crt` built.
//!
//! A package built outside the repository (from crates.io) has no template beside it: the list
//! is then empty and `crt new` says where to get one.

use std::path::{Path, PathBuf};

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let template = manifest_dir.join("../../templates/operator");
    let mut files = Vec::new();
    if template.join("Cargo.toml").is_file() {
        println!("cargo:rerun-if-changed={}", template.display());
        collect(&template, &template, &mut files);
    }
    files.sort();
    let mut out = String::from(
        "/// The operator template's files: (path relative to the template, contents).\n\
         pub static FILES: &[(&str, &str)] = &[\n",
    );
    for (relative, absolute) in &files {
        out.push_str(&format!(
            "    ({relative:?}, include_str!({:?})),\n",
            absolute.display().to_string()
        ));
    }
    out.push_str("];\n");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    std::fs::write(out_dir.join("template.rs"), out).expect("writing template.rs");
}

/// Every file under `dir` but build output (`target/`), as (path relative to `root` with `/`
/// separators, absolute path).
fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) {
    let entries = std::fs::read_dir(dir).expect("reading the operator template");
    for entry in entries {
        let path = entry.expect("reading the operator template").path();
        let relative = path.strip_prefix(root).expect("under the root");
        let relative = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        if path.is_dir() {
            if relative != "target" {
                collect(root, &path, files);
            }
        } else {
            let absolute = path.canonicalize().expect("a template file's path");
            files.push((relative, absolute));
        }
    }
}
