# Helm chart: pinned tools built from Go modules, lint, strict schema validation, install.
TOOLS_BIN := $(LOCALKUBE_DIR)/bin
HELM := $(TOOLS_BIN)/helm
KUBECONFORM := $(TOOLS_BIN)/kubeconform
CHART := charts/sandbox-platform
K8S_SWAGGER = $(shell cd test-e2e/localkube && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/api/openapi-spec/swagger.json
SCHEMA_DIR := $(LOCALKUBE_DIR)/schemas
# Values used to render the chart in checks: one API key (hash of a throwaway value).
CHECK_VALUES := --set apiKeys.keys[0].id=check --set apiKeys.keys[0].sha256=$(shell printf check | sha256sum | cut -c1-64) --set apiKeys.keys[0].namespaces[0]=sandboxes

.PHONY: tools
tools: $(HELM) $(KUBECONFORM) ## Build helm and kubeconform from their pinned Go modules

$(HELM) $(KUBECONFORM): test-e2e/tools/go.mod test-e2e/tools/go.sum
	@echo ">> building helm and kubeconform from Go modules (test-e2e/tools/go.mod)"
	mkdir -p $(TOOLS_BIN)
	cd test-e2e/tools && go build -trimpath -ldflags='-s -w' -o $(TOOLS_BIN)/ helm.sh/helm/v3/cmd/helm github.com/yannh/kubeconform/cmd/kubeconform
	touch $(HELM) $(KUBECONFORM)

$(SCHEMA_DIR)/.stamp: test-e2e/tools/openapi2jsonschema.mjs crds/sandboxsessions.sandbox.dev.yaml test-e2e/localkube/go.mod
	@echo ">> JSON schemas from the pinned Kubernetes OpenAPI document and our CRD"
	rm -rf $(SCHEMA_DIR)
	node test-e2e/tools/openapi2jsonschema.mjs --swagger $(K8S_SWAGGER) --out $(SCHEMA_DIR) --crd crds/sandboxsessions.sandbox.dev.yaml
	touch $@

.PHONY: chart-lint
chart-lint: tools node-deps $(SCHEMA_DIR)/.stamp ## helm lint + helm template | kubeconform -strict (with the CRD schema)
	$(HELM) lint --strict $(CHART) $(CHECK_VALUES)
	$(HELM) template check $(CHART) -n sandbox-system --include-crds --kube-version 1.35.8 $(CHECK_VALUES) \
	  | $(KUBECONFORM) -strict -summary -schema-location '$(SCHEMA_DIR)/{{.ResourceKind}}{{.KindSuffix}}.json' -
	$(HELM) template check $(CHART) -n sandbox-system --kube-version 1.35.8 $(CHECK_VALUES) \
	  --set gateway.kubernetesExec.enabled=true --set networkPolicy.allowDNS=false \
	  | $(KUBECONFORM) -strict -summary -schema-location '$(SCHEMA_DIR)/{{.ResourceKind}}{{.KindSuffix}}.json' -
	$(KUBECONFORM) -strict -summary -schema-location '$(SCHEMA_DIR)/{{.ResourceKind}}{{.KindSuffix}}.json' crds/examples
