"""Objects by name: blobs at a revision, the blobs of the index, commits a name resolves to.

Reads never touch the working tree and never stash. Any number of objects is one
``git cat-file --batch``, except many *loose* objects (what ``git add`` writes, so what a
commit of many state files stages): there pygit2's in-process reads beat git's, import cost
included (``benchmarks/bench_git.py``; docs/architecture.md, "Where pygit2 is used").
"""

from __future__ import annotations

import contextlib
import os

from gitst.git.runner import decode, encode, run

__all__ = [
    "blob_at",
    "blob_ids_at",
    "blob_to_file",
    "commit_file",
    "files_at",
    "is_null_sha",
    "object_sizes",
    "paths_at",
    "read_objects",
    "resolve_commit",
]


def is_null_sha(sha: str) -> bool:
    """The all-zero id git uses for "no commit" (a new branch, a deleted ref)."""
    return bool(sha) and sha.strip("0") == ""


def resolve_commit(rev: str, cwd: str | os.PathLike[str] | None = None) -> str | None:
    """The commit id ``rev`` names, or None when it names none (an option-like name included)."""
    if not rev or rev.startswith("-"):
        return None
    proc = run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], cwd, check=False)
    return decode(proc.stdout).strip() or None if proc.returncode == 0 else None


def read_objects(cwd: str | os.PathLike[str] | None, specs: list[str]) -> list[bytes | None]:
    """Contents of the objects named by ``specs`` (oids or ``REV:path``); None when missing
    or not a blob. One ``git cat-file --batch`` for all of them."""
    if not specs:
        return []
    out = run(["cat-file", "--batch", "-z"], cwd, input=b"".join(encode(s) + b"\0" for s in specs)).stdout
    results: list[bytes | None] = []
    pos = 0
    for _ in specs:
        end = out.index(b"\n", pos)
        header = out[pos:end].split(b" ")
        pos = end + 1
        if len(header) == 3 and header[1] != b"missing" and header[2].isdigit():
            size = int(header[2])
            results.append(out[pos : pos + size] if header[1] == b"blob" else None)
            pos += size + 1
        else:
            results.append(None)
    return results


# From this many loose blobs on, pygit2 (import included) reads them faster than one
# `cat-file --batch`: benchmarks/bench_git.py measured 1.04x at 2,000 (break-even) and 0.62x
# at 5,000. Packed blobs stay faster through git at any count (3-4x at 2,000-5,000).
PYGIT2_MIN_LOOSE_BLOBS = 2500


def read_staged_blobs(
    cwd: str | os.PathLike[str], oids: list[str], *, use_pygit2: bool | None = None
) -> list[bytes | None]:
    """The contents of index blobs by object id (None when missing or not a blob). They were
    written loose by ``git add``: many of them are read in-process with pygit2, a few with
    :func:`read_objects`. ``use_pygit2`` forces one or the other (the tests compare them)."""
    if use_pygit2 is None:
        use_pygit2 = len(oids) >= PYGIT2_MIN_LOOSE_BLOBS
    if not use_pygit2:
        return read_objects(cwd, oids)
    import pygit2  # lazy: pygit2 is heavy; only the staged-blob speed path

    repository = pygit2.Repository(os.fspath(cwd))
    out: list[bytes | None] = []
    for oid in oids:
        try:
            obj = repository[oid]
        except (KeyError, ValueError):
            out.append(None)
            continue
        out.append(obj.data if isinstance(obj, pygit2.Blob) else None)
    return out


def files_at(cwd: str | os.PathLike[str] | None, rev: str, relpaths: list[str]) -> dict[str, bytes | None]:
    """``{path: content at rev}`` for paths relative to the top (None: not there)."""
    return dict(zip(relpaths, read_objects(cwd, [f"{rev}:{p}" for p in relpaths]), strict=True))


def paths_at(cwd: str | os.PathLike[str], rev: str, folder: str) -> list[str]:
    """The files of ``rev`` under ``folder`` (relative to the top of the work tree at ``cwd``),
    relative to the top; [] when ``rev`` does not exist (a first commit) or holds none."""
    proc = run(["ls-tree", "-r", "-z", "--name-only", "--full-tree", rev, "--", folder], cwd, check=False)
    return [decode(path) for path in proc.stdout.split(b"\0") if path] if proc.ok else []


def blob_at(cwd: str | os.PathLike[str] | None, rev: str, path: str) -> bytes | None:
    """The content of ``REV:PATH`` (None when there is no such file)."""
    return read_objects(cwd, [f"{rev}:{path}"])[0]


