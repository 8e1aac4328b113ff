"""`commit_and_branch` answers `resolve_commit` and `current_branch` in one git process with
their own answers — on a branch, detached, with a tag of the branch's name (git's short name is
then `heads/<name>`) — and gives up (None) where either would fail: the caller asks each alone."""

from __future__ import annotations

import pytest

from gitst.git import repo as git_repo
from gitst.git.objects import resolve_commit
from tests.support import git, init_repo


@pytest.fixture
def repo(tmp_path):
    return init_repo(tmp_path / "repo")


def _separately(path, rev):
    return resolve_commit(rev, path), git_repo.current_branch(path)


@pytest.mark.parametrize("state", ["branch", "detached", "tag-of-the-same-name"])
def test_one_call_says_what_two_say(repo, state):
    if state == "detached":
        git("checkout", "-q", "--detach", cwd=repo)
    elif state == "tag-of-the-same-name":
        git("tag", "main", cwd=repo)
    tip = git("rev-parse", "HEAD", cwd=repo)
    for rev in (tip, "HEAD"):
        assert git_repo.commit_and_branch(rev, repo) == _separately(repo, rev)
    assert git_repo.commit_and_branch(tip, repo)[1] == {"branch": "main", "detached": None}.get(state, "heads/main")


def test_what_names_no_commit_or_an_unborn_branch_is_left_to_each_question(repo, tmp_path):
    tree = git("rev-parse", "HEAD^{tree}", cwd=repo)
    assert git_repo.commit_and_branch(tree, repo) is None
    assert git_repo.commit_and_branch("-x", repo) is None
    empty = init_repo(tmp_path / "empty", commit=False)
    assert git_repo.commit_and_branch("HEAD", empty) is None
    assert git_repo.current_branch(empty) == "main"
