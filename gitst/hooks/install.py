"""Installing, removing and inspecting gitst's git hooks and the plan merge driver.

Where: the hooks directory git really uses (:func:`gitst.git.repo.hooks_dir`), so
``core.hooksPath`` is honoured and a linked worktree installs into the directory every
worktree shares.

What: the shim rendered from the one template ``gitst/hooks/shim.sh`` (package data; the
repository's top-level ``hooks/`` holds the same five files rendered, for people who copy
hooks by hand, and a test keeps them equal). Shims hold no
path: they find ``git-st`` on PATH each time, so a hooks directory shared by worktrees,
clones or virtual environments never points at one of them.

Someone else's hook: kept byte for byte by renaming it to ``<hook>.pre-gitst`` (a rename
keeps content, mode and symlinks); the shim runs it first and respects its exit status;
``uninstall`` renames it back.

Idempotent: a file that already holds the current shim is not rewritten, a config value
already set is not set again, an attribute already in effect is not added again.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from importlib.resources import files
from pathlib import Path
from typing import Any

from gitst import settings
from gitst.core.errors import UsageError
from gitst.core.jsonio import atomic_write_bytes, write_error
from gitst.core.safepaths import check, read_bytes
from gitst.core.values import as_dict, field, value_class
from gitst.git import config
from gitst.git.attributes import check_attr
from gitst.git.config import remove_section, set_local
from gitst.git.repo import hooks_dir, require_repo
from gitst.plan.driver import ATTRIBUTES_LINE, PROBE_PLAN  # the driver's names live with the plan
from gitst.plan.driver import DRIVER as MERGE_DRIVER
from gitst.plan.driver import DRIVER_COMMAND as MERGE_DRIVER_COMMAND
from gitst.plan.driver import DRIVER_LABEL as MERGE_DRIVER_NAME

__all__ = [
    "HOOK_NAMES",
    "install",
    "status",
    "uninstall",
]

# hook name -> (blocking: a failure stops git, stdin_data: git passes data on stdin,
# own_add: skipped in gitst's own `git worktree add` - GITST_WORKTREE_ADD set - which
# registers the worktree itself: no interpreter started for nothing inside every `next`)
SHIMS: dict[str, tuple[bool, bool, bool]] = {
    "pre-commit": (True, False, False),
    "pre-push": (True, True, False),
    "post-merge": (False, False, False),
    "post-rewrite": (False, True, False),
    "post-checkout": (False, False, True),
}
HOOK_NAMES = tuple(SHIMS)
CHAIN_SUFFIX = ".pre-gitst"
SHIM_MARKER = b"gitst-hook-shim"


MISSING, OURS, CHAINED, FOREIGN = "missing", "ours", "chained", "foreign"


SHIM_TEMPLATE = "shim.sh"


def shim_template() -> str:
    """The one shim template, read from the package (``importlib.resources``)."""
    return files(__package__).joinpath(SHIM_TEMPLATE).read_text(encoding="utf-8")


def shim_bytes(name: str) -> bytes:
    """The shim of hook ``name``: the template with the hook's name and behaviour filled in."""
    try:
        blocking, stdin_data, own_add = SHIMS[name]
    except KeyError:
        raise UsageError(f"unknown hook {name!r}: gitst provides {', '.join(HOOK_NAMES)}") from None
    text = (
        shim_template()
        .replace("@HOOK@", name)
        .replace("@BLOCKING@", "yes" if blocking else "no")
        .replace("@STDIN_DATA@", "yes" if stdin_data else "no")
        .replace("@SKIP_OWN_ADD@", "yes" if own_add else "no")
    )
    return text.encode("utf-8")


def check_names(names: list[str] | tuple[str, ...] | None) -> list[str]:
    if not names:
        return list(HOOK_NAMES)
    unknown = [n for n in names if n not in HOOK_NAMES]
    if unknown:
        raise UsageError(f"unknown hook {unknown[0]!r}: gitst provides {', '.join(HOOK_NAMES)}")
    return list(dict.fromkeys(names))


@value_class
class HookState:
    name: str
    state: str  # missing | ours | chained | foreign
    path: str
    chained_path: str | None = None  # the kept hook, when there is one
    outdated: bool = False  # ours, but not the shim this gitst ships
    executable: bool = True
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return as_dict(self)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except IsADirectoryError:
        return b""


