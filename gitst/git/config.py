"""git config: read a key (one ``config --get``), read a multi-valued key, write this
repository's own config (``--local``).

:func:`get` is on the hooks' fast path: this module imports only the runner.

**One read per command.** A command that asks for many keys (``git st status`` asks a few
per registry row) turns on :func:`cache_reads`: the first read in a directory runs
``git config --list -z`` once and every later :func:`get`, :func:`get_all` and
:func:`get_regexp` there is answered from it, as git would answer (last value wins, section
and key names without case, ``--type=bool`` normalized the same way). The writers below
drop the cache, so a command reads back what it wrote. ``git st`` turns it on for the
command it runs (:mod:`gitst.cli.main`) and off again after it; library callers get one
``git config`` per question, as before.
"""

from __future__ import annotations

import os

from gitst.git.runner import decode, run

__all__ = [
    "add_local",
    "cache_reads",
    "cached",
    "forget",
    "get",
    "get_all",
    "get_regexp",
    "remove_section",
    "set_local",
    "share_reads",
    "unset_local",
]


class _Reads:
    """``on``: answer from ``listed`` (each directory's ``config --list``; None: git failed);
    ``shared``: :func:`share_reads`'s worktrees, each with the directory it reads like."""

    on = False
    listed: dict[str, dict[str, list[str | None]] | None] = {}  # noqa: RUF012 - one per process
    shared: dict[str, str] = {}  # noqa: RUF012 - one per process
    tops: dict[str, str] = {}  # noqa: RUF012 - one per process: a directory -> the listing it reads (_top_of)


def cache_reads(on: bool = True) -> None:
    """Answer reads from one ``git config --list -z`` per directory (``on``) or ask git each
    time (off; drops what was read)."""
    _Reads.on = on
    _Reads.listed = {}
    _Reads.shared = {}
    _Reads.tops = {}


def cached() -> bool:
    """Whether reads are answered from the command's listing (:func:`cache_reads`): a caller
    weighing one git process against a few config reads asks this first."""
    return _Reads.on


def forget() -> None:
    """Drop what was read (after a write, or before a redraw of ``status --watch``)."""
    _Reads.listed = {}


def _canonical(key: str) -> str:
    """``St.StateDir`` -> ``st.statedir``: section and name without case, a subsection as is."""
    head, dot, rest = key.partition(".")
    middle, _, name = rest.rpartition(".")
    if not dot or not name:
        return key.lower()
    return f"{head.lower()}.{middle}.{name.lower()}" if middle else f"{head.lower()}.{name.lower()}"


def _where(cwd: str | os.PathLike[str] | None) -> str:
    return os.path.abspath(os.fspath(cwd) if cwd is not None else os.getcwd())


def share_reads(worktree: str | os.PathLike[str], like: str | os.PathLike[str] | None) -> None:
    """Answer reads in ``worktree`` (a worktree of the repository ``like`` is in; the caller
    knows: it made it) and below it from what was read at ``like``, when they cannot differ:
    the configuration ``like`` saw turns on no per-worktree file (``extensions.worktreeConfig``)
    and has no conditional include (``includeIf``: a worktree's git dir and branch are its
    own). Reads below ``worktree`` in another repository (a directory with a ``.git`` of its
    own between) are that repository's; a ``like`` not read yet is not read for this."""
    if _Reads.on:
        _Reads.shared[os.path.abspath(os.fspath(worktree))] = _top_of(_where(like))


def _shared(where: str) -> dict[str, list[str | None]] | None:
    """What :func:`share_reads` lets ``where`` read, None when nothing (or not safely)."""
    for root, like in _Reads.shared.items():
        if where != root and not where.startswith(root + os.sep):
            continue
        values = _Reads.listed.get(like)
        if values is None or any(key.startswith("includeif.") for key in values):
            return None
        if _as_bool((values.get("extensions.worktreeconfig") or ["false"])[-1]) != "false":
            return None
        from gitst.git.files import checkout_between  # lazy: a shared worktree's reads only (pinned fast paths)

        if checkout_between(root, where):  # a repository of its own in between reads its own configuration
            return None
        return values
    return None


def _snapshot(cwd: str | os.PathLike[str] | None) -> dict[str, list[str | None]] | None:
    """Every key of the configuration seen from ``cwd``, its values in git's order (None: a
    key written without ``=``); None when not caching or git could not list it."""
    if not _Reads.on:
        return None
    where = _top_of(_where(cwd))
    if where not in _Reads.listed and _Reads.shared:
        shared = _shared(where)
        if shared is not None:
            _Reads.listed[where] = shared  # decided once: the next read here is a lookup
            return shared
    if where not in _Reads.listed:
        proc = run(["config", "--list", "-z"], cwd, check=False)
        values: dict[str, list[str | None]] | None = None
        if proc.returncode == 0:
            values = {}
            for entry in decode(proc.stdout).split("\0"):
                if entry:
                    key, newline, value = entry.partition("\n")
                    values.setdefault(_canonical(key), []).append(value if newline else None)
        _Reads.listed[where] = values
    return _Reads.listed[where]


