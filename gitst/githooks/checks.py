"""What the pre-commit hook (and the framework entries) check, once something is relevant.

- nothing under the state dir and no plan lock sidecar is committed;
- every plan being committed has its lock sidecar ignored;
- a plan extends HEAD's version byte for byte (:mod:`gitst.githooks.appendonly`);
- every file of a known kind passes validation (:mod:`gitst.validate`) — for the git hook
  the staged blobs, never the working tree, and nothing is stashed.
"""

from __future__ import annotations

import os
from pathlib import Path

from gitst.diagnostics import Diagnostic
from gitst.githooks.appendonly import check_append_only
from gitst.githooks.selection import Selection

STATE_FILE = "state-file-staged"
SIDECAR = "lock-sidecar-staged"
SIDECAR_NOT_IGNORED = "sidecar-not-ignored"


def placement(selection: Selection, cwd) -> list[Diagnostic]:
    """Files that must never be committed, and plans whose sidecar could be."""
    diagnostics = []
    for path in selection.state_files:
        diagnostics.append(
            Diagnostic(
                path,
                None,
                STATE_FILE,
                f"is inside the state dir ({selection.state_dir}), which is runtime-only and never committed",
                fix=f"git rm --cached -- {_sh(path)}   (and ignore the state dir, e.g. echo '/state/' >> .gitignore)",
            )
        )
    for path, plan in selection.sidecars.items():
        diagnostics.append(
            Diagnostic(
                path,
                None,
                SIDECAR,
                f"is the lock sidecar of the plan {plan}; it is a runtime lock file and never committed",
                fix=f"git rm --cached -- {_sh(path)} && git st init --file {_sh(plan)}   (init adds the ignore rule next to the plan)",
            )
        )
    for plan in selection.plans:
        if plan + ".lock" in selection.sidecars:
            continue  # already refused above
        from gitst.errors import UsageError
        from gitst.plan.sidecar import require_ignored

        try:
            require_ignored(Path(cwd) / plan, plan)  # the plan engine's own rule and fix
        except UsageError as exc:
            diagnostics.append(Diagnostic(plan, None, SIDECAR_NOT_IGNORED, exc.message, fix=exc.fix))
    return diagnostics


def check_staged(selection: Selection, cwd) -> list[Diagnostic]:
    """The git pre-commit hook: every check, on the staged blobs."""
    from gitst.gitops.hooks import read_blobs

    diagnostics = placement(selection, cwd)
    plans = selection.plans
    if plans:
        blobs = read_blobs([f"HEAD:{p}" for p in plans] + [f":{p}" for p in plans], cwd)
        for plan in plans:
            staged = blobs.get(f":{plan}")
            if staged is not None:
                found = check_append_only(plan, blobs.get(f"HEAD:{plan}"), staged)
                if found:
                    diagnostics.append(found)
    if selection.kinds:
        from gitst.validate import validate_staged

        for result in validate_staged(cwd, list(selection.kinds)):
            diagnostics.extend(result.diagnostics)
    return diagnostics


def check_files(selection: Selection, cwd) -> list[Diagnostic]:
    """The framework's validate entry: files as on disk (the framework stashed the rest)."""
    diagnostics = placement(selection, cwd)
    if selection.kinds:
        from gitst.validate import validate_paths

        for result in validate_paths(list(selection.kinds), cwd):
            diagnostics.extend(result.diagnostics)
    return diagnostics


def check_append_only_files(files: list[str], cwd) -> list[Diagnostic]:
    """The framework's plan-append-only entry: each plan on disk must extend HEAD's."""
    from gitst.githooks.selection import select
    from gitst.gitops.hooks import read_blobs

    plans = select(files, cwd, cached=False).plans
    if not plans:
        return []
    heads = read_blobs([f"HEAD:{p}" for p in plans], cwd)
    diagnostics = []
    for plan in plans:
        try:
            with open(os.path.join(cwd, plan), "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            continue
        found = check_append_only(plan, heads.get(f"HEAD:{plan}"), data, new_name="the file")
        if found:
            diagnostics.append(found)
    return diagnostics


def _sh(text: str) -> str:
    """Quote for a POSIX shell command line shown in a fix."""
    import shlex

    return shlex.quote(text)
