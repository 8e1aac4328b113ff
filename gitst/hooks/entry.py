"""``git-st hook NAME ARGS…``: what the hook shims (and the pre-commit framework) run.

``gitst.cli.main`` calls :func:`run_hook` before click is imported. This module and the
ones the pre-commit fast path touches (:mod:`gitst.hooks.selection`,
:mod:`gitst.git.runner`, :mod:`gitst.validate.detect`) import nothing heavy at load time: with
nothing relevant staged, a commit costs one interpreter start-up plus one git call
(``git diff --cached``; attributes and config are read from git's own files when they can
prove nothing applies, :mod:`gitst.git.files`). The checkers are imported only when there
is something to check.

Hook names:

- git hooks: ``pre-commit``, ``pre-push``, ``post-merge``, ``post-rewrite``,
  ``post-checkout`` (ARGS and stdin exactly as git passes them);
- pre-commit framework entries (FILES as the framework passes them, read from the work
  tree, which the framework has made equal to what is staged): ``validate`` and
  ``plan-append-only``.
"""

from __future__ import annotations

import os
import sys

from gitst.core.errors import UsageError
from gitst.git.files import GitFiles
from gitst.git.index import staged_paths
from gitst.git.repo import toplevel
from gitst.hooks.selection import select

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook fast path loads no typing
    from gitst.core.diagnostics import Diagnostic

GIT_HOOKS = ("pre-commit", "pre-push", "post-merge", "post-rewrite", "post-checkout")
FRAMEWORK_HOOKS = ("validate", "plan-append-only")


def run_hook(args: list[str]) -> int:
    """Run hook ``args[0]`` with the rest of ``args``; return its exit status."""
    if not args:
        raise UsageError(
            "which hook? usage: git st hook NAME [ARGS...]; NAME is one of " + ", ".join(GIT_HOOKS + FRAMEWORK_HOOKS)
        )
    name, rest = args[0], list(args[1:])
    cwd = os.getcwd()
    if name == "pre-commit":
        return pre_commit(cwd)
    # the framework runs its hooks at the top of the work tree and passes paths from there
    if name == "validate":
        return framework_validate(rest, cwd)
    if name == "plan-append-only":
        from gitst.hooks.checks import check_append_only_files  # lazy: the checkers load only when needed

        return _report("plan-append-only", check_append_only_files(rest, cwd))
    if name not in GIT_HOOKS:
        raise UsageError(f"unknown hook {name!r}: gitst runs " + ", ".join(GIT_HOOKS + FRAMEWORK_HOOKS))
    # git runs hooks at the top of the work tree; so do we when run by hand from below it
    cwd = toplevel(cwd)
    if name == "pre-push":
        from gitst.hooks.prepush import pre_push  # lazy: one hook's module per run

        return _report("pre-push", pre_push(rest, sys.stdin.buffer, cwd))
    if name in ("post-merge", "post-rewrite"):
        from gitst.hooks.postmerge import post_merge, post_rewrite  # lazy: one hook's module per run

        if name == "post-merge":
            return post_merge(rest, cwd)
        return post_rewrite(rest, sys.stdin.buffer, cwd)
    return post_checkout(rest, cwd)


def pre_commit(cwd: str) -> int:
    """Check what is staged; returns before importing any checker when nothing is relevant."""
    paths = staged_paths(cwd)
    if not paths:
        return 0
    cwd = toplevel(cwd)  # staged paths are relative to the top; git runs hooks there anyway
    found = []
    if reservations_marked(cwd):
        from gitst.hooks.reserved import check_reserved  # lazy: only when reservations exist (one stat says)

        found = check_reserved(paths, cwd)
    selection = select(paths, cwd, cached=True, top=True)
    if not selection.relevant:
        return _report("pre-commit", found) if found else 0
    from gitst.hooks.checks import check_staged  # lazy: pinned off the no-op commit (test_precommit.py)

    return _report("pre-commit", found + check_staged(selection, cwd))


def reservations_marked(top: str) -> bool:
    """False when the state dir holds no reservation marker (``reservations/active``), found
    without asking git: ``ST_STATE_DIR``, else ``state/`` beside the main worktree's ``.git``.
    A state dir that config may move (``st.stateDir``) or an unusual layout answers True:
    the checker resolves it for real."""
    env = os.environ.get("ST_STATE_DIR", "").strip()
    if env:
        root = os.path.abspath(os.path.expanduser(env))
    else:
        files = GitFiles(top)
        common = files.common_dir
        if files.config_may_set("st.stateDir") or not common or os.path.basename(common) != ".git":
            return True
        root = os.path.join(os.path.dirname(common), "state")
    return os.path.exists(os.path.join(root, "reservations", "active"))


def framework_validate(files: list[str], cwd: str) -> int:
    """The pre-commit framework's ``gitst-validate`` hook: the files it passes, as on disk."""
    if not files:
        return 0
    selection = select(files, cwd, cached=False)
    if not selection.relevant:
        return 0
    from gitst.hooks.checks import check_files  # lazy: the checkers load only when something is relevant

    return _report("validate", check_files(selection, cwd))


def post_checkout(args: list[str], cwd: str) -> int:
    """Hand over to the worktree manager (registers a hand-made worktree, docs/parallel.md)."""
    from gitst.worktrees.hook import post_checkout as register_worktree  # lazy: one hook's module per run

    return register_worktree(args, cwd)


def _report(hook: str, diagnostics: list[Diagnostic]) -> int:
    """Print diagnostics (stderr) and a one-line verdict; 1 when any is an error."""
    if not diagnostics:
        return 0
    from gitst.core.diagnostics import render_text  # lazy: only when there is something to report

    print(render_text(diagnostics), file=sys.stderr)
    errors = [d for d in diagnostics if d.is_error]
    if not errors:
        return 0
    files = len({d.path for d in errors})
    verdict = "commit refused" if hook == "pre-commit" else "failed"
    print(
        f"gitst {hook}: {verdict}: {len(errors)} problem{'s' if len(errors) != 1 else ''} "
        f"in {files} file{'s' if files != 1 else ''}",
        file=sys.stderr,
    )
    return 1
