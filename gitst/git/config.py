"""git config: read a key (one ``config --get``), read a multi-valued key, write this
repository's own config (``--local``).

:func:`get` is on the hooks' fast path: this module imports only the runner.
"""

from __future__ import annotations

import os

from gitst.git.runner import decode, run

__all__ = ["add_local", "get", "get_all", "get_regexp", "remove_section", "set_local", "unset_local"]


def get(
    key: str,
    cwd: str | os.PathLike[str] | None = None,
    *,
    type: str | None = None,  # noqa: A002 - git config's own option name (--type)
    local: bool = False,
) -> str | None:
    """``git config --get KEY`` (None when unset, outside a repo, or not valid for ``type``);
    ``local`` reads only the repository's own config."""
    args = ["config", *(["--local"] if local else []), *([f"--type={type}"] if type else []), "--get", key]
    proc = run(args, cwd, check=False)
    return proc.text() if proc.returncode == 0 else None


def get_all(key: str, cwd: str | os.PathLike[str] | None = None) -> list[str]:
    """Every value of a multi-valued key (empty when unset)."""
    proc = run(["config", "--get-all", key], cwd, check=False)
    if proc.returncode != 0:
        return []
    return [value for value in decode(proc.stdout).split("\n") if value]


def get_regexp(pattern: str, cwd: str | os.PathLike[str] | None = None) -> list[tuple[str, str]]:
    """``(key, value)`` of every key matching ``pattern`` (``git config --get-regexp``)."""
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
    run(["config", "--local", key, value], cwd)
    return True


def add_local(key: str, value: str, cwd: str | os.PathLike[str] | None = None) -> None:
    """Add one more value to a multi-valued key of the repository's own config."""
    run(["config", "--local", "--add", key, value], cwd)


def unset_local(key: str, value: str, cwd: str | os.PathLike[str] | None = None) -> None:
    """Remove ``value`` from the local multi-valued ``key`` (no error when absent)."""
    import re

    run(["config", "--local", "--unset-all", key, "^" + re.escape(value) + "$"], cwd, check=False)


def remove_section(section: str, cwd: str | os.PathLike[str] | None = None) -> bool:
    """Remove ``[section]`` from the repository's config; False when it was not there."""
    return run(["config", "--local", "--remove-section", section], cwd, check=False).returncode == 0
