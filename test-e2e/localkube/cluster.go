package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// stopGrace is how long a component gets between SIGTERM and SIGKILL.
const stopGrace = 30 * time.Second

// cluster is what one supervisor started: its children in start order, and the node (cluster
// profile only), whose host state (bridge, iptables, mounts) outlives processes and needs its
// own teardown.
type cluster struct {
	self     string // this binary, re-executed for every component
	logDir   string
	runDir   string // where run/<component>.pid files go (restart.go); empty: none
	children []*child
	node     *node
	// restartDelay overrides restart.go's restartDelay (tests).
	restartDelay time.Duration
}

// resolveSettings picks ports (free ones where asked) and checks that fixed ones are not taken.
func resolveSettings(f upFlags) (settings, error) {
	s := settings{
		l: layout{dir: f.dir}, profile: f.profile, kubeconfig: f.kubeconfig,
		crdDir: f.crdDir, bindAddress: "127.0.0.1", apiPort: f.port, etcdClientPort: f.etcdPort, verbosity: f.verbosity,
		node: f.node,
	}
	if f.profile == profileCluster {
		s.bindAddress = nodeIP
	}
	var fixed []portUse
	var err error
	if s.apiPort == 0 {
		if s.apiPort, err = freeLoopbackPort(); err != nil {
			return s, err
		}
	} else {
		fixed = append(fixed, portUse{s.apiPort, "kube-apiserver"})
	}
	if s.etcdClientPort == 0 {
		if s.etcdClientPort, err = freeLoopbackPort(); err != nil {
			return s, err
		}
		if s.etcdPeerPort, err = freeLoopbackPort(); err != nil {
			return s, err
		}
	} else {
		s.etcdPeerPort = s.etcdClientPort + 1
		fixed = append(fixed, portUse{s.etcdClientPort, "etcd (client)"}, portUse{s.etcdPeerPort, "etcd (peer)"})
	}
	if f.profile == profileCluster {
		fixed = append(fixed, nodePorts...)
	}
	return s, checkPortsFree(fixed)
}

// bringUp starts every component of the profile and waits until the cluster is usable.
func (c *cluster) bringUp(ctx context.Context, f upFlags) (settings, error) {
	started := time.Now()
	self, err := os.Executable()
	if err != nil {
		return settings{}, fmt.Errorf("locate own binary: %w", err)
	}
	c.self = self
	if f.profile == profileCluster {
		if _, err := checkNodePrerequisites(); err != nil {
			return settings{}, err
		}
		if err := f.node.validate(); err != nil {
			return settings{}, err
		}
	}
	s, err := resolveSettings(f)
	if err != nil {
		return s, err
	}
	c.logDir = s.l.logDir()
	c.runDir = s.l.runDir()
	logf("profile %s, state dir %s, API server %s", s.profile, s.l.dir, s.server())
	p, err := ensureIdentities(s.l)
	if err != nil {
		return s, fmt.Errorf("certificates: %w", err)
	}
	for _, name := range []string{"admin", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kube-router", "kwok"} {
		if err := writeKubeconfig(p, name, s.server(), s.l.componentKubeconfig(name)); err != nil {
			return s, err
		}
	}
	if s.profile == profileCluster {
		if c.node, err = prepareNode(s, p); err != nil {
			return s, fmt.Errorf("prepare node: %w", err)
		}
		if err := c.node.startRuntime(c); err != nil {
			return s, err
		}
	}
	if err := c.startControlPlane(ctx, s, p); err != nil {
		return s, err
	}
	if c.node != nil {
		if err := c.node.waitRuntime(ctx, c.children); err != nil {
			return s, err
		}
		if err := c.node.startAgents(c); err != nil {
			return s, err
		}
	}
	if err := c.waitUsable(ctx, s); err != nil {
		return s, err
	}
	if err := copyFile(s.l.componentKubeconfig("admin"), s.kubeconfig, 0o600); err != nil {
		return s, err
	}
	if err := writeKubectlWrapper(s.l, c.self, s.kubeconfig); err != nil {
		return s, err
	}
	logf("cluster ready in %s (profile %s)", time.Since(started).Round(100*time.Millisecond), s.profile)
	return s, nil
}

func (c *cluster) start(name, path string, args ...string) (*child, error) {
	ch, err := startChild(name, c.logDir, path, args...)
	if err != nil {
		return nil, err
	}
	c.children = append(c.children, ch)
	if err := writeComponentPid(c.runDir, ch); err != nil {
		return ch, err
	}
	return ch, nil
}

