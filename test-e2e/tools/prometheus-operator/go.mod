// The prometheus-operator CRDs (example/prometheus-operator-crd/ of the module), pinned for the
// offline kubeconform schemas of ServiceMonitor, PodMonitor and PrometheusRule (mk/chart.mk).
// Nothing imports the module: only its files are read, from the Go module cache after
// `go mod download`. Do not run `go mod tidy` here (it would drop the requirement).
module github.com/sandboxsession/platform/test-e2e/tools/prometheus-operator

go 1.26.0

require github.com/prometheus-operator/prometheus-operator v0.85.0
