"""Lays out the published kube, kube-client and kube-runtime crates as kube-rs's own workspace.

Usage: cargo metadata ... | python3 kube-rs-workspace.py DIR VERSION

Reads `cargo metadata` of a crate depending on the three (their sources in the registry) and
writes DIR: a copy of each crate, and a workspace of the three whose `[patch.crates-io]` makes
each depend on the others' copies, as their path dependencies do upstream. Publishing drops the
dev-dependencies that had only a path (kube-client's and kube-runtime's tests use `kube`): each is
restored from the crate's `Cargo.toml.orig`, with its features, at the same version. The lockfile
is the one the `kube` crate ships, which covers the other two; the feature resolver is theirs.
"""

import json
import os
import shutil
import stat
import sys
import tomllib

CRATES = ["kube", "kube-client", "kube-runtime"]


def main() -> None:
    ws, version = sys.argv[1], sys.argv[2]
    found = {
        p["name"]: os.path.dirname(p["manifest_path"])
        for p in json.load(sys.stdin)["packages"]
        if p["name"] in CRATES and p["version"] == version
    }
    os.makedirs(ws)
    for name in CRATES:
        if name not in found:
            sys.exit(f"kube-rs-suite: {name} {version} was not fetched")
        dst = os.path.join(ws, name)
        shutil.copytree(found[name], dst)
        # The registry's extractions are read-only; the copy is written to (Cargo.toml here,
        # Cargo.lock by cargo).
        for root, dirs, files in os.walk(dst):
            for entry in dirs + files:
                path = os.path.join(root, entry)
                os.chmod(path, os.stat(path).st_mode | stat.S_IWUSR)
        with open(os.path.join(dst, "Cargo.toml.orig"), "rb") as f:
            orig = tomllib.load(f)
        restored = []
        for dep, spec in orig.get("dev-dependencies", {}).items():
            if isinstance(spec, dict) and "path" in spec and "version" not in spec:
                features = ", ".join(json.dumps(x) for x in spec.get("features", []))
                restored.append(
                    f'\n[dev-dependencies.{dep}]\nversion = "={version}"\nfeatures = [{features}]\n'
                )
        with open(os.path.join(dst, "Cargo.toml"), "a") as f:
            f.writelines(restored)
    shutil.copy(os.path.join(found["kube"], "Cargo.lock"), os.path.join(ws, "Cargo.lock"))
    # The feature resolver kube-rs's workspace uses, which publishing records in each package.
    with open(os.path.join(found["kube"], "Cargo.toml"), "rb") as f:
        resolver = tomllib.load(f)["package"].get("resolver", "2")
    members = ", ".join(json.dumps(c) for c in CRATES)
    patches = "".join(f'{c} = {{ path = "{c}" }}\n' for c in CRATES)
    with open(os.path.join(ws, "Cargo.toml"), "w") as f:
        f.write(
            f'[workspace]\nmembers = [{members}]\nresolver = "{resolver}"\n\n'
            f"[patch.crates-io]\n{patches}"
        )


if __name__ == "__main__":
    main()
