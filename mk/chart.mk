# Helm chart: pinned tools built from Go modules, lint, strict schema validation (the chart's
# kinds, our CRD and the prometheus-operator CRDs), rendered-chart checks, and the alert rules
# checked and unit-tested with promtool.
TOOLS_BIN := $(LOCALKUBE_DIR)/bin
HELM := $(TOOLS_BIN)/helm
KUBECONFORM := $(TOOLS_BIN)/kubeconform
PROMTOOL := $(TOOLS_BIN)/promtool
CHART := charts/sandbox-platform
K8S_SWAGGER = $(shell cd test-e2e/localkube && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/api/openapi-spec/swagger.json
# The prometheus-operator module (pinned in test-e2e/tools/prometheus-operator/go.mod) and its CRDs.
PROM_OPERATOR_DIR = $(shell cd test-e2e/tools/prometheus-operator && go mod download -json github.com/prometheus-operator/prometheus-operator | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p')
PROM_OPERATOR_CRDS := servicemonitors podmonitors prometheusrules
SCHEMA_DIR := $(LOCALKUBE_DIR)/schemas
CHART_CHECK_DIR := $(LOCALKUBE_DIR)/chart-check
KUBECONFORM_RUN = $(KUBECONFORM) -strict -summary -schema-location '$(SCHEMA_DIR)/{{.ResourceKind}}{{.KindSuffix}}.json'
# Values used to render the chart in checks: one API key (hash of a throwaway value).
CHECK_VALUES := --set apiKeys.keys[0].id=check --set apiKeys.keys[0].sha256=$(shell printf check | sha256sum | cut -c1-64) --set apiKeys.keys[0].namespaces[0]=sandboxes
# Every optional object of the chart on: monitoring, tracing.
MONITORING_VALUES := --set monitoring.serviceMonitor.enabled=true --set monitoring.podMonitor.enabled=true \
  --set monitoring.prometheusRule.enabled=true --set monitoring.grafanaDashboard.enabled=true \
  --set operator.tracing.otlpEndpoint=http://otel-collector.observability:4318 \
  --set gateway.tracing.otlpEndpoint=http://otel-collector.observability:4318

.PHONY: tools
tools: ## Build helm and kubeconform from their pinned Go modules (hash-cached: unchanged inputs compile nothing)
	@test-e2e/tools/build.sh $(TOOLS_BIN) helm kubeconform

.PHONY: promtool
promtool: ## Build promtool from github.com/prometheus/prometheus (pinned; hash-cached like tools)
	@test-e2e/tools/build.sh $(TOOLS_BIN) promtool

$(SCHEMA_DIR)/.stamp: test-e2e/tools/openapi2jsonschema.mjs $(wildcard crds/*.sandbox.dev.yaml) test-e2e/localkube/go.mod test-e2e/tools/prometheus-operator/go.mod
	@echo ">> JSON schemas from the pinned Kubernetes OpenAPI document, our CRDs and the prometheus-operator CRDs"
	rm -rf $(SCHEMA_DIR)
	node test-e2e/tools/openapi2jsonschema.mjs --swagger $(K8S_SWAGGER) --out $(SCHEMA_DIR) $(foreach c,$(wildcard crds/*.sandbox.dev.yaml),--crd $(c)) \
	  $(foreach c,$(PROM_OPERATOR_CRDS),--crd $(PROM_OPERATOR_DIR)/example/prometheus-operator-crd/monitoring.coreos.com_$(c).yaml)
	touch $@

.PHONY: chart-lint
chart-lint: tools promtool node-deps $(SCHEMA_DIR)/.stamp ## helm lint, kubeconform -strict of every rendering, rendered-chart checks, promtool check/test of the alerts
	$(HELM) lint --strict $(CHART) $(CHECK_VALUES)
	$(HELM) lint --strict $(CHART) $(CHECK_VALUES) $(MONITORING_VALUES)
	$(HELM) template check $(CHART) -n sandbox-system --include-crds --kube-version 1.35.8 $(CHECK_VALUES) | $(KUBECONFORM_RUN) -
	$(HELM) template check $(CHART) -n sandbox-system --kube-version 1.35.8 $(CHECK_VALUES) \
	  --set gateway.kubernetesExec.enabled=true --set networkPolicy.allowDNS=false | $(KUBECONFORM_RUN) -
	$(HELM) template check $(CHART) -n sandbox-system --kube-version 1.35.8 $(CHECK_VALUES) $(MONITORING_VALUES) \
	  --set masterKey.existingSecret=platform-master-key | $(KUBECONFORM_RUN) -
	$(KUBECONFORM_RUN) crds/examples
	HELM=$(abspath $(HELM)) node --test test-e2e/tools/chart-checks.test.mjs
	@echo ">> promtool check rules / test rules on the rendered PrometheusRule"
	rm -rf $(CHART_CHECK_DIR) && mkdir -p $(CHART_CHECK_DIR)
	$(HELM) template check $(CHART) -n sandbox-system --kube-version 1.35.8 $(CHECK_VALUES) $(MONITORING_VALUES) \
	  --show-only templates/prometheusrule.yaml | node test-e2e/tools/prometheus/rules-from-manifest.mjs > $(CHART_CHECK_DIR)/alerts.rules.yaml
	cp test-e2e/tools/prometheus/alerts.test.yaml $(CHART_CHECK_DIR)/
	$(PROMTOOL) check rules $(CHART_CHECK_DIR)/alerts.rules.yaml
	cd $(CHART_CHECK_DIR) && $(PROMTOOL) test rules alerts.test.yaml
