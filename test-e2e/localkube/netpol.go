package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// nodeOptions are the node add-ons of the cluster profile: the NetworkPolicy enforcer, gVisor and
// the simulated nodes (KWOK).
type nodeOptions struct {
	networkPolicy bool     // run kube-router's policy controller
	kubeRouter    string   // its binary (built by addons/build.sh kube-router)
	runsc         string   // gVisor's runsc ("" = no gVisor runtime)
	runscFlags    []string // extra runsc flags (--runsc-flags), e.g. --platform=ptrace
	podPidsLimit  int      // kubelet podPidsLimit (0 = none: only to show the PID limit test fails)
	kwok          string   // KWOK's controller binary (addons/kwok/build.sh), for the simulated nodes
	kwokNodes     int      // simulated nodes (0 = none; kwok.go)
	s3            string   // versitygw, the snapshot object store (addons/versitygw; s3.go); "" = none
}

// validate checks the add-on binaries exist, with a message saying how to build them. It runs
// after the node prerequisites check, so a host without containerd hears about that first.
func (o nodeOptions) validate() error {
	if o.networkPolicy {
		if o.kubeRouter == "" {
			return errors.New("--network-policy needs --kube-router=PATH: build it with " +
				"`test-e2e/localkube/addons/build.sh kube-router` (`make cluster-up` does), or pass --network-policy=false")
		}
		if err := executable(o.kubeRouter); err != nil {
			return fmt.Errorf("--kube-router: %w", err)
		}
		if _, err := exec.LookPath("ipset"); err != nil {
			return fmt.Errorf("missing node prerequisites: ipset (kube-router keeps NetworkPolicy peers in ipsets); "+
				"install it with `apt-get install %s`", debianPackages)
		}
	}
	if o.runsc != "" {
		if err := executable(o.runsc); err != nil {
			return fmt.Errorf("--runsc: %w", err)
		}
	}
	if o.s3 != "" {
		if err := executable(o.s3); err != nil {
			return fmt.Errorf("--s3: %w", err)
		}
	}
	if len(o.runscFlags) > 0 && o.runsc == "" {
		return errors.New("--runsc-flags needs --runsc")
	}
	if err := validateRunscFlags(o.runscFlags); err != nil {
		return err
	}
	return o.validateKwok()
}

func executable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// kubeRouterUser is the certificate identity of kube-router; kubeRouterRole its read-only rights.
const (
	kubeRouterUser = "system:localkube:kube-router"
	kubeRouterRole = "localkube:kube-router"
)

// kubeRouterRBAC lets kube-router read what its policy controller (and the informers its main
// starts) watch, and nothing else: it never writes to the API.
func kubeRouterRBAC() (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	read := []string{"get", "list", "watch"}
	labels := map[string]string{"app.kubernetes.io/managed-by": "localkube"}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: kubeRouterRole, Labels: labels},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods", "namespaces", "nodes", "services", "endpoints"}, Verbs: read},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: read},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: read},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: kubeRouterRole, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: kubeRouterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: kubeRouterUser}},
	}
	return role, binding
}

// ensureKubeRouterRBAC creates or updates the ClusterRole and its binding.
func ensureKubeRouterRBAC(ctx context.Context, cs *kubernetes.Clientset) error {
	return ensureClusterRole(ctx, cs, kubeRouterRBAC)
}

// ensureClusterRole creates or updates a ClusterRole of an add-on and creates its binding.
func ensureClusterRole(ctx context.Context, cs *kubernetes.Clientset,
	build func() (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding)) error {
	role, binding := build()
	roles, bindings := cs.RbacV1().ClusterRoles(), cs.RbacV1().ClusterRoleBindings()
	if cur, err := roles.Get(ctx, role.Name, metav1.GetOptions{}); err == nil {
		cur.Rules = role.Rules
		if _, err := roles.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update ClusterRole %s: %w", role.Name, err)
		}
	} else if _, err := roles.Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ClusterRole %s: %w", role.Name, err)
	}
	if _, err := bindings.Get(ctx, binding.Name, metav1.GetOptions{}); err != nil {
		if _, err := bindings.Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create ClusterRoleBinding %s: %w", binding.Name, err)
		}
	}
	return nil
}

