package main

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// localPathManifest is rancher's local-path-provisioner as kind runs it, with StorageClass
// local-path as the cluster default (manifests/local-path-storage.yaml, docs/adr/0014).
//
//go:embed manifests/local-path-storage.yaml
var localPathManifest []byte

// localPathImage must be in the node's containerd before the add-on is applied (never pulled).
// Its helper pods use the testbox image, imported with it by `make images-base images-import`.
const localPathImage = "localhost/sandbox-platform/local-path-provisioner:v0.0.30"

// localPathDirToken is the placeholder of the volumes' directory in the manifest.
const localPathDirToken = "__LOCAL_PATH_DIR__"

// localPathDir is where the provisioner's volumes live: under the state dir, so `cluster-reset`
// deletes them with the cluster's objects (the PersistentVolumes in etcd), and `cluster-down`
// (which keeps etcd) keeps them.
func (l layout) localPathDir() string { return l.path("local-path") }

// applyLocalPath applies the provisioner, its RBAC and the default StorageClass, and waits until
// the provisioner runs.
func applyLocalPath(ctx context.Context, l layout) error {
	for _, ref := range []string{localPathImage, "localhost/sandbox-platform/testbox:dev"} {
		if ok, err := hasImage(ctx, l, ref); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("image %s is not in the node's containerd; run `make images-base images-import` first", ref)
		}
	}
	if err := os.MkdirAll(l.localPathDir(), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", l.localPathDir(), err)
	}
	kubeconfig := l.componentKubeconfig("admin")
	manifest := bytes.ReplaceAll(localPathManifest, []byte(localPathDirToken), []byte(l.localPathDir()))
	if err := applyManifest(ctx, kubeconfig, manifest); err != nil {
		return err
	}
	cs, err := adminClient(kubeconfig)
	if err != nil {
		return err
	}
	return waitUntil(ctx, "dynamic provisioning (Deployment local-path-storage/local-path-provisioner available, default StorageClass local-path)", nil,
		func(ctx context.Context) (bool, string) {
			d, err := cs.AppsV1().Deployments("local-path-storage").Get(ctx, "local-path-provisioner", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			done := d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas == *d.Spec.Replicas &&
				d.Status.UpdatedReplicas == *d.Spec.Replicas && d.Status.Replicas == *d.Spec.Replicas
			return done, fmt.Sprintf("%d/%d available", d.Status.AvailableReplicas, *d.Spec.Replicas)
		})
}
