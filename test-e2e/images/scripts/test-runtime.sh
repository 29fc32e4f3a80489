#!/usr/bin/env bash
# Runtime checks of the built images, without a cluster (make test-images):
#   - each image is unpacked with umoci and run with runc as a non-root user on a read-only
#     rootfs: pause stays up and exits 0 on SIGTERM, testbox runs its tools and a TCP round trip,
#     the node images start node, the agent answers `sandbox-agent probe`;
#   - pause reaps orphans when it is PID 1 of a PID namespace;
#   - a private containerd (own root, state and socket in a temp dir; never the system one)
#     imports every tarball, lists the refs, skips a second import, and runs testbox.
# App images (sandbox-agent, operator, api-gateway) are checked when their tarballs exist.
# With RUNSC set (make test-images sets it unless LOCALKUBE_GVISOR=false), the agent image's
# sandbox-pty helper also runs under gVisor (`runsc do`): 20 terminals must each deliver output.
#
#   [RUNSC=path/to/runsc] test-runtime.sh IMAGES_DIR
set -euo pipefail

images=${1:?usage: test-runtime.sh IMAGES_DIR}
here=$(cd "$(dirname "$0")" && pwd)
imgbuild=${IMGBUILD:?set IMGBUILD to the imgbuild binary}
[[ $(id -u) == 0 ]] || { echo "test-runtime: runc and containerd need root" >&2; exit 1; }
for t in runc umoci containerd ctr unshare nsenter node; do
  command -v "$t" >/dev/null || { echo "test-runtime: $t not found (make images-host-deps)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/imgtest.XXXXXX)
runc_root=$work/runc
ctd_pid=''
code=''
pass=0 fail=0

cleanup() {
  local id
  # Background jobs still running here are ours (a container's runc, unshare + pause).
  for id in $(jobs -p); do kill "$id" 2>/dev/null || true; done
  for id in $(runc --root "$runc_root" list -q 2>/dev/null); do
    runc --root "$runc_root" delete -f "$id" || echo "cleanup: runc delete $id failed" >&2
  done
  if [[ -n $ctd_pid ]]; then
    kill "$ctd_pid" 2>/dev/null && wait "$ctd_pid" 2>/dev/null
  fi
  # Snapshots of `ctr run` and shim mounts live below $work; unmount deepest first.
  awk -v w="$work/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
    umount -l "$m" || echo "cleanup: umount $m failed" >&2
  done
  rm -rf "$work"
}
trap cleanup EXIT

ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }

# unpack NAME: oci-archive -> OCI layout -> runtime bundle (rootfs + config.json from the image).
unpack() {
  local name=$1 ref
  mkdir -p "$work/layout-$name"
  tar -xf "$images/$name.tar" -C "$work/layout-$name"
  ref=$("$imgbuild" info "$images/$name.tar" | cut -f1)
  umoci unpack --image "$work/layout-$name:${ref##*:}" "$work/bundle-$name" >/dev/null
  cp "$work/bundle-$name/config.json" "$work/bundle-$name/config.image.json"
}

# spec NAME JS: writes bundle NAME's config.json from the one umoci derived from the image,
# edited by JavaScript over `c`; every run is non-interactive and read-only.
spec() {
  node -e '
    const fs = require("fs");
    const [file, code] = process.argv.slice(1);
    const c = JSON.parse(fs.readFileSync(file.replace(/config\.json$/, "config.image.json"), "utf8"));
    c.process.terminal = false;
    c.root.readonly = true;
    new Function("c", code)(c);
    fs.writeFileSync(file, JSON.stringify(c, null, 1));
  ' "$work/bundle-$1/config.json" "${2:-}"
}

run() { runc --root "$runc_root" "$@"; }

