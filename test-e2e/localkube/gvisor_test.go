package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeRunsc stands in for runsc: create writes the "sandbox" pid (the file sandbox-pid) to
// --pid-file, start writes to its stdout and stderr (the container's stdio for a subcontainer),
// wait blocks until the file exit exists and prints runsc's JSON result with its content, kill
// and state answer as runsc does for an exited sandbox once the file stopped exists, and every
// call is appended to calls.
const fakeRunsc = `#!/bin/sh
d=%s
echo "$*" >>"$d/calls"
cmd= prev= pidfile= last=
for a in "$@"; do
  if [ -z "$cmd" ]; then
    case "$prev" in --root|--log|--log-format) ;; *) case "$a" in -*) ;; *) cmd=$a ;; esac ;; esac
  fi
  [ "$prev" = --pid-file ] && pidfile=$a
  prev=$a last=$a
done
case "$cmd" in
  create) cat "$d/sandbox-pid" >"$pidfile" ;;
  start) echo started-out; echo started-err >&2 ;;
  wait) while [ ! -f "$d/exit" ]; do sleep 0.05; done; printf '{"id":"%%s","exitStatus":%%s}\n' "$last" "$(cat "$d/exit")" ;;
  kill) if [ -f "$d/stopped" ]; then echo "sandbox is not running"; exit 128; fi; echo "kill ok" ;;
  state) if [ -f "$d/stopped" ]; then echo '{"status": "stopped"}'; else echo '{"status": "running"}'; fi ;;
  *) echo "$cmd ok" ;;
esac
`

type wrapperEnv struct {
	t                               *testing.T
	dir, wrapper, waiters, cgroupfs string
	bundle                          string
}

// newWrapperEnv writes the wrapper around a fake runsc, a bundle whose config.json has the given
// CRI container type, and a fake cgroup mount mirroring this process's cgroups (the "sandbox").
func newWrapperEnv(t *testing.T, containerType string) *wrapperEnv {
	t.Helper()
	if _, err := exec.LookPath("mkfifo"); err != nil {
		t.Skip("mkfifo not installed")
	}
	// The waiter outlives the wrapper: as a subreaper this process gets it as a child to wait for.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("PR_SET_CHILD_SUBREAPER: %v", err)
	}
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
	dir := t.TempDir()
	e := &wrapperEnv{t: t, dir: dir, wrapper: filepath.Join(dir, "runsc-wrapper"), waiters: filepath.Join(dir, "waiters"),
		cgroupfs: filepath.Join(dir, "cgroup"), bundle: filepath.Join(dir, "bundle")}
	runsc := filepath.Join(dir, "runsc")
	must(t, os.WriteFile(runsc, []byte(strings.Replace(strings.Replace(fakeRunsc, "%s", strconv.Quote(dir), 1), "%%", "%", -1)), 0o755))
	must(t, os.WriteFile(e.wrapper, []byte(runscWrapper(runsc, []string{"--platform=systrap"}, e.waiters, e.cgroupfs)), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "sandbox-pid"), []byte(strconv.Itoa(os.Getpid())), 0o644))
	must(t, os.MkdirAll(e.bundle, 0o755))
	cfg := `{"ociVersion": "1.0.2", "process": {"terminal": false}, "annotations": {"io.kubernetes.cri.container-type": "` + containerType + `"}}`
	must(t, os.WriteFile(filepath.Join(e.bundle, "config.json"), []byte(cfg), 0o644))
	for _, p := range e.podCgroups() {
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, nil, 0o644))
	}
	return e
}

// podCgroups are the fake cgroup.procs files of the parents of this process's cgroups.
func (e *wrapperEnv) podCgroups() []string {
	raw, err := os.ReadFile("/proc/self/cgroup")
	must(e.t, err)
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		ctl := strings.TrimPrefix(parts[1], "name=")
		if ctl == "" {
			ctl = "unified"
		}
		out = append(out, filepath.Join(e.cgroupfs, ctl, filepath.Dir(parts[2]), "cgroup.procs"))
	}
	return out
}

// run runs the wrapper as the shim does (global flags first) with stdout and stderr to the files
// out and err under the test dir (the container's stdio for create); returns its exit code and
// what it wrote.
func (e *wrapperEnv) run(args ...string) (int, string) {
	e.t.Helper()
	out, err := os.OpenFile(filepath.Join(e.dir, "out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	must(e.t, err)
	defer out.Close()
	cmd := exec.Command(e.wrapper, append([]string{"--root", filepath.Join(e.dir, "root"), "--log", filepath.Join(e.bundle, "log.json"), "--log-format", "json"}, args...)...)
	var buf bytes.Buffer
	if args[0] == "create" {
		cmd.Stdout, cmd.Stderr = out, out
	} else {
		cmd.Stdout, cmd.Stderr = &buf, &buf
	}
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), buf.String()
		}
		e.t.Fatalf("run wrapper %v: %v", args, err)
	}
	return 0, buf.String()
}

func (e *wrapperEnv) create(id string) int {
	e.t.Helper()
	pidFile := filepath.Join(e.bundle, "init.pid")
	if code, out := e.run("create", "--bundle", e.bundle, "--pid-file", pidFile, id); code != 0 {
		e.t.Fatalf("create: exit %d: %s", code, out)
	}
	raw, err := os.ReadFile(pidFile)
	must(e.t, err)
	pid, err := strconv.Atoi(string(raw)) // exactly a number: go-runc does not trim it
	if err != nil {
		e.t.Fatalf("pid file %q: %v", raw, err)
	}
	return pid
}

