"""What git's own files say, read without running git — only where a "no" can be proven.

The pre-commit hook runs for every commit. With nothing relevant staged it should cost one
interpreter start and one git call (``git diff --cached``), so the two other questions it
has — does any ``st-kind`` attribute apply to a staged path, is ``st.stateDir`` set — are
first answered here from the files git itself would read. Every function answers
conservatively: ``False``/``None`` means "proven absent"; anything unusual (an include, a
split or sparse index, a SHA-256 repository, a ``.gitattributes`` whose work-tree copy may
differ from the index) answers "maybe", and the caller asks git as before.

Imports nothing but ``os`` and ``stat``.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook fast path loads no typing
    from collections.abc import Mapping

__all__ = ["GitFiles", "checkout_between", "linked_gitdir"]

_ATTR_NAME = ".gitattributes"
# In a config file, any of these makes the cheap reading unsafe: git must be asked.
# include/includeIf pull other files in; core.attributesFile and attr.tree move attributes;
# a sparse or split index and SHA-256 object names change the index layout read below.
_CONFIG_UNSAFE = (b"include", b"attr", b"sparse", b"splitindex", b"objectformat")


def checkout_between(top: str, where: str) -> bool:
    """True when a folder below ``top`` down to ``where`` (both absolute, ``where`` inside
    ``top``) is a checkout of its own (holds ``.git``): what is there is another repository's —
    its index, its configuration — not ``top``'s. Only the file system is asked."""
    folder = where
    while folder != top and len(folder) > len(top):
        if os.path.lexists(os.path.join(folder, ".git")):
            return True
        folder = os.path.dirname(folder)
    return False


def linked_gitdir(path: str | os.PathLike[str]) -> str | None:
    """Where ``<path>/.git`` says the worktree's git dir is (a linked worktree's ``.git`` is a
    file ``gitdir: …``); None when there is no such file."""
    first = _read_regular(os.path.join(path, ".git"), 4096)
    if first is None:
        return None
    first = first.split(b"\n", 1)[0]
    if not first.startswith(b"gitdir: "):
        return None
    return os.path.normpath(os.path.join(path, first[len(b"gitdir: ") :].decode("utf-8", "surrogateescape").strip()))


_MAX_READ = 1 << 20  # past this, a git file is "unusual": the caller asks git


