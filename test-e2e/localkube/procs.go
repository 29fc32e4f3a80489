package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// leftoverPids finds processes this state dir started that outlived their supervisor: components
// re-executed from localkube with a path under the dir in their arguments, the private
// containerd (its --config is under the dir) and its shims (their -address is the dir's socket).
// Processes are matched by their exact arguments, never by name alone.
func leftoverPids(l layout, shims bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		// gVisor's waiters stand for containers, as shims do (gvisor.go).
		if belongsTo(l, argv) && (shims || !(isShim(argv) || isRunscWaiter(l, argv))) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func belongsTo(l layout, argv []string) bool {
	if isRunscWaiter(l, argv) {
		return true
	}
	base := filepath.Base(argv[0])
	// kube-router and KWOK run from the add-on cache with their kubeconfigs under the dir;
	// gVisor's runsc (runsc, runsc-sandbox, runsc-gofer) has --root under the dir.
	isComponent := base == "localkube" || strings.HasPrefix(base, "localkube-") || base == "kube-router" ||
		base == "kwok" || strings.HasPrefix(base, "runsc") || base == objectStoreComponent
	isRuntime := base == "containerd" || strings.HasPrefix(base, "containerd-shim")
	if !isComponent && !isRuntime {
		return false
	}
	for _, arg := range argv[1:] {
		if _, v, ok := strings.Cut(arg, "="); ok {
			arg = v
		}
		if isRuntime && (arg == l.containerdConfig() || arg == l.containerdSocket()) {
			return true
		}
		if isComponent && (arg == l.dir || strings.HasPrefix(arg, l.dir+"/")) {
			return true
		}
	}
	return false
}

func isShim(argv []string) bool { return strings.HasPrefix(filepath.Base(argv[0]), "containerd-shim") }

// killLeftovers sends SIGTERM, waits up to 10 s, then SIGKILLs what is left; returns how many.
// Without shims, containerd's shims (and so the containers they hold) are spared, so that a
// restarted containerd can still stop those containers cleanly through CRI.
func killLeftovers(l layout, shims bool) int {
	pids := leftoverPids(l, shims)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			logf("pid %d ignored SIGTERM; killing it", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return len(pids)
}
