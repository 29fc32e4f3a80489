package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// runStart is `up` in the background: it returns once the cluster is ready (exit 0) or failed
// (exit 1, with the end of the log). A running cluster on the same dir is reused, not restarted.
func runStart(args []string) int {
	f, err := parseUpFlags("start", args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "localkube start:", err)
		return 2
	}
	l := layout{dir: f.dir}
	if pid, alive := supervisorPid(l); alive {
		st, err := readState(l)
		if err != nil || !fileExists(l.readyFile()) {
			fmt.Fprintf(os.Stderr, "localkube is already starting on %s (pid %d); wait for it or run `make cluster-down`\n", l.dir, pid)
			return 1
		}
		fmt.Printf("localkube is already running on %s (pid %d, profile %s, %s): reusing it\n", l.dir, pid, st.Profile, st.Server)
		if st.Profile != f.profile {
			fmt.Printf("note: it runs profile %q, not the requested %q; `make cluster-down` first to switch\n", st.Profile, f.profile)
		}
		return 0
	}
	if err := startDetached(l, args); err != nil {
		fmt.Fprintln(os.Stderr, "localkube start:", err)
		return 1
	}
	return 0
}

// startDetached runs `localkube up` in its own session with output in logs/localkube.log, and
// follows that log until the ready marker appears or the supervisor exits.
func startDetached(l layout, upArgs []string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locate own binary: %w", err)
	}
	if err := os.MkdirAll(l.logDir(), 0o755); err != nil {
		return fmt.Errorf("create log dir: %w", err)
	}
	_ = os.Remove(l.readyFile())
	logPath := filepath.Join(l.logDir(), "localkube.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", logPath, err)
	}
	defer logFile.Close()
	offset, err := logFile.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("seek %s: %w", logPath, err)
	}
	closeInheritedOnExec()
	cmd := exec.Command(self, append([]string{"up"}, upArgs...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // survives the shell that started it
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start supervisor: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	follow := newLogFollower(logPath, offset)
	for {
		follow.copyNew(os.Stdout)
		if fileExists(l.readyFile()) {
			follow.copyNew(os.Stdout)
			return nil
		}
		select {
		case err := <-exited:
			follow.copyNew(os.Stdout)
			return fmt.Errorf("the supervisor exited before the cluster was ready (%v); full log: %s", err, logPath)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// closeInheritedOnExec marks every descriptor above stderr close-on-exec. Go opens its own files
// that way, but descriptors this process inherited (a caller's lock, a CI harness's pipe) would
// otherwise pass on to the detached supervisor and every daemon it starts, and stay open for the
// cluster's lifetime: a pipe would never reach EOF, a lock never be released.
func closeInheritedOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		var fd int
		if _, err := fmt.Sscanf(e.Name(), "%d", &fd); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// logFollower prints what was appended to a log file since the last call.
type logFollower struct {
	path   string
	offset int64
}

func newLogFollower(path string, offset int64) *logFollower { return &logFollower{path, offset} }

func (f *logFollower) copyNew(w io.Writer) {
	file, err := os.Open(f.path)
	if err != nil {
		return
	}
	defer file.Close()
	if _, err := file.Seek(f.offset, io.SeekStart); err != nil {
		return
	}
	n, _ := io.Copy(w, bufio.NewReader(file))
	f.offset += n
}

// runDown stops the supervisor (which stops components and cleans the node), then sweeps for
// anything a crashed supervisor may have left: processes, pods, mounts, bridge, iptables rules.
func runDown(args []string) int {
	fs := flag.NewFlagSet("down", flag.ContinueOnError)
	dir := fs.String("dir", "", "state directory (required)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "localkube down: --dir is required")
		return 2
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "localkube down:", err)
		return 1
	}
	if err := down(layout{dir: abs}); err != nil {
		fmt.Fprintln(os.Stderr, "localkube down:", err)
		return 1
	}
	return 0
}

func down(l layout) error {
	stopDetachedKwok(l)
	if pid, alive := supervisorPid(l); alive {
		logf("stopping the supervisor (pid %d)", pid)
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			return fmt.Errorf("signal supervisor %d: %w", pid, err)
		}
		deadline := time.Now().Add(3 * time.Minute)
		for syscall.Kill(pid, 0) == nil {
			if time.Now().After(deadline) {
				return fmt.Errorf("supervisor %d still running after 3m; see %s", pid, filepath.Join(l.logDir(), "localkube.log"))
			}
			time.Sleep(200 * time.Millisecond)
		}
	} else {
		logf("no supervisor running on %s", l.dir)
	}
	_ = os.Remove(l.readyFile())
	return sweep(l)
}

// sweep is the crash path: stop leftover component processes of this dir, remove pods through
// a temporary containerd if sandboxes remain (it reattaches to their shims), kill any shim still
// left, then clean host state. A clean supervisor stop leaves nothing for it to do.
func sweep(l layout) error {
	if n := killLeftovers(l, false); n > 0 {
		logf("stopped %d leftover component processes", n)
	}
	if fileExists(l.containerdConfig()) && hasSandboxState(l) {
		if err := removePodsWithTemporaryContainerd(l); err != nil {
			logf("remove leftover pods: %v", err)
		}
	}
	if n := killLeftovers(l, true); n > 0 {
		logf("killed %d leftover containerd shims", n)
	}
	if fileExists(l.containerdConfig()) {
		cleanupHost(l)
	}
	return nil
}

// hasSandboxState reports whether containerd still tracks pod sandboxes for this dir.
func hasSandboxState(l layout) bool {
	entries, err := os.ReadDir(filepath.Join(l.containerdDir(), "state", "io.containerd.grpc.v1.cri", "sandboxes"))
	return err == nil && len(entries) > 0
}

func removePodsWithTemporaryContainerd(l layout) error {
	tools, err := findNodeTools()
	if err != nil {
		return err
	}
	logf("leftover pod sandboxes found; starting containerd briefly to remove them")
	ch, err := startChild("containerd-sweep", l.logDir(), tools["containerd"], "--config", l.containerdConfig())
	if err != nil {
		return err
	}
	defer func() { _ = ch.stop(stopGrace) }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = waitUntil(ctx, "temporary containerd", []*child{ch}, func(ctx context.Context) (bool, string) {
		rs, err := newCRI(l)
		if err != nil {
			return false, err.Error()
		}
		_, err = rs.Version(ctx, "v1")
		return err == nil, fmt.Sprint(err)
	})
	if err != nil {
		return err
	}
	count, err := removeAllPods(ctx, l)
	logf("removed %d leftover pod sandboxes", count)
	return err
}

// runReset stops the cluster and deletes its state: certificates, etcd data, containerd's
// content and snapshots (imported images), kubelet and CNI state, logs. The state dir is shared
// with other tools (the image tarballs in images/, helm in bin/), so only localkube's own paths
// are removed.
func runReset(args []string) int {
	fs := flag.NewFlagSet("reset", flag.ContinueOnError)
	dir := fs.String("dir", "", "state directory (required)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "localkube reset: --dir is required")
		return 2
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "localkube reset:", err)
		return 1
	}
	l := layout{dir: abs}
	if err := down(l); err != nil {
		fmt.Fprintln(os.Stderr, "localkube reset:", err)
		return 1
	}
	// Never delete through a mount point: that would delete the mounted file system's contents.
	if err := unmountUnder(abs); err != nil {
		fmt.Fprintln(os.Stderr, "localkube reset: refusing to delete while mounts remain:", err)
		return 1
	}
	for _, path := range l.ownedPaths() {
		if err := os.RemoveAll(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintln(os.Stderr, "localkube reset:", err)
			return 1
		}
	}
	logf("deleted the cluster state in %s (other tools' files there, e.g. images/, are kept)", abs)
	return 0
}
