package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/version"
)

// runStatus prints whether a cluster runs on the dir, its API server's /readyz and its nodes.
// Exit code: 0 running and ready, 1 not ready, 3 not running.
func runStatus(args []string) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	dir := fs.String("dir", "", "state directory (required)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "localkube status: --dir is required")
		return 2
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "localkube status:", err)
		return 2
	}
	l := layout{dir: abs}
	pid, alive := supervisorPid(l)
	if !alive {
		fmt.Printf("localkube: not running (state dir %s)\n", abs)
		if leftovers := leftoverPids(l, true); len(leftovers) > 0 {
			fmt.Printf("warning: %d leftover processes %v; run `make cluster-down`\n", len(leftovers), leftovers)
		}
		return 3
	}
	st, err := readState(l)
	if err != nil {
		fmt.Printf("localkube: starting (pid %d); not ready yet\n", pid)
		return 1
	}
	fmt.Printf("localkube: running (pid %d), profile %s, API server %s, since %s\n", pid, st.Profile, st.Server, st.ReadyAt)
	fmt.Printf("kubeconfig: %s\n", st.Kubeconfig)
	cs, err := adminClient(st.Kubeconfig)
	if err != nil {
		fmt.Println("client:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ok, detail := apiserverReady(cs)(ctx)
	fmt.Printf("readyz: %s\n", strings.TrimSpace(detail))
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Println("nodes:", err)
		return 1
	}
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == "Ready" {
				fmt.Printf("node %s: Ready=%s (%s)\n", n.Name, c.Status, c.Reason)
			}
		}
	}
	if len(nodes.Items) == 0 {
		fmt.Println("nodes: none (control-plane profile)")
	}
	if !ok {
		return 1
	}
	return 0
}

// runVersion prints the Kubernetes version compiled in.
func runVersion([]string) int {
	v := version.Get()
	fmt.Printf("localkube: Kubernetes %s, built with %s\n", v.GitVersion, v.GoVersion)
	return 0
}
