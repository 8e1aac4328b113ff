"""Which branch and worktree path belong to an issue (the worktree templates), and the
read side of the ``active-worktrees/`` registry. The parallel-agents area adds the writers.

Templates (git config; ``{issue}`` and ``{repo}`` are replaced):

- ``st.worktree.branch``  default ``st/issue-{issue}``
- ``st.worktree.path``    default ``../{repo}.worktrees/issue-{issue}`` (relative to the
  main worktree's root)
"""

from __future__ import annotations

import os
from pathlib import Path

from gitst.state.paths import state_path, validate_identifier

DEFAULT_BRANCH_TEMPLATE = "st/issue-{issue}"
DEFAULT_PATH_TEMPLATE = "../{repo}.worktrees/issue-{issue}"


def _render(template: str, issue: str, repo: str) -> str:
    return template.replace("{issue}", issue).replace("{repo}", repo)


def _main_root(cwd) -> Path:
    from gitst.gitops.core import require_repo

    info = require_repo(cwd)
    return info.main_root or info.toplevel


def branch_template(cwd: str | os.PathLike | None = None) -> str:
    from gitst.gitops.core import config_get

    return config_get("st.worktree.branch", cwd) or DEFAULT_BRANCH_TEMPLATE


def branch_for_issue(issue: str, cwd: str | os.PathLike | None = None) -> str:
    """The branch the template gives ``issue`` (does not look at the registry)."""
    validate_identifier(issue, "issue")
    return _render(branch_template(cwd), issue, _main_root(cwd).name)


def worktree_path_for_issue(issue: str, cwd: str | os.PathLike | None = None) -> Path:
    """The default worktree path of ``issue`` from ``st.worktree.path``."""
    from gitst.gitops.core import config_get

    validate_identifier(issue, "issue")
    root = _main_root(cwd)
    template = config_get("st.worktree.path", cwd) or DEFAULT_PATH_TEMPLATE
    path = Path(os.path.expanduser(_render(template, issue, root.name)))
    return Path(os.path.normpath(path if path.is_absolute() else root / path))


def worktree_entry_path(issue: str, cwd: str | os.PathLike | None = None) -> Path:
    return state_path("active-worktrees", f"{validate_identifier(issue, 'issue')}.json", cwd=cwd)


def read_worktree_entry(issue: str, cwd: str | os.PathLike | None = None) -> dict | None:
    """The registry entry of ``issue`` (``active-worktrees/<issue>.json``), or None."""
    from gitst.jsonio import JSONDecodeError, loads

    path = worktree_entry_path(issue, cwd)
    try:
        data = loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def branch_of_issue(issue: str, cwd: str | os.PathLike | None = None) -> str:
    """The issue's branch: the registry's ``branch`` when registered, else the template's."""
    entry = read_worktree_entry(issue, cwd)
    if entry and isinstance(entry.get("branch"), str) and entry["branch"]:
        return entry["branch"]
    return branch_for_issue(issue, cwd)
