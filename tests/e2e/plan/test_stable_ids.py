"""Ids on main never change (issue 20, point 1): a PR branch and main each ran `git st add`
without `--id` and so allocated the same id for different items. Whichever way the two are
merged — `git st sync`, `sync --rebase`, the CI template, `git merge main` on the PR branch
through the merge driver, `git merge pr` on main — main's item keeps its id and the PR's new
item is the one renumbered, and the command says so. Real clones of a bare remote, real git,
the real CLI; the host's merge is git's own (`git merge-tree`, no driver)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.e2e.remote.conftest import clone, make_bare
from tests.e2e.remote.test_sync import host_merge, run_ci_template
from tests.support import git, st

ENV = {"ST_SESSION_ID": "dev", "ST_UPDATE_PLAN": "0"}
PLAN = ".step/st-plan.jsonl"
MOVED_NEW = (
    'gitst merge: this branch\'s st-003 "pr item" is now st-004 '
    "(origin/main created st-003 too; ids on origin/main never change)"
)


def ids(plan: bytes) -> dict[str, str]:
    """{step: id} of the plan's full replay."""
    import tempfile

    from gitst.plan.store import read_full

    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "plan.jsonl"
        path.write_bytes(plan)
        return {item["step"]: item["id"] for item in read_full(path, events_only=True).items()}


def project(tmp_path: Path) -> tuple[Path, Path]:
    """A bare remote whose main holds st-001, st-002 and then main's own st-003 "main item";
    the PR branch `pr` (pushed) forked before that and added its own st-003 "pr item". The
    dev clone has gitst's hooks and merge driver; returns (bare, dev)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    bare = make_bare(tmp_path)
    dev = clone(bare.as_uri(), tmp_path / "dev")
    assert st("init", cwd=dev, env=ENV).returncode == 0
    assert st("hooks", "install", cwd=dev, env=ENV).returncode == 0
    for step in ("Set up", "Second"):
        assert st("add", "--step", step, cwd=dev, env=ENV).returncode == 0
    git("add", "-A", cwd=dev)
    git("commit", "-q", "-m", "plan", cwd=dev)
    git("push", "-q", "origin", "main", cwd=dev)
    git("switch", "-q", "-c", "pr", cwd=dev)
    assert "upserted st-003" in st("add", "--step", "pr item", cwd=dev, env=ENV).stdout
    (dev / "pr.txt").write_text("pr\n")
    git("add", "-A", cwd=dev)
    git("commit", "-q", "-m", "pr item", cwd=dev)
    git("push", "-q", "origin", "pr", cwd=dev)
    git("switch", "-q", "main", cwd=dev)
    assert "upserted st-003" in st("add", "--step", "main item", cwd=dev, env=ENV).stdout
    git("commit", "-q", "-am", "main item", cwd=dev)
    git("push", "-q", "origin", "main", cwd=dev)
    return bare, dev


def assert_main_ids_kept(plan: bytes) -> None:
    assert ids(plan) == {"Set up": "st-001", "Second": "st-002", "main item": "st-003", "pr item": "st-004"}


def land(bare: Path, tmp_path: Path) -> None:
    """The host merges the synced PR into main (git's own merge): main's ids unchanged."""
    host_merge(bare, "pr")
    after = clone(bare.as_uri(), tmp_path / "after")
    assert_main_ids_kept((after / PLAN).read_bytes())
    assert st("doctor", cwd=after, env=ENV).returncode == 0


def test_sync_keeps_main_ids_and_says_which_ids_of_the_branch_moved(tmp_path):
    bare, _dev = project(tmp_path)
    agent = clone(bare.as_uri(), tmp_path / "agent")  # no hooks install: sync passes the driver
    git("switch", "-q", "pr", cwd=agent)
    main_plan = git("show", f"origin/main:{PLAN}", cwd=agent).encode() + b"\n"
    synced = st("sync", "main", "--push", cwd=agent, env=ENV)
    assert synced.returncode == 0, synced
    assert MOVED_NEW in synced.stdout.splitlines(), synced
    assert "no such driver configured" not in synced.stderr  # sync passes the driver itself
    plan = (agent / PLAN).read_bytes()
    assert plan.startswith(main_plan)  # main's plan kept byte for byte: the host's merge appends
    assert_main_ids_kept(plan)
    land(bare, tmp_path)


def test_sync_rebase_keeps_main_ids(tmp_path):
    bare, _dev = project(tmp_path)
    agent = clone(bare.as_uri(), tmp_path / "agent")
    git("switch", "-q", "pr", cwd=agent)
    synced = st("sync", "main", "--rebase", cwd=agent, env=ENV)
    assert synced.returncode == 0, synced
    assert_main_ids_kept((agent / PLAN).read_bytes())
    assert st("doctor", cwd=agent, env=ENV).returncode == 0


def test_ci_template_keeps_main_ids(tmp_path):
    bare, _dev = project(tmp_path)
    proc = run_ci_template(bare, tmp_path, ["pr"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert MOVED_NEW in proc.stdout, proc.stdout
    assert "no such driver configured" not in proc.stderr
    assert_main_ids_kept(git("show", f"pr:{PLAN}", cwd=bare).encode() + b"\n")
    land(bare, tmp_path)


def test_git_merge_main_on_the_pr_branch_keeps_main_ids(tmp_path):
    bare, dev = project(tmp_path)
    git("switch", "-q", "pr", cwd=dev)
    merged = subprocess.run(["git", "merge", "--no-edit", "main"], cwd=dev, capture_output=True, text=True, check=False)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert MOVED_NEW in merged.stderr.splitlines(), merged.stderr
    assert_main_ids_kept((dev / PLAN).read_bytes())
    git("push", "-q", "origin", "pr", cwd=dev)
    land(bare, tmp_path)


def test_git_merge_main_keeps_main_ids_when_the_local_main_is_behind_origin(tmp_path):
    """The published branch is the remote's first: a stale local main does not decide."""
    _bare, dev = project(tmp_path)
    git("switch", "-q", "pr", cwd=dev)
    git("branch", "-f", "main", "origin/main~1", cwd=dev)
    merged = subprocess.run(
        ["git", "merge", "--no-edit", "origin/main"], cwd=dev, capture_output=True, text=True, check=False
    )
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert MOVED_NEW in merged.stderr.splitlines(), merged.stderr
    assert_main_ids_kept((dev / PLAN).read_bytes())


def test_git_merge_pr_on_main_keeps_main_ids(tmp_path):
    _bare, dev = project(tmp_path)
    merged = subprocess.run(["git", "merge", "--no-edit", "pr"], cwd=dev, capture_output=True, text=True, check=False)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert 'gitst merge: theirs\' st-003 "pr item" is now st-004 (ours created st-003 too)' in merged.stderr
    assert_main_ids_kept((dev / PLAN).read_bytes())
    shown = json.loads(st("show", "--format", "json", cwd=dev, env=ENV).stdout)["items"]
    assert [item["id"] for item in shown] == ["st-001", "st-002", "st-003", "st-004"]
