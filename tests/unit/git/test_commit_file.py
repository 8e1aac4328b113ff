"""`commit_file` writes the record commit of a remote claim in one `git unpack-objects`, the
same objects, byte for byte, as `hash-object` + `mktree` + `commit-tree` write: the same ids
(the commit dated alike), `git fsck --strict` clean; and git's three where it would differ
(a date from the environment)."""

from __future__ import annotations

import os
import subprocess

import pytest

from gitst.git import config, objects, runner
from tests.support import git, init_repo

AUTHOR = ("gitst", "gitst@invalid")


@pytest.fixture
def repo(tmp_path):
    """A repository whose configuration was read already (as `git st` reads it once)."""
    path = init_repo(tmp_path / "repo")
    config.cache_reads(True)
    config.get("core.bare", path)
    yield path
    config.cache_reads(False)


@pytest.fixture
def launched(monkeypatch):
    """The git subcommands gitst starts, in order."""
    seen: list[str] = []
    launch = runner._launch

    def counting(argv, *args, **kwargs):
        seen.append(argv[3] if argv[1] == "-C" else argv[1])
        return launch(argv, *args, **kwargs)

    monkeypatch.setattr(runner, "_launch", counting)
    return seen


def _git(repo, *args: str, data: bytes = b"", env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, input=data, env=env, capture_output=True, check=True)
    return proc.stdout.decode().strip()


def _by_git(repo, name: str, content: bytes, message: str, parent: str | None, date: str) -> str:
    """The commit git's own three commands make of the same file, message and date."""
    env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    env |= {"GIT_AUTHOR_NAME": AUTHOR[0], "GIT_AUTHOR_EMAIL": AUTHOR[1]}
    env |= {"GIT_COMMITTER_NAME": AUTHOR[0], "GIT_COMMITTER_EMAIL": AUTHOR[1]}
    blob = _git(repo, "hash-object", "-w", "--stdin", data=content)
    tree = _git(repo, "mktree", data=f"100644 blob {blob}\t{name}\n".encode())
    return _git(
        repo, "commit-tree", tree, *(["-p", parent] if parent else []), "-F", "-", data=message.encode(), env=env
    )


@pytest.mark.parametrize("with_parent", [False, True])
def test_one_process_writes_what_three_would(repo, launched, with_parent):
    parent = git("rev-parse", "HEAD", cwd=repo) if with_parent else None
    content = b'{\n  "issue": "st-007",\n  "token": 3\n}\n' * 50  # a size of more than one header byte
    message = "gitst: claim issue st-007 for session a on h (token 3)\n"
    made = objects.commit_file(repo, "claim.json", content, message, author=AUTHOR, parent=parent)
    assert launched == ["unpack-objects"]
    committer = _git(repo, "cat-file", "-p", made).split("\ncommitter ", 1)[1].split("\n", 1)[0]
    date = " ".join(committer.split(" ")[-2:])
    assert made == _by_git(repo, "claim.json", content, message, parent, date)
    shown = subprocess.run(["git", "cat-file", "blob", f"{made}:claim.json"], cwd=repo, capture_output=True, check=True)
    assert shown.stdout == content
    fsck = subprocess.run(["git", "fsck", "--strict"], cwd=repo, capture_output=True, text=True, check=False)
    assert fsck.returncode == 0, fsck.stderr


def test_a_date_from_the_environment_is_gits_to_read(repo, launched, monkeypatch):
    date = "2020-01-02T03:04:05+0100"
    monkeypatch.setenv("GIT_AUTHOR_DATE", date)
    monkeypatch.setenv("GIT_COMMITTER_DATE", date)
    made = objects.commit_file(repo, "claim.json", b"{}\n", "gitst: claim\n", author=AUTHOR)
    assert launched == ["hash-object", "mktree", "commit-tree"]
    assert made == _by_git(repo, "claim.json", b"{}\n", "gitst: claim\n", None, date)
    assert "1577930645 +0100" in _git(repo, "cat-file", "-p", made)


def test_without_cached_config_reads_git_writes_the_three(repo, launched):
    """A process that does not cache its config reads (the MCP server's calls) would pay two
    `git config` processes to check what the one-process way needs: git's three instead."""
    config.cache_reads(False)
    objects.commit_file(repo, "claim.json", b"{}\n", "gitst: claim\n", author=AUTHOR)
    assert launched == ["hash-object", "mktree", "commit-tree"]
