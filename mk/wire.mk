# The agent's wire contract (crds/src/wire, docs/adr/0018-agent-wire-contract-and-interactive-calls.md):
# its TypeScript types are generated from its JSON Schemas. Hooked into `make generate` and
# `make verify` as extra prerequisites, so those targets keep one entry point for everything
# generated.
.PHONY: generate-wire verify-wire

generate-wire: node-deps ## Regenerate the agent wire contract's TS types from crds/src/wire/schemas.ts
	node crds/scripts/generate-wire.mjs

verify-wire: node-deps ## Fail when crds/src/wire/generated drifted from its schemas
	node crds/scripts/generate-wire.mjs --check

generate: generate-wire
verify: verify-wire
