"""Where the state dir is, and the checks on anything that becomes a path inside it.

State dir (docs/decisions.md): ``ST_STATE_DIR``, else ``git config st.stateDir``, else ``state/``
at the main worktree's root, so every linked worktree sees the same registry. A relative
``st.stateDir`` is taken relative to the main worktree's root for the same reason.

Identifiers that become file names (issue numbers, session ids, lock names) must match
:data:`IDENTIFIER_RE`; anything else is rejected with exit 2 before a byte is written.
Session ids may also hold ``@`` (the default id is ``pid-<pid>@<host>``, docs/decisions.md).
Symlinks inside the state dir are refused: a state file must be a plain file we own. The
state dir's path is checked component by component (:mod:`gitst.core.safepaths`) from the
top of the work tree that holds it (a relative ``st.stateDir``, the default ``state/``), so
a cloned repository that commits ``state -> /elsewhere`` is refused, not followed.

Files git tracks under the state dir are never runtime state (docs/security.md): a cloned
repository could commit ``state/locks/issue-7.json`` with a fake owner, or
``state/pipeline/42.json`` with a PR number. Readers ignore such a file with a warning
(:func:`ignore_if_tracked`), writers refuse to replace it (:func:`refuse_tracked`, exit 2
with the ``git rm --cached`` that fixes it), ``git st validate`` reports it.

The state dir is runtime-only and must never be committed: :func:`ensure_state_dir`
creates it with a ``.gitignore`` holding ``*`` (the directory ignores itself, the user's
own ignore files are left alone) and says so on stderr. A folder of the project that happens
to be where the state dir would be (a tracked ``state/reducer.js``) is never taken over: every
writer refuses it first (:func:`refuse_project_folder`) and names ``st.stateDir``.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from gitst.core.errors import UsageError
from gitst.git.runner import GitError
from gitst.settings import lock_timeout, optional_str_setting

if TYPE_CHECKING:
    from gitst.core.safepaths import Leaf

__all__ = [
    "MAX_IDENTIFIER",
    "Identifier",
    "IssueId",
    "SessionId",
    "clear_cache",
    "ensure_state_dir",
    "ignore_if_tracked",
    "is_state_layout",
    "refuse_project_folder",
    "refuse_symlinks",
    "refuse_tracked",
    "state_dir",
    "state_path",
    "validate_identifier",
    "validate_session",
]

IDENTIFIER_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
MAX_IDENTIFIER = 64
_CHARS = {False: "A-Za-z0-9._-", True: "A-Za-z0-9._@-"}


def validate_identifier(
    value: str, what: str = "identifier", *, max_length: int = MAX_IDENTIFIER, allow_at: bool = False
) -> str:
    """Return ``value`` if it is safe as a single path component, else raise UsageError."""
    chars = _CHARS[bool(allow_at)]
    if (
        not isinstance(value, str)
        or not re.fullmatch(f"[{chars}]{{1,{max_length}}}", value)
        or ".." in value
        or value == "."
    ):
        extra = ", '@'" if allow_at else ""
        raise UsageError(
            f"invalid {what} {value!r}: use 1-{max_length} letters, digits, '.', '_'{extra} or '-', without '..'",
        )
    return value


class Identifier(str):
    """A string that passed :func:`validate_identifier` once: safe as one path component.

    Made by one parser, the constructor (``IssueId("7")``: exit 2 for ``"../x"``, with the
    message ``validate_identifier`` gives); giving it an instance of the same class returns
    that instance unchecked. Code below the edge of a command (``state_path``, the lock and
    record paths, the registry) trusts an instance and never validates it again. A plain
    ``str`` otherwise: equal, hashed, sliced, formatted and written to JSON as the text.
    """

    __slots__ = ()
    what = "identifier"
    allow_at = False

    def __new__(cls, value: str) -> Identifier:
        if type(value) is cls:
            return value
        return str.__new__(cls, validate_identifier(value, cls.what, allow_at=cls.allow_at))


class IssueId(Identifier):
    """An issue id (``7``, ``PROJ-12``): the identifier rule."""

    __slots__ = ()
    what = "issue"


class SessionId(Identifier):
    """A session id: the identifier rule, ``@`` allowed (``pid-<pid>@<host>``)."""

    __slots__ = ()
    what = "session id"
    allow_at = True


def validate_session(value: str) -> str:
    """A session id: the identifier rule, ``@`` allowed (``pid-<pid>@<host>``). The acting
    session's id is parsed once, by :func:`gitst.sessions.identity.current`; code given its
    :class:`~gitst.sessions.identity.Identity` trusts ``who.session``."""
    return validate_identifier(value, "session id", allow_at=True)


def state_dir(cwd: str | os.PathLike[str] | None = None) -> Path:
    """The state dir for the repository around ``cwd`` (not created)."""
    from gitst.git.repo import require_repo  # lazy: git.repo stays off whoami's start-up

    env = os.environ.get("ST_STATE_DIR", "").strip()
    if env:  # taken relative to the current directory, like any path in the environment
        return Path(env).expanduser().absolute()

    info = require_repo(cwd)
    base = info.shared_root
    configured = optional_str_setting("state_dir", cwd)  # git config st.stateDir: relative to the main worktree
    if configured:
        path = Path(configured).expanduser()
        return path if path.is_absolute() else (base / path)
    return base / "state"


# Each state dir's top (see _top), found once per process: a command makes dozens of state
# paths under one state dir, and every one of them is checked from the same top.
_TOPS: dict[str, Path] = {}


def clear_cache() -> None:
    """Forget the state dirs' tops and the checks done once per process (tests that build
    another repository at the same path in one process)."""
    _TOPS.clear()
    _CHECKED.clear()
    _ENSURED.clear()


def _top(root: Path) -> Path:
    """Where the state dir's components are checked from: the top of the work tree holding
    it, else (``ST_STATE_DIR`` outside any work tree) its parent. Found once per state dir:
    only where the checks start is remembered, every path is still checked from there."""
    from gitst.git.repo import work_tree_of  # lazy: git.repo stays off whoami's start-up

    key = os.path.abspath(root)
    top = _TOPS.get(key)
    if top is None:
        top = work_tree_of(root) or Path(key).parent
        _TOPS[key] = top
    return top


def refuse_symlinks(path: Path, root: Path, *, leaf: Leaf = "any") -> None:
    """Raise UsageError when ``path`` lies outside ``root`` or when a component of it - from
    the top of the work tree holding the state dir down, ``root`` included - is a symbolic
    link or not a directory (``leaf="file"``: the last one must be a regular file if it
    exists; ``"dir"``: a directory)."""
    from gitst.core.safepaths import check  # lazy: safepaths stays off whoami's start-up

    path = Path(path)
    root = Path(root)
    try:
        path.relative_to(root)
    except ValueError:
        raise UsageError(f"{path} is outside the state dir {root}") from None
    check(path, _top(root), leaf=leaf)


# The tracked paths already warned about (once per process).
_WARNED: set[str] = set()


def is_tracked(path: Path) -> bool:
    """True when git tracks ``path`` (a file under the state dir): one ``git ls-files`` per
    process for the state dir and its folders (a file in a state folder asks for the whole
    state dir: ``locks/``, ``active-chats/``… are answered from that one listing), none when
    the directory does not exist."""
    from gitst.git.index import tracked_below  # lazy: git.index stays off whoami's start-up

    folder = os.path.dirname(os.path.abspath(path))
    if os.path.basename(folder) in STATE_FOLDERS and os.path.isdir(folder):
        return f"{os.path.basename(folder)}/{os.path.basename(path)}" in tracked_below(os.path.dirname(folder))
    return os.path.basename(path) in tracked_below(folder)


def ignore_if_tracked(path: Path) -> bool:
    """True (after a warning on stderr, once per path) when ``path`` is tracked by git: a
    reader then treats it as missing - committed state is never this machine's."""
    if not is_tracked(path):
        return False
    shown = str(path)
    if shown not in _WARNED:
        _WARNED.add(shown)
        print(
            f"gitst: warning: ignoring {shown}: it is tracked by git, and state in the repository is never "
            f"runtime state (`git rm -- {shlex_quote(shown)}` removes it)",
            file=sys.stderr,
        )
    return True