def _exists(path: Path) -> bool:
    return os.path.lexists(path)


def inspect_hook(directory: Path, name: str) -> HookState:
    target = directory / name
    chained = directory / (name + CHAIN_SUFFIX)
    chained_path = str(chained) if _exists(chained) else None
    if not _exists(target):
        state = HookState(name, MISSING, str(target), chained_path)
        if chained_path:
            state.notes.append(
                f"{chained.name} is left from an earlier install; "
                "`git st hooks install` runs it again, `uninstall` puts it back"
            )
        return state
    if target.is_dir():
        return HookState(name, FOREIGN, str(target), chained_path, executable=False, notes=["is a directory"])
    content = _read(target) or b""
    executable = os.access(target, os.X_OK)
    if SHIM_MARKER in content:
        state = HookState(name, CHAINED if chained_path else OURS, str(target), chained_path, executable=executable)
        state.outdated = content != shim_bytes(name)
        if not executable:
            state.notes.append("not executable: git will skip it")
        return state
    state = HookState(name, FOREIGN, str(target), chained_path, executable=executable)
    if chained_path:
        state.notes.append(f"{chained.name} is also there; gitst will not overwrite either")
    return state


@value_class
class Report:
    """What install/uninstall did, line by line, and where."""

    hooks_dir: str
    core_hooks_path: str | None
    lines: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    changed: bool = False


def _context(cwd: str | os.PathLike[str] | None) -> tuple[Path, str | None, Path]:
    info = require_repo(cwd)
    return Path(hooks_dir(cwd)), config.get("core.hooksPath", cwd), info.work_tree


def _write_shim(target: Path, name: str) -> None:
    atomic_write_bytes(target, shim_bytes(name), mode=0o755)


def install(
    cwd: str | os.PathLike[str] | None = None,
    names: list[str] | tuple[str, ...] | None = None,
    *,
    merge_driver: bool = True,
) -> Report:
    """Install the shims (and the merge driver); refuse, writing nothing, when unsafe."""
    selected = check_names(names)
    directory, hooks_path, top = _context(cwd)
    report = Report(str(directory), hooks_path)
    states = [inspect_hook(directory, name) for name in selected]
    _refuse_blocked(states)
    if merge_driver:  # the .gitattributes it may extend: a link or a FIFO there is refused before any write
        with contextlib.suppress(IsADirectoryError):
            check(top / ".gitattributes", top, shown=".gitattributes")
    directory.mkdir(parents=True, exist_ok=True)
    for state in states:
        _install_shim(state, report)
    if hooks_path and not os.path.isabs(os.path.expanduser(hooks_path)):
        report.warnings.append(
            f"core.hooksPath is relative ({hooks_path}): git looks for hooks in that directory of each worktree; "
            "run `git st hooks install` in every worktree, or commit the shims (they hold no path)"
        )
    if merge_driver:
        _install_merge_driver(cwd, top, report)
    if shutil.which("git-st") is None:
        report.warnings.append(
            "git-st is not on PATH: the hooks will warn and let git go on "
            "(`git config st.hooksRequired true` makes them refuse instead)"
        )
    return report


def _refuse_blocked(states: list[HookState]) -> None:
    """Refuse (exit 2, nothing installed) when a foreign hook cannot be kept aside: its
    ``.chained`` name is taken, or it is a directory."""
    blocked = [s for s in states if s.state == FOREIGN and s.chained_path]
    blocked += [s for s in states if s.state == FOREIGN and Path(s.path).is_dir()]
    if blocked:
        s = blocked[0]
        raise UsageError(
            f"{s.name}: {s.path} is not gitst's and "
            + (f"{s.chained_path} exists too" if s.chained_path else "it is a directory")
            + "; nothing was installed",
            fix="move one of them out of the way, then run `git st hooks install` again",
        )


def _install_shim(state: HookState, report: Report) -> None:
    """Write (or keep) the shim of one hook; a foreign hook is kept aside and chained."""
    target = Path(state.path)
    if state.state == FOREIGN:
        os.rename(target, str(target) + CHAIN_SUFFIX)
        _write_shim(target, state.name)
        report.lines.append(
            f"{state.name}: installed {target}; "
            f"your existing hook was kept as {target.name}{CHAIN_SUFFIX} and runs first"
        )
        report.changed = True
    elif state.state == MISSING:
        _write_shim(target, state.name)
        extra = f" (it runs {target.name}{CHAIN_SUFFIX} first)" if state.chained_path else ""
        report.lines.append(f"{state.name}: installed {target}{extra}")
        report.changed = True
    elif state.outdated or not state.executable:
        _write_shim(target, state.name)
        report.lines.append(f"{state.name}: updated {target}")
        report.changed = True
    else:
        report.lines.append(f"{state.name}: already installed")


