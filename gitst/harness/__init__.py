"""Agent harness integration: Claude Code and Codex hooks (`git st hook-agent`), their
configuration (`git st setup`), the session context (`git st prime`) and the Codex
``update_plan`` import. docs/harness.md."""
