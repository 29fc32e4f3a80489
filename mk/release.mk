# Versions, generated release documents and `make release` (docs/release.md).
# One version source: the root package.json "version" (release/version.mjs writes it everywhere
# else); the OpenAPI document api-gateway/openapi.json comes from the gateway's route schemas.
# Both are hooked into `make generate` / `make verify`, so those stay the one entry point.
.PHONY: generate-version verify-version generate-openapi verify-openapi set-version

generate-version: node-deps ## Write the root package.json version into every package, the chart, the SDKs and crds/src/version.ts
	node release/version.mjs

verify-version: node-deps ## Fail when a version (or a packaged LICENSE copy) drifted from the root package.json
	node release/version.mjs --check

generate-openapi: node-deps generate-version ## Write api-gateway/openapi.json from the gateway's route schemas (no cluster)
	node release/openapi.mjs

verify-openapi: node-deps ## Fail when api-gateway/openapi.json drifted from the route schemas
	node release/openapi.mjs --check

set-version: node-deps ## Change the one version: make set-version VERSION=X.Y.Z (then add its CHANGELOG.md section)
	@test -n "$(VERSION)" || { echo "set-version: VERSION=X.Y.Z is required" >&2; exit 1; }
	node release/version.mjs --set $(VERSION)
	npm install --package-lock-only --no-audit --no-fund
	node release/openapi.mjs

generate: generate-version generate-openapi
verify: verify-version verify-openapi

# make release (docs/release.md): every artefact of the version in dist/, checked, with SHA256SUMS.
# Cached by a hash of its inputs (release/release.sh): a second run with nothing changed rebuilds
# nothing. The images come from mk/images.mk (imgbuild's layer cache), the venvs are made once.
RELEASE_VENV := $(ROOT)/.cache/venv-release
RELEASE_VENV_STAMP := $(RELEASE_VENV)/.stamp
.PHONY: release release-venv release-install

release-venv: $(RELEASE_VENV_STAMP)

$(RELEASE_VENV_STAMP): release/requirements.txt
	@echo "[release] creating $(RELEASE_VENV) (spdx-tools from PyPI)"
	@rm -rf $(RELEASE_VENV) && $(SDK_PYTHON) -m venv $(RELEASE_VENV)
	@$(RELEASE_VENV)/bin/pip install --quiet --disable-pip-version-check -r release/requirements.txt
	@touch $@

release: node-deps tools localkube sdk-venv release-venv $(IMAGES_APPS:%=$(IMAGES_DIR)/%.tar) $(IMAGES_DIR)/egress-proxy.tar ## Versioned artefacts in dist/: chart .tgz, images as OCI archives + SPDX SBOMs, npm and Python packages, krew archive + manifest, OpenAPI, SHA256SUMS
	@IMAGES_DIR=$(IMAGES_DIR) HELM=$(abspath $(HELM)) LOCALKUBE_BIN=$(LOCALKUBE_BIN) RELEASE_VENV=$(RELEASE_VENV) \
	  release/release.sh

# For the e2e tier (the lead wires it into make test): the chart from dist/'s .tgz on the local
# cluster, the images imported from dist/'s OCI archives, then helm test; the previous revision is
# restored afterwards.
release-install: release tools ## Upgrade the local platform to dist/'s packaged chart and OCI images, run helm test, roll back
	test-e2e/specs/platform/release-install.sh
