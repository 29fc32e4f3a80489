package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	nodev1client "k8s.io/client-go/kubernetes/typed/node/v1"
)

// gVisor on the node. containerd runs runsc through its own runc v2 shim (runtime_type
// io.containerd.runc.v2 with BinaryName = a generated wrapper); why the wrapper, and why not
// gVisor's own shim: see runscWrapperScript.
const (
	// gvisorRuntimeClass is the RuntimeClass pods name (spec.runtimeClassName) to run under gVisor.
	gvisorRuntimeClass = "gvisor"
	// gvisorHandler is containerd's runtime name for runsc (the RuntimeClass handler).
	gvisorHandler = "runsc"
	// runcRuntimeClass names the node's default runtime, containerd's runc: with gVisor the
	// platform's default (operator.sandboxDefaults.runtimeClassName), a session opts out of it
	// only by naming this class where the sandbox policy allows it (docs/adr/0028).
	runcRuntimeClass = "runc"
	// runcHandler is containerd's runtime name for runc (its default_runtime_name).
	runcHandler = "runc"
)

// localkubeRuntimeClasses are the RuntimeClasses localkube manages, all present while runsc is
// configured and all removed when it is not: without gVisor there is nothing to opt out of.
var localkubeRuntimeClasses = []struct{ name, handler string }{
	{gvisorRuntimeClass, gvisorHandler},
	{runcRuntimeClass, runcHandler},
}

// ensureRuntimeClass creates RuntimeClasses gvisor and runc when runsc is configured, and deletes
// the ones a previous start created when it is not (a RuntimeClass whose handler is missing would
// leave pods failing to start instead of being refused).
func ensureRuntimeClass(ctx context.Context, cs *kubernetes.Clientset, enabled bool) error {
	for _, rc := range localkubeRuntimeClasses {
		if err := ensureOneRuntimeClass(ctx, cs.NodeV1().RuntimeClasses(), rc.name, rc.handler, enabled); err != nil {
			return err
		}
	}
	return nil
}

// ensureOneRuntimeClass creates (enabled) or deletes (not enabled, and only one localkube made)
// the RuntimeClass name with this handler; one of the same name with another handler is an error.
func ensureOneRuntimeClass(ctx context.Context, rcs nodev1client.RuntimeClassInterface, name, handler string, enabled bool) error {
	cur, err := rcs.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("get RuntimeClass %s: %w", name, err)
	case !enabled:
		if err == nil && cur.Labels["app.kubernetes.io/managed-by"] == "localkube" {
			if err := rcs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete RuntimeClass %s: %w", name, err)
			}
		}
		return nil
	case err == nil:
		if cur.Handler != handler {
			return fmt.Errorf("RuntimeClass %s exists with handler %q, not %q; delete it first", name, cur.Handler, handler)
		}
		return nil
	}
	rc := &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "localkube"}},
		Handler:    handler,
	}
	if _, err := rcs.Create(ctx, rc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create RuntimeClass %s: %w", name, err)
	}
	logf("RuntimeClass %s (handler %s) created", name, handler)
	return nil
}

