package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// clusterDNSManifest is CoreDNS as Deployment + Service kube-dns (manifests/cluster-dns.yaml).
//
//go:embed manifests/cluster-dns.yaml
var clusterDNSManifest []byte

// clusterDNSImage must be in the node's containerd before the add-on is applied: it is never
// pulled (imagePullPolicy Never), and a pod that found it missing would wait out the kubelet's
// back-off after the import.
const clusterDNSImage = "localhost/sandbox-platform/coredns:1.15.0"

// runAddons is `localkube addons`: it applies the cluster add-ons that run as pods (cluster DNS,
// the local-path provisioner and its default StorageClass: localpath.go) to a running cluster and
// waits until they serve. `make cluster-up` runs it after importing the
// images; it is idempotent (server-side apply).
func runAddons(args []string) int {
	fs := flag.NewFlagSet("addons", flag.ContinueOnError)
	dir := fs.String("dir", "", "state directory of a running cluster (required)")
	timeout := fs.Duration("timeout", 3*time.Minute, "how long to wait for the add-ons to serve")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "localkube addons: --dir is required")
		return 2
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "localkube addons:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := applyClusterDNS(ctx, layout{dir: abs}); err != nil {
		fmt.Fprintln(os.Stderr, "localkube addons:", err)
		return 1
	}
	if err := applyLocalPath(ctx, layout{dir: abs}); err != nil {
		fmt.Fprintln(os.Stderr, "localkube addons:", err)
		return 1
	}
	return 0
}

func applyClusterDNS(ctx context.Context, l layout) error {
	st, err := readState(l)
	if err != nil {
		return fmt.Errorf("no running cluster on %s (start it with `make cluster-up`): %w", l.dir, err)
	}
	if st.Profile != profileCluster {
		return fmt.Errorf("the %s profile has no node to run cluster DNS on", st.Profile)
	}
	if ok, err := hasImage(ctx, l, clusterDNSImage); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("image %s is not in the node's containerd; run `make images-base images-import` first", clusterDNSImage)
	}
	kubeconfig := l.componentKubeconfig("admin")
	if err := applyManifest(ctx, kubeconfig, clusterDNSManifest); err != nil {
		return err
	}
	cs, err := adminClient(kubeconfig)
	if err != nil {
		return err
	}
	return waitUntil(ctx, "cluster DNS (Deployment kube-system/coredns available, Service kube-dns "+clusterDNSIP+")", nil,
		func(ctx context.Context) (bool, string) {
			d, err := cs.AppsV1().Deployments("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			done := d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == *d.Spec.Replicas &&
				d.Status.AvailableReplicas == *d.Spec.Replicas && d.Status.Replicas == *d.Spec.Replicas
			return done, fmt.Sprintf("%d/%d available, %d updated", d.Status.AvailableReplicas, *d.Spec.Replicas, d.Status.UpdatedReplicas)
		})
}

// applyManifest server-side applies every document of a multi-document YAML.
func applyManifest(ctx context.Context, kubeconfig string, manifest []byte) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("load %s: %w", kubeconfig, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	cs, err := adminClient(kubeconfig)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("decode manifest: %w", err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("map %s: %w", gvk, err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if ns := obj.GetNamespace(); ns != "" {
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		if _, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "localkube", Force: true}); err != nil {
			return fmt.Errorf("apply %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
	}
}
