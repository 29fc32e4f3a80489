package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"
)

// Every simulated node gets its own /23 inside the simulated range, never overlapping another's
// nor the real pod range, and its own InternalIP; names sort in creation order.
func TestSimulatedNodesAddresses(t *testing.T) {
	realPods := netip.MustParsePrefix("198.18.0.0/16")
	seenIPs := map[string]bool{}
	var prev netip.Prefix
	for i := 0; i < maxSimulatedNodes; i++ {
		n := simulatedNode(i)
		cidr := netip.MustParsePrefix(n.Spec.PodCIDR)
		if cidr.Bits() != 23 || !simulatedPodRange.Contains(cidr.Addr()) || cidr.Overlaps(realPods) {
			t.Fatalf("node %d: podCIDR %s not a /23 of %s outside %s", i, cidr, simulatedPodRange, realPods)
		}
		if i > 0 && cidr.Overlaps(prev) {
			t.Fatalf("node %d: podCIDR %s overlaps %s", i, cidr, prev)
		}
		prev = cidr
		ip := n.Status.Addresses[0].Address
		if seenIPs[ip] || !simulatedNodeRange.Contains(netip.MustParseAddr(ip)) {
			t.Fatalf("node %d: InternalIP %s repeated or outside %s", i, ip, simulatedNodeRange)
		}
		seenIPs[ip] = true
	}
	last := netip.MustParsePrefix(simulatedNode(maxSimulatedNodes - 1).Spec.PodCIDR)
	if !simulatedPodRange.Contains(netip.MustParseAddr("100.64.0.0")) || last.String() != "100.71.206.0/23" {
		t.Fatalf("last podCIDR %s", last)
	}
	if simulatedNodeName(7) != "localkube-kwok-007" || simulatedNodeName(123) != "localkube-kwok-123" {
		t.Fatal("node names")
	}
}

// A simulated node keeps every Pod without the toleration off (taint), is selected by type=kwok,
// is managed by KWOK (annotation) and is recognised as localkube's.
func TestSimulatedNodeShape(t *testing.T) {
	n := simulatedNode(0)
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != simulatedTaint || n.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule {
		t.Fatalf("taints %v", n.Spec.Taints)
	}
	if n.Labels["type"] != "kwok" || n.Annotations["kwok.x-k8s.io/node"] != "fake" || !isSimulatedNode(n) {
		t.Fatalf("labels %v annotations %v", n.Labels, n.Annotations)
	}
	if n.Status.Allocatable.Pods().Value() != 500 {
		t.Fatalf("allocatable pods %v", n.Status.Allocatable.Pods())
	}
	other := simulatedNode(1)
	delete(other.Labels, "app.kubernetes.io/managed-by")
	if isSimulatedNode(other) {
		t.Fatal("a KWOK node localkube did not make counted as localkube's")
	}
}

func TestValidateKwok(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kwok")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		opts nodeOptions
		want string
	}{
		{nodeOptions{}, ""},
		{nodeOptions{kwokNodes: -1}, "between 0 and 1000"},
		{nodeOptions{kwokNodes: 1001, kwok: bin}, "between 0 and 1000"},
		{nodeOptions{kwokNodes: 3}, "needs --kwok=PATH"},
		{nodeOptions{kwokNodes: 3, kwok: filepath.Join(dir, "missing")}, "no such file"},
		{nodeOptions{kwokNodes: 3, kwok: bin}, "no stages.yaml next to"},
	}
	for _, c := range cases {
		err := c.opts.validateKwok()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Fatalf("%+v: got %v, want %q", c.opts, err, c.want)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, kwokStagesFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := (nodeOptions{kwokNodes: 3, kwok: bin}).validateKwok(); err != nil {
		t.Fatal(err)
	}
}

