# Egress by name (issue 30, docs/adr/0034): the egress proxy's image and its benchmark. The image
# joins `make images` here. This file is read before images.mk (mk/*.mk in order), whose variables
# are not set yet when these rules are parsed: the paths are spelled from LOCALKUBE_DIR (set by the
# Makefile before any include) the way images.mk spells them, and images.mk's pattern rule builds
# the archive from test-e2e/images/recipes/egress-proxy.json.

.PHONY: bench-egress test-egress-unit

EGRESS_IMAGES_DIR := $(or $(IMAGES_DIR),$(LOCALKUBE_DIR)/images)
EGRESS_BUNDLE := $(EGRESS_IMAGES_DIR)/build/bundles/egress-proxy.mjs

images: $(EGRESS_IMAGES_DIR)/egress-proxy.tar

$(EGRESS_IMAGES_DIR)/egress-proxy.tar: $(EGRESS_BUNDLE)
$(EGRESS_BUNDLE): $(shell find egress-proxy/src crds/src -name '*.ts') package-lock.json test-e2e/images/scripts/bundle.mjs | node-deps
	node test-e2e/images/scripts/bundle.mjs egress-proxy/src/main.ts $@ egress-proxy
# The egress drop reporter (the DaemonSet of templates/egress-drop-reporter.yaml) is in the same
# image: its bundle, and the static NFLOG helper it runs (built by images.mk's rule for
# test-e2e/images/src/*.c, gcc -static).
EGRESS_DROPS_BUNDLE := $(EGRESS_IMAGES_DIR)/build/bundles/egress-drop-reporter.mjs
$(EGRESS_IMAGES_DIR)/egress-proxy.tar: $(EGRESS_DROPS_BUNDLE) $(EGRESS_IMAGES_DIR)/build/sandbox-nflog
$(EGRESS_DROPS_BUNDLE): $(shell find egress-proxy/src crds/src -name '*.ts') package-lock.json test-e2e/images/scripts/bundle.mjs | node-deps
	node test-e2e/images/scripts/bundle.mjs egress-proxy/src/drops/main.ts $@ egress-proxy

test-egress-unit: node-deps ## Unit tests of the egress proxy (loopback servers, no cluster)
	cd egress-proxy && node --experimental-vm-modules ../node_modules/jest/bin/jest.js

bench-egress: node-deps ## HTTP p50 and throughput, sandbox -> test upstream, through the egress proxy vs direct (docs/benchmarks.md)
	node egress-proxy/bench/run.mjs $(BENCH_EGRESS_ARGS)

bench: bench-egress
# --mode cluster (BENCH_EGRESS_ARGS) imports the TypeScript SDK through the e2e helpers.
bench-egress: sdk-ts-build
