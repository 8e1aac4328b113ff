"""What one `git st next` through a remote costs, counted (docs/performance.md, "next: one
fetch"): a logging `git` first on PATH records every git process gitst starts. Work is
counted, never timed: one uncontended `next` is one fetch (the base, the claims and the fence
counters together), one claim push and one `ls-remote` of the base after the claim won, and
at most :data:`MOST_GIT` git processes in all — so the folding cannot creep back.

The base moving while the claim is pushed (another agent landed the item meanwhile) is made
to happen exactly then by a post-receive hook on the remote: `next` sees the move with its
`ls-remote`, reads the base again (one more fetch), gives the claim back, passes the completed
item over and takes the next one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.e2e.loop.conftest import item, session_env, set_status, write_plan
from tests.e2e.remote.conftest import clone
from tests.support import git, logged_git, logging_git, run

# Measured when the folding landed: 29-31 git processes (was 43-46: four fetches, the claim read
# again, repeated ls-files / for-each-ref / show-ref). Then 21 (round 28: the claim record in one
# unpack-objects, the worktree's second listing, show-refs, rev-parses, check-ref-format,
# symbolic-ref, check-ignore, setup cat-file and the worktree's config --list gone); 20 since
# the claim record's objects are written without git (round 30); no room.
MOST_GIT = 20
# What a new worktree's creation no longer asks git (the answer is known in the process).
NEVER_RUN = (
    "check-ref-format",
    "show-ref",
    "symbolic-ref",
    "check-ignore",
    "hash-object",
    "mktree",
    "commit-tree",
    "unpack-objects",  # the claim record's three objects: written as loose objects, no git
)


def _subcommands(log: Path) -> list[str]:
    """The git subcommand of each logged process (``-C DIR`` / ``-c KEY=VALUE`` skipped)."""
    return [words[0] for words in logged_git(log)]


@pytest.fixture
def remote_clone(tmp_path, bare):
    """A bare remote whose main holds a 4-item plan, and a clone claiming through it (set up
    as the loop benchmark sets its clones: st.remote, the plan driver, no ports)."""
    seed = clone(str(bare), tmp_path / "landing")
    write_plan(seed, [item(1), item(2), item(3), item(4)])
    git("push", "-q", "origin", "main", cwd=seed)
    work = clone(str(bare), tmp_path / "work")
    for key, value in (
        ("st.remote", "origin"),
        ("st.worktree.ports", "off"),
        ("merge.gitst-plan.driver", "git-st merge-driver %O %A %B %P"),
    ):
        git("config", key, value, cwd=work)
    return seed, work


def _next(work: Path, session: str, tmp_path: Path) -> tuple[dict, list[str]]:
    log = tmp_path / f"git-{session}.log"
    folder = logging_git(tmp_path / f"bin-{session}", log)
    env = session_env(session, os.getpid(), PATH=f"{folder}{os.pathsep}{os.environ['PATH']}")
    took = run(["git-st", "next", "--format", "json"], cwd=work, env=env)
    assert took.returncode == 0, took
    return json.loads(took.stdout), _subcommands(log)


def test_one_uncontended_next_is_one_fetch_one_push_one_ls_remote(remote_clone, tmp_path):
    _seed, work = remote_clone
    first, _ = _next(work, "agent-a", tmp_path)  # the remote holds a claim and a fence counter now
    answer, ran = _next(work, "agent-b", tmp_path)
    assert (first["id"], answer["id"]) == ("st-001", "st-002")
    assert answer["passed"] == [{"id": "st-001", "why": "claimed on origin by session agent-a"}]
    assert ran.count("fetch") == 1, ran
    assert ran.count("push") == 1, ran  # the claim: compare-and-swap of the claim ref and its counter
    assert ran.count("ls-remote") == 1, ran  # the base after the claim won: unchanged, not read again
    assert len(ran) <= MOST_GIT, (len(ran), ran)
    assert [name for name in ran if name in NEVER_RUN] == [], ran
    assert ran.count("rev-parse") <= 2, ran  # the repository; the base commit with the current branch
    assert ran.count("cat-file") <= 3, ran  # the plan at the base; the remote's claim records (2)
    assert git("log", "-1", "--format=%s", cwd=answer["path"]) == "st: take st-002"
    assert git("status", "--porcelain", cwd=answer["path"]) == ""  # the lock sidecar ignored, as git says


def test_a_base_that_moved_during_the_claim_is_read_again(remote_clone, bare, tmp_path):
    """The remote completes st-001 on main the moment the claim of st-001 arrives (as a
    landing agent would have just before releasing it): `next` passes it over, takes st-002."""
    seed, work = remote_clone
    set_status(seed, ["st-001"])  # the completion, pushed aside; the hook moves main to it
    git("push", "-q", "origin", "HEAD:refs/heads/landed", cwd=seed)
    done = git("rev-parse", "HEAD", cwd=seed)
    hook = bare / "hooks" / "post-receive"
    marker = tmp_path / "moved"
    hook.write_text(
        "#!/bin/sh\n"
        f'if grep -q " refs/st/claims/st-001$" && [ ! -e "{marker}" ]; then\n'
        f'  touch "{marker}"; git update-ref refs/heads/main {done}\n'
        "fi\n"
    )
    hook.chmod(0o755)
    answer, ran = _next(work, "agent-c", tmp_path)
    assert marker.exists()  # the base did move between the look and the re-check
    assert answer["id"] == "st-002" and answer["base_commit"] == done, answer
    assert answer["passed"] == [{"id": "st-001", "why": "completed on origin/main meanwhile"}]
    assert ran.count("ls-remote") == 2, ran  # after each claim won
    # the look; the base again once it had moved (st-001's claim released with a lease on the
    # commit just pushed: not read first)
    assert ran.count("fetch") == 2, ran
    assert git("for-each-ref", "--format=%(refname)", "refs/st/claims/", cwd=bare).split() == [
        "refs/st/claims/st-002"
    ]  # st-001's claim given back on the remote


def _claims_before_first_push(folder: Path, log: Path, other: Path, sessions: list[str], pid: int) -> Path:
    """``folder`` with a logging `git` (:func:`logging_git`) that, the first time it is asked to
    push, first lets ``sessions`` take their items in the clone ``other`` (each one `next`, in
    turn, with the plain PATH): their claims land after the caller's look and before its push."""
    folder.mkdir()
    logging_git(folder / "logged", log)
    marker = folder / "claimed"
    takes = "".join(
        f'    ST_SESSION_ID={session} ST_SESSION_PID={pid} PATH="{os.environ["PATH"]}" '
        f'git-st next --format json >> "{folder / "takes.jsonl"}" || exit 1\n'
        for session in sessions
    )
    wrapper = folder / "git"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = push ] && [ ! -e "{marker}" ]; then\n'
        f'  touch "{marker}"\n'
        f'  (cd "{other}" && unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE &&\n{takes}  ) || exit 1\n'
        "fi\n"
        f'exec "{folder / "logged" / "git"}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return folder


