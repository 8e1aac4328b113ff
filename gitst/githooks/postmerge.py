"""``post-merge`` and ``post-rewrite``: check the plans the merge or rewrite changed.

The plan doctor (:func:`gitst.plan.doctor.check_plan_bytes`, the one st checker) runs on
each plan file the operation changed, as it now is in the work tree. Problems are printed
with the exact command that repairs the seq contract; with ``git config st.autoRepair
true`` that repair runs right away instead. These hooks cannot undo what git did, so they
exit 0 unless the check itself could not run… and exit 1 when problems remain, which git
shows but otherwise ignores.
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO

from gitst.diagnostics import Diagnostic


def post_merge(args: list[str], cwd: str) -> int:
    """git passes one argument: 1 for a squash merge (HEAD did not move), else 0."""
    from gitst.gitops.hooks import changed_paths, resolve_commit, staged_paths

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
    from gitst.gitops.hooks import paths_touched_by

    new = []
    for line in stdin.read().decode("utf-8", "surrogateescape").splitlines():
        parts = line.split()
        if len(parts) >= 2:
            new.append(parts[1])
    return check_changed_plans(paths_touched_by(new, cwd), cwd, "post-rewrite")


def check_changed_plans(paths: list[str], cwd: str, hook: str) -> int:
    if not paths:
        return 0
    from gitst.githooks.selection import select

    plans = select(paths, cwd, cached=False).plans
    if not plans:
        return 0
    from gitst.diagnostics import render_text
    from gitst.gitops.core import config_get
    from gitst.plan.doctor import check_plan_bytes

    auto = config_get("st.autoRepair", cwd, type="bool") == "true"
    status = 0
    for plan in plans:
        full = os.path.join(cwd, plan)
        try:
            with open(full, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            continue
        problems = [d for d in check_plan_bytes(data, plan) if d.is_error]
        if not problems:
            continue
        print(render_text(problems), file=sys.stderr)
        if auto and repairable(problems):
            print(f"gitst {hook}: st.autoRepair is on: repairing {plan}", file=sys.stderr)
            repair(full, cwd)
            remaining = [d for d in check_plan_bytes(open(full, "rb").read(), plan) if d.is_error]
            if remaining:
                print(render_text(remaining), file=sys.stderr)
                status = 1
            else:
                print(f"gitst {hook}: {plan} repaired; commit it: git add -- {plan} && git commit", file=sys.stderr)
            continue
        status = 1
        print(f"gitst {hook}: {plan} breaks the plan's rules after this {hook.split('-')[1]}", file=sys.stderr)
        print(f"  fix: {repair_command(plan, problems)}", file=sys.stderr)
    return status


def repairable(problems: list[Diagnostic]) -> bool:
    raise NotImplementedError  # filled in when the plan engine lands


def repair(path: str, cwd: str) -> None:
    raise NotImplementedError  # filled in when the plan engine lands


def repair_command(plan: str, problems: list[Diagnostic]) -> str:
    raise NotImplementedError  # filled in when the plan engine lands