// Removal deletes localkube's simulated nodes from `keep` on, with the Pods bound to them, and
// leaves the real node, its Pods and a KWOK node someone else made alone.
func TestRemoveSimulatedNodes(t *testing.T) {
	foreign := simulatedNode(5)
	foreign.Name = "someone-elses"
	delete(foreign.Labels, "app.kubernetes.io/managed-by")
	real := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: node}}
	}
	cs := fake.NewClientset(simulatedNode(0), simulatedNode(1), simulatedNode(2), foreign, real,
		pod("on-0", "localkube-kwok-000"), pod("on-2", "localkube-kwok-002"), pod("on-real", nodeName), pod("on-foreign", "someone-elses"))
	ctx := context.Background()
	removed, err := removeSimulatedNodes(ctx, cs, 1)
	if err != nil || removed != 2 {
		t.Fatalf("removed %d, %v", removed, err)
	}
	names := func() []string {
		var out []string
		nodes, _ := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		for _, n := range nodes.Items {
			out = append(out, n.Name)
		}
		pods, _ := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		for _, p := range pods.Items {
			out = append(out, "pod/"+p.Name)
		}
		return out
	}
	got := strings.Join(names(), " ")
	if got != "localkube localkube-kwok-000 someone-elses pod/on-0 pod/on-foreign pod/on-real" {
		t.Fatalf("left: %s", got)
	}
	if removed, err = removeSimulatedNodes(ctx, cs, 0); err != nil || removed != 1 {
		t.Fatalf("removed %d, %v", removed, err)
	}
	if got = strings.Join(names(), " "); got != "localkube someone-elses pod/on-foreign pod/on-real" {
		t.Fatalf("left: %s", got)
	}
}

// The supervised KWOK is told from a detached one by its parent; a pid file naming another
// program (or no process) is not a running KWOK.
func TestKwokPidAndParent(t *testing.T) {
	if !isSupervisorChild(os.Getpid(), os.Getppid()) || isSupervisorChild(os.Getpid(), os.Getppid()+1) {
		t.Fatal("parent check")
	}
	l := layout{dir: t.TempDir()}
	if _, alive := kwokPid(l); alive {
		t.Fatal("no pid file, yet alive")
	}
	if err := os.MkdirAll(l.runDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(componentPidFile(l.runDir(), "kwok"), []byte(fmt.Sprintf("%d\n", os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	if pid, alive := kwokPid(l); alive || pid != os.Getpid() {
		t.Fatalf("this test process taken for KWOK (pid %d, alive %v)", pid, alive)
	}
}

// KWOK gets one Pod stage worker per simulated node (never fewer than its default of 4), through a
// second --config file it reads next to the stages file.
func TestKwokConfiguration(t *testing.T) {
	for _, tc := range []struct{ nodes, pods, perNode int }{{1, 4, 4}, {100, 100, 25}, {1000, 1000, 250}} {
		var got struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Options    struct {
				Pods   int `json:"podPlayStageParallelism"`
				Nodes  int `json:"nodePlayStageParallelism"`
				Leases int `json:"nodeLeaseParallelism"`
			} `json:"options"`
		}
		if err := yaml.UnmarshalStrict([]byte(kwokConfiguration(tc.nodes)), &got); err != nil {
			t.Fatalf("%d nodes: %v", tc.nodes, err)
		}
		if got.APIVersion != "config.kwok.x-k8s.io/v1alpha1" || got.Kind != "KwokConfiguration" {
			t.Errorf("%d nodes: %s %s", tc.nodes, got.APIVersion, got.Kind)
		}
		if got.Options.Pods != tc.pods || got.Options.Nodes != tc.perNode || got.Options.Leases != tc.perNode {
			t.Errorf("%d nodes: %+v, want pods %d, nodes and leases %d", tc.nodes, got.Options, tc.pods, tc.perNode)
		}
	}
	l := layout{dir: t.TempDir()}
	if err := writeKwokConfig(l, 100); err != nil {
		t.Fatal(err)
	}
	args := strings.Join(kwokArgs(l, "/bin/kwok"), " ")
	if !strings.Contains(args, "--config=/bin/stages.yaml --config="+l.kwokConfig()) {
		t.Errorf("kwokArgs %q: want the stages file, then %s", args, l.kwokConfig())
	}
	if b, err := os.ReadFile(l.kwokConfig()); err != nil || string(b) != kwokConfiguration(100) {
		t.Errorf("config file: %q, %v", b, err)
	}
}
