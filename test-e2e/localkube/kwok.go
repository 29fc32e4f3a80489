package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Simulated nodes (opt-in): KWOK's controller (sigs.k8s.io/kwok, built by
// addons/kwok/build.sh) plays the kubelet of N Node objects localkube creates next to the real
// node. The scheduler places Pods on them like on any node; KWOK then marks each one Running and
// Ready with an IP from its node's podCIDR, without any container, and removes deleted ones at
// once. `make bench-scale` runs thousands of sessions on them (docs/localkube.md, "Simulated
// nodes"). Nothing routes to those IPs: a Pod there can be scheduled, watched and deleted, never
// dialled.
const (
	// kwokUser is KWOK's certificate identity. Its group system:nodes puts its requests in the
	// API server's system-nodes flow schema, as a real kubelet's are; the Node authorizer and
	// NodeRestriction leave it alone (its name is not system:node:<node>), so its rights are
	// exactly kwokRole's.
	kwokUser = "system:localkube:kwok"
	kwokRole = "localkube:kwok"
	// kwokAnnotation marks the nodes KWOK manages (its --manage-nodes-with-annotation-selector).
	kwokAnnotation      = "kwok.x-k8s.io/node"
	kwokAnnotationValue = "fake"
	// simulatedLabel selects the simulated nodes (a session's nodeSelector: type=kwok, KWOK's
	// own convention); simulatedTaint keeps every Pod without the toleration off them.
	simulatedLabel      = "type"
	simulatedLabelValue = "kwok"
	simulatedTaint      = "kwok.x-k8s.io/node"
	// maxSimulatedNodes bounds --kwok-nodes: every node gets a /23 of simulatedPodRange.
	maxSimulatedNodes = 1000
	// kwokStagesFile sits next to the kwok binary (addons/kwok/build.sh copies KWOK's own
	// "fast" stages there): Nodes Ready with a Lease heartbeat, Pods Running/Ready at once,
	// deleted Pods removed at once.
	kwokStagesFile = "stages.yaml"
	// kwokMinParallelism is KWOK's own default number of Pods it moves through their stages at
	// once, for all the simulated nodes together; localkube gives it one worker per simulated node
	// instead (kwokConfiguration). Each real node's kubelet updates its own Pods' status, so 100
	// simulated nodes behind 4 workers made the simulated kubelets the bottleneck of a burst: with
	// the API server busy (a status patch taking 100-600 ms) and a purge's deleted Pods retried
	// (KWOK's delete stage fails with NotFound on a Pod already gone, 9 times each), 4 workers
	// marked 2 to 36 Pods Ready a second while thousands waited on their nodes (bench-scale at
	// 10,000 on 2026-12-07: 7,294 scheduled Pods Pending).
	kwokMinParallelism = 4
)

// simulatedPodRange holds the simulated Pods' IPs (RFC 6598 shared address space: never the real
// pod range 198.18.0.0/16, never a LAN); simulatedNodeRange their nodes' InternalIPs.
var (
	simulatedPodRange  = netip.MustParsePrefix("100.64.0.0/10")
	simulatedNodeRange = netip.MustParsePrefix("100.127.0.0/16")
)

// simulatedCapacity is each simulated node's capacity and allocatable: 500 Pods of the platform's
// default sandbox size (100m CPU and 256Mi requested) fit, so 100 nodes hold 50,000 sessions and
// the scheduler's fit check is never what a benchmark measures.
var simulatedCapacity = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("64"),
	corev1.ResourceMemory: resource.MustParse("512Gi"),
	corev1.ResourcePods:   resource.MustParse("500"),
}

// simulatedNodeName is the name of simulated node i (0-based): localkube-kwok-000 and on, sorted
// after the real node (specs that take the first node of a list mean the real one).
func simulatedNodeName(i int) string { return fmt.Sprintf("%s-kwok-%03d", nodeName, i) }

// simulatedNode is the Node object of simulated node i: labelled, tainted and annotated for
// KWOK, with its own /23 podCIDR and InternalIP, and the capacity above.
func simulatedNode(i int) *corev1.Node {
	name := simulatedNodeName(i)
	cidr := podCIDRFor(i)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				simulatedLabel:                 simulatedLabelValue,
				"kubernetes.io/hostname":       name,
				"kubernetes.io/os":             "linux",
				"kubernetes.io/arch":           "amd64",
				"app.kubernetes.io/managed-by": "localkube",
			},
			Annotations: map[string]string{kwokAnnotation: kwokAnnotationValue},
		},
		Spec: corev1.NodeSpec{
			PodCIDR:  cidr,
			PodCIDRs: []string{cidr},
			Taints:   []corev1.Taint{{Key: simulatedTaint, Value: kwokAnnotationValue, Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.NodeStatus{
			Capacity:    simulatedCapacity.DeepCopy(),
			Allocatable: simulatedCapacity.DeepCopy(),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: nodeIPFor(i)},
				{Type: corev1.NodeHostName, Address: name},
			},
		},
	}
}

