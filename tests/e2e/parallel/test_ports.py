"""Port blocks tied to the lease: a registry, not a hash (docs/worktrees.md, "Ports")."""

from __future__ import annotations

import json
import os
import socket
import subprocess

from tests.support import git, read_json, session_env, st

RANGE = "31000-31999/10"  # below the kernel's client ports (32768-60999): no connection takes one here


def wt_path(repo, issue):
    return repo.parent / f"{repo.name}.worktrees" / f"issue-{issue}"


def ports_of(repo, issue) -> dict | None:
    return read_json(repo / "state" / "active-worktrees" / f"{issue}.json").get("ports")


def test_eight_concurrent_adds_get_eight_disjoint_blocks_and_a_released_block_is_reused(repo):
    git("config", "st.worktree.ports", RANGE, cwd=repo)
    procs = [
        subprocess.Popen(
            ["git-st", "worktree", "add", str(issue), "--print-env"],
            cwd=repo,
            env={**os.environ, **session_env(f"agent-{issue}")},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for issue in range(1, 9)
    ]
    printed = {}
    for issue, proc in enumerate(procs, 1):
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, (issue, out, err)
        printed[issue] = dict(line.split("=", 1) for line in out.splitlines())
    blocks = {issue: ports_of(repo, issue) for issue in range(1, 9)}
    starts = sorted(b["start"] for b in blocks.values())
    assert starts == list(range(31000, 31080, 10)), blocks  # eight blocks, none shared, the lowest ones
    assert all(b["count"] == 10 and b["end"] == b["start"] + 9 for b in blocks.values())
    for issue, env in printed.items():
        assert env["ST_PORT"] == str(blocks[issue]["start"]) and env["ST_PORT_LAST"] == str(blocks[issue]["end"])
        assert env["ST_PORT_COUNT"] == "10" and env["ST_ISSUE"] == str(issue)
        assert env["ST_WORKTREE"] == str(wt_path(repo, issue)) and env["ST_BRANCH"] == f"st/issue-{issue}"

    third = next(issue for issue, b in blocks.items() if b["start"] == 31020)
    assert st("worktree", "remove", str(third), cwd=repo, env=session_env(f"agent-{third}")).returncode == 0
    again = st("worktree", "add", "20", cwd=repo, env=session_env("agent-20"))
    assert again.returncode == 0, again
    assert ports_of(repo, 20) == {"start": 31020, "end": 31029, "count": 10}  # the released block, reused
    assert "ports 31020-31029 are the worktree's" in again.stdout


def test_a_block_is_freed_with_the_claim_and_moves_to_the_next_add(repo):
    git("config", "st.worktree.ports", RANGE, cwd=repo)
    assert st("worktree", "add", "1", cwd=repo, env=session_env("A")).returncode == 0
    assert st("worktree", "add", "2", cwd=repo, env=session_env("A")).returncode == 0
    assert ports_of(repo, 1)["start"] == 31000 and ports_of(repo, 2)["start"] == 31010
    assert st("release", "1", cwd=repo, env=session_env("A")).returncode == 0  # the worktree stays, its lease ends
    assert st("worktree", "add", "3", cwd=repo, env=session_env("B")).returncode == 0
    assert ports_of(repo, 3)["start"] == 31000
    assert ports_of(repo, 1) is None  # no two entries ever show one block
    # Taking issue 1 up again gives it a block that is free now.
    assert st("worktree", "add", "1", cwd=repo, env=session_env("A")).returncode == 0
    assert ports_of(repo, 1)["start"] == 31020


def test_the_setup_script_gets_the_block_and_a_listening_port_is_skipped(repo):
    git("config", "st.worktree.ports", "31100-31119/10", cwd=repo)
    (repo / ".gitst").mkdir()
    (repo / ".gitst" / "worktree-setup").write_text('echo "$ST_PORT $ST_PORT_LAST $ST_PORT_COUNT" > ports.txt\n')
    git("add", ".gitst", cwd=repo)
    git("commit", "-qm", "setup", cwd=repo)
    assert st("trust", cwd=repo).returncode == 0
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 31105))  # something else listens inside the first block
        busy.listen()
        added = st("worktree", "add", "7", cwd=repo, env={**session_env("A"), "ST_PORT": "999"})
        assert added.returncode == 0, added
        assert (wt_path(repo, 7) / "ports.txt").read_text() == "31110 31119 10\n"
        refused = st("worktree", "add", "8", cwd=repo, env=session_env("A"))
    assert refused.returncode == 3, refused
    assert "no free port block in 31100-31119" in refused.stderr and "1 held by live worktrees" in refused.stderr
    assert not (repo / "state" / "active-worktrees" / "8.json").exists() and not wt_path(repo, 8).exists()
    assert read_json(repo / "state" / "locks" / "issue-8.json")["owner"] is None  # the claim was given back


def test_ports_can_be_turned_off_and_bad_values_are_refused(repo):
    git("config", "st.worktree.ports", "off", cwd=repo)
    off = st("worktree", "add", "7", "--print-env", cwd=repo, env=session_env("A"))
    assert off.returncode == 0 and "ST_PORT" not in off.stdout and ports_of(repo, 7) is None
    for bad in ("3100-3000/10", "3100-3999", "3100-3109/20", "x"):
        refused = st("worktree", "add", "8", cwd=repo, env={**session_env("A"), "ST_WORKTREE_PORTS": bad})
        assert refused.returncode == 2 and "ST_WORKTREE_PORTS must be FIRST-LAST/BLOCK" in refused.stderr, refused
    assert not (repo / "state" / "active-worktrees" / "8.json").exists()


def test_status_and_print_env_show_the_block(repo):
    git("config", "st.worktree.ports", RANGE, cwd=repo)
    assert st("worktree", "add", "7", cwd=repo, env=session_env("A")).returncode == 0
    data = json.loads(st("status", "--format", "json", cwd=repo, env=session_env("A")).stdout)
    [row] = data["worktrees"]
    assert row["ports"] == {"start": 31000, "end": 31009, "count": 10}
    both = st("worktree", "add", "7", "--print-env", "--print-path", cwd=repo, env=session_env("A"))
    assert both.returncode == 2 and "exclude each other" in both.stderr
