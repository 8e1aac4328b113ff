"""The only place that talks to git.

Everything runs git plumbing as a subprocess with an argument list (never a shell).
``core`` holds the runner and repository discovery; other modules of this package add
the git operations one area needs (index blobs for hooks, worktrees, pull refs, ...).
"""
