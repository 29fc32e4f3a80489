# Dependencies the Makefile installs itself, so a clean clone works.
NODE_STAMP := node_modules/.package-lock.stamp

.PHONY: node-deps
node-deps: $(NODE_STAMP)

$(NODE_STAMP): package-lock.json package.json */package.json
	@# npm ci, or its result for the same inputs restored from $$PLATFORM_CACHE (the script says which).
	flock /tmp/npm.lock test-support/scripts/node-deps.sh
	touch $@
