package main

import "testing"

func TestHasKubeRouterJumpsNeedsAllThreeHooks(t *testing.T) {
	partial := "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:KUBE-ROUTER-FORWARD - [0:0]\n" +
		"-A FORWARD -m comment --comment \"kube-router netpol\" -j KUBE-ROUTER-FORWARD\nCOMMIT\n"
	if ok, detail := hasKubeRouterJumps(partial); ok || detail != "no jump yet: INPUT -> KUBE-ROUTER-INPUT, OUTPUT -> KUBE-ROUTER-OUTPUT" {
		t.Fatalf("partial sync: ok=%v detail=%q", ok, detail)
	}
	full := partial + "-A INPUT -m comment --comment \"kube-router netpol\" -j KUBE-ROUTER-INPUT\n" +
		"-A OUTPUT -m comment --comment \"kube-router netpol\" -j KUBE-ROUTER-OUTPUT\n"
	if ok, detail := hasKubeRouterJumps(full); !ok {
		t.Fatalf("full sync not recognised: %s", detail)
	}
}

func TestIsKubeRouterIPSetLeavesOtherSetsAlone(t *testing.T) {
	for name, want := range map[string]bool{
		"KUBE-SRC-3XJ6XWO5QF3GCTQX": true, "KUBE-DST-ABCDEFGHIJKLMNOP": true,
		"inet6:KUBE-SRC-ABCDEFGHIJKLMNOP": true, "kube-router-local-ips": true,
		"KUBE-CLUSTER-IP": false, "cali40all-ipam-pools": false, "my-set": false,
	} {
		if got := isKubeRouterIPSet(name); got != want {
			t.Errorf("isKubeRouterIPSet(%q) = %v, want %v", name, got, want)
		}
	}
}
