"""``plan.sidecar.surely_ignored``: the lock sidecar of a plan in a fresh checkout is said
ignored without git only when git would say so; in every doubtful case git is asked. Each
"True" is checked against ``git check-ignore`` itself."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gitst.plan.sidecar import surely_ignored
from tests.support import git, init_repo

RULES = "/st-plan.jsonl.lock\n/st-plan.jsonl.torn-*\n"


def _checkout(tmp_path: Path, gitignore: str | None) -> tuple[Path, Path]:
    repo = init_repo(tmp_path / "repo")
    step = repo / ".step"
    step.mkdir()
    (step / "st-plan.jsonl").write_text("")
    if gitignore is not None:
        (step / ".gitignore").write_text(gitignore)
    return repo, step / "st-plan.jsonl"


def _git_ignores(repo: Path, plan: Path) -> bool:
    lock = os.path.relpath(f"{plan}.lock", repo)
    ignored = subprocess.run(["git", "check-ignore", "-q", lock], cwd=repo, check=False).returncode == 0
    return ignored and not git("ls-files", "--", lock, cwd=repo)


def test_the_rule_and_no_negation_is_ignored_as_git_says(tmp_path):
    repo, plan = _checkout(tmp_path, "# the plan's sidecars\n" + RULES)
    assert surely_ignored(plan, repo)
    assert _git_ignores(repo, plan)


@pytest.mark.parametrize(
    "gitignore",
    [
        None,  # no .gitignore next to the plan
        "/st-plan.jsonl.torn-*\n",  # another rule only
        RULES + "!st-plan.jsonl.lock\n",  # a negation: git is asked
        RULES + "!something-else\n",  # any negation at all
    ],
)
def test_a_doubtful_gitignore_leaves_it_to_git(tmp_path, gitignore):
    repo, plan = _checkout(tmp_path, gitignore)
    assert not surely_ignored(plan, repo)


def test_a_linked_gitignore_or_a_sidecar_on_disk_leaves_it_to_git(tmp_path):
    repo, plan = _checkout(tmp_path, None)
    elsewhere = tmp_path / "rules"
    elsewhere.write_text(RULES)
    (plan.parent / ".gitignore").symlink_to(elsewhere)
    assert not surely_ignored(plan, repo)  # git reads no .gitignore through a link
    (plan.parent / ".gitignore").unlink()
    (plan.parent / ".gitignore").write_text(RULES)
    Path(f"{plan}.lock").write_text("")  # on disk: maybe committed, git must say
    assert not surely_ignored(plan, repo)


def test_a_sparse_checkout_leaves_it_to_git(tmp_path):
    repo, plan = _checkout(tmp_path, RULES)
    git("config", "core.sparseCheckout", "true", cwd=repo)
    assert not surely_ignored(plan, repo)