def _read_regular(path: str, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of ``path`` if it is a regular file (never through a link as its
    last component, never blocking on a FIFO or reading a device); None otherwise. A clone's
    work tree may hold anything at these names (docs/security.md)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _read(path: str) -> bytes | None:
    """The bytes of a regular file; None when there is none. Anything else there (a symlink,
    a FIFO, a device, a file over 1 MiB, an unreadable one) counts as "maybe": a value with a
    NUL byte is returned so that callers treat it as unreadable and ask git."""
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return b"\0unreadable"
    if not stat.S_ISREG(info.st_mode):
        return b"\0not a regular file"
    data = _read_regular(path, _MAX_READ)
    if data is None or len(data) > _MAX_READ:
        return b"\0unreadable"
    return data


def _git_prefixes() -> list[str]:
    """The install prefixes of the ``git`` on PATH (``/usr`` for ``/usr/bin/git``): its
    system config and attributes live in ``<prefix>/etc`` (``/etc`` for ``/usr``)."""
    found = ["/etc"]
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = os.path.join(folder or ".", "git")
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            prefix = os.path.dirname(os.path.dirname(os.path.realpath(candidate)))
            etc = os.path.join(prefix, "etc")
            if etc not in found and prefix != "/usr":
                found.append(etc)
            break
    return found


class GitFiles:
    """git's files around the top of one work tree (where git runs hooks)."""

    def __init__(self, top: str):
        self.top = top
        git_dir = os.environ.get("GIT_DIR")
        if git_dir:
            git_dir = os.path.abspath(git_dir)
        elif os.path.isdir(os.path.join(top, ".git")):
            git_dir = os.path.join(top, ".git")
        else:
            git_dir = linked_gitdir(top)
        self.git_dir = git_dir
        common = os.environ.get("GIT_COMMON_DIR")
        if not common and git_dir:
            pointer = _read(os.path.join(git_dir, "commondir"))
            if pointer is not None and not pointer.startswith(b"\0"):
                common = os.path.join(git_dir, pointer.decode("utf-8", "surrogateescape").strip())
        self.common_dir = os.path.normpath(common) if common else git_dir
        self._config: list[bytes] | None = None

    # --- config ------------------------------------------------------------------------

    def config_texts(self) -> list[bytes] | None:
        """Every config file git reads here, lower-cased; None when git must be asked
        (an unreadable file, an include, command-line config we cannot read as text)."""
        if self._config is not None:
            return self._config
        env = os.environ
        if self.git_dir is None or env.get("GIT_CONFIG"):
            return None  # GIT_CONFIG: `git config` reads that one file instead
        texts = _lowered_texts(self._config_files(self.git_dir))
        if texts is None:
            return None
        texts += _command_line_config(env)
        if any(word in text for text in texts for word in _CONFIG_UNSAFE):
            return None
        self._config = texts
        return texts

    def _config_files(self, git_dir: str) -> list[str]:
        """The config files git reads here: system, global, the repository's, the worktree's."""
        env = os.environ
        paths = []
        if not env.get("GIT_CONFIG_NOSYSTEM"):
            system = env.get("GIT_CONFIG_SYSTEM")
            paths += [system] if system else [os.path.join(etc, "gitconfig") for etc in _git_prefixes()]
        global_ = env.get("GIT_CONFIG_GLOBAL")
        if global_:
            paths.append(global_)
        else:
            home = env.get("HOME", "")
            xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
            paths += [os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")]
        return [*paths, os.path.join(self.common_dir or git_dir, "config"), os.path.join(git_dir, "config.worktree")]

    def config_may_set(self, key: str) -> bool:
        """False only when no config file git reads here can set ``key`` (its variable name
        appears in none of them; section names cannot hide it: keys are one word)."""
        texts = self.config_texts()
        if texts is None:
            return True
        name = key.rsplit(".", 1)[-1].lower().encode()
        return any(name in text for text in texts)

    # --- attributes --------------------------------------------------------------------

    def attribute_may_apply(self, attribute: str, paths: list[str]) -> bool:
        """False only when no attribute file git would read for ``paths`` (relative to the
        top) with ``check-attr --cached`` mentions ``attribute``: the system, global and
        ``info/attributes`` files and the index's ``.gitattributes`` of every directory
        above each path. An index ``.gitattributes`` is read from its work-tree copy, and
        only when the index's own record of that copy (size, times) proves it unchanged."""
        if self.git_dir is None or os.environ.get("GIT_ATTR_SOURCE") or self.config_texts() is None:
            return True
        word = attribute.encode()
        for path in self._outside_attribute_files(self.git_dir):
            data = _read(path)
            if data is not None and (data.startswith(b"\0") or word in data):
                return True
        folders = _attribute_folders(paths)
        if folders is None:
            return True  # a staged .gitattributes: only git reads the index's new copy
        return self._index_copies_mention(self.git_dir, folders, word)

    def _outside_attribute_files(self, git_dir: str) -> list[str]:
        """The attribute files outside the work tree git reads: system, global, ``info/``."""
        env = os.environ
        outside = []
        if not env.get("GIT_ATTR_NOSYSTEM"):
            outside += [os.path.join(etc, "gitattributes") for etc in _git_prefixes()]
        home = env.get("HOME", "")
        xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        outside.append(os.path.join(xdg, "git", "attributes"))
        outside += {os.path.join(d, "info", "attributes") for d in (git_dir, self.common_dir) if d}
        return outside

    def _index_copies_mention(self, git_dir: str, folders: set[str], word: bytes) -> bool:
        """True unless the index's ``.gitattributes`` of every one of ``folders`` is proven
        unchanged in the work tree and does not mention ``word``."""
        index = _Index.load(git_dir)
        if index is None:
            return True
        for folder in folders:
            name = f"{folder}/{_ATTR_NAME}" if folder else _ATTR_NAME
            copy = index.unchanged_copy(name, os.path.join(self.top, name))
            if copy is False or (isinstance(copy, bytes) and word in copy):
                return True
        return False


def _attribute_folders(paths: list[str]) -> set[str] | None:
    """Every directory above ``paths`` (the top is ``""``), whose ``.gitattributes`` apply to
    them; None when one of ``paths`` is a ``.gitattributes`` itself."""
    folders = {""}
    for path in paths:
        if path.rsplit("/", 1)[-1] == _ATTR_NAME:
            return None
        parts = path.split("/")[:-1]
        folders.update("/".join(parts[: depth + 1]) for depth in range(len(parts)))
    return folders


def _lowered_texts(paths: list[str]) -> list[bytes] | None:
    """The files of ``paths`` that exist, lower-cased; None when one cannot be read as text."""
    texts = []
    for path in paths:
        if path in ("", "/dev/null"):
            continue
        data = _read(path)
        if data is None:
            continue
        if data.startswith(b"\0"):
            return None
        texts.append(data.lower())
    return texts


def _command_line_config(env: Mapping[str, str]) -> list[bytes]:
    """`git -c` and GIT_CONFIG_COUNT: git passes them on to the hook in the environment."""
    texts = [env.get("GIT_CONFIG_PARAMETERS", "").lower().encode("utf-8", "surrogateescape")]
    for number in range(_count(env.get("GIT_CONFIG_COUNT"))):
        key = env.get(f"GIT_CONFIG_KEY_{number}", "") + "\n" + env.get(f"GIT_CONFIG_VALUE_{number}", "")
        texts.append(key.lower().encode("utf-8", "surrogateescape"))
    return texts


def _count(raw: str | None) -> int:
    try:
        return max(0, int(raw or 0))
    except ValueError:
        return 1_000_000  # not a number: git itself refuses it; count every key as maybe


class _Index:
    """Just enough of the index file (versions 2 and 3, SHA-1, not split): find one path's
    entry and its cached stat data, by searching the bytes (no full parse)."""

    _STAT = 40  # ctime, mtime (s, ns each), dev, ino, mode, uid, gid, size: 4 bytes each
    _OID = 20

    def __init__(self, data: bytes, mtime_ns: int):
        self.data = data
        self.mtime_ns = mtime_ns

    @classmethod
    def load(cls, git_dir: str) -> _Index | None:
        index = os.environ.get("GIT_INDEX_FILE") or os.path.join(git_dir, "index")
        index = os.path.abspath(index)
        try:
            if any(name.startswith("sharedindex.") for name in os.listdir(git_dir)):
                return None  # a split index: entries live in another file
            with open(index, "rb") as handle:
                info = os.fstat(handle.fileno())
                data = handle.read()
        except FileNotFoundError:
            return cls(b"DIRC\0\0\0\2\0\0\0\0", 0)  # no index yet: no entries
        except OSError:
            return None
        if data[:4] != b"DIRC" or data[4:8] not in (b"\0\0\0\2", b"\0\0\0\3"):
            return None  # v4 compresses paths: a search could miss one
        return cls(data, info.st_mtime_ns)

    def _entry_at(self, pos: int, name: bytes) -> int | None:
        """The entry's start when ``name`` at ``pos`` is an entry's whole path (stage 0)."""
        data, size = self.data, min(len(name), 0xFFF)
        for flags_at in (pos - 2, pos - 4):  # v3: two more flag bytes after the flags
            if flags_at < 12 + self._STAT + self._OID:
                continue
            flags = int.from_bytes(data[flags_at : flags_at + 2], "big")
            extended = bool(flags & 0x4000)
            if (flags_at == pos - 4) != extended or flags & 0xFFF != size:
                continue
            if flags & 0x3000:
                return -1  # a conflicted path: not a plain entry
            return flags_at - self._OID - self._STAT
        return None

    def _find(self, key: bytes) -> int | None:
        """The start of the one stage-0 entry whose path is ``key``; None when there is none,
        -1 when the bytes cannot tell (the path found twice, or where an entry cannot be)."""
        needle = key + b"\0"
        data = self.data
        found = None
        at = data.find(needle, 12)
        while at != -1:
            start = self._entry_at(at, key)
            if start is not None:
                if start < 0 or found is not None:
                    return -1
                found = start
            at = data.find(needle, at + 1)
        return found

    def _stat_matches(self, found: int, worktree_path: str) -> bool:
        """True when the entry at ``found`` records the regular file at ``worktree_path`` as
        it is now (size, times), and not from the index's own instant ("racily clean")."""
        data = self.data
        try:
            stat = os.lstat(worktree_path)
        except OSError:
            return False
        word = [int.from_bytes(data[found + i : found + i + 4], "big") for i in range(0, self._STAT, 4)]
        ctime_s, _ctime_ns, mtime_s, mtime_ns, _dev, _ino, mode, _uid, _gid, size = word
        if (mode >> 12) != 0o10 or not os.path.isfile(worktree_path) or os.path.islink(worktree_path):
            return False  # not a regular file in the index or on disk
        if stat.st_size != size or int(stat.st_mtime) != mtime_s or int(stat.st_ctime) != ctime_s:
            return False
        if mtime_ns and stat.st_mtime_ns % 1_000_000_000 != mtime_ns:
            return False
        return stat.st_mtime_ns < self.mtime_ns  # else written in the index's own instant: git would look

    def unchanged_copy(self, name: str, worktree_path: str) -> bytes | bool | None:
        """None: ``name`` is not in the index. bytes: it is, and the work-tree file is that
        very copy (so its bytes are the index's). False: cannot tell; ask git."""
        found = self._find(name.encode("utf-8", "surrogateescape"))
        if found is None or found < 0:
            return None if found is None else False
        if not self._stat_matches(found, worktree_path):
            return False
        try:
            with open(worktree_path, "rb") as handle:
                return handle.read()
        except OSError:
            return False
