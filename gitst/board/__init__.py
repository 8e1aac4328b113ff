"""The live board (``git st board``): a read-only page on 127.0.0.1 of the plan, sessions,
claims and worktrees, read through the same library functions as the CLI (docs/board.md)."""
