package main

import (
	"context"
	"testing"

	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	nodev1client "k8s.io/client-go/kubernetes/typed/node/v1"
)

// fakeRuntimeClasses keeps RuntimeClasses in a map; the methods ensureOneRuntimeClass does not
// call are the embedded nil interface's (a call would panic, failing the test).
type fakeRuntimeClasses struct {
	nodev1client.RuntimeClassInterface
	items map[string]*nodev1.RuntimeClass
}

var rcResource = schema.GroupResource{Group: "node.k8s.io", Resource: "runtimeclasses"}

func (f *fakeRuntimeClasses) Get(_ context.Context, name string, _ metav1.GetOptions) (*nodev1.RuntimeClass, error) {
	if rc, ok := f.items[name]; ok {
		return rc, nil
	}
	return nil, apierrors.NewNotFound(rcResource, name)
}

func (f *fakeRuntimeClasses) Create(_ context.Context, rc *nodev1.RuntimeClass, _ metav1.CreateOptions) (*nodev1.RuntimeClass, error) {
	f.items[rc.Name] = rc
	return rc, nil
}

func (f *fakeRuntimeClasses) Delete(_ context.Context, name string, _ metav1.DeleteOptions) error {
	delete(f.items, name)
	return nil
}

// With runsc, both RuntimeClasses exist (runc so that a session can opt out of a gVisor default);
// without it, both of localkube's are removed and one someone else made is left alone.
func TestRuntimeClassesFollowGvisor(t *testing.T) {
	ctx := context.Background()
	f := &fakeRuntimeClasses{items: map[string]*nodev1.RuntimeClass{}}
	for _, rc := range localkubeRuntimeClasses {
		if err := ensureOneRuntimeClass(ctx, f, rc.name, rc.handler, true); err != nil {
			t.Fatal(err)
		}
	}
	for name, handler := range map[string]string{"gvisor": "runsc", "runc": "runc"} {
		rc := f.items[name]
		if rc == nil || rc.Handler != handler || rc.Labels["app.kubernetes.io/managed-by"] != "localkube" {
			t.Fatalf("RuntimeClass %s: %+v, want handler %s managed by localkube", name, rc, handler)
		}
	}
	// A second start with gVisor changes nothing.
	if err := ensureOneRuntimeClass(ctx, f, runcRuntimeClass, runcHandler, true); err != nil {
		t.Fatal(err)
	}
	f.items["theirs"] = &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}, Handler: "runc"}
	for _, rc := range append(localkubeRuntimeClasses, struct{ name, handler string }{"theirs", "runc"}) {
		if err := ensureOneRuntimeClass(ctx, f, rc.name, rc.handler, false); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.items) != 1 || f.items["theirs"] == nil {
		t.Fatalf("after a start without gVisor: %v, want only the RuntimeClass localkube did not make", f.items)
	}
}

// A RuntimeClass runc with another handler is not silently reused.
func TestRuntimeClassWithAnotherHandler(t *testing.T) {
	f := &fakeRuntimeClasses{items: map[string]*nodev1.RuntimeClass{
		"runc": {ObjectMeta: metav1.ObjectMeta{Name: "runc"}, Handler: "kata"},
	}}
	err := ensureOneRuntimeClass(context.Background(), f, runcRuntimeClass, runcHandler, true)
	if err == nil || err.Error() != `RuntimeClass runc exists with handler "kata", not "runc"; delete it first` {
		t.Fatalf("err = %v", err)
	}
}
