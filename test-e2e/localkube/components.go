package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format, as in the release binaries
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as in the release binaries
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric, as in the release binaries
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxyapp "k8s.io/kubernetes/cmd/kube-proxy/app"
	schedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"

	_ "time/tzdata" // CronJob time zones, as in the release kube-controller-manager
)

// runCobra runs one upstream component command with the given arguments, the same way its release
// main() does (cli.Run sets up logging flags, flushes logs and maps errors to an exit code).
func runCobra(cmd *cobra.Command, args []string) int {
	cmd.SetArgs(args)
	return cli.Run(cmd)
}

// runAPIServer is kube-apiserver. NewAPIServerCommand installs the process-wide signal handler,
// which may be done only once per process: one more reason each component is its own process.
func runAPIServer(args []string) int { return runCobra(apiserverapp.NewAPIServerCommand(), args) }

// runControllerManager is kube-controller-manager.
func runControllerManager(args []string) int {
	return runCobra(kcmapp.NewControllerManagerCommand(), args)
}

// runScheduler is kube-scheduler with the default plugin registry.
func runScheduler(args []string) int { return runCobra(schedulerapp.NewSchedulerCommand(), args) }

// runKubelet is the kubelet.
func runKubelet(args []string) int {
	return runCobra(kubeletapp.NewKubeletCommand(context.Background()), args)
}

// runKubeProxy is kube-proxy.
func runKubeProxy(args []string) int { return runCobra(proxyapp.NewProxyCommand(), args) }

// runKubectl is kubectl of the same Kubernetes version as the cluster.
func runKubectl(args []string) int {
	// As in kubectl's own main: apply -v before the command is built, so plugin and .kuberc
	// handling during construction already log at the requested verbosity.
	// kubectl reads os.Args itself (plugin lookup, verbosity), so present it the argument vector
	// the release binary would see; this process runs nothing but kubectl.
	os.Args = append([]string{"kubectl"}, args...)
	if _, err := logs.GlogSetter(kubectlcmd.GetLogVerbosity(os.Args)); err != nil {
		fmt.Fprintln(os.Stderr, "kubectl: set verbosity:", err)
	}
	cmd := kubectlcmd.NewDefaultKubectlCommand()
	cmd.SetArgs(args)
	if err := cli.RunNoErrOutput(cmd); err != nil {
		kubectlutil.CheckErr(err) // prints the error the way kubectl does and exits non-zero
	}
	return 0
}