# wait_exit PID SECONDS: waits for a background job of this shell and sets `code` to its exit
# status, or to "timeout". (Not a command substitution: a subshell cannot wait for our jobs.)
wait_exit() {
  local pid=$1 i
  code=timeout
  for ((i = 0; i < $2 * 10; i++)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      code=0
      wait "$pid" || code=$?
      return
    fi
    sleep 0.1
  done
}

# state_field ID FIELD prints a field of `runc state` (status, pid), or nothing.
state_field() {
  local json
  json=$(run state "$1" 2>/dev/null) || return 0
  node -e 'console.log(JSON.parse(process.argv[1])[process.argv[2]])' "$json" "$2"
}
state() { state_field "$1" status; }

test_pause() {
  unpack pause
  spec pause
  run run --bundle "$work/bundle-pause" pause-t >"$work/pause.log" 2>&1 &
  local job=$! i uid
  for ((i = 0; i < 50; i++)); do [[ $(state pause-t) == running ]] && break; sleep 0.1; done
  sleep 1
  if [[ $(state pause-t) != running ]]; then
    bad "pause stays up" "state '$(state pause-t)'; log: $(cat "$work/pause.log")"
    return
  fi
  uid=$(awk '/^Uid:/ { print $2 }' "/proc/$(state_field pause-t pid)/status")
  [[ $uid == 65535 ]] && ok "pause runs as uid 65535 on a read-only rootfs" || bad "pause uid" "got $uid"
  ok "pause stays up"
  run kill pause-t TERM
  wait_exit "$job" 5
  [[ $code == 0 ]] && ok "pause exits 0 on SIGTERM" || bad "pause exits 0 on SIGTERM" "exit $code"
  run delete -f pause-t 2>/dev/null || true
}

test_pause_reaps() {
  local bin=$work/bundle-pause/rootfs/pause init before after
  unshare --pid --fork "$bin" 2>/dev/null &
  local job=$!
  sleep 0.3
  init=$(pgrep -P "$job")
  # The subshell exits at once; its sleep is orphaned and re-parented to pause (PID 1 there).
  nsenter --target "$init" --pid -- bash -c '(sleep 0.5 &)'
  before=$(ps -o comm= --ppid "$init" | tr '\n' ' ') || true # ps exits 1 when nothing matches
  sleep 1.2
  after=$(ps -o stat=,comm= --ppid "$init" | tr '\n' ' ') || true
  if [[ $before == *sleep* && -z $after ]]; then
    ok "pause reaps orphans as PID 1"
  else
    bad "pause reaps orphans as PID 1" "children before: '$before', after exit: '$after'"
  fi
  kill -TERM "$init"
  wait_exit "$job" 5
  [[ $code == 0 ]] || bad "pause (unshare) exits 0 on SIGTERM" "exit $code"
}

# run_once NAME ID JS: runs bundle NAME once (spec edited by JS) and prints its output.
run_once() {
  spec "$1" "$3"
  timeout 60 runc --root "$runc_root" run --bundle "$work/bundle-$1" "$2" 2>&1 || echo "exit=$?"
}

test_testbox() {
  unpack testbox
  local out port=$((20000 + RANDOM % 20000))
  out=$(run_once testbox tb-ok 'c.process.args = ["bash", "-c", "echo ok; id -u"]')
  [[ $out == $'ok\n1000' ]] && ok "testbox: bash -c 'echo ok' as uid 1000, read-only" || bad "testbox echo ok" "$out"
  out=$(run_once testbox tb-uid 'c.process.user = {uid: 4242, gid: 4242}; c.process.args = ["bash", "-c", "echo ok; id -u"]')
  [[ $out == $'ok\n4242' ]] && ok "testbox runs as an arbitrary uid (4242)" || bad "testbox any uid" "$out"
  out=$(run_once testbox tb-tools 'c.process.args = ["bash", "-c",
    "for t in sh bash sleep cat head ls grep sed awk ps find netecho; do command -v $t >/dev/null || echo missing $t; done; ps -e -o comm= | head -1; echo x | sed s/x/y/ | awk \"{print toupper(\\$0)}\""]')
  [[ $out == $'bash\nY' ]] && ok "testbox tools (sh bash sleep cat head ls grep sed awk ps find netecho)" || bad "testbox tools" "$out"
  out=$(run_once testbox tb-net "c.process.args = ['bash', '/t/net-roundtrip.sh', '$port'];
    c.mounts.push({destination: '/t/net-roundtrip.sh', type: 'bind', source: '$here/testdata/net-roundtrip.sh', options: ['rbind', 'ro']});")
  [[ $out == $'echo:ping\nhttp:HTTP/1.0 200 OK' ]] && ok "testbox: netecho echo and --http over bash /dev/tcp" || bad "testbox network" "$out"
}

# Module-load failures of a bundle; anything else (e.g. missing configuration) is a start.
load_errors='ERR_MODULE_NOT_FOUND|Cannot find module|Dynamic require|is not defined|SyntaxError|ERR_REQUIRE_ESM'

test_node_image() {
  local name=$1 out job
  unpack "$name"
  out=$(run_once "$name" "$name-node" 'c.process.args = ["/usr/bin/node", "-e", "console.log(process.version)"]')
  [[ $out == v* ]] && ok "$name: node $out runs" || bad "$name: node runs" "$out"
  spec "$name" ''
  run run --bundle "$work/bundle-$name" "$name-start" >"$work/$name.log" 2>&1 &
  job=$!
  wait_exit "$job" 4
  if [[ $code == timeout ]]; then
    ok "$name: bundle loads and keeps running"
    run kill "$name-start" KILL 2>/dev/null || true
    wait "$job" 2>/dev/null || true
  elif grep -Eq "$load_errors" "$work/$name.log"; then
    bad "$name: bundle loads" "$(head -c 600 "$work/$name.log")"
  else
    ok "$name: bundle loads (exited $code without configuration: $(head -c 120 "$work/$name.log" | tr '\n' ' '))"
  fi
}

# workspace: a fresh writable /workspace for uid 1000, as the pod's emptyDir is. (A runc tmpfs
# would keep the image directory's owner and mode, which is not what a pod sees.)
workspace() {
  rm -rf "$work/workspace"
  mkdir -p "$work/workspace"
  chown 1000:1000 "$work/workspace"
}

test_agent_tools() {
  local out
  workspace
  out=$(run_once sandbox-agent agent-tools "c.process.args = ['bash', '/t/agent-tools.sh'];
    c.mounts.push({destination: '/workspace', type: 'bind', source: '$work/workspace', options: ['rbind', 'rw']});
    c.mounts.push({destination: '/t/agent-tools.sh', type: 'bind', source: '$here/testdata/agent-tools.sh', options: ['rbind', 'ro']});")
  [[ $out == *'agent-tools: all ok'* ]] && ok "sandbox-agent developer tools (git python3 curl jq npm tar gzip xz bzip2 unzip diff patch less) and sandbox-pty" ||
    bad "sandbox-agent developer tools" "$out"
}

test_agent_probe() {
  local job i
  workspace
  head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/token"
  spec sandbox-agent "
    c.process.env.push('SANDBOX_TOKEN=' + require('fs').readFileSync('$work/token', 'utf8'));
    c.mounts.push({destination: '/workspace', type: 'bind', source: '$work/workspace', options: ['rbind', 'rw']});
    c.mounts.push({destination: '/var/run/sandbox/token', type: 'bind', source: '$work/token', options: ['rbind', 'ro']});
    c.mounts.push({destination: '/tmp', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'nodev', 'mode=1777']});"
  run run --bundle "$work/bundle-sandbox-agent" agent-t >"$work/agent.log" 2>&1 &
  job=$!
  for ((i = 0; i < 150; i++)); do
    if run exec agent-t sandbox-agent probe >/dev/null 2>&1; then
      ok "sandbox-agent answers 'sandbox-agent probe'"
      run kill agent-t TERM
      wait_exit "$job" 10
      [[ $code != timeout ]] && ok "sandbox-agent exits on SIGTERM" || bad "sandbox-agent exits on SIGTERM" "still running after 10s"
      return
    fi
    sleep 0.1
  done
  bad "sandbox-agent probe" "no success in 15s; log: $(head -c 600 "$work/agent.log")"
}

# The terminal helper under gVisor: gVisor reports a hangup on a pseudo-terminal master while no
# replica is open, also before the child has opened it, so a helper that polled the master before
# its child opened the replica stopped at once (no output, exit 129); it failed 9 to 16 of these
# 20 runs before the helper opened the replica itself. stdin is a FIFO opened read-write (no EOF).
# The count comes back as the exit status: `runsc do` may cut its stdout short.
test_agent_pty_gvisor() {
  local helper=$work/bundle-sandbox-agent/rootfs/opt/sandbox-agent/sandbox-pty answered=0
  [[ -x $helper ]] || unpack sandbox-agent
  timeout 120 "$RUNSC" --root "$work/runsc" --network=none --ignore-cgroups do sh -c "
    f=\$(mktemp -u) && mkfifo \"\$f\" || exit 100
    ok=0
    for i in \$(seq 1 20); do
      case \$('$helper' 80 24 -- /bin/echo pty-ok <>\"\$f\" 3</dev/null 4>/dev/null) in *pty-ok*) ok=\$((ok + 1)) ;; esac
    done
    exit \$ok" >"$work/pty-gvisor.log" 2>&1 || answered=$?
  ((answered == 20)) && ok "sandbox-pty under gVisor: 20 of 20 terminals answered" ||
    bad "sandbox-pty under gVisor" "$answered of 20 terminals answered (100+: setup failed); $(tail -c 400 "$work/pty-gvisor.log")"
}

test_containerd() {
  local sock=$work/ctd/c.sock out
  mkdir -p "$work/ctd"
  cat >"$work/ctd/config.toml" <<EOF
version = 2
root = "$work/ctd/root"
state = "$work/ctd/state"
# CRI is the kubelet's plugin; this instance only stores, unpacks and runs images.
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$work/ctd/opt"
EOF
  containerd --config "$work/ctd/config.toml" >"$work/ctd/log" 2>&1 &
  ctd_pid=$!
  for ((i = 0; i < 100; i++)); do [[ -S $sock ]] && break; sleep 0.1; done
  local tars=("$images"/*.tar) refs want
  IMGBUILD=$imgbuild "$here/import.sh" --address "$sock" "${tars[@]}" | tee "$work/import1.log"
  refs=$(ctr --address "$sock" -n k8s.io images ls -q)
  for t in "${tars[@]}"; do
    want=$("$imgbuild" info "$t" | cut -f1)
    grep -qx "$want" <<<"$refs" && ok "containerd lists $want" || bad "containerd lists $want" "refs: $refs"
  done
  IMGBUILD=$imgbuild "$here/import.sh" --address "$sock" "${tars[@]}" >"$work/import2.log"
  grep -q "^import: 0 imported, ${#tars[@]} skipped" "$work/import2.log" && ok "second import skips all ${#tars[@]} images" ||
    bad "second import skips" "$(tail -1 "$work/import2.log")"
  out=$(timeout 60 ctr --address "$sock" -n k8s.io run --rm --read-only localhost/sandbox-platform/testbox:dev ctr-tb \
    bash -c 'echo ok; id -u' 2>&1) || true
  [[ $out == $'ok\n1000' ]] && ok "ctr run testbox from the imported image" || bad "ctr run testbox" "$out"
}

test_pause
test_pause_reaps
test_testbox
for app in operator api-gateway sandbox-agent; do
  if [[ -f $images/$app.tar ]]; then
    test_node_image "$app"
  else
    echo "SKIP $app: $images/$app.tar not built (make images)"
  fi
done
if [[ -f $images/sandbox-agent.tar ]]; then
  test_agent_tools
  test_agent_probe
  if [[ -n ${RUNSC:-} ]]; then test_agent_pty_gvisor; else echo "SKIP sandbox-pty under gVisor: RUNSC not set"; fi
fi
test_containerd

echo "test-runtime: $pass passed, $fail failed"
((fail == 0))
