package main

import (
	"fmt"
	"strings"
)

// settings is everything the supervisor decided before starting components.
type settings struct {
	l              layout
	profile        string
	kubeconfig     string // the admin kubeconfig written for users and tests
	crdDir         string // CRDs to apply before the controller manager starts ("" = none)
	bindAddress    string // API server bind and advertise address
	apiPort        int
	etcdClientPort int
	etcdPeerPort   int
	verbosity      int
	node           nodeOptions // cluster profile only
}

func (s settings) server() string { return fmt.Sprintf("https://%s:%d", s.bindAddress, s.apiPort) }

func (s settings) etcdURL() string { return fmt.Sprintf("http://127.0.0.1:%d", s.etcdClientPort) }

// baseControllers run in both profiles: what ownerReference GC, namespace deletion, service
// accounts and their tokens, aggregated RBAC roles, the kube-root-ca.crt ConfigMap, Deployments
// (the Helm chart runs the operator and gateway as Deployments) and PodDisruptionBudgets need.
var baseControllers = []string{
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"clusterrole-aggregation-controller",
	"root-ca-certificate-publisher-controller",
	"deployment-controller",
	"replicaset-controller",
	"endpointslice-controller",
	"endpoints-controller",
	"disruption-controller",
	// PersistentVolumeClaims (persistent workspaces, docs/adr/0014): binding claims to volumes and
	// handing claims of a class to its provisioner; and removing the pvc-protection and
	// pv-protection finalizers the default admission plugins add, without which a deleted claim
	// or volume stays Terminating forever.
	"persistentvolume-binder-controller",
	"persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller",
	// The chart puts a ResourceQuota in each sandbox namespace: without this controller a quota
	// never gets a status, and quota admission enforces only what the status lists (nothing).
	"resourcequota-controller",
	// Deletes terminating Pods that were never scheduled. The API server deletes such a Pod in two
	// writes (set deletionTimestamp, then remove); a client that dies between them (the operator's
	// kill -9 tests) cancels the request and leaves the Pod Terminating forever, and the operator
	// rightly waits for it to go. Real clusters run this controller; without a kubelet nothing else
	// removes such a Pod.
	"pod-garbage-collector-controller",
}

// nodeControllers need a kubelet: Node health (Ready/NotReady taints), and DaemonSets (the chart's
// egress drop reporter runs one Pod per node). taint-eviction-controller is deliberately absent:
// with one node, evicting its pods while it restarts would only lose work (see docs/localkube.md).
var nodeControllers = []string{"node-lifecycle-controller", "daemonset-controller"}

func etcdArgs(s settings) []string {
	args := []string{
		"--data-dir=" + s.l.etcdDir(),
		"--listen-client-url=" + s.etcdURL(),
		fmt.Sprintf("--listen-peer-url=http://127.0.0.1:%d", s.etcdPeerPort),
	}
	if s.profile == profileControlPlane {
		args = append(args, "--unsafe-no-fsync") // test clusters live in a temp dir
	}
	return args
}

func apiserverArgs(s settings, p *pki) []string {
	sa := p.path("sa.key")
	args := []string{
		"--etcd-servers=" + s.etcdURL(),
		"--bind-address=" + s.bindAddress,
		"--advertise-address=" + s.bindAddress,
		fmt.Sprintf("--secure-port=%d", s.apiPort),
		"--tls-cert-file=" + p.path("apiserver.crt"),
		"--tls-private-key-file=" + p.path("apiserver.key"),
		"--cert-dir=" + p.path("generated"),
		"--client-ca-file=" + p.path("ca.crt"),
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--service-account-issuer=https://kubernetes.default.svc." + clusterDomain,
		"--service-account-key-file=" + sa,
		"--service-account-signing-key-file=" + sa,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--kubelet-client-certificate=" + p.path("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + p.path("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority=" + p.path("ca.crt"),
		"--kubelet-preferred-address-types=InternalIP",
		"--allow-privileged=true",
		"--profiling=false",
		fmt.Sprintf("--v=%d", s.verbosity),
	}
	if s.profile == profileControlPlane {
		args = append(args,
			// The only address is loopback, which is not a valid endpoint for the `kubernetes`
			// Service: the lease reconciler would keep failing on it.
			"--endpoint-reconciler-type=none",
			// As in envtest and upstream integration tests: pods are admitted before their
			// namespace's default ServiceAccount exists, so tests creating a namespace and a pod
			// right away do not race the serviceaccount controller. No pod runs in this profile.
			"--disable-admission-plugins=ServiceAccount",
		)
	}
	return args
}

func controllerManagerArgs(s settings, p *pki) []string {
	controllers := append([]string{}, baseControllers...)
	if s.profile == profileCluster {
		controllers = append(controllers, nodeControllers...)
	}
	return []string{
		"--kubeconfig=" + s.l.componentKubeconfig("kube-controller-manager"),
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
		"--secure-port=0", // no metrics/health listener: readiness is checked through the API
		// Each controller acts as its own ServiceAccount with its bootstrap role, as in kubeadm
		// clusters, so RBAC denials look the same as on a real cluster.
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + p.path("sa.key"),
		"--root-ca-file=" + p.path("ca.crt"),
		"--cluster-name=localkube",
		"--kube-api-qps=100",
		"--kube-api-burst=200",
		// A quota counting a custom resource (count/sandboxsessions.sandbox.dev) gets that count
		// only once the quota monitor has discovered the CRD (up to 30 s after it is created) and
		// the quota is synced again; until then every create is refused ("status unknown for
		// quota"). The default full resync is 5 min; 10 s costs nothing on one small cluster.
		"--resource-quota-sync-period=10s",
		fmt.Sprintf("--v=%d", s.verbosity),
	}
}

func schedulerArgs(s settings) []string {
	return []string{
		"--kubeconfig=" + s.l.componentKubeconfig("kube-scheduler"),
		"--leader-elect=false",
		"--secure-port=0",
		fmt.Sprintf("--v=%d", s.verbosity),
	}
}
