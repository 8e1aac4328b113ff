"""Issue 20.3: a project that already has a folder of its own where the state dir would be
(`state/reducer.js`) keeps it. gitst refuses to use that folder before writing anything and
names `st.stateDir`; the pre-commit hook leaves the project's files there alone; with another
state dir configured, everything works."""

from __future__ import annotations

from tests.support import git, session_env, st

ME = session_env("agent-a")


def _tree(path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def _project_with_a_state_folder(repo):
    (repo / "state").mkdir()
    (repo / "state" / "reducer.js").write_text("export const reducer = (s) => s;\n")
    git("add", "state/reducer.js", cwd=repo)
    git("commit", "-q", "-m", "the app's state reducer", cwd=repo)
    hooks = st("hooks", "install", cwd=repo, env=ME)
    assert hooks.returncode == 0, hooks
    git("add", ".gitattributes", cwd=repo)  # the plan merge driver's line hooks install wrote
    git("commit", "-q", "-m", "plan merge driver", cwd=repo)
    return _tree(repo / "state")


def test_a_project_folder_named_state_is_never_taken_over(repo):
    before = _project_with_a_state_folder(repo)
    for args in (["claim", "7"], ["lock", "acquire", "deploy"], ["worktree", "add", "8"]):
        result = st(*args, cwd=repo, env=ME)
        assert result.returncode == 2, result
        assert "Traceback" not in result.stderr, result
        assert "is a folder of this project" in result.stderr, result
        assert "state/reducer.js" in result.stderr, result
        assert "git config st.stateDir" in result.stderr, result
        assert _tree(repo / "state") == before  # nothing written there: no .gitignore, no locks
    assert git("status", "--porcelain", cwd=repo) == ""

    # the user's folder is theirs: a new file there is not ignored, edits commit through the hook
    (repo / "state" / "selectors.js").write_text("export const all = (s) => s;\n")
    assert git("check-ignore", "-q", "state/selectors.js", cwd=repo, check=False) == ""
    (repo / "state" / "reducer.js").write_text("export const reducer = (s, a) => s;\n")
    git("add", "state", cwd=repo)
    committed = git("commit", "-q", "-m", "reducer takes an action", cwd=repo, check=False)
    assert committed == "" and git("status", "--porcelain", cwd=repo) == ""
    assert git("show", "--name-only", "--format=", "HEAD", cwd=repo).split() == [
        "state/reducer.js",
        "state/selectors.js",
    ]


def test_another_state_dir_chosen_as_the_error_says_works(repo):
    _project_with_a_state_folder(repo)
    git("config", "st.stateDir", ".st-state", cwd=repo)
    claimed = st("claim", "7", cwd=repo, env=ME)
    assert claimed.returncode == 0, claimed
    assert (repo / ".st-state" / "locks" / "issue-7.json").is_file()
    assert (repo / ".st-state" / ".gitignore").read_text().splitlines()[-1] == "*"
    assert not (repo / "state" / ".gitignore").exists()
    assert git("status", "--porcelain", cwd=repo) == ""


def test_a_state_dir_that_only_holds_state_files_is_still_used(repo):
    """Seed 001's own layout committed by a pipeline (state/pipeline/4.json) is state, not the
    project's source: gitst still uses the folder (and, as before, ignores the tracked copy)."""
    (repo / "state" / "pipeline").mkdir(parents=True)
    (repo / "state" / "pipeline" / "4.json").write_text('{"4": {"current_phase": "building"}}\n')
    git("add", "state", cwd=repo)
    git("commit", "-q", "-m", "pipeline state", cwd=repo)
    claimed = st("claim", "7", cwd=repo, env=ME)
    assert claimed.returncode == 0, claimed
    assert (repo / "state" / "locks" / "issue-7.json").is_file()
