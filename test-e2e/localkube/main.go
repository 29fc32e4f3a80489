// Command localkube is a local Kubernetes built from the Kubernetes Go modules: one multi-call binary
// that supervises etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kube-proxy,
// each re-executed from this same binary as its own child process, plus the matching kubectl.
//
// Every component keeps process-global state (klog flags, feature gates, the metrics registry, the
// apiserver's one-shot signal handler), so no two of them ever share a process. See docs/localkube.md.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// subcommands maps each first argument to its entry point. Components receive the remaining
// arguments unchanged, exactly like the upstream release binaries.
var subcommands = map[string]func(args []string) int{
	"up":                      runUp,
	"start":                   runStart,
	"down":                    runDown,
	"status":                  runStatus,
	"reset":                   runReset,
	"etcd":                    runEtcd,
	"kube-apiserver":          runAPIServer,
	"kube-controller-manager": runControllerManager,
	"kube-scheduler":          runScheduler,
	"kubelet":                 runKubelet,
	"kube-proxy":              runKubeProxy,
	"kubectl":                 runKubectl,
	"addons":                  runAddons,
	"kwok":                    runKwok,
	"version":                 runVersion,
}

func main() {
	// Called through a symlink named after a component (e.g. .localkube/bin/kubectl): behave as it.
	if run, ok := subcommands[filepath.Base(os.Args[0])]; ok {
		os.Exit(run(os.Args[1:]))
	}
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	run, ok := subcommands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "localkube: unknown subcommand %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	os.Exit(run(os.Args[2:]))
}

func usage() {
	names := make([]string, 0, len(subcommands))
	for name := range subcommands {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "usage: localkube <%s> [flags]\n", strings.Join(names, "|"))
}
