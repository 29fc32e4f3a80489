#!/usr/bin/env bash
# Proves the isolation e2e can fail: restarts the local cluster WITHOUT its protections (localkube
# --network-policy=false --pod-pids-limit=0), runs the isolation matrix and the PID-limit spec,
# then restarts the cluster with them again (`make test-isolation-unenforced`), or only stops it
# with ISOLATION_UNENFORCED_RESTORE=false (the last step of `make test` on the local cluster).
# The fork bomb itself is not run without the limit (it would take every PID of the machine); the
# spec's process-count probe runs instead.
# The verdict is unenforced-check.ts (unit-tested): exactly the policy tests must fail (matrix,
# UDP probe, egress CIDR), every other isolation test must pass, EVERY matrix cell must have opened
# (none missing), and all the PID probe's processes must have started.
# Run from the repository root. Exit 0 = both specs failed as they must without the protections.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export LOCALKUBE_DIR="${LOCALKUBE_DIR:-$PWD/.localkube}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
JEST="node --experimental-vm-modules $PWD/node_modules/jest/bin/jest.js"

echo "== restarting the cluster with the enforcer and the PID limit OFF"
make cluster-down && make platform-up LOCALKUBE_NETWORK_POLICY=false LOCALKUBE_POD_PIDS_LIMIT=0 || exit 1
# run_spec JSON_NAME SPEC [jest args...]: jest's JSON result goes to $dir/JSON_NAME, reports to $dir.
run_spec() {
  local json="$1"
  shift
  (set -a; . "$LOCALKUBE_DIR/platform/platform.env"; set +a
   cd test-e2e && E2E_ISOLATION_REPORT_DIR="$dir" $JEST -c jest.e2e.config.js --runInBand \
     --json --outputFile="$dir/$json" "$@") 2>&1
  echo "   (jest exited $?)"
}
echo "== isolation matrix without the enforcer (must fail: every cell open)"
run_spec isolation.jest.json specs/isolation/isolation.e2e.test.ts
# Only the process-count probe: a real fork bomb without a limit would exhaust the machine.
echo "== PID-limit probe without podPidsLimit (must fail: every process started)"
run_spec pids.jest.json specs/isolation/pids.e2e.test.ts -t 'below the limit'
if [ "${ISOLATION_UNENFORCED_RESTORE:-true}" = true ]; then
  echo "== restarting the cluster with the enforcer ON"
  make cluster-down && make platform-up || exit 1
else
  # make test: this is its last tier; a cluster without its protections must not be left running.
  echo "== stopping the cluster (it ran without its protections; make run starts it with them)"
  make cluster-down || exit 1
fi

node test-e2e/specs/isolation/unenforced-check-cli.mjs "$dir"
