package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// node is the cluster profile's worker: a private containerd, the kubelet and kube-proxy, on a
// bridge the supervisor owns.
type node struct {
	l          layout
	p          *pki
	containerd string // path of the containerd binary
	runtime    *child
	opts       nodeOptions
}

// debianPackages is what to install when a node prerequisite is missing.
const debianPackages = "containerd runc containernetworking-plugins iptables ipset"

// cniBinDirs are where distributions put the CNI plugins (Debian: /usr/lib/cni).
var cniBinDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// prepareNode checks prerequisites, creates the bridge (the API server binds its address),
// sets the two sysctls pod networking needs, and writes every node config file.
func prepareNode(s settings, p *pki) (*node, error) {
	tools, err := checkNodePrerequisites()
	if err != nil {
		return nil, err
	}
	n := &node{l: s.l, p: p, containerd: tools["containerd"], opts: s.node}
	if err := ensureBridge(); err != nil {
		return nil, err
	}
	if err := applySysctls(s.l); err != nil {
		return nil, err
	}
	return n, n.writeConfigs(tools["cni"], tools["runc"])
}

// checkNodePrerequisites fails early, before any port or file is touched, when the node cannot
// run here: not root, or a binary missing. It returns the tools found.
func checkNodePrerequisites() (map[string]string, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("the %s profile runs containerd and creates a bridge, so it needs root; "+
			"use --profile=%s for a control plane without a node", profileCluster, profileControlPlane)
	}
	return findNodeTools()
}

// findNodeTools locates the binaries the node needs, or says which Debian packages provide them.
func findNodeTools() (map[string]string, error) {
	found := map[string]string{}
	var missing []string
	for _, bin := range []string{"containerd", "containerd-shim-runc-v2", "runc", "iptables", "iptables-save", "ip"} {
		path, err := exec.LookPath(bin)
		if err != nil {
			missing = append(missing, bin)
			continue
		}
		found[bin] = path
	}
	for _, dir := range cniBinDirs {
		if fileExists(filepath.Join(dir, "bridge")) && fileExists(filepath.Join(dir, "host-local")) &&
			fileExists(filepath.Join(dir, "loopback")) && fileExists(filepath.Join(dir, "portmap")) {
			found["cni"] = dir
			break
		}
	}
	if found["cni"] == "" {
		missing = append(missing, "CNI plugins bridge/host-local/loopback/portmap in "+strings.Join(cniBinDirs, " or "))
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing node prerequisites: %s; install them with `apt-get install %s` "+
			"(`make cluster-up` does this when apt-get is available)", strings.Join(missing, ", "), debianPackages)
	}
	return found, nil
}

// ensureBridge creates lkbr0 with the node address, or checks an existing one has it.
func ensureBridge() error {
	if _, err := net.InterfaceByName(bridgeName); err != nil {
		if err := run("ip", "link", "add", bridgeName, "type", "bridge"); err != nil {
			return err
		}
	}
	iface, err := net.InterfaceByName(bridgeName)
	if err != nil {
		return fmt.Errorf("bridge %s: %w", bridgeName, err)
	}
	addrs, err := iface.Addrs()
	if err != nil {
		return fmt.Errorf("addresses of %s: %w", bridgeName, err)
	}
	has := false
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.String() == nodeIP {
			has = true
		}
	}
	if !has {
		if err := run("ip", "addr", "add", nodeIP+"/16", "dev", bridgeName); err != nil {
			return err
		}
	}
	return run("ip", "link", "set", bridgeName, "up")
}

func (n *node) writeConfigs(cniBinDir, runcPath string) error {
	if n.opts.runsc != "" {
		if err := writeRunscWrapper(n.l, n.opts.runsc, n.opts.runscFlags); err != nil {
			return err
		}
	}
	if err := writeFileAtomic(n.l.containerdConfig(), []byte(containerdConfig(n.l, cniBinDir, runcPath, n.opts.runsc)), 0o644); err != nil {
		return err
	}
	cni, err := cniConfig(n.l)
	if err != nil {
		return fmt.Errorf("encode CNI config: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(n.l.cniConfDir(), "10-localkube.conflist"), cni, 0o644); err != nil {
		return err
	}
	kubelet, err := kubeletConfig(n.l, n.p, n.opts.podPidsLimit)
	if err != nil {
		return fmt.Errorf("encode kubelet config: %w", err)
	}
	if err := writeFileAtomic(n.l.kubeletConfig(), kubelet, 0o644); err != nil {
		return err
	}
	proxy, err := kubeProxyConfig(n.l)
	if err != nil {
		return fmt.Errorf("encode kube-proxy config: %w", err)
	}
	return writeFileAtomic(n.l.kubeProxyConfig(), proxy, 0o644)
}

// startRuntime starts containerd early: it starts in parallel with etcd and the API server.
func (n *node) startRuntime(c *cluster) error {
	for _, d := range []string{n.l.kubeletDir(), n.l.podLogsDir(), n.l.cniDataDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	ch, err := c.start("containerd", n.containerd, "--config", n.l.containerdConfig())
	if err != nil {
		return err
	}
	n.runtime = ch
	return nil
}

// waitRuntime waits for containerd's CRI to answer, then checks the sandbox image is present:
// without it no pod can start, and nothing can pull it.
func (n *node) waitRuntime(ctx context.Context, children []*child) error {
	// containerd answers within seconds; a CRI plugin that failed to load never will.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := waitUntil(ctx, "containerd CRI on "+n.l.containerdSocket(), children, func(ctx context.Context) (bool, string) {
		rs, err := newCRI(n.l)
		if err != nil {
			return false, err.Error()
		}
		if _, err := rs.Version(ctx, "v1"); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	if err != nil {
		return err
	}
	if ok, err := hasImage(ctx, n.l, sandboxImage); err != nil {
		return err
	} else if !ok {
		logf("warning: sandbox image %s is not in containerd yet; pods stay ContainerCreating until "+
			"`make images-import` imports it", sandboxImage)
	}
	return nil
}

// startAgents starts the kubelet and kube-proxy.
func (n *node) startAgents(c *cluster) error {
	if _, err := c.start("kubelet", c.self, "kubelet",
		"--config="+n.l.kubeletConfig(),
		"--kubeconfig="+n.l.componentKubeconfig("kubelet"),
		"--hostname-override="+nodeName,
		"--node-ip="+nodeIP,
		"--root-dir="+n.l.kubeletDir(),
		"--cert-dir="+filepath.Join(n.l.kubeletDir(), "pki"),
		"--v=1",
	); err != nil {
		return err
	}
	_, err := c.start("kube-proxy", c.self, "kube-proxy", "--config="+n.l.kubeProxyConfig(), "--v=1")
	return err
}

// startPolicyController grants kube-router its read-only RBAC and starts its policy controller.
// It runs once the Node is registered and Ready: kube-router reads its own Node object at start.
func (n *node) startPolicyController(ctx context.Context, c *cluster, cs *kubernetes.Clientset) error {
	if err := ensureKubeRouterRBAC(ctx, cs); err != nil {
		return err
	}
	_, err := c.start("kube-router", n.opts.kubeRouter, kubeRouterArgs(n.l)...)
	return err
}

// run executes a host command, returning its output in the error when it fails.
func run(name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