// kubeRouterArgs runs only the policy controller: pod networking stays with the CNI bridge and
// Services with kube-proxy. Its health and metrics servers are off (they would listen on every
// interface); readiness is read from iptables instead (netpolReady).
func kubeRouterArgs(l layout) []string {
	return []string{
		"--run-firewall=true",
		"--run-router=false",
		"--run-service-proxy=false",
		"--run-loadbalancer=false",
		"--enable-cni=false",
		"--enable-ipv6=false",
		"--hostname-override=" + nodeName,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--kubeconfig=" + l.componentKubeconfig("kube-router"),
		"--health-port=0",
		"--metrics-port=0",
		"--v=1",
	}
}

// netpolReady reports whether kube-router finished its first sync: the FORWARD, INPUT and OUTPUT
// chains jump to its KUBE-ROUTER-* chains, so every pod's traffic passes its policy chains.
func netpolReady(ctx context.Context) (bool, string) {
	out, err := exec.CommandContext(ctx, "iptables-save", "-t", "filter").Output()
	if err != nil {
		return false, fmt.Sprintf("iptables-save: %v", err)
	}
	return hasKubeRouterJumps(string(out))
}

func hasKubeRouterJumps(dump string) (bool, string) {
	_, rules := parseIptablesSave(dump)
	var missing []string
	for _, hook := range []string{"INPUT", "FORWARD", "OUTPUT"} {
		found := false
		for _, r := range rules {
			if r.chain == hook && r.target == "KUBE-ROUTER-"+hook {
				found = true
			}
		}
		if !found {
			missing = append(missing, hook+" -> KUBE-ROUTER-"+hook)
		}
	}
	if len(missing) > 0 {
		return false, "no jump yet: " + strings.Join(missing, ", ")
	}
	return true, ""
}

// isKubeRouterIPSet: the sets kube-router's policy controller creates (KUBE-SRC-*/KUBE-DST-*,
// inet6:-prefixed for IPv6) and the kube-router-* sets of its other controllers.
func isKubeRouterIPSet(name string) bool {
	name = strings.TrimPrefix(name, "inet6:")
	for _, p := range []string{"KUBE-SRC-", "KUBE-DST-", "kube-router-"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// removeKubeRouterIPSets destroys kube-router's ipsets. It runs after the iptables rules that
// reference them are gone (a referenced set cannot be destroyed). kube-router's own
// --cleanup-config is not used: it removes the policy state, then crashes in the service-proxy
// cleanup before it reaches every chain and set.
func removeKubeRouterIPSets() error {
	if _, err := exec.LookPath("ipset"); err != nil {
		return nil // never installed, so nothing can be left
	}
	out, err := output("ipset", "list", "-n")
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range strings.Fields(out) {
		if isKubeRouterIPSet(name) {
			if err := run("ipset", "destroy", name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// e2eNetnsPrefix names the network namespaces the isolation e2e creates for its stand-in servers
// (test-e2e/specs/isolation); hostVethPrefix their host-side veths. cluster-down removes any
// a killed test run left behind.
const (
	e2eNetnsPrefix = "lk-e2e-"
	hostVethPrefix = "lkst"
)

func removeE2ENetns() error {
	var errs []error
	if entries, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), e2eNetnsPrefix) {
				errs = append(errs, killNetnsPids(e.Name()), run("ip", "netns", "delete", e.Name()))
			}
		}
	}
	links, err := filepath.Glob("/sys/class/net/" + hostVethPrefix + "*")
	if err != nil {
		return err
	}
	for _, link := range links {
		errs = append(errs, run("ip", "link", "delete", filepath.Base(link)))
	}
	return errors.Join(errs...)
}

// killNetnsPids stops the stand-in servers still running in a leftover namespace.
func killNetnsPids(ns string) error {
	out, err := output("ip", "netns", "pids", ns)
	if err != nil {
		return err
	}
	var errs []error
	for _, field := range strings.Fields(out) {
		pid, err := strconv.Atoi(field)
		if err != nil {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill pid %d in netns %s: %w", pid, ns, err))
		}
	}
	return errors.Join(errs...)
}
