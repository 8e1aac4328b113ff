"""`work_tree_state`: branch, HEAD and the dirty count of a work tree in one `git status`, against
real repositories (unborn, detached, renames, ignored and oddly named files)."""

from __future__ import annotations

from gitst.git.worktrees import WorkTreeState, uncommitted_changes, work_tree_state
from tests.support import git, init_repo


def test_an_unborn_branch_has_no_head(tmp_path):
    repo = init_repo(tmp_path / "r", commit=False)
    assert work_tree_state(repo) == WorkTreeState("main", None, 0)
    (repo / "a").write_text("a")
    assert work_tree_state(repo) == WorkTreeState("main", None, 1)


def test_branch_head_and_every_kind_of_change_counted_once(repo):
    head = git("rev-parse", "HEAD", cwd=repo)
    assert work_tree_state(repo) == WorkTreeState("main", head, 0)
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "skip.log").write_text("ignored: not counted")
    (repo / "README").write_text("modified\n")
    (repo / "dir").mkdir()
    (repo / "dir" / "one").write_text("1")
    (repo / "dir" / "two words\nand a newline").write_text("2")
    (repo / "moved").write_text("moved content\n" * 20)
    git("add", "moved", cwd=repo)
    git("commit", "-q", "-m", "moved", cwd=repo)
    git("mv", "moved", "renamed", cwd=repo)  # a rename is one file
    state = work_tree_state(repo)
    assert state.branch == "main" and state.head == git("rev-parse", "HEAD", cwd=repo)
    assert state.dirty == 5 == len(uncommitted_changes(repo))  # .gitignore, README, dir/one, dir/two…, renamed


def test_a_detached_head_has_no_branch(repo):
    head = git("rev-parse", "HEAD", cwd=repo)
    git("checkout", "-q", "--detach", cwd=repo)
    assert work_tree_state(repo) == WorkTreeState(None, head, 0)
