"""`valid_branch_name` answers a plain branch name (``st/issue-7``) without git, and only with
git's own answer: every name it accepts by itself, `git check-ref-format --branch` accepts too
(names built from the rule's edge cases, and a seeded random sample)."""

from __future__ import annotations

import itertools
import random
import subprocess

from gitst.git import refs

PIECES = ["a", ".", "-", "/", "lock", "x.lock", "HEAD", "@", "_", "{"]


def _names() -> list[str]:
    names = {"".join(parts) for n in range(1, 3) for parts in itertools.product(PIECES, repeat=n)}
    rng = random.Random(28)
    names |= {"".join(rng.choice(PIECES) for _ in range(rng.randint(1, 6))) for _ in range(40)}
    names |= {"st/issue-st-007", "st/issue-PROJ-12", "st/issue-7.lock", "st/issue-.x", "st/issue-x.", "HEAD"}
    return sorted(names)


def _git_accepts(name: str) -> bool:
    proc = subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True, check=False)
    return proc.returncode == 0


def test_a_name_accepted_without_git_is_one_git_accepts(tmp_path):
    fast = [n for n in _names() if refs._PLAIN_BRANCH.fullmatch(n) and ".." not in n and not n.endswith(".")]
    assert "st/issue-st-007" in fast and len(fast) > 20
    wrong = [name for name in fast if not _git_accepts(name)]
    assert wrong == []


def test_the_answer_is_gits_for_every_name(tmp_path):
    sample = ["st/issue-st-007", "st/issue-7.lock", "st/issue-x.", "a..b", "-x", "HEAD", "a/.b", "a b", "a@{1}", "x//y"]
    assert [refs.valid_branch_name(name, tmp_path) for name in sample] == [
        not name.startswith("-") and _git_accepts(name) for name in sample
    ]