def _install_merge_driver(cwd: str | os.PathLike[str] | None, top: Path, report: Report) -> None:
    changed = set_local(f"merge.{MERGE_DRIVER}.name", MERGE_DRIVER_NAME, cwd)
    changed = set_local(f"merge.{MERGE_DRIVER}.driver", MERGE_DRIVER_COMMAND, cwd) or changed
    if changed:
        report.lines.append(
            f"merge driver: set merge.{MERGE_DRIVER}.driver = {MERGE_DRIVER_COMMAND!r} in this repository's config"
        )
        report.changed = True
    else:
        report.lines.append(f"merge driver: merge.{MERGE_DRIVER}.driver already set")
    if check_attr([PROBE_PLAN], top, attribute="merge").get(PROBE_PLAN) == MERGE_DRIVER:
        report.lines.append(f"merge driver: plan files already have merge={MERGE_DRIVER}")
        return
    attributes = top / ".gitattributes"
    try:  # a file of the clone: a committed `.gitattributes -> /dev/zero` or a link outside is refused
        old = read_bytes(attributes, top, shown=".gitattributes") or b""
    except IsADirectoryError as exc:
        raise write_error(attributes, exc) from None
    if old and not old.endswith(b"\n"):
        old += b"\n"
    atomic_write_bytes(attributes, old + ATTRIBUTES_LINE.encode() + b"\n")
    report.lines.append(
        f"merge driver: added {ATTRIBUTES_LINE!r} to {attributes} (commit it so every clone merges plans this way)"
    )
    report.changed = True


def uninstall(cwd: str | os.PathLike[str] | None = None, names: list[str] | tuple[str, ...] | None = None) -> Report:
    """Remove our shims, put kept hooks back byte for byte; drop the merge driver config."""
    selected = check_names(names)
    directory, hooks_path, _top = _context(cwd)
    report = Report(str(directory), hooks_path)
    for name in selected:
        state = inspect_hook(directory, name)
        target = Path(state.path)
        if state.state in (OURS, CHAINED):
            os.unlink(target)
            report.changed = True
            if state.chained_path:
                os.rename(state.chained_path, target)
                report.lines.append(f"{name}: removed gitst's hook and put back your hook {target}")
            else:
                report.lines.append(f"{name}: removed {target}")
        elif state.state == MISSING and state.chained_path:
            os.rename(state.chained_path, target)
            report.changed = True
            report.lines.append(f"{name}: put back your hook {target}")
        elif state.state == FOREIGN:
            report.lines.append(f"{name}: {target} is not gitst's; left alone")
            if state.chained_path:
                report.warnings.append(f"{name}: {state.chained_path} was left too; decide which of the two you want")
        else:
            report.lines.append(f"{name}: not installed")
    if (names is None or set(selected) == set(HOOK_NAMES)) and remove_section(f"merge.{MERGE_DRIVER}", cwd):
        report.changed = True
        report.lines.append(
            f"merge driver: removed merge.{MERGE_DRIVER} from this repository's config "
            f"(a committed .gitattributes line stays; without the config git merges plans as text)"
        )
    return report


def status(cwd: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Per hook: ours, chained, foreign or missing; plus the merge driver's setup."""
    directory, hooks_path, top = _context(cwd)
    return {
        "hooks_dir": str(directory),
        "core_hooks_path": hooks_path,
        "hooks": [inspect_hook(directory, name).to_dict() for name in HOOK_NAMES],
        "merge_driver": {
            "name": MERGE_DRIVER,
            "driver": config.get(f"merge.{MERGE_DRIVER}.driver", cwd),
            "plan_attribute": check_attr([PROBE_PLAN], top, attribute="merge").get(PROBE_PLAN) == MERGE_DRIVER,
        },
        "git_st": shutil.which("git-st"),
        "hooks_required": settings.bool_setting("hooks_required", cwd),
        "auto_repair": settings.bool_setting("auto_repair", cwd),
    }
