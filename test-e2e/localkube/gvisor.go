package main

import (
	"context"
	"fmt"

	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// gVisor on the node. containerd runs runsc through its own runc v2 shim (runtime_type
// io.containerd.runc.v2 with BinaryName = runsc): gVisor's containerd-shim-runsc-v1 cannot start
// on these VMs ("failed to set OOM Score on shim: write /proc/PID/oom_score_adj: permission
// denied": root lacks CAP_SYS_RESOURCE), while the runc shim tolerates that, as it does for runc.
const (
	// gvisorRuntimeClass is the RuntimeClass pods name (spec.runtimeClassName) to run under gVisor.
	gvisorRuntimeClass = "gvisor"
	// gvisorHandler is containerd's runtime name for runsc (the RuntimeClass handler).
	gvisorHandler = "runsc"
)

// ensureRuntimeClass creates RuntimeClass gvisor when runsc is configured, and deletes the one a
// previous start created when it is not (a RuntimeClass whose handler is missing would leave pods
// failing to start instead of being refused).
func ensureRuntimeClass(ctx context.Context, cs *kubernetes.Clientset, enabled bool) error {
	rcs := cs.NodeV1().RuntimeClasses()
	cur, err := rcs.Get(ctx, gvisorRuntimeClass, metav1.GetOptions{})
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("get RuntimeClass %s: %w", gvisorRuntimeClass, err)
	case !enabled:
		if err == nil && cur.Labels["app.kubernetes.io/managed-by"] == "localkube" {
			if err := rcs.Delete(ctx, gvisorRuntimeClass, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete RuntimeClass %s: %w", gvisorRuntimeClass, err)
			}
		}
		return nil
	case err == nil:
		if cur.Handler != gvisorHandler {
			return fmt.Errorf("RuntimeClass %s exists with handler %q, not %q; delete it first", gvisorRuntimeClass, cur.Handler, gvisorHandler)
		}
		return nil
	}
	rc := &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: gvisorRuntimeClass, Labels: map[string]string{"app.kubernetes.io/managed-by": "localkube"}},
		Handler:    gvisorHandler,
	}
	if _, err := rcs.Create(ctx, rc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create RuntimeClass %s: %w", gvisorRuntimeClass, err)
	}
	logf("RuntimeClass %s (handler %s, gVisor) created", gvisorRuntimeClass, gvisorHandler)
	return nil
}

// runscRuntimeConfig is containerd's runtime entry for runsc (empty when gVisor is off).
func runscRuntimeConfig(l layout, runscPath string) []string {
	if runscPath == "" {
		return nil
	}
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	key := `[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.` + gvisorHandler + `]`
	return []string{
		"    " + key,
		`      runtime_type = "io.containerd.runc.v2"`,
		"    " + key[:len(key)-1] + `.options]`,
		"        BinaryName = " + q(runscPath),
		"        Root = " + q(l.path("containerd", "runsc")),
		"        SystemdCgroup = false",
	}
}
