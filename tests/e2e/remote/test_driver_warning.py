"""Every writing command warns once when .gitattributes asks for the plan merge driver but
this clone has none configured (merge=gitst-plan silently does nothing otherwise)."""

from __future__ import annotations

from tests.e2e.remote.conftest import clone
from tests.support import git, session_env, st

FIX = "fix: git st hooks install"


def test_a_clone_without_the_driver_is_told_once_per_writing_command(repo, tmp_path):
    assert st("init", cwd=repo).returncode == 0
    assert st("hooks", "install", cwd=repo).returncode == 0  # configures it here, writes .gitattributes
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "plan and attributes", cwd=repo)
    quiet = st("add", "--step", "here", cwd=repo)
    assert quiet.returncode == 0 and "warning" not in quiet.stderr, quiet
    other = clone(repo.as_uri(), tmp_path / "other")  # a clone: attributes come along, config does not
    for args in (("add", "--step", "there"), ("set-status", "st-001", "in_progress"), ("claim", "3")):
        result = st(*args, cwd=other, env=session_env("A"))
        assert result.returncode == 0, result
        assert result.stderr.count("merge=gitst-plan, but this clone has no such driver") == 1, result
        assert FIX in result.stderr
    for args in (("show",), ("doctor",), ("sessions",)):  # reading commands stay quiet
        result = st(*args, cwd=other, env=session_env("A"))
        assert "no such driver" not in result.stderr, result
    assert st("hooks", "install", cwd=other).returncode == 0
    fixed = st("add", "--step", "again", cwd=other)
    assert fixed.returncode == 0 and "no such driver" not in fixed.stderr, fixed


def test_no_warning_without_the_attribute(repo):
    assert st("init", cwd=repo).returncode == 0
    result = st("add", "--step", "x", cwd=repo)
    assert result.returncode == 0 and "driver" not in result.stderr, result


def test_hostile_attribute_files_neither_hang_nor_hide_the_warning(repo):
    """A clone controls .gitattributes: a link to /dev/zero, or a file of megabytes, is not read
    whole by the filter; git, which reads attributes itself, decides."""
    assert st("init", cwd=repo).returncode == 0
    (repo / ".step" / ".gitattributes").symlink_to("/dev/zero")
    linked = st("add", "--step", "x", cwd=repo, timeout=60)
    assert linked.returncode == 0 and "driver" not in linked.stderr, linked
    (repo / ".step" / ".gitattributes").unlink()
    (repo / ".gitattributes").write_bytes(b"# padding\n" * 300_000 + b"**/.step/*.jsonl merge=gitst-plan\n")
    big = st("add", "--step", "y", cwd=repo, timeout=60)
    assert big.returncode == 0 and big.stderr.count("no such driver") == 1, big
