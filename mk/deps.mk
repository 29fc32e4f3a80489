# Dependencies the Makefile installs itself, so a clean clone works.
NODE_STAMP := node_modules/.package-lock.stamp

.PHONY: node-deps
node-deps: $(NODE_STAMP)

$(NODE_STAMP): package-lock.json package.json */package.json
	flock /tmp/npm.lock npm ci --no-audit --no-fund
	touch $@
