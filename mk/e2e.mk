# owned by its area; see AGENTS.md
.PHONY: test-integration test-e2e
test-integration:
	@echo "test-integration: not yet wired"
test-e2e:
	@echo "test-e2e: not yet wired"
