package main

import (
	"fmt"
	"net"
	"os"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Every component authenticates with a client certificate from the cluster CA whose subject is
// the identity the bootstrap RBAC policy (and the Node authorizer) already knows.
var componentCerts = []certSpec{
	{name: "admin", cn: "localkube-admin", orgs: []string{"system:masters"}},
	{name: "kube-controller-manager", cn: "system:kube-controller-manager"},
	{name: "kube-scheduler", cn: "system:kube-scheduler"},
	{name: "kubelet", cn: "system:node:" + nodeName, orgs: []string{"system:nodes"}},
	{name: "kube-proxy", cn: "system:kube-proxy"},
	// The NetworkPolicy enforcer: read-only rights from a ClusterRole localkube creates (netpol.go).
	{name: "kube-router", cn: kubeRouterUser},
	// KWOK, the simulated nodes' kubelet (kwok.go): system:nodes for the API server's flow
	// schema of kubelets, its rights from a ClusterRole localkube creates.
	{name: "kwok", cn: kwokUser, orgs: []string{"system:nodes"}},
	// The API server's identity towards kubelets (logs, exec, port-forward).
	{name: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}},
}

// servingCerts are the two TLS servers: the API server and the kubelet.
var servingCerts = []certSpec{
	{name: "apiserver", cn: "kube-apiserver", server: true, ips: servingIPs(), dns: servingDNSNames()},
	{name: "kubelet-serving", cn: nodeName, server: true,
		ips: []net.IP{net.ParseIP(nodeIP), net.ParseIP("127.0.0.1")}, dns: []string{nodeName, "localhost"}},
}

// ensureIdentities creates the CA, all certificates and the service-account key (first start
// only) and returns the PKI.
func ensureIdentities(l layout) (*pki, error) {
	p, err := loadOrCreatePKI(l.pkiDir())
	if err != nil {
		return nil, err
	}
	for _, spec := range append(append([]certSpec{}, componentCerts...), servingCerts...) {
		if err := p.ensure(spec); err != nil {
			return nil, err
		}
	}
	if _, err := p.ensureServiceAccountKey(); err != nil {
		return nil, err
	}
	return p, nil
}

// writeKubeconfig writes a kubeconfig for one certificate identity, with the CA and the client
// key embedded so the file works on its own (the harness hands it to other processes).
func writeKubeconfig(p *pki, certName, server, path string) error {
	ca, err := os.ReadFile(p.path("ca.crt"))
	if err != nil {
		return fmt.Errorf("read CA: %w", err)
	}
	cert, err := os.ReadFile(p.path(certName + ".crt"))
	if err != nil {
		return fmt.Errorf("read %s cert: %w", certName, err)
	}
	key, err := os.ReadFile(p.path(certName + ".key"))
	if err != nil {
		return fmt.Errorf("read %s key: %w", certName, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["localkube"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[certName] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts["localkube"] = &clientcmdapi.Context{Cluster: "localkube", AuthInfo: certName, Namespace: "default"}
	cfg.CurrentContext = "localkube"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encode kubeconfig %s: %w", path, err)
	}
	return writeFileAtomic(path, data, 0o600)
}
