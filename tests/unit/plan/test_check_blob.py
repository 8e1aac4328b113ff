"""The st kind's check of git blobs (``plan.check.check_blob``, what the pre-commit hook runs on
a staged plan) gives exactly the findings of the in-memory check (``plan.check.check``), while
never reading the older version when the new one extends it (its object id proves it)."""

from __future__ import annotations

import subprocess

import pytest

from gitst.git import objects
from gitst.plan import check as st_kind
from gitst.plan.store import build_checkpoint, build_event, encode_record
from tests.support import git

TS = "2026-02-09T20:00:00Z"


def _plan(count: int, first_seq: int = 1, *, checkpoint_every: int = 4) -> bytes:
    lines = []
    items: dict[str, dict] = {}
    for n in range(count):
        seq = first_seq + n
        item = {"id": f"st-{seq:03d}", "step": f"step {seq}", "deps": [], "notes": "", "comments": []}
        items[item["id"]] = {"id": item["id"], "step": item["step"], "status": "pending", **item}
        lines.append(encode_record(build_event("upsert", seq, {"item": item}, ts=TS)))
        if (n + 1) % checkpoint_every == 0:
            lines.append(encode_record(build_checkpoint(list(items.values()), seq, ts=TS)))
    return b"".join(lines)


def _blob(repo, data: bytes) -> str:
    return (
        subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=data, capture_output=True, check=True)
        .stdout.decode()
        .strip()
    )


def _found(diagnostics) -> list[tuple]:
    return [(d.line, d.code, d.severity, d.message) for d in diagnostics]


OLD = _plan(9)
APPENDED = encode_record(build_event("set_notes", 10, {"id": "st-003", "notes": "more"}, ts=TS))
CASES = {
    "appended": (OLD, OLD + APPENDED),
    "appended lines with errors": (OLD, OLD + b"{not json\n" + encode_record(build_event("set_notes", 3, {"id": "x"}))),
    "a line rewritten": (OLD, OLD.replace(b"step 2", b"step two") + APPENDED),
    "a line removed": (OLD, OLD[OLD.index(b"\n") + 1 :]),
    "older torn, set aside": (OLD + b'{"v":3,"ts"', OLD + APPENDED),
    "older torn, kept": (OLD + b'{"v":3,"ts"', OLD + b'{"v":3,"ts"' + APPENDED),
    "older empty": (b"", OLD),
    "same": (OLD, OLD),
    "new one torn": (OLD, OLD + APPENDED[:-9]),
}


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_blob_check_finds_what_the_bytes_check_finds(tmp_path, case, object_format):
    repo = tmp_path / "r"
    git("init", "-q", f"--object-format={object_format}", str(repo), cwd=tmp_path)
    old, new = CASES[case]
    expected = _found(st_kind.check(new, "p.jsonl", against=old))
    assert _found(st_kind.check_blob(repo, _blob(repo, new), "p.jsonl", against=_blob(repo, old))) == expected
    assert _found(st_kind.check_blob(repo, _blob(repo, new), "p.jsonl")) == _found(st_kind.check(new, "p.jsonl"))


def test_an_extending_blob_is_checked_without_reading_the_older_one(tmp_path, monkeypatch):
    repo = tmp_path / "r"
    git("init", "-q", str(repo), cwd=tmp_path)
    old, new = CASES["appended"]
    read = []
    monkeypatch.setattr(objects, "read_objects", lambda *args: read.append(args) or [])
    assert st_kind.check_blob(repo, _blob(repo, new), "p.jsonl", against=_blob(repo, old)) == []
    assert read == []
