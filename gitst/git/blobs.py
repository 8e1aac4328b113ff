"""Reading what git holds rather than the working tree: index entries and their blobs, a
file's content at a revision, tracked files, and the ``st-kind`` attribute.

Every call is one git process however many paths it is given (``--stdin``/``--batch``),
and nothing here stashes or touches the working tree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from gitst.git.core import run_git


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def check_attr(cwd: str | os.PathLike, relpaths: list[str], *, top: str | None = None, cached: bool = False,
               attribute: str = "st-kind") -> dict[str, str]:
    """``{path: value}`` of ``attribute`` for paths relative to the repository's top.

    Values are what ``git check-attr`` prints: ``unspecified``, ``unset``, ``set`` or the
    value. ``cached`` reads ``.gitattributes`` from the index (what is being committed).
    """
    if not relpaths:
        return {}
    args = ["check-attr", "-z", "--stdin"]
    if cached:
        args.append("--cached")
    args.append(attribute)
    data = b"".join(_encode(p) + b"\0" for p in relpaths)
    out = run_git(args, top or cwd, input=data).stdout.split(b"\0")
    result = {}
    for i in range(0, len(out) - 2, 3):
        result[_decode(out[i])] = _decode(out[i + 2])
    return result


def tracked_files(top: str | os.PathLike) -> list[str]:
    """Every path in the index (relative to the top), deduplicated across merge stages."""
    out = run_git(["ls-files", "-z", "--full-name"], top).stdout
    seen = dict.fromkeys(_decode(p) for p in out.split(b"\0") if p)
    return list(seen)


@dataclass(frozen=True)
class IndexEntry:
    mode: str
    oid: str
    stage: int
    path: str  # relative to the repository's top

    @property
    def is_regular_file(self) -> bool:
        return self.mode in ("100644", "100755")


def staged_entries(cwd: str | os.PathLike, paths: list[str] | None = None) -> list[IndexEntry]:
    """The index entries (``git ls-files --stage``), optionally limited to pathspecs
    relative to ``cwd``."""
    # Literal pathspecs: a file named `a[1].json` means that file, not a glob.
    args = ["--literal-pathspecs", "ls-files", "--stage", "-z", "--full-name"]
    if paths:
        args += ["--", *paths]
    out = run_git(args, cwd).stdout
    entries = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, oid, stage = _decode(meta).split(" ")
        entries.append(IndexEntry(mode, oid, int(stage), _decode(path)))
    return entries


def read_objects(cwd: str | os.PathLike, specs: list[str]) -> list[bytes | None]:
    """Contents of objects named by ``specs`` (oids or ``REV:path``), None when missing or
    not a blob. One ``git cat-file --batch`` for all of them."""
    if not specs:
        return []
    data = b"".join(_encode(s) + b"\0" for s in specs)
    out = run_git(["cat-file", "--batch", "-z"], cwd, input=data).stdout
    results: list[bytes | None] = []
    pos = 0
    for _ in specs:
        end = out.index(b"\n", pos)
        header = out[pos:end].split(b" ")
        pos = end + 1
        if len(header) == 3 and header[1] != b"missing" and header[2].isdigit():
            size = int(header[2])
            content = out[pos: pos + size]
            pos += size + 1
            results.append(content if header[1] == b"blob" else None)
        else:
            results.append(None)
    return results


def verify_revision(cwd: str | os.PathLike, rev: str) -> str | None:
    """The commit id ``rev`` names, or None when it names none."""
    proc = run_git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], cwd, check=False)
    return _decode(proc.stdout).strip() or None if proc.returncode == 0 else None


def head_is_unborn(cwd: str | os.PathLike) -> bool:
    """True in a repository whose current branch has no commit yet."""
    if run_git(["rev-parse", "--verify", "--quiet", "HEAD"], cwd, check=False).returncode == 0:
        return False
    return run_git(["symbolic-ref", "--quiet", "HEAD"], cwd, check=False).returncode == 0


def files_at(cwd: str | os.PathLike, rev: str, relpaths: list[str]) -> dict[str, bytes | None]:
    """``{path: content at rev}`` for paths relative to the top (None: not there)."""
    contents = read_objects(cwd, [f"{rev}:{p}" for p in relpaths])
    return dict(zip(relpaths, contents))
