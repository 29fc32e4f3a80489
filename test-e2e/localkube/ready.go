package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// waitUntil polls check every interval until it returns true, the context ends, or one of the
// watched children exits (then the error names it, so a crash is not reported as a timeout).
// what is printed first, and again every 15 s, so a long wait always says what it waits for.
func waitUntil(ctx context.Context, what string, children []*child, check func(context.Context) (bool, string)) error {
	logf("waiting for %s", what)
	start, lastNote := time.Now(), time.Now()
	detail := ""
	for {
		for _, c := range children {
			if c.exited() {
				return fmt.Errorf("%s exited (%v) while waiting for %s; see logs/%s.log", c.name, c.err, what, c.name)
			}
		}
		ok, d := check(ctx)
		if ok {
			logf("%s: ok after %s", what, time.Since(start).Round(100*time.Millisecond))
			return nil
		}
		detail = d
		if time.Since(lastNote) > 15*time.Second {
			logf("still waiting for %s (%s so far; last: %s)", what, time.Since(start).Round(time.Second), detail)
			lastNote = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for %s (last: %s)", what, detail)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// etcdHealthy reports etcd's own /health verdict.
func etcdHealthy(url string) func(context.Context) (bool, string) {
	hc := &http.Client{Timeout: 2 * time.Second}
	return func(ctx context.Context) (bool, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
		if err != nil {
			return false, err.Error()
		}
		resp, err := hc.Do(req)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		var body struct {
			Health string `json:"health"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return false, "decode /health: " + err.Error()
		}
		return body.Health == "true", "health=" + body.Health
	}
}

// adminClient builds a clientset from the admin kubeconfig.
func adminClient(kubeconfig string) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", kubeconfig, err)
	}
	cfg.Timeout = 5 * time.Second
	return kubernetes.NewForConfig(cfg)
}

// apiserverReady is GET /readyz (every post-start hook done, etcd reachable).
func apiserverReady(cs *kubernetes.Clientset) func(context.Context) (bool, string) {
	return func(ctx context.Context) (bool, string) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return false, err.Error()
		}
		return string(body) == "ok", string(body)
	}
}

// defaultServiceAccountExists proves the controller manager is up and its serviceaccount
// controller works: pods in `default` can be admitted.
func defaultServiceAccountExists(cs *kubernetes.Clientset) func(context.Context) (bool, string) {
	return func(ctx context.Context) (bool, string) {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	}
}

// nodeReady reports the Ready condition of the local node.
func nodeReady(cs *kubernetes.Clientset) func(context.Context) (bool, string) {
	return func(ctx context.Context) (bool, string) {
		node, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
			}
		}
		return false, "node has no Ready condition yet"
	}
}
