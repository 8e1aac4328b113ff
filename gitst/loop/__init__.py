"""The agent loop end to end (docs/agent-loop.md): take the next ready item (``next``), land
the result on the base branch through a merge slot (``land``). One feature package above the
plan, sessions and worktrees; the CLI is its face."""
