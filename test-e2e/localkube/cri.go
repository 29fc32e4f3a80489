package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/klog/v2"
)

// newCRI connects to the node's containerd through the CRI API, the same client the kubelet uses.
func newCRI(l layout) (internalapi.RuntimeService, error) {
	logger := klog.Background()
	return remote.NewRemoteRuntimeService("unix://"+l.containerdSocket(), 10*time.Second, nil, &logger)
}

// hasImage reports whether containerd (k8s.io namespace) has the image.
func hasImage(ctx context.Context, l layout, ref string) (bool, error) {
	logger := klog.Background()
	is, err := remote.NewRemoteImageService("unix://"+l.containerdSocket(), 10*time.Second, nil, &logger)
	if err != nil {
		return false, fmt.Errorf("connect to containerd image service: %w", err)
	}
	st, err := is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: ref}, false)
	if err != nil {
		return false, fmt.Errorf("image status %s: %w", ref, err)
	}
	return st.GetImage() != nil, nil
}

// removeAllPods stops and removes every pod sandbox (and with it its containers). Stopping a
// sandbox runs the CNI DEL, which removes its veth, netns, IPAM lease and iptables rules, and
// removing it unmounts its shm and rootfs mounts: this is how cluster-down leaves nothing behind.
func removeAllPods(ctx context.Context, l layout) (int, error) {
	rs, err := newCRI(l)
	if err != nil {
		return 0, fmt.Errorf("connect to containerd CRI: %w", err)
	}
	pods, err := rs.ListPodSandbox(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("list pod sandboxes: %w", err)
	}
	var errs []error
	for _, pod := range pods {
		if err := rs.StopPodSandbox(ctx, pod.Id); err != nil {
			errs = append(errs, fmt.Errorf("stop pod %s/%s: %w", pod.Metadata.GetNamespace(), pod.Metadata.GetName(), err))
			continue
		}
		if err := rs.RemovePodSandbox(ctx, pod.Id); err != nil {
			errs = append(errs, fmt.Errorf("remove pod %s/%s: %w", pod.Metadata.GetNamespace(), pod.Metadata.GetName(), err))
		}
	}
	return len(pods), errors.Join(errs...)
}
