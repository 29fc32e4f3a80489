# owned by its area; see AGENTS.md
