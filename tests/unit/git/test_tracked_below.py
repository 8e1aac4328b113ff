"""`tracked_below` answers a folder below one it listed already from that listing — the same
answer `git ls-files` gives there — and never across a checkout of its own (a nested repository
has another index)."""

from __future__ import annotations

import pytest

from gitst.git import index
from gitst.statedir import paths
from tests.support import git, init_repo


@pytest.fixture
def tracked(repo):
    for name in ("state/locks/a.json", "state/locks/deep/b.json", "state/active-chats/c.json", "state/x.db"):
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("{}\n")
    (repo / "state" / "locks" / "untracked.json").write_text("{}\n")
    git(
        "add",
        "-f",
        "state/locks/a.json",
        "state/locks/deep/b.json",
        "state/active-chats/c.json",
        "state/x.db",
        cwd=repo,
    )
    index.clear_cache()
    yield repo
    index.clear_cache()


def _ls_files(where) -> list[str]:
    return sorted(git("ls-files", "-z", "--", ".", cwd=where).split("\0")[:-1])


def test_a_folder_below_a_listed_one_is_answered_as_ls_files_answers(tracked):
    state = tracked / "state"
    assert sorted(index.tracked_below(state)) == _ls_files(state)
    listed = dict(index._TRACKED)
    for folder in ("locks", "locks/deep", "active-chats"):
        assert sorted(index.tracked_below(state / folder)) == _ls_files(state / folder), folder
    assert listed == index._TRACKED  # answered from the state dir's listing: no ls-files of their own


def test_the_state_dirs_files_are_checked_against_one_listing(tracked):
    state = tracked / "state"
    assert paths.is_tracked(state / "locks" / "a.json")
    assert not paths.is_tracked(state / "locks" / "untracked.json")
    assert paths.is_tracked(state / "active-chats" / "c.json")
    assert paths.is_tracked(state / "x.db")
    assert list(index._TRACKED) == [str(state)]


def test_a_nested_checkout_is_listed_on_its_own(tracked):
    inner = init_repo(tracked / "state" / "inner")
    (inner / "own.json").write_text("{}\n")
    git("add", "own.json", cwd=inner)
    assert index.tracked_below(tracked / "state")  # the outer listing, cached
    assert sorted(index.tracked_below(inner)) == ["README", "own.json"]
