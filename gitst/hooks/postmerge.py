"""``post-merge`` and ``post-rewrite``: check the plans the merge or rewrite changed.

The plan doctor (:func:`gitst.plan.doctor.check_plan_bytes`, the one st checker) runs on
each plan file the operation changed, as it now is in the work tree. Problems are printed
with the exact command that repairs the seq contract; with ``git config st.autoRepair
true`` that repair runs right away instead. These hooks cannot undo what git did: they
exit 1 when problems remain (git shows the output and otherwise ignores the status).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import BinaryIO

from gitst.core.diagnostics import Diagnostic, render_text
from gitst.core.errors import GitstError
from gitst.core.terminal import sanitize
from gitst.git.history import changed_paths, paths_touched_by
from gitst.git.index import staged_paths
from gitst.git.objects import resolve_commit
from gitst.hooks.selection import select
from gitst.plan.doctor import check_plan_bytes
from gitst.plan.engine import DoctorReport, Target, doctor
from gitst.plan.files import check
from gitst.plan.location import PlanLocation
from gitst.plan.store import read_bytes
from gitst.settings import bool_setting


def post_merge(args: list[str], cwd: str) -> int:
    """git passes one argument: 1 for a squash merge (HEAD did not move), else 0."""
    squash = bool(args) and args[0] == "1"
    if squash:
        paths = staged_paths(cwd)
    else:
        orig = resolve_commit("ORIG_HEAD", cwd)
        head = resolve_commit("HEAD", cwd)
        if not orig or not head or orig == head:
            return 0
        paths = changed_paths(orig, head, cwd)
    return check_changed_plans(paths, cwd, "post-merge")


def post_rewrite(args: list[str], stdin: BinaryIO, cwd: str) -> int:
    """git passes "amend" or "rebase" and, on stdin, "<old sha> <new sha>" per commit."""
    new = []
    for line in stdin.read().decode("utf-8", "surrogateescape").splitlines():
        parts = line.split()
        if len(parts) >= 2:
            new.append(parts[1])
    return check_changed_plans(paths_touched_by(new, cwd), cwd, "post-rewrite")


def check_changed_plans(paths: list[str], cwd: str, hook: str) -> int:
    """Doctor each plan among ``paths``; repair (st.autoRepair) or print the repair command."""
    if not paths:
        return 0
    plans = select(paths, cwd, cached=False).plans
    if not plans:
        return 0
    auto = bool_setting("auto_repair", cwd)
    status = 0
    for plan in plans:
        if not _plan_is_valid(plan, cwd, hook, auto=auto):
            status = 1
    return status


def _plan_is_valid(plan: str, cwd: str, hook: str, *, auto: bool) -> bool:
    """Doctor one plan the merge changed; say what is wrong, repair it when ``auto`` and a
    checkpoint can seal it. False when it is still broken (or cannot be opened)."""
    full = os.path.join(cwd, plan)
    refused = _unsafe_plan(full, plan, cwd)
    if refused is not None:
        _say(refused.render())
        return False
    data = read_bytes(full)
    if data is None:
        return True
    problems = [d for d in check_plan_bytes(data, plan) if d.is_error]
    if not problems:
        return True
    _say(render_text(problems))
    sealable = any(is_sealable(d) for d in problems)
    if auto and sealable:
        report = repair(full, plan)
        for message in report.messages:
            _say(f"gitst {hook}: {plan}: {message} (st.autoRepair is on)")
        remaining = [d for d in report.diagnostics if d.is_error]
        if not remaining:
            _say(f"gitst {hook}: {plan} is valid again; commit it: git add -- {plan} && git commit")
            return True
        _say(render_text(remaining))
    what = hook.split("-", 1)[1]  # merge / rewrite
    _say(f"gitst {hook}: {plan} breaks the plan's rules after this {what}")
    if sealable and not auto:
        _say(
            f"  fix: git st doctor --repair-seq --file {plan}   "
            "(appends a sealing checkpoint; then commit the plan)\n"
            f"       or let this hook do it: git config st.autoRepair true"
        )
    else:
        _say(f"  fix: the lines above cannot be sealed by a checkpoint; edit them (git st doctor --file {plan})")
    return False


def _say(text: str) -> None:
    """A line on stderr for the person running git; paths from the merge may hold control
    characters (a hostile clone's file names): escaped."""
    print(sanitize(text), file=sys.stderr)


def _unsafe_plan(full: str, plan: str, cwd: str) -> GitstError | None:
    """Why the plan a merge checked out cannot be opened (a link, a FIFO: the same check every
    plan command makes, :func:`gitst.plan.files.check`), or None."""
    try:
        check(PlanLocation.at(Path(full), plan))
    except GitstError as exc:
        return exc
    return None


def is_sealable(diagnostic: Diagnostic) -> bool:
    """Seq and replay findings, which a canonical checkpoint seals (plan doctor's rule);
    line-level ones (bad JSON, bad shape, a torn tail) are not."""
    code = diagnostic.code
    return code in ("ST_CHECKPOINT_SEQ", "ST_TRAILING_SEQ") or code.startswith("ST_REPLAY_")


def repair(full: str, plan: str) -> DoctorReport:
    """``git st doctor --repair-seq`` on one plan; the doctor's report after it."""
    return doctor(Target.at(Path(full), plan), repair_seq=True)