// runscWrapperScript is the runtime binary containerd's runc shim runs for gVisor.
//
// A pod's app container (a subcontainer of the pod's sandbox) has no host process of its own:
// `runsc create` reports the sandbox's pid for it, so the shim watched the sandbox's pid for the
// app container's exit and never saw it: a killed app container stayed "running" for the shim
// (while `runsc list` said stopped), and a deleted gVisor pod stayed Terminating. For a
// subcontainer (CRI annotation io.kubernetes.cri.container-type=container) the wrapper reports a
// waiter instead: a shell it leaves behind (a child of the shim once the wrapper exits) that keeps
// the container's stdio (the shim hands it to create only; runsc takes a subcontainer's stdio at
// start), waits on a FIFO until the wrapper's start (or a kill/delete before any start) tells it,
// then runs `runsc wait` and exits with the container's exit status (128+signal when killed),
// which is what the shim reports. The waiter joins the pod's cgroup (the sandbox's parent): the
// shim reads a container's stats and OOM events from the reported pid's cgroup, and runsc removes
// the sandbox's own cgroup when the pod goes.
//
// One-shot commands (start of the sandbox, kill, delete, state, ...) write their output to a
// temporary file instead of the shim's pipe: the shim reads that pipe to EOF, and a process a
// command leaves behind must not hold it open.
//
// gVisor's own shim (containerd-shim-runsc-v1) cannot run here: it sets its own oom_score_adj to
// -999, and going below the minimum a process inherited (0 on these VMs: nothing here has ever
// held CAP_SYS_RESOURCE, which is not in root's bounding set) is refused ("failed to set OOM Score
// on shim: write /proc/PID/oom_score_adj: permission denied"); containerd's runc shim asks for
// containerd's score + 1, which is allowed.
const runscWrapperScript = `#!/bin/sh
# Generated by localkube (test-e2e/localkube/gvisor.go): runsc for containerd's runc v2 shim.
# A pod's app container runs inside the pod's sandbox, and 'runsc create' reports the sandbox's
# pid for it, which the shim would watch for the container's exit. For such a subcontainer this
# wrapper starts a waiter and reports the waiter's pid instead: the waiter keeps the container's
# stdio (the shim hands it to create only; runsc takes it at start), is told when the container
# starts, then runs 'runsc wait' and exits with the container's exit status.
runsc=%q
flags=%q # runsc flags of localkube --runsc-flags, before every command
waiters=%q
cgroupfs=%q
log="$waiters/waiters.log"

root= cmd= bundle= pidfile= prev= id= sig=
for a in "$@"; do
  if [ -z "$cmd" ]; then
    case "$prev" in
      --root) root=$a ;;
      --log|--log-format) ;;
      *) case "$a" in
           --root=*) root=${a#--root=} ;;
           -*) ;;
           *) cmd=$a ;;
         esac ;;
    esac
  else
    case "$prev" in --bundle|-b) bundle=$a ;; --pid-file) pidfile=$a ;; esac
    case "$a" in --bundle=*) bundle=${a#--bundle=} ;; --pid-file=*) pidfile=${a#--pid-file=} ;; esac
  fi
  sig=$id id=$a prev=$a
done
# kill's arguments end with "ID SIGNAL".
if [ "$cmd" = kill ]; then t=$id id=$sig sig=$t; fi
w="$waiters/$id"

say() { echo "$(date -u +%%Y-%%m-%%dT%%H:%%M:%%SZ) $id: $*" >>"$log"; }

# capture runs a one-shot command with its output in a file, not the shim's pipe: a process it
# leaves behind (runsc start's gofer) must not hold that pipe open.
capture() {
  out=$(mktemp) || exit 1
  "$runsc" $flags "$@" >"$out" 2>&1
  rc=$?
  cat "$out"
  rm -f "$out"
  return $rc
}

# tell the waiter of a created (not started) subcontainer what happened; a read-write open of the
# FIFO never blocks, and the waiter holds it open until it exits.
tell() { printf '%%s\n' "$1" 1<>"$w.fifo"; }

# waiter: fd 3 is the FIFO; 0-2 are the container's stdio, kept for 'runsc start'.
waiter() {
  read -r what how <&3 || what=eof
  exec 3<&-
  case "$what" in
    started) ;;
    *) say "waiter: $what before start"; exit "${how:-137}" ;;
  esac
  res=$("$runsc" $flags --root "$root" wait "$id" 2>>"$log" </dev/null)
  st=${res##*\"exitStatus\":}
  st=${st%%%%[!0-9]*}
  if [ -z "$st" ]; then say "waiter: runsc wait gave no status ($res)"; exit 137; fi
  exit "$st"
}

is_subcontainer() {
  grep -Eq '"io\.kubernetes\.cri\.container-type" *: *"container"' "$bundle/config.json" 2>/dev/null
}

case "$cmd" in
  create)
    if [ -n "$pidfile" ] && is_subcontainer; then
      "$runsc" $flags "$@" || exit $?
      mkdir -p "$waiters" && rm -f "$w.pid" "$w.fifo" "$w.started" && mkfifo "$w.fifo" || exit 1
      sandbox=$(cat "$pidfile") || exit 1
      exec 3<>"$w.fifo" 4<&0
      if grep -Eq '"terminal" *: *true' "$bundle/config.json"; then
        waiter </dev/null >/dev/null 2>&1 4<&- &
      else
        waiter 0<&4 4<&- &
      fi
      pid=$!
      exec 3<&- 4<&-
      # The shim takes the container's cgroup (stats, OOM events) from the reported pid. The
      # waiter joins the pod's cgroup, the parent of the sandbox's: runsc removes the sandbox's
      # cgroup when the pod's sandbox goes, and the kubelet empties the pod's.
      while IFS=: read -r _ ctl path; do
        case "$ctl" in "") ctl=unified ;; name=*) ctl=${ctl#name=} ;; esac
        dir=$cgroupfs/$ctl
        if [ "$ctl" = unified ] && [ ! -d "$dir" ]; then dir=$cgroupfs; fi
        parent=${path%%/*}
        [ -f "$dir${parent:-/}/cgroup.procs" ] || continue
        echo "$pid" 2>>"$log" >"$dir${parent:-/}/cgroup.procs" || say "create: waiter $pid stays out of cgroup $dir${parent:-/}"
      done <"/proc/$sandbox/cgroup"
      echo "$pid" >"$w.pid" && printf '%%s' "$pid" >"$pidfile.tmp" && mv "$pidfile.tmp" "$pidfile" || exit 1
      exit 0
    fi
    exec "$runsc" $flags "$@" ;;
  start)
    if [ -f "$w.pid" ]; then
      pid=$(cat "$w.pid")
      "$runsc" $flags "$@" <"/proc/$pid/fd/0" >>"/proc/$pid/fd/1" 2>>"/proc/$pid/fd/2" || exit $?
      : >"$w.started" && tell started
      exit 0
    fi
    capture "$@"; exit $? ;;
  kill)
    if [ -f "$w.pid" ] && [ ! -f "$w.started" ]; then
      tell "killed $((128 + ${sig#-}))"; exit 0
    fi
    res=$(capture "$@")
    rc=$?
    # runsc says "sandbox is not running" of an exited pod; the shim knows runc's words for "already
    # exited" (NotFound, which containerd then ignores), and retried the kill forever on runsc's.
    if [ $rc -ne 0 ] && "$runsc" $flags --root "$root" state "$id" 2>/dev/null | grep -Eq '"status": *"stopped"'; then
      echo "container not running ($res)"
      exit $rc
    fi
    [ -z "$res" ] || echo "$res"
    exit $rc ;;
  delete)
    if [ -f "$w.pid" ] && [ ! -f "$w.started" ]; then tell "deleted 137"; fi
    capture "$@"; rc=$?
    rm -f "$w.pid" "$w.fifo" "$w.started"
    exit $rc ;;
  state|ps|pause|resume|update|events|checkpoint|restore)
    capture "$@"; exit $? ;;
esac
exec "$runsc" $flags "$@"
`

