package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// applyCRDs server-side applies every CustomResourceDefinition in dir/*.yaml and waits until each
// is Established. The supervisor does this before the controller manager starts so that its
// garbage collector sees the CRDs in its first discovery; a CRD created later is only noticed on
// the collector's 30 s discovery resync, which delays ownerReference GC of its dependents.
func applyCRDs(ctx context.Context, kubeconfig, dir string, children []*child) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("load %s: %w", kubeconfig, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	crds, err := readCRDs(dir)
	if err != nil {
		return err
	}
	force := true
	for _, crd := range crds {
		if _, err := dyn.Resource(crdResource).Apply(ctx, crd.GetName(), crd,
			metav1.ApplyOptions{FieldManager: "localkube", Force: force}); err != nil {
			return fmt.Errorf("apply CRD %s: %w", crd.GetName(), err)
		}
	}
	for _, crd := range crds {
		name := crd.GetName()
		err := waitUntil(ctx, "CRD "+name+" Established", children, func(ctx context.Context) (bool, string) {
			got, err := dyn.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return crdEstablished(got), "not Established yet"
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func crdEstablished(crd *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conditions {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// readCRDs returns the CustomResourceDefinition documents of dir/*.yaml (other kinds are skipped).
func readCRDs(dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var crds []*unstructured.Unstructured
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
		decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := decoder.Decode(&obj.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("decode %s: %w", file, err)
			}
			if strings.EqualFold(obj.GetKind(), "CustomResourceDefinition") {
				crds = append(crds, obj)
			}
		}
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("no CustomResourceDefinition in %s/*.yaml", dir)
	}
	return crds, nil
}