def object_sizes(cwd: str | os.PathLike[str] | None, specs: list[str]) -> list[tuple[str, int] | None]:
    """``(object id, size)`` of each blob named by ``specs`` (oids or ``REV:path``); None when
    missing or not a blob. One ``git cat-file --batch-check`` for all: no content is read."""
    if not specs:
        return []
    out = run(["cat-file", "--batch-check", "-z"], cwd, input=b"".join(encode(s) + b"\0" for s in specs)).stdout
    results: list[tuple[str, int] | None] = []
    for line in out.split(b"\n")[: len(specs)]:
        fields = line.split(b" ")
        if len(fields) == 3 and fields[1] == b"blob" and fields[2].isdigit():
            results.append((decode(fields[0]), int(fields[2])))
        else:
            results.append(None)
    return results


def blob_ids_at(cwd: str | os.PathLike[str] | None, rev: str, relpaths: list[str]) -> dict[str, tuple[str, int] | None]:
    """``{path: (blob id, size) at rev}`` for paths relative to the top (None: not there)."""
    return dict(zip(relpaths, object_sizes(cwd, [f"{rev}:{p}" for p in relpaths]), strict=True))


def blob_to_file(cwd: str | os.PathLike[str] | None, oid: str, fd: int) -> None:
    """Write blob ``oid`` into the open file ``fd``: git writes it there itself, so a blob of any
    size costs this process no memory (``GitError`` when there is no such blob)."""
    run(["cat-file", "blob", oid], cwd, stdout=fd)


def commit_file(
    cwd: str | os.PathLike[str] | None,
    name: str,
    content: bytes,
    message: str,
    *,
    author: tuple[str, str],
    parent: str | None = None,
) -> str:
    """Write a commit whose tree holds one file ``name`` with ``content`` (not on any branch;
    a ref is pointed at it by the caller): the three objects made here and written as loose
    objects (:func:`_commit_in_one`; one ``unpack-objects`` where git must write them), else
    ``hash-object -w``, ``mktree``, ``commit-tree``.
    ``author`` is (name, email) for author and committer alike, so no user config is needed."""
    made = _commit_in_one(cwd, name, content, message, author=author, parent=parent)
    if made is not None:
        return made
    blob = run(["hash-object", "-w", "--stdin"], cwd, input=content).text()
    tree = run(["mktree"], cwd, input=encode(f"100644 blob {blob}\t{name}\n")).text()
    env = dict(os.environ)
    env.update(
        {
            "GIT_AUTHOR_NAME": author[0],
            "GIT_AUTHOR_EMAIL": author[1],
            "GIT_COMMITTER_NAME": author[0],
            "GIT_COMMITTER_EMAIL": author[1],
        }
    )
    args = ["commit-tree", tree, *(["-p", parent] if parent else []), "-F", "-"]
    return run(args, cwd, input=encode(message), env=env).text()


_PACK_TYPES = {b"commit": 1, b"tree": 2, b"blob": 3}


def _commit_in_one(
    cwd: str | os.PathLike[str] | None,
    name: str,
    content: bytes,
    message: str,
    *,
    author: tuple[str, str],
    parent: str | None,
) -> str | None:
    """:func:`commit_file`'s blob, tree and commit, made here byte for byte as ``hash-object``,
    ``mktree`` and ``commit-tree`` make them (the commit dated now, in the local time zone)
    and written here as git writes loose objects (:func:`_write_loose`: no git process), or
    where git must write them by one ``git unpack-objects`` from a pack of the three: one git
    process instead of three. None (nothing written) where git would make other bytes or where this
    would need more than it knows: a repository whose objects are not SHA-1, a commit
    encoding other than UTF-8, a date from ``GIT_AUTHOR_DATE``/``GIT_COMMITTER_DATE``, a
    name or message outside plain ASCII (what git may rewrite), a name with ``/``; and a process
    whose config reads are not cached (the two it needs would cost what it saves)."""
    if not _plain(cwd, name, message, author):
        return None
    import hashlib  # lazy: only a remote claim's record commit
    import time  # lazy: as hashlib
    import zlib  # lazy: as hashlib

    now = int(time.time())
    offset = time.localtime(now).tm_gmtoff // 60
    zone = f"{'-' if offset < 0 else '+'}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"
    ident = f"{author[0]} <{author[1]}> {now} {zone}"
    blob = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()  # noqa: S324 - git's object id
    tree_data = b"100644 " + name.encode() + b"\0" + bytes.fromhex(blob)
    tree = hashlib.sha1(b"tree %d\0" % len(tree_data) + tree_data).hexdigest()  # noqa: S324 - as above
    head = f"tree {tree}\n" + (f"parent {parent}\n" if parent else "")
    commit_data = f"{head}author {ident}\ncommitter {ident}\n\n{message}".encode()
    commit = hashlib.sha1(b"commit %d\0" % len(commit_data) + commit_data).hexdigest()  # noqa: S324 - as above
    made = ((b"blob", content, blob), (b"tree", tree_data, tree), (b"commit", commit_data, commit))
    if _write_loose(cwd, made):
        return commit
    pack = [b"PACK", (2).to_bytes(4, "big"), (3).to_bytes(4, "big")]
    for kind, data, _oid in made:
        pack += [_pack_header(_PACK_TYPES[kind], len(data)), zlib.compress(data)]
    body = b"".join(pack)
    run(["unpack-objects", "-q"], cwd, input=body + hashlib.sha1(body).digest())  # noqa: S324 - the pack's checksum
    return commit