def refuse_tracked(path: Path) -> None:
    """Refuse (exit 2) to write ``path`` when git tracks it: the write would change a committed
    file that gitst never reads back as runtime state."""
    if is_tracked(path):
        shown = str(path)
        raise UsageError(
            f"refusing to write {shown}: it is tracked by git; the state dir is this machine's runtime "
            "state and a committed copy of it is never used",
            fix=f"git rm -- {shlex_quote(shown)} && git commit   (or `git rm --cached` to keep the file as "
            "this machine's state)",
        )


def shlex_quote(text: str) -> str:
    import shlex  # lazy: shlex stays off whoami's start-up

    return shlex.quote(text)


def state_path(
    *parts: str, suffix: str = "", cwd: str | os.PathLike[str] | None = None, root: Path | None = None
) -> Path:
    """A path inside the state dir made of validated parts, with symlinks refused.

    ``suffix`` (e.g. ``.json``) is added to the last part after validation, so an
    identifier of the full length still fits. Parts given with their suffix are
    validated with it.
    """
    base = root if root is not None else state_dir(cwd)
    for part in parts:
        if not isinstance(part, Identifier) and part not in STATE_FOLDERS:  # those are safe as they are
            validate_identifier(part, "path component", allow_at=True, max_length=MAX_IDENTIFIER + 8)
    if suffix:
        if not re.fullmatch(r"(\.[A-Za-z0-9]{1,8}){1,2}", suffix):
            raise UsageError(f"invalid state file suffix {suffix!r}")
        parts = (*parts[:-1], parts[-1] + suffix)
    path = base.joinpath(*parts)
    # A link or a FIFO is refused here (exit 2); a directory where a file belongs is left to
    # whoever opens it: a reader reports it as READ (exit 1), a writer cannot write (exit 4).
    refuse_symlinks(path, base, leaf="any")
    return path


STATE_GITIGNORE = b"# gitst: the state dir is runtime-only; never commit it\n*\n"