def test_a_lost_claim_race_reads_every_claim_again(remote_clone, bare, tmp_path):
    """Three sessions of another clone take st-001, st-002 and st-003 between this session's
    look (its one fetch) and its first claim push, as when a dozen agents start together: the
    push for st-001 is lost, and the claims read again then (one fetch, what reading st-001's
    claim alone cost) show st-002 and st-003 claimed too — passed over without a push. One
    lost push, then st-004 (before: one lost push, and one more fetch, for each of the three)."""
    _seed, work = remote_clone
    other = clone(str(bare), tmp_path / "other")
    for key, value in (("st.remote", "origin"), ("st.worktree.ports", "off")):
        git("config", key, value, cwd=other)
    log = tmp_path / "git-agent-a.log"
    folder = _claims_before_first_push(tmp_path / "bin", log, other, ["agent-b", "agent-c", "agent-d"], os.getpid())
    env = session_env("agent-a", os.getpid(), PATH=f"{folder}{os.pathsep}{os.environ['PATH']}")
    took = run(["git-st", "next", "--format", "json"], cwd=work, env=env)
    assert took.returncode == 0, took
    answer, ran = json.loads(took.stdout), _subcommands(log)
    others = [json.loads(line)["id"] for line in (tmp_path / "bin" / "takes.jsonl").read_text().splitlines()]
    assert others == ["st-001", "st-002", "st-003"]  # taken after agent-a's look, before its push
    assert answer["id"] == "st-004", answer
    assert [p["id"] for p in answer["passed"]] == ["st-001", "st-002", "st-003"], answer["passed"]
    assert "claimed on origin by session agent-b" in answer["passed"][0]["why"], answer["passed"]
    assert answer["passed"][1:] == [
        {"id": "st-002", "why": "claimed on origin by session agent-c"},
        {"id": "st-003", "why": "claimed on origin by session agent-d"},
    ]
    assert ran.count("push") == 2, ran  # the lost one for st-001, the won one for st-004
    assert ran.count("fetch") == 2, ran  # the look; every claim again after the lost push
    assert ran.count("unpack-objects") == 0, ran  # each claim record written without git