// podCIDRFor is the /23 of simulatedPodRange for node i.
func podCIDRFor(i int) string {
	base := simulatedPodRange.Addr().As4()
	n := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	n += uint32(i) * 512
	addr := netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	return netip.PrefixFrom(addr, 23).String()
}

// nodeIPFor is node i's InternalIP in simulatedNodeRange (.0.1 for node 0).
func nodeIPFor(i int) string {
	base := simulatedNodeRange.Addr().As4()
	n := i + 1
	return netip.AddrFrom4([4]byte{base[0], base[1], byte(n >> 8), byte(n)}).String()
}

// isSimulatedNode: a node localkube created for KWOK (never any other node, whoever made it).
func isSimulatedNode(n *corev1.Node) bool {
	return n.Labels["app.kubernetes.io/managed-by"] == "localkube" &&
		n.Annotations[kwokAnnotation] == kwokAnnotationValue
}

// validateKwok checks --kwok and --kwok-nodes together.
func (o nodeOptions) validateKwok() error {
	switch {
	case o.kwokNodes < 0 || o.kwokNodes > maxSimulatedNodes:
		return fmt.Errorf("--kwok-nodes must be between 0 and %d, not %d", maxSimulatedNodes, o.kwokNodes)
	case o.kwokNodes > 0 && o.kwok == "":
		return errors.New("--kwok-nodes needs --kwok=PATH: build it with " +
			"`test-e2e/localkube/addons/kwok/build.sh` (`make cluster-up LOCALKUBE_KWOK_NODES=N` does)")
	case o.kwokNodes == 0:
		return nil
	}
	if err := executable(o.kwok); err != nil {
		return fmt.Errorf("--kwok: %w", err)
	}
	if !fileExists(filepath.Join(filepath.Dir(o.kwok), kwokStagesFile)) {
		return fmt.Errorf("--kwok: no %s next to %s (addons/kwok/build.sh writes it)", kwokStagesFile, o.kwok)
	}
	return nil
}

// kwokRBAC is what KWOK's controller needs to play the kubelet of its nodes (its own
// kustomize/rbac role without the kwok.x-k8s.io resources: stages come from a file, not CRDs).
func kwokRBAC() (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	labels := map[string]string{"app.kubernetes.io/managed-by": "localkube"}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: kwokRole, Labels: labels},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"nodes/status", "pods/status"}, Verbs: []string{"patch", "update"}},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "patch", "update", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
				Verbs: []string{"get", "list", "watch", "create", "patch", "update"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: kwokRole, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: kwokRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: kwokUser}},
	}
	return role, binding
}

// kwokArgs: manage only the annotated nodes, with the stages file, node Leases as a kubelet
// renews them, no server (KWOK's exec/logs/port-forward endpoints would listen on every
// interface; nothing here needs them), and warnings only in its log (at info it logs every Lease
// renewal: 10 lines a second with 100 nodes).
func kwokArgs(l layout, binary string) []string {
	return []string{
		"--kubeconfig=" + l.componentKubeconfig("kwok"),
		"--config=" + filepath.Join(filepath.Dir(binary), kwokStagesFile),
		"--config=" + l.kwokConfig(),
		"--manage-nodes-with-annotation-selector=" + kwokAnnotation + "=" + kwokAnnotationValue,
		"--node-lease-duration-seconds=40",
		"--server-address=",
		"--node-port=0",
		"--v=WARN",
	}
}

// kwokConfiguration is KWOK's own configuration for `nodes` simulated nodes: as many Pod stage
// workers as nodes (at least kwokMinParallelism), and a quarter as many for the nodes' own stages and
// Lease renewals (KWOK's default 4 renews 100 nodes' 40 s Leases easily; 1,000 need more).
func kwokConfiguration(nodes int) string {
	pods := max(nodes, kwokMinParallelism)
	perNode := max(nodes/4, kwokMinParallelism)
	return fmt.Sprintf(`apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: %d
  nodePlayStageParallelism: %d
  nodeLeaseParallelism: %d
`, pods, perNode, perNode)
}

