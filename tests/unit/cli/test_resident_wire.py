"""The resident process's wire (gitst/cli/resident/wire.py): a run request decodes to what was
encoded, whatever bytes the arguments and the environment hold; anything else is refused."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitst.cli.resident import wire

_no_nul = st.binary(max_size=40).filter(lambda b: b"\0" not in b)
_names = st.binary(min_size=1, max_size=12).filter(lambda b: b"\0" not in b and b"=" not in b)


@given(
    argv=st.lists(_no_nul, min_size=1, max_size=6),
    cwd=_no_nul,
    umask=st.integers(0, 0o777),
    pid=st.integers(1, 2**22),
    ppid=st.integers(0, 2**22),
    env=st.dictionaries(_names, _no_nul, max_size=6),
)
def test_a_run_request_decodes_to_what_was_encoded(argv, cwd, umask, pid, ppid, env):
    got = wire.decode_run(wire.encode_run(argv, cwd, umask, pid, ppid, env))
    assert (got.argv, got.cwd, got.umask, got.pid, got.ppid, got.env) == (argv, cwd, umask, pid, ppid, env)


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"status",
        b"\0".join([b"run", b"/", b"22", b"1", b"2"]),  # no argument count
        b"\0".join([b"run", b"/", b"22", b"1", b"2", b"3", b"a"]),  # fewer arguments than counted
        b"\0".join([b"run", b"/", b"22", b"1", b"2", b"0"]),  # no arguments at all
        b"\0".join([b"run", b"/", b"22", b"1", b"2", b"1", b"a", b"NOEQUALS"]),  # not NAME=value
        b"\0".join([b"run", b"/", b"9", b"1", b"2", b"1", b"a"]),  # not an octal umask
    ],
)
def test_anything_else_is_refused(body):
    with pytest.raises(ValueError):
        wire.decode_run(body)


def test_a_socket_directory_others_may_enter_is_never_used(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert wire.places() is not None and (tmp_path / "gitst").stat().st_mode & 0o777 == 0o700
    os.chmod(tmp_path / "gitst", 0o750)
    assert wire.places() is None
    os.chmod(tmp_path / "gitst", 0o700)
    (tmp_path / "gitst").rename(tmp_path / "elsewhere")
    (tmp_path / "gitst").symlink_to(tmp_path / "elsewhere")
    assert wire.places() is None  # a link, even to a directory of ours
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / ("x" * 120)))
    assert wire.places(create=False) is None  # missing (and too long for AF_UNIX)
