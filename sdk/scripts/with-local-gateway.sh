#!/usr/bin/env bash
# Runs a command against a local live gateway (sdk/harness/local-gateway.ts: control-plane
# localkube, the real gateway, real agents as local processes), with the gateway's variables
# (E2E_GATEWAY_URL, E2E_GATEWAY_API_KEY, E2E_OTHER_API_KEY, E2E_NAMESPACE, E2E_OTHER_NAMESPACE)
# exported, then stops the gateway. Exit status: the command's.
#
#   sdk/scripts/with-local-gateway.sh make sdk-test-live
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
say() { echo "[with-local-gateway] $*" >&2; }

export LOCALKUBE_BIN="${LOCALKUBE_BIN:-$("$root/test-e2e/localkube/build.sh")}"
bundle="$(node "$root/sdk/harness/build.mjs")"
work="$(mktemp -d)"
env_file="$work/gateway.env"
log="$work/local-gateway.log"

say "starting a control plane, the gateway and the stand-in operator (log: $log)"
node "$bundle" --write-env "$env_file" --root "$root" >"$work/stdout" 2>"$log" &
pid=$!
cleanup() {
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# A cold control plane takes up to a few minutes on a loaded 2-core machine.
for ((i = 0; i < 360; i++)); do
  if grep -q '^READY ' "$work/stdout" 2>/dev/null; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then
    say "the local gateway exited before it was ready:"; cat "$log" >&2; exit 1
  fi
  if ((i > 0 && i % 30 == 0)); then say "still starting ($((i / 2)) s)..."; fi
  sleep 0.5
done
grep -q '^READY ' "$work/stdout" || { say "not ready after 180 s:"; cat "$log" >&2; exit 1; }

set -a
# shellcheck disable=SC1090
. "$env_file"
set +a
say "gateway $E2E_GATEWAY_URL (namespace $E2E_NAMESPACE); running: $*"
rc=0
"$@" || rc=$?
if ((rc != 0)); then say "failed (exit $rc); local gateway log:"; tail -n 40 "$log" >&2; fi
exit "$rc"
