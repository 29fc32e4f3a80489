package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// `localkube kwok`: simulated nodes on a running cluster, without restarting it. The same nodes
// and KWOK as --kwok-nodes (kwok.go), but KWOK runs detached from the supervisor (its own session,
// its pid in run/kwok.pid, log logs/kwok.log), so a benchmark can add them, run and take them
// away again while other work keeps using the cluster. `--nodes=0` stops it and removes the
// nodes with every Pod still bound to them; `down` does the same before it stops the supervisor.
// A KWOK the supervisor runs (--kwok-nodes) is left alone: it goes with the cluster.

// runKwok is `localkube kwok`.
func runKwok(args []string) int {
	fs := flag.NewFlagSet("kwok", flag.ContinueOnError)
	dir := fs.String("dir", "", "state directory of a running cluster (required)")
	nodes := fs.Int("nodes", 0, "simulated nodes to have (0: stop KWOK and remove them)")
	binary := fs.String("kwok", "", "path of KWOK's controller (addons/kwok/build.sh); needed when --nodes > 0")
	timeout := fs.Duration("timeout", 3*time.Minute, "how long to wait for the nodes to be Ready")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "localkube kwok: --dir is required")
		return 2
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "localkube kwok:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := attachKwok(ctx, layout{dir: abs}, nodeOptions{kwok: *binary, kwokNodes: *nodes}); err != nil {
		fmt.Fprintln(os.Stderr, "localkube kwok:", err)
		return 1
	}
	return 0
}

func attachKwok(ctx context.Context, l layout, o nodeOptions) error {
	if err := o.validateKwok(); err != nil {
		return err
	}
	st, err := readState(l)
	if err != nil || !fileExists(l.readyFile()) {
		return fmt.Errorf("no running cluster on %s (start it with `make cluster-up`)", l.dir)
	}
	if st.Profile != profileCluster {
		return fmt.Errorf("the %s profile has no scheduler to place Pods on simulated nodes", st.Profile)
	}
	pid, alive := kwokPid(l)
	if alive && isSupervisorChild(pid, st.Pid) {
		logf("KWOK runs under the supervisor (started with --kwok-nodes): left as it is")
		return nil
	}
	cs, err := adminClient(l.componentKubeconfig("admin"))
	if err != nil {
		return err
	}
	if o.kwokNodes == 0 {
		return detachKwok(ctx, l)
	}
	if err := ensureKwokIdentity(l, st.Server); err != nil {
		return err
	}
	if err := ensureSimulatedNodes(ctx, cs, o.kwokNodes); err != nil {
		return err
	}
	if !alive {
		if err := writeKwokConfig(l, o.kwokNodes); err != nil {
			return err
		}
		if pid, err = startDetachedKwok(l, o.kwok); err != nil {
			return err
		}
		logf("KWOK started (pid %d, log %s)", pid, filepath.Join(l.logDir(), "kwok.log"))
	}
	return waitUntil(ctx, fmt.Sprintf("%d simulated nodes Ready (KWOK)", o.kwokNodes), nil, simulatedNodesReady(cs, o.kwokNodes))
}

// detachKwok stops a detached KWOK and removes the simulated nodes with their Pods.
func detachKwok(ctx context.Context, l layout) error {
	if pid, alive := kwokPid(l); alive {
		logf("stopping KWOK (pid %d)", pid)
		if err := stopPid(pid, 30*time.Second); err != nil {
			return err
		}
	}
	_ = os.Remove(componentPidFile(l.runDir(), "kwok"))
	cs, err := adminClient(l.componentKubeconfig("admin"))
	if err != nil {
		return err
	}
	n, err := removeSimulatedNodes(ctx, cs, 0)
	logf("removed %d simulated nodes", n)
	return err
}

// stopDetachedKwok is down's first step: a detached KWOK's nodes are removed while the API server
// still runs (best effort: the next start removes what is left).
func stopDetachedKwok(l layout) {
	pid, alive := kwokPid(l)
	st, err := readState(l)
	if !alive || (err == nil && isSupervisorChild(pid, st.Pid)) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := detachKwok(ctx, l); err != nil {
		logf("stop KWOK: %v (the next start removes the simulated nodes left)", err)
	}
}

// ensureKwokIdentity writes KWOK's certificate and kubeconfig if the running cluster was started
// by a localkube that did not make them yet.
func ensureKwokIdentity(l layout, server string) error {
	if fileExists(l.componentKubeconfig("kwok")) {
		return nil
	}
	p, err := ensureIdentities(l)
	if err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	return writeKubeconfig(p, "kwok", server, l.componentKubeconfig("kwok"))
}

// startDetachedKwok starts KWOK in its own session, logging to logs/kwok.log, its pid in
// run/kwok.pid.
func startDetachedKwok(l layout, binary string) (int, error) {
	if err := os.MkdirAll(l.logDir(), 0o755); err != nil {
		return 0, err
	}
	logPath := filepath.Join(l.logDir(), "kwok.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", logPath, err)
	}
	defer logFile.Close()
	args := kwokArgs(l, binary)
	fmt.Fprintf(logFile, "\n==== %s: %s %v (detached: localkube kwok)\n", time.Now().Format(time.RFC3339), binary, args)
	closeInheritedOnExec()
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start KWOK: %w", err)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	if err := os.MkdirAll(l.runDir(), 0o755); err != nil {
		return pid, err
	}
	return pid, writeFileAtomic(componentPidFile(l.runDir(), "kwok"), []byte(strconv.Itoa(pid)+"\n"), 0o644)
}

// kwokPid reads run/kwok.pid and reports whether that process is a KWOK of this state dir.
func kwokPid(l layout) (int, bool) {
	data, err := os.ReadFile(componentPidFile(l.runDir(), "kwok"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return pid, false
	}
	argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	return pid, filepath.Base(argv[0]) == "kwok" && belongsTo(l, argv)
}

// isSupervisorChild: the process's parent is the supervisor.
func isSupervisorChild(pid, supervisor int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 1 && fields[1] == strconv.Itoa(supervisor)
}

// stopPid sends SIGTERM, waits up to grace, then SIGKILLs; returns once the process is gone.
func stopPid(pid int, grace time.Duration) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %d: %w", pid, err)
	}
	deadline := time.Now().Add(grace)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			time.Sleep(200 * time.Millisecond)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}
