# Local OCI images (owned by test-e2e/images; see docs/images.md). Built from host files by our
# own daemonless builder, written as oci-archive tarballs under $(IMAGES_DIR), and imported into
# the local node's containerd. No Docker, no registry, nothing pulled.

IMAGES_SRC := test-e2e/images
IMAGES_DIR ?= $(LOCALKUBE_DIR)/images
IMAGES_BUILD := $(IMAGES_DIR)/build
IMAGES_CACHE := $(IMAGES_DIR)/cache
IMGBUILD := $(IMAGES_BUILD)/bin/imgbuild
# The cluster's containerd; images-import takes CONTAINERD_SOCK=... to import anywhere else.
CONTAINERD_SOCK ?= $(LOCALKUBE_DIR)/containerd/containerd.sock

# The base images the local cluster itself needs: pod sandboxes, node tests (and the local-path
# provisioner's helper pods), cluster DNS, dynamic provisioning.
IMAGES_BASE := pause testbox coredns local-path-provisioner
IMAGES_APPS := sandbox-agent operator api-gateway sandbox-python
# Test images: the hostile agent (test-e2e/hostile-agent) for the gateway's hostile-tenant e2e.
IMAGES_TEST := hostile-agent
IMAGES_GO_SRCS := $(shell find $(IMAGES_SRC)/cmd $(IMAGES_SRC)/internal -name '*.go' ! -name '*_test.go') $(IMAGES_SRC)/go.mod
# A bundle depends on every TypeScript source it may import, and on the lockfile (dependencies).
BUNDLE_DEPS = $(shell find $(1)/src crds/src -name '*.ts' 2>/dev/null) package-lock.json $(IMAGES_SRC)/scripts/bundle.mjs

.PHONY: images-base images images-import images-host-deps images-clean test-images images-FORCE

images-base: $(IMAGES_BASE:%=$(IMAGES_DIR)/%.tar) ## Build the pause, testbox, coredns and local-path-provisioner images (tarballs in $LOCALKUBE_DIR/images)

images: images-base $(IMAGES_APPS:%=$(IMAGES_DIR)/%.tar) $(IMAGES_TEST:%=$(IMAGES_DIR)/%.tar) ## Build all local images (needs the agent, operator and gateway sources)

