package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// cniNetworkComment is in every rule the CNI bridge and portmap plugins add for this network;
// iptables-save prints the quotes inside a comment escaped.
var cniNetworkComments = []string{`name: "localkube"`, `name: \"localkube\"`}

// isThisNetworksRule reports whether an iptables-save rule carries this network's CNI comment.
func isThisNetworksRule(spec string) bool {
	for _, c := range cniNetworkComments {
		if strings.Contains(spec, c) {
			return true
		}
	}
	return false
}

// removeOwnIptablesRules deletes what this node left in iptables after its components stopped:
// chains named KUBE-* (the kubelet's canary/hint chains; kube-proxy's are gone after its own
// --cleanup) and CNI-* chains holding only this network's rules, plus every rule that jumps to
// them or carries this network's comment. Other software's rules are left alone.
func removeOwnIptablesRules(bin string) error {
	if _, err := exec.LookPath(bin); err != nil {
		return nil // no such family on this host
	}
	var errs []error
	for _, table := range []string{"filter", "nat", "mangle", "raw"} {
		dump, err := output(bin+"-save", "-t", table)
		if err != nil {
			continue // table not present in this kernel/backend
		}
		chains, rules := parseIptablesSave(dump)
		ours := ownChains(chains, rules)
		for _, r := range rules {
			if ours[r.chain] || !(isThisNetworksRule(r.spec) || ours[r.target]) {
				continue
			}
			args := append([]string{"-t", table, "-D", r.chain}, splitRuleSpec(r.spec)...)
			if err := run(bin, args...); err != nil {
				errs = append(errs, err)
			}
		}
		for chain := range ours {
			if err := run(bin, "-t", table, "-F", chain); err != nil {
				errs = append(errs, err)
			}
		}
		for chain := range ours {
			if err := run(bin, "-t", table, "-X", chain); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// iptRule is one "-A CHAIN spec" line of iptables-save.
type iptRule struct{ chain, spec, target string }

func parseIptablesSave(dump string) (map[string]bool, []iptRule) {
	chains := map[string]bool{}
	var rules []iptRule
	for _, line := range strings.Split(dump, "\n") {
		switch {
		case strings.HasPrefix(line, ":"):
			chains[strings.Fields(line[1:])[0]] = true
		case strings.HasPrefix(line, "-A "):
			rest := strings.TrimPrefix(line, "-A ")
			chain, spec, _ := strings.Cut(rest, " ")
			target := ""
			if i := strings.Index(spec, "-j "); i >= 0 {
				target = strings.Fields(spec[i+3:])[0]
			}
			rules = append(rules, iptRule{chain: chain, spec: spec, target: target})
		}
	}
	return chains, rules
}

// ownChains: KUBE-* chains, and CNI-* chains every rule of which is this network's (or jumps to
// another such chain). An empty shared CNI-HOSTPORT-* chain counts: portmap recreates it.
func ownChains(chains map[string]bool, rules []iptRule) map[string]bool {
	ours := map[string]bool{}
	for c := range chains {
		if strings.HasPrefix(c, "KUBE-") {
			ours[c] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for c := range chains {
			if ours[c] || !strings.HasPrefix(c, "CNI-") {
				continue
			}
			all := true
			for _, r := range rules {
				if r.chain == c && !isThisNetworksRule(r.spec) && !ours[r.target] {
					all = false
				}
			}
			if all {
				ours[c], changed = true, true
			}
		}
	}
	return ours
}

// splitRuleSpec splits an iptables-save rule into arguments, honouring double quotes (comments).
func splitRuleSpec(spec string) []string {
	var args []string
	var cur strings.Builder
	inQuote, escaped := false, false
	for _, r := range spec {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case r == '\\':
			escaped = true
		case r == '"':
			inQuote = !inQuote
		case r == ' ' && !inQuote:
			if cur.Len() > 0 {
				args = append(args, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		args = append(args, cur.String())
	}
	return args
}

// output runs a host command and returns its stdout.
func output(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}
