"""What the pre-commit hook (and the framework entries) check, once something is relevant.

- nothing under the state dir, no plan lock sidecar and no merge temp file (``.merge_file_*``)
  is committed;
- every plan being committed has its lock sidecar ignored;
- every file of a known kind passes validation (:mod:`gitst.validate.files`), transitions from
  HEAD's version included: a plan extends it byte for byte, an SDLC ``state.json`` moves
  legally — for the git hook on the staged blobs, never the working tree, nothing stashed.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from gitst.core.diagnostics import Diagnostic, by_position
from gitst.core.errors import UsageError
from gitst.core.safepaths import UnsafePath, read_bytes
from gitst.git.objects import files_at
from gitst.git.repo import head_is_unborn
from gitst.hooks.selection import Selection, select
from gitst.plan.check import check_append_only
from gitst.plan.files import top_of
from gitst.plan.location import PlanLocation
from gitst.plan.sidecar import require_ignored
from gitst.validate.files import validate_paths, validate_staged

# The hooks' own diagnostic codes (docs/hooks.md); validation findings keep their kinds' codes.
STATE_FILE = "HOOK_STATE_FILE_STAGED"
SIDECAR = "HOOK_LOCK_SIDECAR_STAGED"
SIDECAR_NOT_IGNORED = "HOOK_SIDECAR_NOT_IGNORED"
MERGE_TEMP = "HOOK_MERGE_TEMP_STAGED"


def _state_files(selection: Selection, cwd: str) -> list[Diagnostic]:
    """Files under the state dir: runtime-only, never committed."""
    state_dir = selection.state_dir  # set whenever state files were found
    if not selection.state_files or state_dir is None:
        return []
    # the state dir ignores itself with a .gitignore holding '*' (gitst.statedir.paths)
    ignore = os.path.join(os.path.relpath(state_dir, cwd), ".gitignore")
    return [
        Diagnostic(
            path,
            None,
            STATE_FILE,
            f"is inside the state dir ({state_dir}), which is runtime-only and never committed",
            fix=f"git rm --cached -- {_sh(path)}   "
            f"(it stays on disk; `printf '*\\n' > {_sh(ignore)}` makes git ignore the state dir); "
            "if this folder is your project's own, give gitst another state dir: "
            "`git config st.stateDir .st-state`",
        )
        for path in selection.state_files
    ]


def placement(selection: Selection, cwd: str) -> list[Diagnostic]:
    """Files that must never be committed, and plans whose sidecar could be."""
    diagnostics = _state_files(selection, cwd)
    diagnostics.extend(
        Diagnostic(
            path,
            None,
            SIDECAR,
            f"is the lock sidecar of the plan {plan}; it is a runtime lock file and never committed",
            fix=f"git rm --cached -- {_sh(path)} && git st init --file {_sh(plan)}   "
            "(init adds the ignore rule next to the plan)",
        )
        for path, plan in selection.sidecars.items()
    )
    diagnostics.extend(
        Diagnostic(
            path,
            None,
            MERGE_TEMP,
            "is a temp file git writes for a merge driver, left by a merge that was killed; it is never committed",
            fix=f"git rm --cached -- {_sh(path)} && rm -- {_sh(path)}",
        )
        for path in selection.merge_temps
    )
    for plan in selection.plans:
        if plan + ".lock" in selection.sidecars:
            continue  # already refused above
        try:
            require_ignored(PlanLocation.at(Path(cwd) / plan, plan))  # the plan engine's own rule and fix
        except UsageError as exc:
            diagnostics.append(Diagnostic(plan, None, SIDECAR_NOT_IGNORED, exc.message, fix=exc.fix))
    return diagnostics


def check_staged(selection: Selection, cwd: str) -> list[Diagnostic]:
    """The git pre-commit hook: every check, on the staged blobs.

    Validation is ``git st validate --staged --against HEAD`` for the relevant paths: each
    kind's checks on the index blob, and for the kinds with transition rules the comparison
    with HEAD's version — an st plan must extend it byte for byte, an SDLC ``state.json``
    may only make legal transitions.
    """
    diagnostics = placement(selection, cwd)
    if selection.kinds:
        for result in validate_staged(cwd, list(selection.kinds), against="HEAD"):
            diagnostics.extend(result.diagnostics)
    return by_position(diagnostics)


def check_files(selection: Selection, cwd: str) -> list[Diagnostic]:
    """The framework's ``gitst-validate`` entry: files as on disk (the framework stashed
    what is not staged). Transitions from HEAD are checked, except a plan's append-only
    rule, which is the separate ``gitst-plan-append-only`` hook."""
    diagnostics = placement(selection, cwd)
    plans = selection.plans
    others = [p for p in selection.kinds if p not in plans]
    for paths, against in ((plans, None), (others, "HEAD")):
        if paths:
            for result in validate_paths(paths, cwd, against=against):
                diagnostics.extend(result.diagnostics)
    return by_position(diagnostics)


def check_append_only_files(files: list[str], cwd: str) -> list[Diagnostic]:
    """The framework's ``gitst-plan-append-only`` entry: each plan on disk must extend
    HEAD's version (the st kind's own rule, :func:`gitst.plan.check.check_append_only`)."""
    plans = select(files, cwd, cached=False).plans
    if not plans or head_is_unborn(cwd):
        return []
    diagnostics = []
    for plan, old in files_at(cwd, "HEAD", plans).items():
        if old is None:
            continue  # new in this commit: nothing to extend
        full = os.path.join(cwd, plan)
        try:
            data = read_bytes(full, top_of(full), shown=plan)
        except UnsafePath as exc:
            diagnostics.append(Diagnostic(plan, None, "SYMLINK" if exc.is_link else "READ", exc.message, fix=exc.fix))
            continue
        if data is None:
            continue
        diagnostics.extend(check_append_only(data, old, plan))
    return diagnostics


def _sh(text: str) -> str:
    """Quote for a POSIX shell command line shown in a fix."""
    return shlex.quote(text)
