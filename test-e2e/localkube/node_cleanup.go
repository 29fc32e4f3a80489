package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// removePods removes every pod sandbox while containerd still runs (the kubelet is already
// stopped, so nothing recreates them).
func (n *node) removePods() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	count, err := removeAllPods(ctx, n.l)
	if err != nil {
		logf("remove pods: %v", err)
	}
	logf("removed %d pod sandboxes", count)
}

// cleanupHost removes what the node created outside its processes.
func (n *node) cleanupHost() { cleanupHost(n.l) }

// cleanupHost removes the node's host state: kube-proxy's, kube-router's and the kubelet's
// iptables chains (all KUBE-*), kube-router's ipsets, any CNI rules of this network, the isolation
// e2e's stand-in network namespaces, mounts under the state dir, the bridge, kubelet cgroups, and the
// sysctls. Every step is idempotent; failures are reported and the remaining steps still run.
func cleanupHost(l layout) {
	var errs []error
	if self, err := os.Executable(); err == nil {
		// kube-proxy's own cleanup knows every chain and nftables table it may have created.
		if _, err := startAndWait(l, "kube-proxy-cleanup", time.Minute, self, "kube-proxy", "--cleanup", "--v=0"); err != nil {
			errs = append(errs, fmt.Errorf("kube-proxy --cleanup: %w", err))
		}
	}
	for _, bin := range []string{"iptables", "ip6tables"} {
		if err := removeOwnIptablesRules(bin); err != nil {
			errs = append(errs, err)
		}
	}
	// kube-router's ipsets, once no rule references them; then netns a killed e2e run left.
	errs = append(errs, removeKubeRouterIPSets(), removeE2ENetns())
	errs = append(errs, unmountUnder(l.dir))
	if _, err := net.InterfaceByName(bridgeName); err == nil {
		errs = append(errs, run("ip", "link", "del", bridgeName))
	}
	errs = append(errs, removeKubeletCgroups())
	errs = append(errs, restoreSysctls(l))
	removeEmptyHostDirs()
	if err := errors.Join(errs...); err != nil {
		logf("node cleanup: %v", err)
	}
}

// hostDirsOutsideState are the only paths containerd 1.6 and its CNI library use outside the
// state dir (shim sockets, CNI result cache; neither is configurable there). They are removed
// when empty, deepest first; a non-empty one belongs to something else still running.
var hostDirsOutsideState = []string{"/run/containerd/s", "/run/containerd", "/var/lib/cni/results", "/var/lib/cni"}

func removeEmptyHostDirs() {
	for _, dir := range hostDirsOutsideState {
		if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ENOTEMPTY) {
			logf("remove %s: %v", dir, err)
		}
	}
}

// startAndWait runs a one-shot command with its output in logs/<name>.log.
func startAndWait(l layout, name string, timeout time.Duration, path string, args ...string) (*child, error) {
	ch, err := startChild(name, l.logDir(), path, args...)
	if err != nil {
		return nil, err
	}
	select {
	case <-ch.done:
		return ch, ch.err
	case <-time.After(timeout):
		return ch, errors.Join(fmt.Errorf("%s did not finish in %s", name, timeout), ch.stop(time.Second))
	}
}

// unmountUnder unmounts every mount point at or below dir, deepest first (kubelet volume tmpfs,
// containerd rootfs overlays and sandbox shm). A busy mount is detached lazily.
func unmountUnder(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("read mountinfo: %w", err)
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountPath(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			points = append(points, mp)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []error
	for _, mp := range points {
		if err := syscall.Unmount(mp, 0); err != nil && !errors.Is(err, syscall.EINVAL) {
			if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
			}
		}
	}
	return errors.Join(errs...)
}

// unescapeMountPath decodes mountinfo's octal escapes (\040 is a space).
func unescapeMountPath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeKubeletCgroups removes the (empty) kubepods cgroup trees the kubelet created with the
// cgroupfs driver in every cgroup v1 hierarchy, deepest first.
func removeKubeletCgroups() error {
	roots, err := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	if err != nil {
		return fmt.Errorf("find kubepods cgroups: %w", err)
	}
	var errs []error
	for _, root := range roots {
		var dirs []string
		walkErr := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		if walkErr != nil && !os.IsNotExist(walkErr) {
			errs = append(errs, fmt.Errorf("walk %s: %w", root, walkErr))
		}
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}
