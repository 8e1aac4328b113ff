"""`commit_file` writes the record commit of a remote claim itself, as loose objects (or in one
`git unpack-objects` where git must write them): the same objects, byte for byte, as
`hash-object` + `mktree` + `commit-tree` write: the same ids (the commit dated alike), `git
fsck --strict` clean; and git's three where it would differ (a date from the environment)."""

from __future__ import annotations

import os
import subprocess

import pytest

from gitst.git import config, objects, runner
from gitst.git import repo as gitrepo
from tests.support import git, init_repo

AUTHOR = ("gitst", "gitst@invalid")


@pytest.fixture
def repo(tmp_path):
    """A repository whose configuration and place were read already (as `git st` reads them once)."""
    path = init_repo(tmp_path / "repo")
    config.cache_reads(True)
    config.get("core.bare", path)
    gitrepo.repo_info(path)
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
    assert launched == []  # no git process: written here
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


def _loose(repo, oid: str):
    return repo / ".git" / "objects" / oid[:2] / oid[2:]


def test_loose_objects_are_written_as_git_writes_them(repo, launched):
    """Mode 0444 less the umask, zlib, no temporary file left; an object already there is kept
    and freshened (gc keeps what was just written); a second write of the same record is the
    same commit, and git reads both."""
    made = objects.commit_file(repo, "claim.json", b'{"token": 1}\n', "gitst: claim\n", author=AUTHOR)
    blob = _git(repo, "rev-parse", f"{made}:claim.json")
    path = _loose(repo, blob)
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o444 & ~umask
    assert not list((repo / ".git" / "objects").glob("*/tmp_obj_*"))
    os.utime(path, (1, 1))
    again = objects.commit_file(repo, "claim.json", b'{"token": 1}\n', "gitst: claim\n", author=AUTHOR)
    assert path.stat().st_mtime > 1  # freshened
    assert launched == []
    assert _git(repo, "cat-file", "-t", again) == "commit"
    fsck = subprocess.run(["git", "fsck", "--strict"], cwd=repo, capture_output=True, text=True, check=False)
    assert fsck.returncode == 0, fsck.stderr


@pytest.mark.parametrize(
    ("key", "value"),
    [("core.sharedRepository", "group"), ("core.fsyncObjectFiles", "true"), ("core.fsync", "loose-object")],
)
def test_where_git_writes_objects_otherwise_git_writes_them(tmp_path, launched, key, value):
    """Shared permissions or fsync asked for: one `unpack-objects` writes the three, as git wants."""
    path = init_repo(tmp_path / "repo")
    git("config", key, value, cwd=path)
    config.cache_reads(True)
    try:
        config.get("core.bare", path)
        launched.clear()  # the config read a `git st` command made before
        made = objects.commit_file(path, "claim.json", b"{}\n", "gitst: claim\n", author=AUTHOR)
    finally:
        config.cache_reads(False)
    assert launched == ["unpack-objects"]
    assert _git(path, "cat-file", "-t", made) == "commit"


def test_another_object_directory_is_gits_to_write_to(repo, launched, monkeypatch, tmp_path):
    """GIT_OBJECT_DIRECTORY (a quarantine, an alternate store): git writes there itself."""
    store = tmp_path / "store"
    subprocess.run(["cp", "-r", str(repo / ".git" / "objects"), str(store)], check=True)
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", str(store))
    made = objects.commit_file(repo, "claim.json", b"{}\n", "gitst: claim\n", author=AUTHOR)
    assert launched == ["unpack-objects"]
    assert (store / made[:2] / made[2:]).exists()
    assert not _loose(repo, made).exists()


def test_from_a_linked_worktree_the_objects_go_to_the_common_directory(repo, launched, tmp_path):
    git("worktree", "add", "-q", str(tmp_path / "linked"), "-b", "side", cwd=repo)
    gitrepo.repo_info(tmp_path / "linked")
    config.get("core.bare", tmp_path / "linked")
    launched.clear()  # where it is and its config: read once per command
    made = objects.commit_file(tmp_path / "linked", "claim.json", b"{}\n", "gitst: claim\n", author=AUTHOR)
    assert launched == []
    assert _loose(repo, made).exists()
    assert _git(repo, "cat-file", "-t", made) == "commit"
