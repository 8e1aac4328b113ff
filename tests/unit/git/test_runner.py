"""The one git runner: argument lists, stdin, big outputs both ways, failures, no subprocess."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gitst.core.errors import ENVIRONMENT, EnvironmentProblem
from gitst.git import attributes, config, history, index, objects
from gitst.git import repo as git_repo
from gitst.git.runner import GitError, run, split_z
from tests.support import REPO_ROOT, env_without_coverage, git, process_ends


def test_stdout_stderr_and_exit_status(repo):
    ok = run(["rev-parse", "--show-toplevel"], repo)
    assert ok.ok and ok.text() == str(repo) and ok.stderr == b""
    failed = run(["rev-parse", "--verify", "no-such-ref"], repo, check=False)
    assert failed.returncode == 128 and failed.stdout == b""
    assert b"fatal: Needed a single revision" in failed.stderr


def test_a_failure_is_a_git_error_with_gits_message_and_exit_4(repo):
    with pytest.raises(GitError) as caught:
        run(["cat-file", "-p", "no-such-object"], repo)
    assert caught.value.exit_code == ENVIRONMENT
    assert "`git cat-file -p no-such-object` failed:" in caught.value.message
    assert "no-such-object" in caught.value.message.split("failed:")[1]


def test_big_input_and_big_output_at_once_do_not_deadlock(repo):
    # 3 MB of blob content through cat-file --batch: stdin and stdout both far larger than a pipe
    blob = os.urandom(1 << 20).hex().encode()  # 2 MB of text
    path = repo / "big.txt"
    path.write_bytes(blob)
    oid = git("hash-object", "-w", "big.txt", cwd=repo)
    specs = [oid] * 3 + ["HEAD:README"] * 20_000
    contents = objects.read_objects(repo, specs)
    assert contents[:3] == [blob] * 3
    assert contents[3:] == [b"test repo\n"] * 20_000


def test_git_reads_stdin_only_when_given(repo):
    # without input, stdin is /dev/null: a command that would read stdin ends at once
    assert run(["hash-object", "--stdin"], repo).text() == git("hash-object", "/dev/null", cwd=repo)
    assert (
        run(["hash-object", "--stdin"], repo, input=b"x").text()
        == subprocess.run(["git", "hash-object", "--stdin"], input=b"x", capture_output=True, cwd=repo, check=True)
        .stdout.decode()
        .strip()
    )


def test_env_is_passed_as_given(repo):
    env = dict(os.environ, GIT_CONFIG_PARAMETERS="'st.probe=from-env'")
    assert run(["config", "--get", "st.probe"], repo, env=env).text() == "from-env"
    assert run(["config", "--get", "st.probe"], repo, check=False).returncode == 1


def test_paths_that_are_not_utf8_survive_a_round_trip(repo):
    name = os.fsdecode(b"caf\xe9.json")  # latin-1 bytes: not UTF-8
    (repo / name).write_text("{}\n")
    git("add", "--", name, cwd=repo)
    assert name in index.staged_paths(repo)
    assert attributes.check_attr([name], repo) == {name: "unspecified"}
    assert split_z(b"a\0\0b\0") == ["a", "b"]


def test_a_missing_git_is_an_environment_problem(repo, monkeypatch):
    monkeypatch.setenv("PATH", str(repo))  # no git there
    with pytest.raises(EnvironmentProblem, match="git is not installed or not on PATH"):
        run(["--version"], repo)


def test_a_missing_directory_is_gits_own_error(tmp_path):
    with pytest.raises(GitError, match="cannot change to"):
        run(["status"], tmp_path / "nowhere")


def test_the_one_call_of_each_kind(repo):
    """Each git question has one function; they agree with git itself."""
    assert config.get("user.name", repo) == "Test User"
    assert config.set_local("st.x", "1", repo) is True and config.set_local("st.x", "1", repo) is False
    assert config.get_all("st.x", repo) == ["1"]
    assert objects.resolve_commit("HEAD", repo) == git("rev-parse", "HEAD", cwd=repo)
    assert objects.resolve_commit("--all", repo) is None and objects.resolve_commit("nope", repo) is None
    assert objects.blob_at(repo, "HEAD", "README") == b"test repo\n"
    git_repo.clear_cache()
    assert str(git_repo.require_repo(repo).toplevel) == str(repo)
    assert git_repo.toplevel(repo) == str(repo) and git_repo.current_branch(repo) == "main"


def test_the_runner_imports_no_subprocess():
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(REPO_ROOT)!r})\n"
        "from gitst.git.runner import run\n"
        "assert run(['--version']).text().startswith('git version')\n"
        "print(sorted(m for m in ('subprocess', 'typing', 'dataclasses') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env_without_coverage()
    ).stdout
    assert out.strip() == "[]"


def test_index_blobs_read_the_same_through_git_and_pygit2(repo):
    for i in range(30):
        (repo / f"f{i}.json").write_text(f'{{"n": {i}}}\n')
    git("add", "-A", cwd=repo)
    oids = [entry.oid for entry in index.staged_entries(repo)] + ["0" * 40]
    through_git = objects.read_staged_blobs(repo, oids, use_pygit2=False)
    through_pygit2 = objects.read_staged_blobs(repo, oids, use_pygit2=True)
    assert through_git == through_pygit2
    assert through_git[-1] is None and b'{"n": 7}\n' in through_git


def test_ahead_behind_is_the_same_through_git_and_pygit2(repo):
    git("checkout", "-q", "-b", "side", cwd=repo)
    for i in range(3):
        git("commit", "-q", "--allow-empty", "-m", f"side {i}", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    git("commit", "-q", "--allow-empty", "-m", "main 1", cwd=repo)
    tips = ["side", "main", "HEAD~1", "no-such-branch"]
    expected = [(3, 1), (0, 0), (0, 1), None]
    assert history.ahead_behind(repo, "main", tips, use_pygit2=False) == expected
    assert history.ahead_behind(repo, "main", tips, use_pygit2=True) == expected


def test_a_deadline_kills_git_and_everything_it_started(repo, tmp_path):
    """run(..., timeout=): git in its own process group, the whole group killed at the
    deadline (here an alias whose shell started a `sleep`), GitTimeout whatever `check` says."""
    from gitst.git.runner import GitTimeout

    pidfile = tmp_path / "sleep.pid"
    alias = f"!sleep 600 & echo $! > {pidfile}; wait"
    with pytest.raises(GitTimeout) as caught:
        run(["-c", f"alias.stall={alias}", "stall"], repo, check=False, timeout=1)
    assert caught.value.exit_code == ENVIRONMENT and caught.value.timeout == 1
    assert process_ends(int(pidfile.read_text()))
    # a call that finishes in time is an ordinary call, and never prompts
    env = run(["-c", "alias.env=!printenv GIT_TERMINAL_PROMPT", "env"], repo, timeout=30)
    assert env.text() == "0"


def _half_made_worktree(repo):
    """The state a concurrent `git worktree add` leaves for a moment: its folder under
    .git/worktrees with commondir created but not yet written."""
    admin = repo / ".git" / "worktrees" / "other"
    admin.mkdir(parents=True)
    (admin / "commondir").write_text("")
    (admin / "gitdir").write_text(f"{repo.parent / 'other'}/.git\n")
    return admin


def test_a_worktree_half_made_by_another_process_is_waited_for_not_fatal(repo, monkeypatch):
    admin = _half_made_worktree(repo)
    assert b"commondir" in run(["worktree", "list"], repo, check=False).stderr  # git alone dies on it
    from gitst.git import runner

    launches = []
    real = runner._launch

    def launch_then_finish_the_other_add(*args):
        launches.append(args[0])
        result = real(*args)
        if len(launches) == 1:  # the other process writes its files after our first try
            (admin / "commondir").write_text("../..\n")
        return result

    monkeypatch.setattr(runner, "_launch", launch_then_finish_the_other_add)
    listed = run(["worktree", "list", "--porcelain"], repo)
    assert len(launches) == 2
    assert f"worktree {repo.parent / 'other'}" in listed.text()


def test_a_worktree_that_stays_half_made_is_gits_error_after_a_bounded_wait(repo, monkeypatch):
    _half_made_worktree(repo)
    from gitst.git import runner

    launches = []
    real = runner._launch
    monkeypatch.setattr(runner, "_launch", lambda *args: launches.append(args[0]) or real(*args))
    monkeypatch.setattr(runner, "_HALF_MADE_PAUSES", (0.0, 0.0))
    with pytest.raises(GitError, match="commondir"):
        run(["worktree", "list"], repo)
    assert len(launches) == 3
    assert run(["status", "--short"], repo, check=False).returncode == 0  # other failures are not retried
