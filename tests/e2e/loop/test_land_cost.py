"""What one uncontended `git st land` through a remote costs, counted (docs/performance.md,
"land: what one land costs"): a logging `git` first on PATH records every git process gitst
starts, a `git-st` wrapper every run of the plan merge driver. Work is counted, never timed.

Two sessions take an item each from one clone and commit work; the first lands on a base
nothing moved since its `next` (no sync needed: it is pushed as it is), the second on the base
the first just moved (one merge with the plan driver: the driver runs once). Each is at most
its :data:`MOST_GIT` processes, with the fetches, `ls-remote`s and pushes named below — so the
cuts cannot creep back."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from tests.e2e.loop.conftest import session_env
from tests.e2e.loop.test_next_cost import remote_clone  # noqa: F401 - its clone (st.remote, the plan driver), shared
from tests.support import git, logged_git, logging_git, run

# Measured when the cuts landed: 39 (still) and 49 (moved) git processes, from 67 and 73. 26
# and 36 since round 30: the claim released with a lease on the commit the session pushed (no
# fetch, for-each-ref or cat-files first), the worktree removed locked (no unlock) with the
# listing the removal's checks made (none again), the branch known to exist; 33 for a moved
# base since the sync's second merge-tree (which could not find a conflict) went and the sync
# takes the branch and the clean work tree land read (no symbolic-ref, no status); one push
# fewer since round 36 (the base and the slot's give-back in one atomic push); since round 37
# the base is fetched beside the slot's take instead of an `ls-remote` after it. A little room.
MOST_GIT = {"still": 27, "moved": 34}


def _logging_bin(folder: Path, log: Path, drivers: Path) -> Path:
    """A `git` that logs each process to ``log`` (tests.support.logging_git), and a `git-st`
    that notes each `merge-driver` run in ``drivers``."""
    st_real = shutil.which("git-st")
    logging_git(folder, log)
    (folder / "git-st").write_text(
        f'#!/bin/sh\n[ "$1" = merge-driver ] && echo x >> "{drivers}"\nexec "{st_real}" "$@"\n'
    )
    (folder / "git-st").chmod(0o755)
    return folder


def _subcommands(log: Path) -> list[str]:
    """The git subcommand of each logged process (``-C DIR`` / ``-c KEY=VALUE`` skipped)."""
    return [words[0] for words in logged_git(log)]


def _land_twice(work: Path, bare: Path, tmp: Path) -> dict:
    """Both lands of ``work`` (a clone of ``bare``), each logged: {kind: (its JSON, its git
    subcommands, driver runs)}."""
    agents = []
    for kind in ("still", "moved"):
        env = session_env(f"agent-{kind}", os.getpid())
        took = run(["git-st", "next", "--format", "json"], cwd=work, env=env)
        assert took.returncode == 0, took
        taken = json.loads(took.stdout)
        Path(taken["path"], f"{kind}.txt").write_text(f"{kind}\n")
        git("add", f"{kind}.txt", cwd=taken["path"])
        git("commit", "-q", "-m", f"work {kind}", cwd=taken["path"])
        agents.append((kind, taken, env))
    out = {}
    for kind, taken, env in agents:
        log, drivers = tmp / f"git-{kind}.log", tmp / f"driver-{kind}.log"
        folder = _logging_bin(tmp / f"bin-{kind}", log, drivers)
        logged = {**env, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
        done = run(["git-st", "land", "--format", "json"], cwd=taken["path"], env=logged)
        assert done.returncode == 0, done
        runs = len(drivers.read_text().splitlines()) if drivers.exists() else 0
        answer = json.loads(done.stdout)
        assert answer["removed"] and answer["commit"] == git("rev-parse", "main", cwd=bare)  # landed, cleaned up
        out[kind] = (answer, _subcommands(log), runs)
    return out


def test_one_land_is_three_fetches_three_pushes_and_one_driver_run_when_merging(request, bare, tmp_path):
    """One setup (a clone, two sessions) for both lands: a land on a base that did not move
    pushes the branch as it is; one on a moved base merges it once, with one driver run."""
    _seed, work = request.getfixturevalue("remote_clone")
    out = _land_twice(work, bare, tmp_path)
    _answer, ran, drivers = out["still"]
    assert drivers == 0  # nothing merged
    # the base at the start (with the branch); the slot's look (claims and fence counters in one
    # survey); the base again, beside the push that takes the slot (not an `ls-remote` after it,
    # holding the slot); the item's claim is released with a lease on the commit pushed: not read
    assert ran.count("fetch") == 3, ran
    assert ran.count("ls-remote") == 0, ran
    # the slot taken; the base and the slot's give-back in one atomic push; the claim released
    assert ran.count("push") == 3, ran
    atomic = [words for words in logged_git(tmp_path / "git-still.log") if words[0] == "push" and "--atomic" in words]
    assert len(atomic) == 2 and any(":refs/st/claims/st.land" in words for words in atomic[1]), atomic
    assert "merge" not in ran and "merge-tree" not in ran and "status" in ran, ran
    # the removal: the listing its checks made, the locked worktree removed with git's second
    # --force, the branch deleted without asking whether it exists
    worktree = [words for words in logged_git(tmp_path / "git-still.log") if words[0] == "worktree"]
    assert [words[1] for words in worktree] == ["list", "remove"], worktree
    assert "--force" in worktree[1] and worktree[1].count("--force") == 2, worktree
    assert "show-ref" not in ran and ran.count("branch") == 1, ran
    assert len(ran) <= MOST_GIT["still"], (len(ran), ran)

    _answer, ran, drivers = out["moved"]
    assert git("show", "main:still.txt", cwd=bare) == "still"  # the first land's work kept
    assert drivers == 1, ran  # the merge's own run: no trial merge with the driver first
    assert ran.count("merge") == 1, ran
    assert ran.count("merge-tree") == 1, ran  # what a host would find, before the merge; none after
    assert ran.count("symbolic-ref") == 1 and ran.count("status") == 2, ran  # the sync asks neither again
    assert ran.count("fetch") == 3 and ran.count("ls-remote") == 0 and ran.count("push") == 3, ran
    assert len(ran) <= MOST_GIT["moved"], (len(ran), ran)
