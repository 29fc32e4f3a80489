#!/usr/bin/env bash
# Proves the isolation e2e can fail: restarts the local cluster WITHOUT its protections (localkube
# --network-policy=false --pod-pids-limit=0), runs the isolation matrix and the PID-limit spec and
# expects both to FAIL (lateral cells open; more processes than the limit start); then restarts the
# cluster with them again (`make test-isolation-unenforced`; the last step of `make test` on the
# local cluster: about 2 min for both restarts). The fork bomb itself is not run without the
# limit (it would take every PID of the machine); the spec's process-count probe fails instead.
# Run from the repository root. Exit 0 = both specs failed as they must without the protections.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export LOCALKUBE_DIR="${LOCALKUBE_DIR:-$PWD/.localkube}"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
JEST="node --experimental-vm-modules $PWD/node_modules/jest/bin/jest.js"

echo "== restarting the cluster with the enforcer and the PID limit OFF"
make cluster-down && make platform-up LOCALKUBE_NETWORK_POLICY=false LOCALKUBE_POD_PIDS_LIMIT=0 || exit 1
run_spec() {
  (set -a; . "$LOCALKUBE_DIR/platform/platform.env"; set +a
   cd test-e2e && $JEST -c jest.e2e.config.js --runInBand "$1") 2>&1 | tee -a "$out"
  return "${PIPESTATUS[0]}"
}
echo "== isolation matrix without the enforcer (must fail)"
run_spec specs/isolation/isolation.e2e.test.ts; rc=$?
# Only the process-count probe: a real fork bomb without a limit would exhaust the machine.
echo "== PID-limit probe without podPidsLimit (must fail)"
(set -a; . "$LOCALKUBE_DIR/platform/platform.env"; set +a
 cd test-e2e && $JEST -c jest.e2e.config.js --runInBand specs/isolation/pids.e2e.test.ts -t 'below the limit') 2>&1 | tee "$out.pids"
pids_rc=${PIPESTATUS[0]}
echo "== restarting the cluster with the enforcer ON"
make cluster-down && make platform-up || exit 1

open=$(grep -c ' OPEN$' "$out" || true)
status=0
if [ "$rc" -ne 0 ] && [ "$open" -gt 0 ]; then
  echo "ok: without the enforcer the isolation spec FAILED (exit $rc) with $open lateral cells OPEN"
else
  echo "NOT OK: without the enforcer the isolation spec exited $rc with $open cells open; it cannot fail as it must" >&2
  status=1
fi
if [ "$pids_rc" -ne 0 ] && grep -q 'fork probe: 3000 children started' "$out.pids"; then
  echo "ok: without podPidsLimit the PID-limit spec FAILED (exit $pids_rc): all 3000 processes started"
else
  echo "NOT OK: without podPidsLimit the PID-limit spec exited $pids_rc; it cannot fail as it must" >&2
  status=1
fi
rm -f "$out.pids"
exit $status