// writeKwokConfig writes kwokConfiguration(nodes) where kwokArgs points KWOK (config/kwok.yaml).
func writeKwokConfig(l layout, nodes int) error {
	if err := os.MkdirAll(filepath.Dir(l.kwokConfig()), 0o755); err != nil {
		return err
	}
	return os.WriteFile(l.kwokConfig(), []byte(kwokConfiguration(nodes)), 0o644)
}

// startSimulatedNodes grants KWOK its RBAC, creates the simulated nodes (keeping those a previous
// start made, removing any beyond the count asked for), starts KWOK and waits until every one is
// Ready. Without --kwok-nodes it removes the simulated nodes a previous start left instead.
func (n *node) startSimulatedNodes(ctx context.Context, c *cluster, cs *kubernetes.Clientset) error {
	if n.opts.kwokNodes == 0 {
		removed, err := removeSimulatedNodes(ctx, cs, 0)
		if removed > 0 {
			logf("removed %d simulated nodes a previous start left (no --kwok-nodes now)", removed)
		}
		return err
	}
	if err := ensureSimulatedNodes(ctx, cs, n.opts.kwokNodes); err != nil {
		return err
	}
	if err := writeKwokConfig(n.l, n.opts.kwokNodes); err != nil {
		return err
	}
	if _, err := c.start("kwok", n.opts.kwok, kwokArgs(n.l, n.opts.kwok)...); err != nil {
		return err
	}
	return waitUntil(ctx, fmt.Sprintf("%d simulated nodes Ready (KWOK)", n.opts.kwokNodes), c.children,
		simulatedNodesReady(cs, n.opts.kwokNodes))
}

// ensureSimulatedNodes grants KWOK its RBAC and makes exactly simulated nodes 0..count-1 exist
// (those of an earlier start are kept, any beyond the count removed with their Pods).
func ensureSimulatedNodes(ctx context.Context, cs *kubernetes.Clientset, count int) error {
	if err := ensureClusterRole(ctx, cs, kwokRBAC); err != nil {
		return err
	}
	if _, err := removeSimulatedNodes(ctx, cs, count); err != nil {
		return err
	}
	for i := 0; i < count; i++ {
		if _, err := cs.CoreV1().Nodes().Create(ctx, simulatedNode(i), metav1.CreateOptions{}); err != nil &&
			!apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create simulated node %s: %w", simulatedNodeName(i), err)
		}
	}
	return nil
}

// simulatedNodesReady counts the simulated nodes whose Ready condition is True.
func simulatedNodesReady(cs kubernetes.Interface, want int) func(context.Context) (bool, string) {
	return func(ctx context.Context) (bool, string) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: simulatedLabel + "=" + simulatedLabelValue})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for i := range nodes.Items {
			if isSimulatedNode(&nodes.Items[i]) && nodeConditionTrue(&nodes.Items[i], corev1.NodeReady) {
				ready++
			}
		}
		return ready >= want, fmt.Sprintf("%d of %d Ready", ready, want)
	}
}

func nodeConditionTrue(n *corev1.Node, t corev1.NodeConditionType) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// removeSimulatedNodes deletes the simulated nodes numbered keep and above (keep 0: all), with
// every Pod still bound to them (force: no kubelet is left to confirm a graceful delete), and
// returns how many nodes it deleted. Nodes anyone else made are never touched.
func removeSimulatedNodes(ctx context.Context, cs kubernetes.Interface, keep int) (int, error) {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: simulatedLabel + "=" + simulatedLabelValue})
	if err != nil {
		return 0, fmt.Errorf("list simulated nodes: %w", err)
	}
	kept := map[string]bool{}
	for i := 0; i < keep; i++ {
		kept[simulatedNodeName(i)] = true
	}
	removed := 0
	var errs []error
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if !isSimulatedNode(node) || kept[node.Name] {
			continue
		}
		if err := removePodsOn(ctx, cs, node.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := cs.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete simulated node %s: %w", node.Name, err))
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// removePodsOn force-deletes every Pod bound to a simulated node.
func removePodsOn(ctx context.Context, cs kubernetes.Interface, nodeName string) error {
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + nodeName})
	if err != nil {
		return fmt.Errorf("list pods on %s: %w", nodeName, err)
	}
	zero := int64(0)
	var errs []error
	for _, p := range pods.Items {
		if p.Spec.NodeName != nodeName {
			continue // the field selector already filters; this only guards the delete
		}
		err := cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete pod %s/%s on %s: %w", p.Namespace, p.Name, nodeName, err))
		}
	}
	return errors.Join(errs...)
}