func (c *cluster) startControlPlane(ctx context.Context, s settings, p *pki) error {
	etcd, err := c.start("etcd", c.self, append([]string{"etcd"}, etcdArgs(s)...)...)
	if err != nil {
		return err
	}
	if err := waitUntil(ctx, "etcd "+s.etcdURL()+"/health", []*child{etcd}, etcdHealthy(s.etcdURL())); err != nil {
		return err
	}
	api, err := c.start("kube-apiserver", c.self, append([]string{"kube-apiserver"}, apiserverArgs(s, p)...)...)
	if err != nil {
		return err
	}
	cs, err := adminClient(s.l.componentKubeconfig("admin"))
	if err != nil {
		return err
	}
	if err := waitUntil(ctx, "kube-apiserver "+s.server()+"/readyz", []*child{etcd, api}, apiserverReady(cs)); err != nil {
		return err
	}
	if s.crdDir != "" {
		if err := applyCRDs(ctx, s.l.componentKubeconfig("admin"), s.crdDir, c.children); err != nil {
			return err
		}
	}
	if _, err := c.start("kube-controller-manager", c.self,
		append([]string{"kube-controller-manager"}, controllerManagerArgs(s, p)...)...); err != nil {
		return err
	}
	if s.profile == profileCluster {
		if _, err := c.start("kube-scheduler", c.self, append([]string{"kube-scheduler"}, schedulerArgs(s)...)...); err != nil {
			return err
		}
	}
	return nil
}

// waitUsable waits for what tests and users need next: the default ServiceAccount (so the
// controller manager works) and, with a node, the Node reporting Ready.
func (c *cluster) waitUsable(ctx context.Context, s settings) error {
	cs, err := adminClient(s.l.componentKubeconfig("admin"))
	if err != nil {
		return err
	}
	if err := waitUntil(ctx, "ServiceAccount default/default (kube-controller-manager)", c.children,
		defaultServiceAccountExists(cs)); err != nil {
		return err
	}
	if c.node == nil {
		return nil
	}
	if err := waitUntil(ctx, "Node "+nodeName+" Ready (kubelet + containerd + CNI)", c.children, nodeReady(cs)); err != nil {
		return err
	}
	if err := ensureRuntimeClass(ctx, cs, s.node.runsc != ""); err != nil {
		return err
	}
	if err := c.node.startSimulatedNodes(ctx, c, cs); err != nil {
		return err
	}
	if s.node.s3 != "" {
		if err := c.startObjectStore(ctx, s.l, s.node.s3); err != nil {
			return err
		}
	}
	if !s.node.networkPolicy {
		logf("NetworkPolicy enforcement is OFF (--network-policy=false): policies are stored but nothing enforces them")
		return nil
	}
	if err := c.node.startPolicyController(ctx, c, cs); err != nil {
		return err
	}
	return waitUntil(ctx, "kube-router policy controller (first sync: KUBE-ROUTER-* chains hooked)", c.children, netpolReady)
}

// shutdown stops the children in reverse start order. Before containerd stops, the node's pods
// are removed through CRI (so CNI tears down their network); afterwards the host state the node
// created is cleaned up.
func (c *cluster) shutdown() {
	for i := len(c.children) - 1; i >= 0; i-- {
		ch := c.children[i]
		if ch.name == "containerd" && c.node != nil {
			c.node.removePods()
		}
		if err := ch.stop(stopGrace); err != nil {
			logf("stop %s: %v", ch.name, err)
		}
		if ch.name == "kwok" {
			c.removeSimulatedNodes()
		}
		if c.runDir != "" {
			_ = os.Remove(componentPidFile(c.runDir, ch.name))
		}
	}
	if c.node != nil {
		c.node.cleanupHost()
	}
	logf("all components stopped")
}

// removeSimulatedNodes deletes the simulated nodes (and Pods still bound to them) once KWOK has
// stopped, while the API server still runs: a later start without them finds none left NotReady.
func (c *cluster) removeSimulatedNodes() {
	cs, err := adminClient(c.node.l.componentKubeconfig("admin"))
	if err != nil {
		logf("remove simulated nodes: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, err := removeSimulatedNodes(ctx, cs, 0)
	if err != nil {
		logf("remove simulated nodes: %v (the next start removes what is left)", err)
	}
	logf("removed %d simulated nodes", n)
}

func copyFile(from, to string, mode os.FileMode) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("read %s: %w", from, err)
	}
	return writeFileAtomic(to, data, mode)
}

// writeKubectlWrapper writes <dir>/bin/kubectl: the cluster-version kubectl from this binary,
// defaulting to this cluster's kubeconfig when KUBECONFIG is unset.
func writeKubectlWrapper(l layout, self, kubeconfig string) error {
	script := fmt.Sprintf("#!/bin/sh\n# Generated by localkube: kubectl of the cluster's Kubernetes version.\n"+
		"export KUBECONFIG=\"${KUBECONFIG:-%s}\"\nexec '%s' kubectl \"$@\"\n", kubeconfig, self)
	return writeFileAtomic(filepath.Join(l.binDir(), "kubectl"), []byte(script), 0o755)
}
