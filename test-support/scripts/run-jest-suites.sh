#!/usr/bin/env bash
# Runs the jest suites of several workspaces, JEST_JOBS at a time (default 2): the unit tier
# (`make test-unit`) and the integration tier (`make test-integration`, --config
# jest.integration.config.js).
#   run-jest-suites.sh [--config FILE] WORKSPACE...
# The workspaces start in the order given (put the slowest first, so a short one runs beside the
# tail of a long one). They share nothing but the CPU: unit suites have no outside state, and each
# integration suite starts its own control plane (localkube --profile=controlplane on free loopback
# ports in its own temp dir) and its operators, gateways and agents on port 0. Both wait on sockets,
# timers and watches as much as they compute, so two at a time fill the 2 cores one at a time left
# half idle. Each suite's output is printed whole when it ends (never interleaved), a progress line
# every 60 s says what is still running, and the exit status is 1 when any suite failed.
set -uo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
jest="${JEST:?JEST (the jest command line) must be set; run through make test-unit or make test-integration}"
jobs="${JEST_JOBS:-2}"
config=()
if [ "${1:-}" = --config ]; then
  config=(-c "$2")
  shift 2
fi
[ $# -gt 0 ] || { echo "usage: run-jest-suites.sh [--config FILE] WORKSPACE..." >&2; exit 2; }
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

declare -A pid_of=() started=()
failed=()

log_of() { echo "$logs/${1//\//_}"; } # sdk/typescript -> sdk_typescript

finish() { # $1 workspace, $2 exit status
  local s="$1" rc="$2"
  echo "== $s: $([ "$rc" = 0 ] && echo passed || echo FAILED) in $(($(date +%s) - started[$s])) s"
  cat "$(log_of "$s").log"
  [ "$rc" = 0 ] || failed+=("$s")
}

reap() { # waits for any one suite to end and reports it
  local done_pid rc s
  wait -n -p done_pid "${pid_of[@]}"
  rc=$?
  for s in "${!pid_of[@]}"; do
    if [ "${pid_of[$s]}" = "$done_pid" ]; then
      unset "pid_of[$s]"
      finish "$s" "$rc"
    fi
  done
}

progress() { # the suites' start times are files: this loop runs in its own process
  local f s line
  while sleep 60; do
    line=""
    for f in "$logs"/*.start; do
      [ -f "$f" ] || continue
      s="$(basename "$f" .start)"
      [ -f "$logs/$s.done" ] && continue
      line="$line ${s//_//} ($(grep -cE '^(PASS|FAIL) ' "$logs/$s.log" 2>/dev/null) files done, $(($(date +%s) - $(cat "$f"))) s)"
    done
    [ -z "$line" ] || echo "[jest] still running:$line"
  done
}
progress &
progress_pid=$!

for s in "$@"; do
  [ -d "$root/$s" ] || { echo "run-jest-suites.sh: no workspace $s" >&2; failed+=("$s"); continue; }
  while ((${#pid_of[@]} >= jobs)); do reap; done
  started[$s]=$(date +%s)
  log="$(log_of "$s")"
  echo "${started[$s]}" >"$log.start"
  echo "== $s: started"
  (cd "$root/$s" && $jest "${config[@]}" >"$log.log" 2>&1; rc=$?; touch "$log.done"; exit $rc) &
  pid_of[$s]=$!
done
while ((${#pid_of[@]})); do reap; done
kill "$progress_pid" 2>/dev/null
wait "$progress_pid" 2>/dev/null

if ((${#failed[@]})); then
  echo "run-jest-suites.sh: failed in: ${failed[*]}" >&2
  exit 1
fi
