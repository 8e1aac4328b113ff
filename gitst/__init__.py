"""gitst: git-native plan engine, state validation, hooks and worktree claims."""

__version__ = "0.1.0"
