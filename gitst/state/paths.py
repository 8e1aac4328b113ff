"""Where the state dir is, and the checks on anything that becomes a path inside it.

State dir (DESIGN.md): ``ST_STATE_DIR``, else ``git config st.stateDir``, else ``state/``
at the main worktree's root, so every linked worktree sees the same registry. A relative
``st.stateDir`` is taken relative to the main worktree's root for the same reason.

Identifiers that become file names (issue numbers, session ids, lock names) must match
:data:`IDENTIFIER_RE`; anything else is rejected with exit 2 before a byte is written.
Symlinks inside the state dir are refused: a state file must be a plain file we own.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from gitst.errors import UsageError

IDENTIFIER_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def validate_identifier(value: str, what: str = "identifier") -> str:
    """Return ``value`` if it is safe as a single path component, else raise UsageError."""
    if not isinstance(value, str) or not IDENTIFIER_RE.match(value) or ".." in value or value in (".",):
        raise UsageError(
            f"invalid {what} {value!r}: use 1-64 letters, digits, '.', '_' or '-', without '..'",
        )
    return value


def state_dir(cwd: str | os.PathLike | None = None) -> Path:
    """The state dir for the repository around ``cwd`` (not created)."""
    env = os.environ.get("ST_STATE_DIR")
    if env:
        return Path(env).expanduser().absolute()
    from gitst.gitops.core import config_get, require_repo

    info = require_repo(cwd)
    base = info.main_root or info.toplevel
    configured = config_get("st.stateDir", cwd)
    if configured:
        path = Path(configured).expanduser()
        return path if path.is_absolute() else (base / path)
    return base / "state"


def refuse_symlinks(path: Path, root: Path) -> None:
    """Raise UsageError when ``path`` or any parent up to ``root`` (inclusive) is a symlink."""
    path = Path(path)
    root = Path(root)
    try:
        rel = path.relative_to(root)
    except ValueError:
        raise UsageError(f"{path} is outside the state dir {root}") from None
    current = root
    parts = [current] + [current := current / part for part in rel.parts]
    for part in parts:
        if part.is_symlink():
            raise UsageError(f"refusing to use {part}: it is a symbolic link inside the state dir")


def state_path(*parts: str, cwd: str | os.PathLike | None = None, root: Path | None = None) -> Path:
    """A path inside the state dir made of validated parts, with symlinks refused.

    The last part may carry a suffix such as ``.json``; it is validated with it.
    """
    base = root if root is not None else state_dir(cwd)
    for part in parts:
        validate_identifier(part, "path component")
    path = base.joinpath(*parts)
    refuse_symlinks(path, base)
    return path
