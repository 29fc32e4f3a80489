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