func runscWrapperPath(l layout) string { return l.path("containerd", "runsc-wrapper") }

// runscWaitersDir holds the wrapper's per-container state (<id>.pid, <id>.fifo, <id>.started)
// and waiters.log (what the waiters and the wrapper could not do).
func runscWaitersDir(l layout) string { return l.path("containerd", "runsc-waiters") }

// runscWrapper is the wrapper's text for runscPath, its extra flags (checked by
// validateRunscFlags), the waiters' directory and the cgroup mount.
func runscWrapper(runscPath string, flags []string, waiters, cgroupfs string) string {
	return fmt.Sprintf(runscWrapperScript, runscPath, strings.Join(flags, " "), waiters, cgroupfs)
}

// runscFlagPattern is one runsc flag as --runsc-flags takes it: --name or --name=value, with no
// character a shell would interpret (the flags are written into the wrapper script).
var runscFlagPattern = regexp.MustCompile(`^--[a-z0-9][a-z0-9-]*(=[A-Za-z0-9_.:,/+-]*)?$`)

// validateRunscFlags checks the flags of --runsc-flags (e.g. --platform=ptrace for a benchmark).
// The shim passes --root, --log and --log-format itself.
func validateRunscFlags(flags []string) error {
	for _, f := range flags {
		if !runscFlagPattern.MatchString(f) {
			return fmt.Errorf("--runsc-flags: %q is not a runsc flag of the form --name or --name=value (letters, digits, _.:,/+- only)", f)
		}
		switch name, _, _ := strings.Cut(f, "="); name {
		case "--root", "--log", "--log-format":
			return fmt.Errorf("--runsc-flags: %s is set by containerd's shim, not here", name)
		}
	}
	return nil
}

// writeRunscWrapper writes the wrapper around runscPath (see runscWrapperScript).
func writeRunscWrapper(l layout, runscPath string, flags []string) error {
	if err := os.MkdirAll(runscWaitersDir(l), 0o755); err != nil {
		return err
	}
	return writeFileAtomic(runscWrapperPath(l), []byte(runscWrapper(runscPath, flags, runscWaitersDir(l), "/sys/fs/cgroup")), 0o755)
}

// isRunscWaiter reports whether argv is this dir's wrapper run by sh: a waiter, or a command
// in flight.
func isRunscWaiter(l layout, argv []string) bool {
	return len(argv) > 1 && filepath.Base(argv[0]) == "sh" && argv[1] == runscWrapperPath(l)
}

// runscRuntimeConfig is containerd's runtime entry for runsc (empty when gVisor is off).
func runscRuntimeConfig(l layout, runscPath string) []string {
	if runscPath == "" {
		return nil
	}
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	key := `[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.` + gvisorHandler + `]`
	return []string{
		"    " + key,
		`      runtime_type = "io.containerd.runc.v2"`,
		"    " + key[:len(key)-1] + `.options]`,
		"        BinaryName = " + q(runscWrapperPath(l)),
		"        Root = " + q(l.path("containerd", "runsc")),
		"        SystemdCgroup = false",
	}
}