# What a state dir holds (seed 001 and gitst's own records): its folders, the UI server's two
# files, the seed's SQLite databases and the ignore file. A tracked file of any other shape
# means the folder is the project's own (source, not runtime state), and gitst stays out.
STATE_FOLDERS = frozenset(
    {
        "pipeline",
        "deliberations",
        "session-snapshots",
        "locks",
        "circuit",
        "active-chats",
        "active-worktrees",
        "pending-releases",
        "reservations",
    }
)
_STATE_FILE = re.compile(r"(\.gitignore|live-session\.json|watch-list\.json|[^/]+\.db)")

# The state dirs already found free of the project's files (once per process).
_CHECKED: set[str] = set()


def is_state_layout(relpath: str) -> bool:
    """True when ``relpath`` (inside the state dir, ``/``-separated) is where seed 001 or gitst
    keeps a state file."""
    first, _, rest = relpath.partition("/")
    return (first in STATE_FOLDERS and bool(rest)) or (not rest and _STATE_FILE.fullmatch(first) is not None)


def refuse_project_folder(root: Path) -> None:
    """Refuse (exit 2, before anything is written) a state dir that holds files git tracks and
    that are not state files (:func:`is_state_layout`): the project's own folder called
    ``state/`` (a ``state/reducer.js``). Taking it over would make git ignore the user's new
    files there and the pre-commit hook refuse every edit of the tracked ones."""
    from gitst.git.index import tracked_below  # lazy: git.index stays off whoami's start-up

    key = os.path.abspath(root)
    if key in _CHECKED:
        return

    foreign = [path for path in tracked_below(root) if not is_state_layout(path)]
    if foreign:
        shown = ", ".join(str(Path(root) / path) for path in foreign[:3])
        more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        raise UsageError(
            f"the state dir {root} is a folder of this project: git tracks {shown}{more} there, which are "
            "not gitst state files; gitst keeps its runtime state (claims, locks, the worktree registry) "
            "in a folder of its own and writes nothing here",
            fix="choose another state dir for this repository, e.g. `git config st.stateDir .st-state` "
            "(relative to the main worktree; gitst makes it and has git ignore it), or ST_STATE_DIR=PATH",
        )
    _CHECKED.add(key)


# The state dirs ensure_state_dir made sure of (once per process: a command writes a dozen
# records, each through ensure_state_dir).
_ENSURED: set[str] = set()


def ensure_state_dir(
    root: Path, cwd: str | os.PathLike[str] | None = None, *, note: Callable[[str], None] | None = None
) -> Path:
    """Create the state dir when missing and make sure git ignores it.

    The ignore rule is ``<state dir>/.gitignore`` holding ``*``. It is written when the
    dir is created, and when an existing state dir lacks it and git does not already
    ignore the dir. ``note`` (default: print to stderr) is told what was done. Done once
    per state dir and process (again if the directory went away); every path made in it
    afterwards is still checked component by component (:func:`state_path`).
    """
    root = Path(root)
    key = os.path.abspath(root)
    if key in _ENSURED and os.path.isdir(root):
        return root
    _ensure(root, cwd, note)
    _ENSURED.add(key)
    return root


def _ensure(root: Path, cwd: str | os.PathLike[str] | None, note: Callable[[str], object] | None) -> None:
    """:func:`ensure_state_dir`, the first time."""
    from gitst.core.jsonio import atomic_write_bytes, write_error  # lazy: orjson stays off whoami's start-up
    from gitst.core.safepaths import makedirs  # lazy: safepaths stays off whoami's start-up

    lock_timeout()  # every write here then takes a flock: a bad ST_LOCK_TIMEOUT is refused first
    say = note or (lambda text: print(text, file=sys.stderr))
    refuse_symlinks(root, root, leaf="dir")
    created = not root.exists()
    if not created:
        refuse_project_folder(root)
    if created:
        try:
            makedirs(root, _top(root))
        except OSError as exc:
            raise write_error(root, exc, verb="create the state dir") from None
    ignore_file = root / ".gitignore"
    refuse_symlinks(ignore_file, root, leaf="file")
    if ignore_file.exists():
        return
    if not created and not _inside_work_tree_unignored(root, cwd):
        return
    atomic_write_bytes(ignore_file, STATE_GITIGNORE)
    if created:
        say(f"gitst: created the state dir {root} and made git ignore it ({ignore_file} holds '*')")
    else:
        say(f"gitst: the state dir {root} was not ignored by git; added {ignore_file} holding '*'")


def _inside_work_tree_unignored(root: Path, cwd: str | os.PathLike[str] | None) -> bool:
    """True when ``root`` lies inside a git work tree and git does not ignore it."""
    from gitst.git.attributes import check_ignore  # lazy: git.attributes stays off whoami's start-up
    from gitst.git.repo import repo_info  # lazy: git.repo stays off whoami's start-up

    info = repo_info(root)
    if info is None or info.toplevel is None:
        return False
    try:
        return not check_ignore(root, info.toplevel)
    except GitError:  # git could not judge the path (check-ignore exit 128): the dir is left as it is
        return False
