package main

import (
	"reflect"
	"sort"
	"testing"
)

// A dump with this node's rules mixed with another tool's CNI network and the shared portmap chain.
const sampleNat = `*nat
:PREROUTING ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:CNI-HOSTPORT-DNAT - [0:0]
:CNI-0aa - [0:0]
:CNI-0bb - [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-KUBELET-CANARY - [0:0]
:DOCKER - [0:0]
-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -s 198.18.0.7/32 -m comment --comment "name: \"localkube\" id: \"abc\"" -j CNI-0aa
-A POSTROUTING -s 10.88.0.2/32 -m comment --comment "name: \"podman\" id: \"def\"" -j CNI-0bb
-A CNI-0aa -d 198.18.0.0/16 -m comment --comment "name: \"localkube\" id: \"abc\"" -j ACCEPT
-A CNI-0aa ! -d 224.0.0.0/4 -m comment --comment "name: \"localkube\" id: \"abc\"" -j MASQUERADE
-A CNI-0bb -d 10.88.0.0/16 -m comment --comment "name: \"podman\" id: \"def\"" -j ACCEPT
COMMIT
`

func TestOwnChainsTakesOnlyThisNetworkAndKubeChains(t *testing.T) {
	chains, rules := parseIptablesSave(sampleNat)
	ours := ownChains(chains, rules)
	var got []string
	for c := range ours {
		got = append(got, c)
	}
	sort.Strings(got)
	// CNI-0bb holds another network's rules and DOCKER is not ours; the empty shared hostport
	// chain counts as ours (portmap recreates it).
	want := []string{"CNI-0aa", "CNI-HOSTPORT-DNAT", "KUBE-KUBELET-CANARY", "KUBE-SERVICES"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("own chains = %v, want %v", got, want)
	}
}

func TestParseIptablesSaveFindsRuleTargets(t *testing.T) {
	_, rules := parseIptablesSave(sampleNat)
	if len(rules) != 7 {
		t.Fatalf("parsed %d rules, want 7", len(rules))
	}
	if rules[2].chain != "POSTROUTING" || rules[2].target != "CNI-0aa" {
		t.Fatalf("rule 3 = %+v, want chain POSTROUTING target CNI-0aa", rules[2])
	}
}

func TestSplitRuleSpecKeepsQuotedComments(t *testing.T) {
	got := splitRuleSpec(`-s 198.18.0.7/32 -m comment --comment "name: \"localkube\" id: \"abc\"" -j CNI-0aa`)
	want := []string{"-s", "198.18.0.7/32", "-m", "comment", "--comment", `name: "localkube" id: "abc"`, "-j", "CNI-0aa"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("split = %q, want %q", got, want)
	}
}
