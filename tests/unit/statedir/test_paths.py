"""Identifiers that become paths, and symlinks in the state dir: refused with exit 2, nothing written."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as hyp

from gitst.core.errors import UsageError
from gitst.statedir.paths import validate_identifier, validate_session
from tests.support import git, session_env, st

BAD_IDS = ["../x", "a/b", "..", ".", "x" * 65, "a b", "a..b", "/etc/passwd", "x\ny", "é"]


def branches(repo):
    return git("for-each-ref", "--format=%(refname:short)", "refs/heads", cwd=repo).splitlines()


def _commands(bad: str) -> list[list[str]]:
    return [
        ["lock", "acquire", bad],
        ["claim", bad],
        ["check-issue", bad],
        ["worktree", "add", bad],
        ["release", bad],
        ["claim", "7", "--session", bad],
        ["lock", "acquire", "ok", "--session", bad],
        ["worktree", "add", "7", "--session", bad],
    ]


def _outside(tmp_path) -> Path:
    target = tmp_path / "outside"
    target.mkdir()
    (target / "victim.json").write_text('{"keep": true}\n')
    return target


def _state_with(repo, sub: str) -> Path:
    """Create the state dir (and its .gitignore) through the CLI, then return state/<sub>'s parent."""
    assert st("lock", "acquire", "warmup", cwd=repo, env=session_env("Z")).returncode == 0
    path = repo / "state" / sub
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@settings(max_examples=300, deadline=None)
@given(hyp.text(min_size=0, max_size=80))
def test_accepted_identifiers_always_name_one_entry_inside_the_directory(value):
    base = Path("/state/locks")
    for check in (validate_identifier, validate_session):
        try:
            accepted = check(value)
        except UsageError:
            continue
        path = base / f"{accepted}.json"
        assert os.path.normpath(path).startswith(str(base) + "/")
        assert path.parent == base and "/" not in accepted and ".." not in accepted
        assert 1 <= len(accepted) <= 64