def _top_of(where: str) -> str:
    """:func:`_find_top`, once per directory and command."""
    top = _Reads.tops.get(where)
    if top is None:
        top = _Reads.tops[where] = _find_top(where)
    return top


def _find_top(where: str) -> str:
    """The top of the work tree around ``where`` (the nearest folder holding ``.git``) when
    ``where`` lies below it without a symbolic link on the way: git sees the same
    configuration from every folder of one work tree, so they share one listing (``.step/``
    and the top, in ``land``). Else ``where`` itself. No git process: only the file system."""
    top = where
    while not os.path.lexists(os.path.join(top, ".git")):
        parent = os.path.dirname(top)
        if parent == top:
            return where
        top = parent
    if top == where or os.path.realpath(where) != os.path.join(os.path.realpath(top), os.path.relpath(where, top)):
        return where
    return top


_TRUE = ("true", "yes", "on")
_FALSE = ("false", "no", "off", "")


def _as_bool(value: str | None) -> str | None:
    """``git config --type=bool``'s answer for one stored value (None: not a boolean)."""
    if value is None:
        return "true"
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return "true"
    if lowered in _FALSE:
        return "false"
    try:
        return "true" if int(lowered, 10) != 0 else "false"
    except ValueError:
        return None


def get(
    key: str,
    cwd: str | os.PathLike[str] | None = None,
    *,
    type: str | None = None,  # noqa: A002 - git config's own option name (--type)
    local: bool = False,
) -> str | None:
    """``git config --get KEY`` (None when unset, outside a repo, or not valid for ``type``);
    ``local`` reads only the repository's own config."""
    known = None if local or type not in (None, "bool") else _snapshot(cwd)
    if known is not None:
        values = known.get(_canonical(key))
        if not values:
            return None
        value = values[-1]
        return _as_bool(value) if type == "bool" else (value or "")
    args = ["config", *(["--local"] if local else []), *([f"--type={type}"] if type else []), "--get", key]
    proc = run(args, cwd, check=False)
    return proc.text() if proc.returncode == 0 else None


def get_all(key: str, cwd: str | os.PathLike[str] | None = None) -> list[str]:
    """Every value of a multi-valued key (empty when unset)."""
    known = _snapshot(cwd)
    if known is not None:
        return [value for value in known.get(_canonical(key), []) if value]
    proc = run(["config", "--get-all", key], cwd, check=False)
    if proc.returncode != 0:
        return []
    return [value for value in decode(proc.stdout).split("\n") if value]


def get_regexp(pattern: str, cwd: str | os.PathLike[str] | None = None) -> list[tuple[str, str]]:
    """``(key, value)`` of every key matching ``pattern`` (``git config --get-regexp``)."""
    known = _snapshot(cwd)
    if known is not None:
        import re  # lazy: the hook fast path loads only os (docs/architecture.md)

        match = re.compile(pattern).search
        return [(key, value or "") for key, values in known.items() if match(key) for value in values]
    proc = run(["config", "--get-regexp", pattern], cwd, check=False)
    pairs = []
    for line in decode(proc.stdout).splitlines():
        key, _, value = line.partition(" ")
        pairs.append((key, value))
    return pairs


def set_local(key: str, value: str, cwd: str | os.PathLike[str] | None = None) -> bool:
    """Set ``key`` in the repository's own config; False (nothing written) when already so."""
    if get(key, cwd, local=True) == value:
        return False
    forget()
    run(["config", "--local", key, value], cwd)
    return True


def add_local(key: str, value: str, cwd: str | os.PathLike[str] | None = None) -> None:
    """Add one more value to a multi-valued key of the repository's own config."""
    forget()
    run(["config", "--local", "--add", key, value], cwd)


def unset_local(key: str, value: str, cwd: str | os.PathLike[str] | None = None) -> None:
    """Remove ``value`` from the local multi-valued ``key`` (no error when absent)."""
    import re  # lazy: the hook fast path loads only os (docs/architecture.md)

    forget()
    run(["config", "--local", "--unset-all", key, "^" + re.escape(value) + "$"], cwd, check=False)


def remove_section(section: str, cwd: str | os.PathLike[str] | None = None) -> bool:
    """Remove ``[section]`` from the repository's config; False when it was not there."""
    forget()
    return run(["config", "--local", "--remove-section", section], cwd, check=False).returncode == 0