# What makes git write a loose object otherwise than :func:`_write_loose` does: another object
# directory or a quarantine (a hook's), shared permissions, fsync asked for; git writes then.
_LOOSE_ENV = ("GIT_OBJECT_DIRECTORY", "GIT_QUARANTINE_PATH", "GIT_ALTERNATE_OBJECT_DIRECTORIES")
_LOOSE_CONFIG = ("core.sharedrepository", "core.fsync", "core.fsyncobjectfiles", "core.fsyncmethod")


def _write_loose(cwd: str | os.PathLike[str] | None, made: tuple[tuple[bytes, bytes, str], ...]) -> bool:
    """Write ``(kind, data, oid)`` objects as loose objects, in order, as git does: zlib level
    1 (``core.looseCompression``'s default), a ``tmp_obj_*`` file in the fan-out directory
    (mode 0444 less the umask; ``git prune`` removes one a kill left behind), linked into
    place (renamed where links are not supported); an object already there is only freshened
    (its mtime: ``git gc`` keeps what was just written). False where git would write
    otherwise (``_LOOSE_ENV``, ``_LOOSE_CONFIG``), the object directory is not a plain
    directory of this repository's, or a write failed: the caller has git write them (what
    was written already is the same bytes git writes)."""
    store = _loose_store(cwd)
    return store is not None and all(_write_one(store, kind, data, oid) for kind, data, oid in made)


def _loose_store(cwd: str | os.PathLike[str] | None) -> str | None:
    """The repository's object directory, when :func:`_write_loose` writes as git would there."""
    from gitst.git import config, repo  # lazy: objects.py loads only the runner (hook fast path)

    if any(os.environ.get(name) for name in _LOOSE_ENV):
        return None
    if any(config.get(key, cwd) is not None for key in _LOOSE_CONFIG):
        return None
    info = repo.repo_info(cwd)
    if info is None:
        return None
    store = os.path.join(info.common_dir, "objects")
    return store if os.path.isdir(store) and not os.path.islink(store) else None


def _write_one(store: str, kind: bytes, data: bytes, oid: str) -> bool:
    import zlib  # lazy: as in _commit_in_one

    final = os.path.join(store, oid[:2], oid[2:])
    try:
        os.utime(final)
        return True  # there already (a repeated record): freshened
    except FileNotFoundError:
        pass
    except OSError:
        return False
    try:
        os.makedirs(os.path.dirname(final), exist_ok=True)  # 0777 less the umask, as git makes it
    except OSError:
        return False
    temp = os.path.join(os.path.dirname(final), "tmp_obj_" + os.urandom(6).hex())
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o444)
        with os.fdopen(fd, "wb") as out:
            out.write(zlib.compress(kind + b" %d\0" % len(data) + data, 1))
        try:
            os.link(temp, final)
        except FileExistsError:
            pass  # written meanwhile by another process: the same bytes
        except OSError:
            os.replace(temp, final)  # no hard links here: git renames too
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
    return True


def _plain(cwd: str | os.PathLike[str] | None, name: str, message: str, author: tuple[str, str]) -> bool:
    """True when :func:`_commit_in_one` makes the bytes git would (its docstring says when not)."""
    if os.environ.get("GIT_AUTHOR_DATE") or os.environ.get("GIT_COMMITTER_DATE"):
        return False
    who = "".join(author)
    if not (name.isascii() and message.isascii() and who.isascii() and name.isprintable() and who.isprintable()):
        return False
    if "/" in name or name in ("", ".", "..") or any(c in "<>" for c in who):
        return False
    return _plain_repository(cwd)


def _plain_repository(cwd: str | os.PathLike[str] | None) -> bool:
    """SHA-1 objects and UTF-8 commits, read from the command's cached config listing; False
    when reads are not cached (two git processes would cost what one saves: the MCP server)."""
    from gitst.git import config  # lazy: objects.py loads only the runner (hook fast path)

    if not config.cached():
        return False
    if (config.get("extensions.objectformat", cwd) or "sha1").lower() != "sha1":
        return False
    return (config.get("i18n.commitencoding", cwd) or "utf-8").lower() in ("utf-8", "utf8")


def _pack_header(kind: int, size: int) -> bytes:
    """A pack entry's type and size: 3 bits of type and 4 of size, then 7 bits of size a byte."""
    out = bytearray()
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)
