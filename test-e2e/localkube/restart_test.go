package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRestartBudgetAllowsLimitWithinWindow(t *testing.T) {
	b := &restartBudget{limit: 2, window: time.Minute}
	t0 := time.Unix(1000, 0)
	if !b.take(t0) || !b.take(t0.Add(time.Second)) {
		t.Fatal("the first two restarts must be allowed")
	}
	if b.take(t0.Add(2 * time.Second)) {
		t.Fatal("a third restart within the window must be refused")
	}
	// Once the first restart is older than the window, one more is allowed.
	if !b.take(t0.Add(time.Minute + time.Second/2)) {
		t.Fatal("a restart after the oldest left the window must be allowed")
	}
}

// readPid reads run/<name>.pid.
func readPid(t *testing.T, runDir, name string) int {
	t.Helper()
	data, err := os.ReadFile(componentPidFile(runDir, name))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitNewPid waits until run/<name>.pid names a live process other than old.
func waitNewPid(t *testing.T, runDir, name string, old int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if pid := readPid(t, runDir, name); pid != old && syscall.Kill(pid, 0) == nil {
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s was not restarted (pid still %d)", name, old)
	return 0
}

// A killed kube-apiserver is started again with the same command, in the same place of the
// shutdown order; a component that is not restartable still stops the supervisor with an error.
func TestSupervisorRestartsKilledAPIServerOnly(t *testing.T) {
	dir := t.TempDir()
	c := &cluster{logDir: filepath.Join(dir, "logs"), runDir: dir, restartDelay: 10 * time.Millisecond}
	defer c.shutdown()
	for _, name := range []string{"etcd", "kube-apiserver", "kube-scheduler"} {
		if _, err := c.start(name, "/bin/sleep", "300"); err != nil {
			t.Fatal(err)
		}
	}
	result := make(chan error, 1)
	go func() { result <- c.runUntilStopped(make(chan os.Signal)) }()

	for i := 0; i < 2; i++ {
		old := readPid(t, dir, "kube-apiserver")
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		pid := waitNewPid(t, dir, "kube-apiserver", old)
		if c.children[1].name != "kube-apiserver" || c.children[1].cmd.Process.Pid != pid {
			t.Fatalf("children[1] = %s pid %d, want the new kube-apiserver pid %d",
				c.children[1].name, c.children[1].cmd.Process.Pid, pid)
		}
		if got := c.children[1].args; len(got) != 1 || got[0] != "300" {
			t.Fatalf("restarted with args %q, want the original [300]", got)
		}
	}
	select {
	case err := <-result:
		t.Fatalf("supervisor stopped after a restartable exit: %v", err)
	default:
	}

	if err := syscall.Kill(readPid(t, dir, "etcd"), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-result:
		if err == nil || !strings.Contains(err.Error(), "etcd exited unexpectedly") {
			t.Fatalf("error = %v, want etcd exited unexpectedly", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("supervisor kept running after etcd exited")
	}
	log, err := os.ReadFile(filepath.Join(dir, "logs", "kube-apiserver.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "==== "); n != 3 {
		t.Fatalf("kube-apiserver.log has %d start headers, want 3 (appended across restarts)", n)
	}
}

// A component in a crash loop stops the cluster once its budget is spent.
func TestSupervisorStopsAfterRestartBudget(t *testing.T) {
	dir := t.TempDir()
	c := &cluster{logDir: filepath.Join(dir, "logs"), runDir: dir, restartDelay: time.Millisecond}
	defer c.shutdown()
	if _, err := c.start("kube-controller-manager", "/bin/false"); err != nil {
		t.Fatal(err)
	}
	result := make(chan error, 1)
	go func() { result <- c.runUntilStopped(make(chan os.Signal)) }()
	select {
	case err := <-result:
		want := "kube-controller-manager exited (exit status 1) after 5 restarts"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error = %v, want %q", err, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a crash-looping component was restarted without end")
	}
}

// A signal stops the supervisor cleanly, and shutdown removes the pid files.
func TestSupervisorStopsOnSignalAndRemovesPidFiles(t *testing.T) {
	dir := t.TempDir()
	c := &cluster{logDir: filepath.Join(dir, "logs"), runDir: dir}
	if _, err := c.start("kube-apiserver", "/bin/sleep", "300"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan os.Signal, 1)
	stop <- syscall.SIGTERM
	if err := c.runUntilStopped(stop); err != nil {
		t.Fatalf("runUntilStopped = %v, want nil on a signal", err)
	}
	c.shutdown()
	if _, err := os.Stat(componentPidFile(dir, "kube-apiserver")); !os.IsNotExist(err) {
		t.Fatalf("pid file left after shutdown (stat: %v)", err)
	}
}
