package main

import "testing"

func TestBelongsToMatchesOnlyThisStateDir(t *testing.T) {
	l := layout{dir: "/work/main/.localkube"}
	cases := []struct {
		argv []string
		want bool
	}{
		{[]string{"/cache/localkube-abc", "etcd", "--data-dir=/work/main/.localkube/etcd"}, true},
		{[]string{"/usr/bin/containerd", "--config", "/work/main/.localkube/containerd/config.toml"}, true},
		{[]string{"/usr/bin/containerd-shim-runc-v2", "-namespace", "k8s.io", "-address", "/work/main/.localkube/containerd/containerd.sock"}, true},
		{[]string{"/repo/.cache/localkube/addons/kube-router-abc/kube-router", "--run-firewall=true", "--kubeconfig=/work/main/.localkube/kubeconfigs/kube-router.kubeconfig"}, true},
		{[]string{"runsc-sandbox", "--root=/work/main/.localkube/containerd/runsc/k8s.io", "boot"}, true},
		// A waiter of gVisor's runsc wrapper (gvisor.go).
		{[]string{"/bin/sh", "/work/main/.localkube/containerd/runsc-wrapper", "--root", "/work/main/.localkube/containerd/runsc/k8s.io", "create", "x"}, true},
		// A kube-router of another cluster.
		{[]string{"/usr/local/bin/kube-router", "--kubeconfig=/var/lib/kube-router/kubeconfig"}, false},
		// Another state dir whose name merely starts with ours.
		{[]string{"/cache/localkube-abc", "etcd", "--data-dir=/work/main/.localkube-2/etcd"}, false},
		// A system containerd, and a shell that mentions the dir.
		{[]string{"/usr/bin/containerd"}, false},
		{[]string{"/bin/sh", "-c", "ls /work/main/.localkube/etcd"}, false},
	}
	for _, c := range cases {
		if got := belongsTo(l, c.argv); got != c.want {
			t.Errorf("belongsTo(%q) = %v, want %v", c.argv, got, c.want)
		}
	}
}

func TestUnescapeMountPath(t *testing.T) {
	if got := unescapeMountPath(`/work/my\040dir/x`); got != "/work/my dir/x" {
		t.Fatalf("unescape = %q", got)
	}
}
