#!/usr/bin/env bash
# kube-rs's own cluster tests against `crt serve`: a conformance run of the embedded API server.
#
# The published `kube`, `kube-client` and `kube-runtime` crates carry `#[ignore]`d unit tests
# that talk to the cluster of $KUBECONFIG. This script takes those crates at the exact version
# the workspace's Cargo.lock names, from the registry (through a scratch crate and `cargo fetch`,
# so they are the published sources), lays them out as kube-rs's own workspace (see
# kube-rs-workspace.py), starts a fresh `crt serve`, and runs their ignored library tests against
# it. The only tests skipped are the ones that need a real kubelet and container runtime (crt
# serve's simulated kubelets report pods running, but run no process), each listed below with
# its reason.
#
# The crates build into `kube-rs-suite` under the target directory, so the workspace's own
# build is not disturbed.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
start=$SECONDS

target="${CARGO_TARGET_DIR:-$repo/target}"
suite_target="$target/kube-rs-suite"

# The version the workspace depends on: kube-client's, from the lockfile.
version="$(awk '/^name = "kube-client"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)"
if [[ -z "$version" ]]; then
    echo "kube-rs-suite: no kube-client in Cargo.lock" >&2
    exit 1
fi
echo "kube-rs-suite: kube-rs $version"

work="$(mktemp -d)"
server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# The published sources: a scratch crate depends on the three crates at that exact version;
# `cargo fetch` puts them under $CARGO_HOME/registry/src/, where `cargo metadata` finds them.
mkdir -p "$work/scratch/src"
touch "$work/scratch/src/lib.rs"
cat >"$work/scratch/Cargo.toml" <<EOF
[package]
name = "kube-rs-suite-scratch"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
kube = { version = "=$version", default-features = false }
kube-client = { version = "=$version", default-features = false }
kube-runtime = { version = "=$version", default-features = false }

[workspace]
EOF
cargo fetch --manifest-path "$work/scratch/Cargo.toml" --quiet
ws="$work/kube-rs"
cargo metadata --manifest-path "$work/scratch/Cargo.toml" --format-version 1 --offline |
    python3 .ci/kube-rs-workspace.py "$ws" "$version"

# A version the shipped lockfile names may have been yanked since: cargo keeps a locked yanked
# version only while nothing is re-resolved, and moving the crates into this workspace
# re-resolves. Each such package alone moves to its newest compatible version; everything else
# stays locked.
for _ in 1 2 3 4 5; do
    if cargo metadata --manifest-path "$ws/Cargo.toml" --format-version 1 \
        >/dev/null 2>"$work/resolve.err"; then
        break
    fi
    yanked="$(sed -n 's/^error: failed to select a version for the requirement `\([^ ]*\) = .*(locked to .*/\1/p' "$work/resolve.err")"
    if [[ -z "$yanked" ]]; then
        cat "$work/resolve.err" >&2
        exit 1
    fi
    echo "kube-rs-suite: the locked version of $yanked is gone; updating it alone"
    cargo update --manifest-path "$ws/Cargo.toml" --quiet -p "$yanked"
done

# The server, built once from the workspace, with a fresh store: the binary the test suite's
# command (`cargo test --workspace --locked`, the README's) builds, so that after the suite it is
# already there. (`cargo build -p crt` resolves other features, without the dev-dependencies'
# tokio `test-util` and the rest, and would rebuild most of the tree.) The binary cargo reports
# is copied: target/debug/crt is only a link, which another build sharing the target directory
# may replace meanwhile.
crt_bin="$(cargo test --workspace --locked --no-run --message-format=json-render-diagnostics |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if (m.get("reason") == "compiler-artifact" and m["target"]["name"] == "crt"
            and "bin" in m["target"]["kind"] and not m["profile"]["test"] and m.get("executable")):
        print(m["executable"])')"
cp "$crt_bin" "$work/crt"
kubeconfig="$work/crt.kubeconfig"
"$work/crt" serve --addr 127.0.0.1:0 --kubeconfig-out "$kubeconfig" >"$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 600); do
    grep -q '^kubeconfig written to' "$work/serve.log" 2>/dev/null && break
    if ! kill -0 "$server_pid" 2>/dev/null; then
        cat "$work/serve.log" >&2
        echo "kube-rs-suite: crt serve exited" >&2
        exit 1
    fi
    sleep 0.1
done
grep -q '^kubeconfig written to' "$work/serve.log" || {
    echo "kube-rs-suite: crt serve did not start" >&2
    exit 1
}
export KUBECONFIG="$kubeconfig"

# The three crates' ignored library tests in one build, features unified as in kube-rs's
# workspace (the `kube` dev-dependency turns on kube-client's rustls TLS and `ws`). Besides:
# kube-client's `openssl-tls` compiles `custom_client_openssl_tls_configuration`, which builds
# its own TLS connector from the kubeconfig (so the kubeconfig's user authenticates with a
# client certificate); its `unstable-client` compiles the `Client::get/list/fetch` tests; kube's
# `derive` and `runtime` compile its CRD and wait tests.
# `kubelet-debug` stays off: its one test talks to a kubelet's debug endpoints.
skips=(
    # Execs into a running busybox container: needs a kubelet and a container runtime.
    --skip test::pod_can_exec_and_write_to_stdin
    # Reads the logs a running container writes: needs a kubelet.
    --skip test::can_get_pod_logs_and_evict
    # (`pod_can_await_conditions` runs: crt serve's simulated kubelets run the pod.)
)
status=0
(cd "$ws" && cargo test --target-dir "$suite_target" --no-fail-fast \
    -p kube -p kube-client -p kube-runtime --lib \
    --features kube-client/openssl-tls,kube-client/unstable-client,kube/derive,kube/runtime \
    -- --ignored "${skips[@]}") || status=$?

echo "kube-rs-suite: took $((SECONDS - start)) s"
if ((status != 0)); then
    echo "kube-rs-suite: failed" >&2
    exit "$status"
fi
