"""Forging what a hostile remote holds: claim records written into a bare repository with git
plumbing, the way anyone with push access could (no gitst code involved)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import orjson

from tests.support import git

FAR = "2999-01-01T00:00:00.000Z"  # a lease that never ends while the tests run
PAST = "2001-01-01T00:00:00.000Z"


def record(issue: str, session: str = "forger", *, expires_at: str = FAR, **fields: object) -> dict:
    """A claim record as gitst writes it (another host's live claim unless told otherwise)."""
    base: dict = {
        "version": 1,
        "issue": issue,
        "session": session,
        "host": "elsewhere",
        "actor": "mallory",
        "pid": 4242,
        "liveness": "pid",
        "token": 1,
        "claimed_at": "2026-01-01T00:00:00.000Z",
        "renewed_at": "2026-01-01T00:00:00.000Z",
        "expires_at": expires_at,
        "ttl": 1800,
        "branch": None,
        "description": None,
        "nonce": "0" * 32,
    }
    base.update(fields)
    return base


def raw(value: object) -> bytes:
    if isinstance(value, bytes):
        return value
    try:
        return orjson.dumps(value)
    except TypeError:  # nested beyond orjson's 255 levels: the standard library writes it
        return json.dumps(value).encode()


def forge(bare: Path, ref: str | bytes, content: bytes | dict, *, path: str = "claim.json") -> str:
    """Point ``ref`` of ``bare`` at a new parentless commit whose tree holds ``path`` =
    ``content`` (hash-object, mktree, commit-tree, update-ref). The commit id."""
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=bare, input=raw(content), capture_output=True, check=True
    ).stdout.strip()
    tree = subprocess.run(
        ["git", "mktree"],
        cwd=bare,
        input=b"100644 blob " + blob + b"\t" + path.encode() + b"\n",
        capture_output=True,
        check=True,
    ).stdout.strip()
    commit = git("commit-tree", tree.decode(), "-m", "forged", cwd=bare)
    name = ref if isinstance(ref, bytes) else ref.encode()
    subprocess.run([b"git", b"update-ref", name, commit.encode()], cwd=bare, check=True)
    return commit


def forge_many(bare: Path, records: dict[str, bytes]) -> None:
    """Write many records at once (``{ref: claim.json bytes}``, each ref its own parentless
    commit): one ``git fast-import``."""
    stream = bytearray()
    for mark, content in enumerate(records.values(), start=1):
        stream += b"blob\nmark :%d\ndata %d\n" % (mark, len(content)) + content + b"\n"
    for mark, ref in enumerate(records, start=1):
        stream += (
            b"commit " + ref.encode() + b"\n"
            b"committer forger <forger@invalid> 1700000000 +0000\ndata 7\nforged\n"
            b"M 100644 :%d claim.json\n\n" % mark
        )
    subprocess.run(["git", "fast-import", "--quiet", "--force"], cwd=bare, input=bytes(stream), check=True)
