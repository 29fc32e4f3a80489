package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// upFlags are the flags of `localkube up` (and of `start`, which runs `up` in the background).
type upFlags struct {
	dir, profile, kubeconfig string
	crdDir                   string
	port, etcdPort           int
	verbosity                int
	exitWithParent           bool
	timeout                  time.Duration
	node                     nodeOptions
}

func parseUpFlags(name string, args []string) (upFlags, error) {
	var f upFlags
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.StringVar(&f.dir, "dir", "", "state directory (required): certificates, etcd data, logs, node state")
	fs.StringVar(&f.profile, "profile", profileCluster, "cluster (control plane + node) or controlplane (no scheduler, kubelet, kube-proxy)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "where to write the admin kubeconfig (default <dir>/kubeconfig)")
	fs.StringVar(&f.crdDir, "crds", "", "apply the CustomResourceDefinitions in this dir's *.yaml before the controller manager starts")
	fs.IntVar(&f.port, "port", 6443, "kube-apiserver port; 0 picks a free one")
	fs.IntVar(&f.etcdPort, "etcd-port", 2379, "etcd client port on 127.0.0.1 (peer port is the next one); 0 picks free ones")
	fs.IntVar(&f.verbosity, "v", 1, "log verbosity of the components")
	fs.BoolVar(&f.exitWithParent, "exit-with-parent", false, "stop the cluster when the parent process dies (test harnesses)")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long to wait for the cluster to become ready")
	fs.BoolVar(&f.node.networkPolicy, "network-policy", true, "enforce NetworkPolicies with kube-router's policy controller (cluster profile; needs --kube-router)")
	fs.StringVar(&f.node.kubeRouter, "kube-router", "", "path of the kube-router binary (test-e2e/localkube/addons/build.sh kube-router)")
	fs.IntVar(&f.node.podPidsLimit, "pod-pids-limit", defaultPodPidsLimit, "kubelet podPidsLimit: processes and threads per pod (0 = unlimited)")
	fs.StringVar(&f.node.runsc, "runsc", "", "path of gVisor's runsc: registers the runtime and RuntimeClass "+gvisorRuntimeClass+" (empty: no gVisor)")
	fs.StringVar(&f.node.kwok, "kwok", "", "path of KWOK's controller (test-e2e/localkube/addons/kwok/build.sh); needed by --kwok-nodes")
	fs.StringVar(&f.node.s3, "s3", "", "path of versitygw: serves the snapshot object store on "+nodeIP+":7480 (test-e2e/localkube/addons/build.sh versitygw; empty: none)")
	fs.IntVar(&f.node.kwokNodes, "kwok-nodes", 0, "simulated nodes next to the real one, run by KWOK (0 = none; a start without them removes those of an earlier start)")
	fs.Func("runsc-flags", "extra runsc flags, space-separated (e.g. \"--platform=ptrace\" to compare platforms)", func(v string) error {
		f.node.runscFlags = strings.Fields(v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if f.dir == "" {
		return f, errors.New("--dir is required")
	}
	if f.profile != profileCluster && f.profile != profileControlPlane {
		return f, fmt.Errorf("--profile must be %q or %q, not %q", profileCluster, profileControlPlane, f.profile)
	}
	abs, err := filepath.Abs(f.dir)
	if err != nil {
		return f, fmt.Errorf("resolve --dir: %w", err)
	}
	f.dir = abs
	if f.kubeconfig == "" {
		f.kubeconfig = layout{dir: abs}.defaultKubeconfig()
	}
	return f, nil
}

// runUp is the foreground supervisor: it starts every component of the profile, waits until the
// cluster is usable, prints "READY <kubeconfig>" on stdout, then runs until SIGTERM/SIGINT or
// until a component dies, and finally stops everything it started, in reverse order.
func runUp(args []string) int {
	f, err := parseUpFlags("up", args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "localkube up:", err)
		return 2
	}
	if f.exitWithParent {
		if err := exitWithParent(); err != nil {
			logf("error: %v", err)
			return 1
		}
	}
	if err := supervise(f); err != nil {
		logf("error: %v", err)
		return 1
	}
	return 0
}

func supervise(f upFlags) error {
	l := layout{dir: f.dir}
	if err := claimPidFile(l); err != nil {
		return err
	}
	defer func() { _ = os.Remove(l.pidFile()) }()
	_ = os.Remove(l.readyFile())

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)

	c := &cluster{}
	defer c.shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	go func() {
		select {
		case sig := <-stop:
			logf("received %s during start-up; stopping", sig)
			cancel()
		case <-ctx.Done():
		}
	}()
	s, err := c.bringUp(ctx, f)
	if err != nil {
		return err
	}
	cancel()
	if err := writeState(l, s); err != nil {
		return err
	}
	if err := writeFileAtomic(l.readyFile(), []byte(time.Now().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Printf("READY %s\n", s.kubeconfig)
	return c.runUntilStopped(stop)
}

// exitWithParent asks the kernel for SIGTERM when the parent dies, so a test runner killed hard
// (jest on a CI timeout) does not leave a control plane behind; the usual stop path follows.
func exitWithParent() error {
	parent := os.Getppid()
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0); err != nil {
		return fmt.Errorf("set parent-death signal: %w", err)
	}
	if os.Getppid() != parent {
		return errors.New("parent exited during start-up")
	}
	return nil
}

// claimPidFile refuses to start a second supervisor on the same state dir.
func claimPidFile(l layout) error {
	if pid, alive := supervisorPid(l); alive {
		return fmt.Errorf("a localkube supervisor (pid %d) already runs on %s", pid, l.dir)
	}
	return writeFileAtomic(l.pidFile(), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

// supervisorPid reads the pid file and reports whether that process is alive.
func supervisorPid(l layout) (int, bool) {
	data, err := os.ReadFile(l.pidFile())
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(string(trimSpace(data)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, syscall.Kill(pid, 0) == nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// clusterState is run/state.json: what `status`, `down` and the Makefile need to know.
type clusterState struct {
	Profile    string `json:"profile"`
	Server     string `json:"server"`
	Kubeconfig string `json:"kubeconfig"`
	APIPort    int    `json:"apiPort"`
	EtcdPort   int    `json:"etcdPort"`
	Pid        int    `json:"pid"`
	ReadyAt    string `json:"readyAt"`
	// Restartable lists the components the supervisor restarts when they exit (restart.go), each
	// with its pid in run/<name>.pid; a chaos test checks it before killing one.
	Restartable []string `json:"restartable"`
}

func writeState(l layout, s settings) error {
	data, err := json.MarshalIndent(clusterState{
		Profile: s.profile, Server: s.server(), Kubeconfig: s.kubeconfig, APIPort: s.apiPort,
		EtcdPort: s.etcdClientPort, Pid: os.Getpid(), ReadyAt: time.Now().Format(time.RFC3339),
		Restartable: restartableNames(),
	}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	return writeFileAtomic(l.stateFile(), append(data, '\n'), 0o644)
}

func readState(l layout) (clusterState, error) {
	var st clusterState
	data, err := os.ReadFile(l.stateFile())
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("parse %s: %w", l.stateFile(), err)
	}
	return st, nil
}
