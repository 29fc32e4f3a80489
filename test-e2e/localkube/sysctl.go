package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// nodeSysctls are the host settings pod networking needs: forwarding between the bridge and the
// rest of the host, and bridged traffic passing through iptables, so a pod reaching a Service
// backed by a pod on the same bridge is DNATed by kube-proxy's rules.
var nodeSysctls = map[string]string{
	"net/ipv4/ip_forward":                 "1",
	"net/bridge/bridge-nf-call-iptables":  "1",
	"net/bridge/bridge-nf-call-ip6tables": "1",
}

func sysctlBackupPath(l layout) string { return filepath.Join(l.runDir(), "sysctl-before.json") }

// applySysctls sets nodeSysctls, first saving the host's values (once, so a crash-and-restart
// does not overwrite the original values with ours); cleanup restores them.
func applySysctls(l layout) error {
	backup := sysctlBackupPath(l)
	if !fileExists(backup) {
		before := map[string]string{}
		for key := range nodeSysctls {
			val, err := os.ReadFile(filepath.Join("/proc/sys", key))
			if err != nil {
				return fmt.Errorf("read sysctl %s: %w", key, err)
			}
			before[key] = strings.TrimSpace(string(val))
		}
		data, err := json.Marshal(before)
		if err != nil {
			return fmt.Errorf("encode sysctl backup: %w", err)
		}
		if err := writeFileAtomic(backup, data, 0o644); err != nil {
			return err
		}
	}
	for key, val := range nodeSysctls {
		if err := os.WriteFile(filepath.Join("/proc/sys", key), []byte(val), 0o644); err != nil {
			return fmt.Errorf("set sysctl %s=%s: %w", key, val, err)
		}
	}
	return nil
}

// restoreSysctls puts back the values saved by applySysctls and forgets them.
func restoreSysctls(l layout) error {
	data, err := os.ReadFile(sysctlBackupPath(l))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read sysctl backup: %w", err)
	}
	before := map[string]string{}
	if err := json.Unmarshal(data, &before); err != nil {
		return fmt.Errorf("parse sysctl backup: %w", err)
	}
	for key, val := range before {
		if err := os.WriteFile(filepath.Join("/proc/sys", key), []byte(val), 0o644); err != nil {
			return fmt.Errorf("restore sysctl %s=%s: %w", key, val, err)
		}
	}
	return os.Remove(sysctlBackupPath(l))
}
