package main

import (
	"net"
	"path/filepath"
)

// Network plan. Both ranges come from 198.18.0.0/15 (RFC 2544 benchmarking), which no LAN or VPN
// uses, so the local cluster never shadows a route the developer needs.
const (
	podCIDR     = "198.18.0.0/16"
	serviceCIDR = "198.19.0.0/16"
	// bridgeName is the node's pod bridge. The supervisor creates it before the API server starts,
	// because its gateway address is where pods reach the API server (see nodeIP).
	bridgeName = "lkbr0"
	// nodeIP is the bridge gateway: the node's InternalIP, the kubelet's serving address and the API
	// server's bind/advertise address in the cluster profile. Pods cannot reach the host's
	// 127.0.0.1, but they route to their gateway, so the `kubernetes` Service (198.19.0.1:443)
	// DNATs here. It is not on any LAN-facing interface.
	nodeIP = "198.18.0.1"
	// kubernetesServiceIP is the first address of serviceCIDR, which the API server gives the
	// `kubernetes` Service; it is in the serving certificate so in-cluster clients can verify it.
	kubernetesServiceIP = "198.19.0.1"
	// nodeName is fixed so restarts re-register the same Node and keep its pods.
	nodeName = "localkube"
	// clusterDomain is used for the serving certificate's SANs and the kubelet's search path.
	clusterDomain = "cluster.local"
	// clusterDNSIP is the fixed ClusterIP of the kube-dns Service (CoreDNS) the kubelet hands pods.
	clusterDNSIP = "198.19.0.10"
	// defaultPodPidsLimit bounds the processes and threads of each pod (kubelet podPidsLimit).
	defaultPodPidsLimit = 1024
	// containerdNamespace is the namespace the CRI plugin and the image importer share.
	containerdNamespace = "k8s.io"
)

// Profiles: which components run.
const (
	// profileCluster runs everything, including the node (containerd, kubelet, kube-proxy).
	profileCluster = "cluster"
	// profileControlPlane runs etcd, kube-apiserver and kube-controller-manager only, so
	// integration tests can write pod status themselves without a kubelet overwriting it.
	profileControlPlane = "controlplane"
)

// layout names every path under the state directory. The containerd socket path is a contract
// with the images tooling (mk/images.mk): $LOCALKUBE_DIR/containerd/containerd.sock.
type layout struct{ dir string }

func (l layout) path(elem ...string) string {
	return filepath.Join(append([]string{l.dir}, elem...)...)
}

func (l layout) pkiDir() string    { return l.path("pki") }
func (l layout) etcdDir() string   { return l.path("etcd") }
func (l layout) logDir() string    { return l.path("logs") }
func (l layout) runDir() string    { return l.path("run") }
func (l layout) pidFile() string   { return l.path("run", "localkube.pid") }
func (l layout) readyFile() string { return l.path("run", "ready") }
func (l layout) stateFile() string { return l.path("run", "state.json") }
func (l layout) componentKubeconfig(name string) string {
	return l.path("kubeconfigs", name+".kubeconfig")
}
func (l layout) defaultKubeconfig() string { return l.path("kubeconfig") }
func (l layout) binDir() string            { return l.path("bin") }
func (l layout) containerdDir() string     { return l.path("containerd") }
func (l layout) containerdSocket() string  { return l.path("containerd", "containerd.sock") }
func (l layout) containerdConfig() string  { return l.path("containerd", "config.toml") }
func (l layout) cniConfDir() string        { return l.path("cni", "net.d") }
func (l layout) cniDataDir() string        { return l.path("cni", "networks") }
func (l layout) kubeletDir() string        { return l.path("kubelet") }
func (l layout) kubeletConfig() string     { return l.path("config", "kubelet.yaml") }
func (l layout) kubeProxyConfig() string   { return l.path("config", "kube-proxy.yaml") }
func (l layout) kwokConfig() string        { return l.path("config", "kwok.yaml") }
func (l layout) podLogsDir() string        { return l.path("pod-logs") }

// ownedPaths are every path localkube creates under the state dir (reset deletes exactly these).
func (l layout) ownedPaths() []string {
	paths := []string{l.defaultKubeconfig(), filepath.Join(l.binDir(), "kubectl")}
	for _, sub := range []string{"pki", "etcd", "logs", "run", "kubeconfigs", "containerd", "cni", "kubelet", "config", "pod-logs", "local-path", "s3"} {
		paths = append(paths, l.path(sub))
	}
	return paths
}

// servingIPs are the addresses the API server certificate is valid for in both profiles.
func servingIPs() []net.IP {
	return []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(nodeIP), net.ParseIP(kubernetesServiceIP)}
}

// servingDNSNames are the in-cluster names of the API server.
func servingDNSNames() []string {
	return []string{
		"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc." + clusterDomain,
	}
}
