"""The pre-commit hook with nothing relevant staged asks git one thing (``diff --cached``),
and reading git's own files instead of asking never misses an ``st-kind`` attribute or an
``st.stateDir`` that ``git check-attr --cached`` / ``git config`` would have found.

Every commit here is a real ``git commit`` running the installed hook; GIT_TRACE (git's own
log of every git process started) counts what the hook ran.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support import git, ok, run, st

BROKEN = "this is not a plan\n"  # any file of kind st-plan holding this is refused


@pytest.fixture
def hooked(repo):
    ok(st("hooks", "install", "--hook", "pre-commit", "--no-merge-driver", cwd=repo))
    (repo / ".gitattributes").write_text(".step/st-plan.jsonl merge=st-plan\n")
    git("add", ".gitattributes", cwd=repo)
    git("commit", "-q", "--no-verify", "-m", "attributes", cwd=repo)
    return repo


def traced_commit(repo: Path, tmp_path: Path, *args: str, env: dict | None = None):
    """``git commit``; returns (result, the git subcommands the hook ran)."""
    trace = tmp_path / f"trace-{len(list(tmp_path.glob('trace-*')))}"
    result = run(["git", *args, "commit", "-q", "-m", "change"], cwd=repo, env={**(env or {}), "GIT_TRACE": str(trace)})
    ran = []
    for line in trace.read_text().splitlines():
        if "trace: built-in: git " in line:
            words = line.split("trace: built-in: git ", 1)[1].split()
            while words and words[0] == "-C":
                words = words[2:]
            ran.append(words[0] if words else "")
    assert ran[:1] == ["commit"], ran
    return result, [name for name in ran[1:] if name != "maintenance"]  # git's own, after the commit


def stage(repo: Path, path: str, text: str) -> None:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    git("add", "-f", path, cwd=repo)


def test_nothing_relevant_staged_is_one_git_call(hooked, tmp_path):
    stage(hooked, "README", "edited\n")
    stage(hooked, "src/deep/app.json", "{}\n")
    result, ran = traced_commit(hooked, tmp_path)
    assert result.returncode == 0, result
    assert ran == ["diff"], ran  # no check-attr, no config


def test_an_st_kind_attribute_anywhere_above_a_path_is_still_found(hooked, tmp_path):
    repo = hooked
    (repo / ".gitattributes").write_text(".step/st-plan.jsonl merge=st-plan\ndata/*.txt st-kind=st-plan\n")
    (repo / "sub" / "inner").mkdir(parents=True)
    (repo / "sub" / ".gitattributes").write_text("*.log st-kind=st-plan\n")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "--no-verify", "-m", "kinds", cwd=repo)
    stage(repo, "data/x.txt", BROKEN)
    result, ran = traced_commit(repo, tmp_path)
    assert result.returncode != 0 and "data/x.txt" in result.stderr, result
    assert "check-attr" in ran
    git("reset", "-q", cwd=repo)
    stage(repo, "sub/inner/y.log", BROKEN)
    result, _ = traced_commit(repo, tmp_path)
    assert result.returncode != 0 and "sub/inner/y.log" in result.stderr, result


def test_the_index_copy_of_gitattributes_counts_not_the_work_tree_one(hooked, tmp_path):
    """check-attr --cached reads .gitattributes from the index: a work-tree copy edited or
    deleted without staging must not hide its st-kind."""
    repo = hooked
    attributes = repo / ".gitattributes"
    attributes.write_text("data/*.txt st-kind=st-plan\n")
    git("add", ".gitattributes", cwd=repo)
    git("commit", "-q", "--no-verify", "-m", "kinds", cwd=repo)
    stage(repo, "data/x.txt", BROKEN)
    attributes.write_text("data/*.txt -text     \n")  # same size, st-kind gone, not staged
    result, _ = traced_commit(repo, tmp_path)
    assert result.returncode != 0 and "data/x.txt" in result.stderr, result
    attributes.unlink()  # deleted, not staged
    result, _ = traced_commit(repo, tmp_path)
    assert result.returncode != 0 and "data/x.txt" in result.stderr, result
    # and a staged .gitattributes is read from the index too
    attributes.write_text("data/*.txt st-kind=st-plan\n")
    git("add", ".gitattributes", cwd=repo)
    (repo / ".gitattributes").write_text("\n")
    result, _ = traced_commit(repo, tmp_path)
    assert result.returncode != 0 and "data/x.txt" in result.stderr, result


def test_info_and_global_attribute_files_are_read(hooked, tmp_path, isolated_env):
    repo = hooked
    stage(repo, "data/x.txt", BROKEN)
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("data/*.txt st-kind=st-plan\n")
    result, _ = traced_commit(repo, tmp_path)
    assert result.returncode != 0 and "data/x.txt" in result.stderr, result
    (repo / ".git" / "info" / "attributes").unlink()
    ok(traced_commit(repo, tmp_path)[0])
    stage(repo, "data/z.txt", BROKEN)
    xdg = isolated_env / ".config" / "git"
    xdg.mkdir(parents=True, exist_ok=True)
    (xdg / "attributes").write_text("data/*.txt st-kind=st-plan\n")
    result, _ = traced_commit(repo, tmp_path)
    assert result.returncode != 0 and "data/z.txt" in result.stderr, result


@pytest.mark.parametrize("where", ["global", "include", "command line", "environment count", "worktree"])
def test_a_state_dir_set_anywhere_git_reads_config_is_found(hooked, tmp_path, isolated_env, where):
    repo = hooked
    stage(repo, "var/run-state/x.json", "{}\n")
    env: dict = {}
    args: list[str] = []
    if where == "global":
        with open(isolated_env / ".gitconfig", "a") as handle:
            handle.write("[st]\n\tstateDir = var/run-state\n")
    elif where == "include":
        (tmp_path / "extra.conf").write_text("[st]\n\tstateDir = var/run-state\n")
        git("config", "include.path", str(tmp_path / "extra.conf"), cwd=repo)
    elif where == "command line":
        args = ["-c", "st.stateDir=var/run-state"]
    elif where == "environment count":
        env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "st.statedir", "GIT_CONFIG_VALUE_0": "var/run-state"}
    else:
        git("config", "extensions.worktreeConfig", "true", cwd=repo)
        git("config", "--worktree", "st.stateDir", "var/run-state", cwd=repo)
    result, _ = traced_commit(repo, tmp_path, *args, env={**os.environ, **env})
    assert result.returncode != 0, result
    assert "var/run-state/x.json: error[HOOK_STATE_FILE_STAGED]" in result.stderr
