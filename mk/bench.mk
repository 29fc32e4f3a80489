# `make bench` runs every benchmark (each area's mk adds its bench-* targets to `bench`); this file
# adds what a fresh clone lacks after `make run`: each bench target builds what it imports. The
# benches bundle their TypeScript from sources (bench-runner.mjs) with node_modules external, so
# the only built workspace output they load is the TypeScript SDK (the gateway benches' cluster
# setup imports @sandbox-platform/client, whose package entry is its dist/) and the operator's
# dist/main.js (bench-operator: operator-build, in mk/operator.mk). docs/benchmarks.md says what
# each measures.
.PHONY: sdk-ts-build

sdk-ts-build: node-deps ## Compile the TypeScript SDK's dist/ (tsc, then its CommonJS half; incremental)
	npx tsc -b sdk/typescript
	node sdk/typescript/scripts/cjs.mjs

bench-gateway bench-gateway-local bench-gateway-local-split: sdk-ts-build

# The split-process variant of bench-gateway-local is a benchmark of its own (a deployment's topology).
bench: bench-gateway-local-split