// waitExit waits for the waiter (a child of this subreaper) and returns its exit code.
func (e *wrapperEnv) waitExit(pid int) int {
	e.t.Helper()
	done := make(chan syscall.WaitStatus, 1)
	go func() {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
		done <- ws
	}()
	select {
	case ws := <-done:
		return ws.ExitStatus()
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(pid, syscall.SIGKILL)
		e.t.Fatalf("waiter %d did not exit", pid)
		return -1
	}
}

func (e *wrapperEnv) read(name string) string {
	raw, _ := os.ReadFile(filepath.Join(e.dir, name))
	return string(raw)
}

func TestRunscWrapperSubcontainerReportsAWaiterThatExitsWithTheContainer(t *testing.T) {
	e := newWrapperEnv(t, "container")
	pid := e.create("app")
	if pid == os.Getpid() {
		t.Fatalf("create reported the sandbox's pid %d for a subcontainer; the shim would never see the container exit", pid)
	}
	argv, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	must(t, err)
	if a := strings.Split(string(argv), "\x00"); len(a) < 2 || filepath.Base(a[0]) != "sh" || a[1] != e.wrapper {
		t.Errorf("waiter %d is not the wrapper run by sh: %q", pid, argv)
	}
	for _, p := range e.podCgroups() {
		if got := strings.TrimSpace(readFile(t, p)); got != strconv.Itoa(pid) {
			t.Errorf("%s = %q, want the waiter %d (the pod's cgroup)", p, got, pid)
		}
	}
	if code, out := e.run("start", "app"); code != 0 {
		t.Fatalf("start: exit %d: %s", code, out)
	} else if strings.Contains(out, "started-") {
		t.Errorf("runsc start's stdio went to the shim's pipe (%q), not the container's", out)
	}
	if got := e.read("out"); !strings.Contains(got, "started-out") || !strings.Contains(got, "started-err") {
		t.Errorf("container stdio = %q, want runsc start's output (it hands its stdio to the container)", got)
	}
	// Started: the waiter now sits in "runsc wait" until the container exits.
	must(t, os.WriteFile(filepath.Join(e.dir, "exit"), []byte("7"), 0o644))
	if code := e.waitExit(pid); code != 7 {
		t.Errorf("waiter exit = %d, want the container's 7", code)
	}
	if code, out := e.run("delete", "app"); code != 0 {
		t.Errorf("delete: exit %d: %s", code, out)
	}
	if left, _ := filepath.Glob(filepath.Join(e.waiters, "app.*")); len(left) > 0 {
		t.Errorf("delete left %v", left)
	}
}

func TestRunscWrapperKillBeforeStartEndsTheWaiter(t *testing.T) {
	e := newWrapperEnv(t, "container")
	pid := e.create("app")
	code, out := e.run("kill", "app", "9")
	if code != 0 {
		t.Fatalf("kill: exit %d: %s", code, out)
	}
	if code := e.waitExit(pid); code != 128+9 {
		t.Errorf("waiter exit = %d, want 137 (128+SIGKILL)", code)
	}
	if strings.Contains(e.read("calls"), " kill ") || strings.Contains(e.read("calls"), " wait ") {
		t.Errorf("runsc was asked to kill or wait for a container that never started: %s", e.read("calls"))
	}
}

func TestRunscWrapperDeleteBeforeStartEndsTheWaiter(t *testing.T) {
	e := newWrapperEnv(t, "container")
	pid := e.create("app")
	if code, out := e.run("delete", "--force", "app"); code != 0 {
		t.Fatalf("delete: exit %d: %s", code, out)
	}
	if code := e.waitExit(pid); code != 137 {
		t.Errorf("waiter exit = %d, want 137", code)
	}
}

func TestRunscWrapperSandboxKeepsItsOwnPid(t *testing.T) {
	e := newWrapperEnv(t, "sandbox")
	if pid := e.create("pod"); pid != os.Getpid() {
		t.Errorf("pid of the sandbox container = %d, want runsc's (%d)", pid, os.Getpid())
	}
	if left, _ := filepath.Glob(filepath.Join(e.waiters, "pod.*")); len(left) > 0 {
		t.Errorf("a waiter for the sandbox container: %v", left)
	}
	if code, out := e.run("kill", "pod", "15"); code != 0 || out != "kill ok\n" {
		t.Errorf("kill of the sandbox: exit %d, output %q (want runsc's)", code, out)
	}
}

func TestRunscWrapperKillOfAnExitedSandboxSaysContainerNotRunning(t *testing.T) {
	e := newWrapperEnv(t, "sandbox")
	e.create("pod")
	must(t, os.WriteFile(filepath.Join(e.dir, "stopped"), nil, 0o644))
	// containerd's runc shim maps "container not running" to NotFound, which containerd ignores;
	// runsc's own "sandbox is not running" made it retry the kill forever (pod stuck Terminating).
	code, out := e.run("kill", "--all", "pod", "9")
	if code == 0 || !strings.Contains(out, "container not running") {
		t.Errorf("kill of an exited sandbox: exit %d, output %q; want a failure saying \"container not running\"", code, out)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	raw, err := os.ReadFile(p)
	must(t, err)
	return string(raw)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
