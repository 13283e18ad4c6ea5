"""Writing the memory files: the guardian, the workspace, diffs, rollback, corrections and what guards a write."""