images-import: $(IMGBUILD) ## Import every tarball in $LOCALKUBE_DIR/images into the cluster's containerd (CONTAINERD_SOCK=...)
	@shopt -s nullglob; tars=($(IMAGES_DIR)/*.tar); \
	if ((!$${#tars[@]})); then echo "images-import: no tarballs in $(IMAGES_DIR); run make images-base or make images" >&2; exit 1; fi; \
	IMGBUILD=$(IMGBUILD) $(IMAGES_SRC)/scripts/import.sh --address $(CONTAINERD_SOCK) "$${tars[@]}"

test-images: images-host-deps images ## Builder unit tests (go test) and runc/containerd checks of all five images (root)
	cd $(IMAGES_SRC) && nice go test -count=1 ./...
	IMGBUILD=$(IMGBUILD) RUNSC=$$(if [ "$(LOCALKUBE_GVISOR)" = true ]; then echo "$$($(LOCALKUBE_ADDONS) gvisor)/runsc"; fi) \
	  $(IMAGES_SRC)/scripts/test-runtime.sh $(IMAGES_DIR)

images-host-deps:
	@$(IMAGES_SRC)/scripts/host-deps.sh

images-FORCE: ;

images-clean: ## Remove the image tarballs, build outputs and layer cache
	rm -rf $(IMAGES_DIR)

# Host files are not make prerequisites (there are thousands), so every image target runs the
# builder; it skips layers whose input fingerprint is cached and leaves an archive untouched when
# the digest is unchanged, so a no-op run takes well under a second per image.
$(IMAGES_DIR)/%.tar: $(IMAGES_SRC)/recipes/%.json $(IMGBUILD) images-host-deps images-FORCE
	@$(IMGBUILD) build -recipe $< -out $@ -cache $(IMAGES_CACHE) -var BUILD=$(IMAGES_BUILD)

$(IMAGES_DIR)/pause.tar: $(IMAGES_BUILD)/pause
$(IMAGES_DIR)/testbox.tar: $(IMAGES_BUILD)/netecho
$(IMAGES_DIR)/coredns.tar: $(IMAGES_BUILD)/coredns
$(IMAGES_DIR)/local-path-provisioner.tar: $(IMAGES_BUILD)/local-path-provisioner
$(IMAGES_DIR)/sandbox-agent.tar: $(IMAGES_BUILD)/bundles/sandbox-agent.mjs $(IMAGES_BUILD)/sandbox-pty $(IMAGES_BUILD)/sandbox-watch
# The agent image plus the code interpreter's Python stack (mk/code.mk, docs/adr/0033).
$(IMAGES_DIR)/sandbox-python.tar: $(IMAGES_BUILD)/bundles/sandbox-agent.mjs $(IMAGES_BUILD)/sandbox-pty $(IMAGES_BUILD)/sandbox-watch $(IMAGES_BUILD)/kernel-bridge.py python-stack-site
$(IMAGES_BUILD)/kernel-bridge.py: sandbox-agent/src/code/kernel-bridge.py
	@mkdir -p $(@D)
	cp $< $@
$(IMAGES_DIR)/operator.tar: $(IMAGES_BUILD)/bundles/operator.mjs
$(IMAGES_DIR)/api-gateway.tar: $(IMAGES_BUILD)/bundles/api-gateway.mjs $(IMAGES_BUILD)/console/console.js
$(IMAGES_DIR)/hostile-agent.tar: $(IMAGES_BUILD)/hostile-agent.mjs

# The hostile agent is one file with no dependencies: copied as it is.
$(IMAGES_BUILD)/hostile-agent.mjs: test-e2e/hostile-agent/hostile-agent.mjs
	@mkdir -p $(@D)
	cp $< $@

$(IMGBUILD): $(IMAGES_GO_SRCS)
	@mkdir -p $(@D)
	cd $(IMAGES_SRC) && nice go build -trimpath -o $(abspath $@) ./cmd/imgbuild

# CoreDNS, built from its Go module by localkube's add-on builder (cached by a hash of its inputs);
# copied only when it changed, so an unchanged binary keeps the image's layer cache hit.
$(IMAGES_BUILD)/coredns: images-FORCE
	@mkdir -p $(@D)
	@src="$$(test-e2e/localkube/addons/build.sh coredns)/coredns"; cmp -s "$$src" $@ || cp "$$src" $@

# rancher's local-path-provisioner v0.0.30, the same way (docs/adr/0014).
$(IMAGES_BUILD)/local-path-provisioner: images-FORCE
	@mkdir -p $(@D)
	@src="$$(test-e2e/localkube/addons/build.sh local-path-provisioner)/local-path-provisioner"; cmp -s "$$src" $@ || cp "$$src" $@

# Static helpers: they run in any image, with no libc in it.
$(IMAGES_BUILD)/%: $(IMAGES_SRC)/src/%.c | images-host-deps
	@mkdir -p $(@D)
	nice gcc -static -Os -s -Wall -Wextra -Werror -o $@ $<

$(IMAGES_BUILD)/bundles/sandbox-agent.mjs: $(call BUNDLE_DEPS,sandbox-agent) | node-deps
	node $(IMAGES_SRC)/scripts/bundle.mjs sandbox-agent/src/main.ts $@ sandbox-agent
$(IMAGES_BUILD)/bundles/operator.mjs: $(call BUNDLE_DEPS,operator) | node-deps
	node $(IMAGES_SRC)/scripts/bundle.mjs operator/src/main.ts $@ operator
$(IMAGES_BUILD)/bundles/api-gateway.mjs: $(call BUNDLE_DEPS,api-gateway) | node-deps
	node $(IMAGES_SRC)/scripts/bundle.mjs api-gateway/src/server.ts $@ api-gateway
# The web console's static files (console/, docs/adr/0032): index.html, console.js and console.css,
# written together by its build (which fails when console.js is over 300 KB gzipped).
$(IMAGES_BUILD)/console/console.js: $(shell find console/src sdk/typescript/src -type f 2>/dev/null) console/scripts/build.mjs package-lock.json | node-deps
	node console/scripts/build.mjs $(@D)
