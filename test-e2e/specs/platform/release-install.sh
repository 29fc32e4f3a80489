#!/usr/bin/env bash
# e2e: the release artefacts install and pass their own tests (issue 33). On the local platform
# (make platform-up), with dist/ from `make release`:
#   1. dist/SHA256SUMS verifies; the images are imported from dist/images/*.oci.tar into the
#      cluster's containerd (test-e2e/images/scripts/import.sh: `ctr images import`);
#   2. the release is upgraded to the packaged chart dist/charts/sandbox-platform-V.tgz with
#      --reset-then-reuse-values (the packaged chart's defaults, which tag every image V =
#      appVersion, under the values given at install; plain --reuse-values would keep the old
#      chart's defaults, tag dev included): the operator, the gateway and the default sandbox
#      image run V;
#   3. `helm test` passes (readiness of both, one exec in a throwaway session with the e2e key);
#   4. the previous revision is restored (rollback), so the specs after this one see the
#      platform as `make platform-up` left it.
# Cheap when nothing changed: make release reuses dist/ (hash of inputs), imports skip images
# containerd already holds.
set -euo pipefail
cd "$(dirname "$0")/../../.."
LOCALKUBE_DIR=${LOCALKUBE_DIR:-$PWD/.localkube}
env_file=$LOCALKUBE_DIR/platform/platform.env
[ -f "$env_file" ] || { echo "release-install: $env_file missing; run make platform-up" >&2; exit 1; }
set -a; . "$env_file"; set +a
KUBECONFIG=${E2E_KUBECONFIG:-$LOCALKUBE_DIR/kubeconfig}
k() { "$LOCALKUBE_DIR/bin/kubectl" --kubeconfig "$KUBECONFIG" "$@"; }
h() { "$LOCALKUBE_DIR/bin/helm" --kubeconfig "$KUBECONFIG" "$@"; }
ns=$E2E_NAMESPACE rel=$E2E_PLATFORM_RELEASE pns=$E2E_PLATFORM_NAMESPACE
version=$(node -p 'require("./package.json").version')
dist=${DIST_DIR:-$PWD/dist}
chart=$dist/charts/sandbox-platform-$version.tgz
passed=0 failed=0
ok() { echo "ok   - $*"; passed=$((passed + 1)); }
fail() { echo "FAIL - $*" >&2; failed=$((failed + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else fail "$what"; fi; }
[ -f "$chart" ] || { echo "release-install: $chart missing; run make release" >&2; exit 1; }

echo "== release $version from $dist on release $rel in $pns"
check "dist/SHA256SUMS verifies" bash -c "cd '$dist' && sha256sum --quiet -c SHA256SUMS"
IMGBUILD=${IMGBUILD:-$LOCALKUBE_DIR/images/build/bin/imgbuild} \
  test-e2e/images/scripts/import.sh --address "$LOCALKUBE_DIR/containerd/containerd.sock" "$dist"/images/*.oci.tar
rev_before=$(h history "$rel" -n "$pns" --max 1 -o json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).at(-1).revision))')

test_key_secret=release-test-api-key
k -n "$pns" create secret generic "$test_key_secret" --from-file=api-key=<(printf %s "$E2E_GATEWAY_API_KEY") \
  --dry-run=client -o yaml | k apply -f - >/dev/null
restore() {
  echo "== rollback to revision $rev_before"
  h rollback "$rel" "$rev_before" -n "$pns" --wait --timeout 5m >/dev/null && ok "rolled back to revision $rev_before" \
    || fail "rollback to revision $rev_before"
  k -n "$pns" delete secret "$test_key_secret" --ignore-not-found >/dev/null
  echo "release-install: $passed passed, $failed failed"
}
trap 'restore; if [ "$failed" -ne 0 ]; then exit 1; fi' EXIT

echo "== helm upgrade to $(basename "$chart")"
if h upgrade "$rel" "$chart" -n "$pns" --reset-then-reuse-values \
  --set tests.exec.apiKeySecret="$test_key_secret" --set tests.exec.namespace="$ns" --wait --timeout 5m >/dev/null; then
  ok "helm upgrade to the packaged chart"
else
  fail "helm upgrade to the packaged chart"; exit 1
fi
check "the release runs chart $version (appVersion $version)" \
  test "$(h list -n "$pns" -f "^$rel\$" -o json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const r=JSON.parse(s)[0];console.log(r.chart+" "+r.app_version)})')" = "sandbox-platform-$version $version"
for d in operator gateway; do
  image=$(k -n "$pns" get deploy "$rel-sandbox-platform-$d" -o jsonpath='{.spec.template.spec.containers[0].image}')
  want=localhost/sandbox-platform/$([ $d = gateway ] && echo api-gateway || echo operator):$version
  check "the $d runs $want" test "$image" = "$want"
done
default_image=$(k -n "$pns" get deploy "$rel-sandbox-platform-operator" -o jsonpath='{.spec.template.spec.containers[0].env[?(@.name=="SANDBOX_DEFAULT_IMAGE")].value}')
check "sessions default to localhost/sandbox-platform/sandbox-agent:$version" test "$default_image" = "localhost/sandbox-platform/sandbox-agent:$version"

echo "== helm test"
test_out=$(h test "$rel" -n "$pns" --timeout 6m 2>&1) && test_rc=0 || test_rc=$?
echo "$test_out" | grep -E '^(TEST SUITE|Phase|[0-9.]+s (ok|FAIL|info))' || true
check "helm test passed on the packaged chart and images (exit $test_rc)" test "$test_rc" -eq 0
[ "$test_rc" -eq 0 ] || echo "$test_out" >&2
check "helm test ran the exec in a throwaway session" grep -q 'ok   - exec in .*"helm-test-42\\n"' <<<"$test_out"
check "the gateway reports version $version" grep -q "the gateway reports version $version;" <<<"$test_out"
