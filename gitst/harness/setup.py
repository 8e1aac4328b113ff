"""`git st setup claude|codex [--local] [--remove]`: the harness's hook configuration for the
work tree you are in, merged into what is there (docs/harness.md, "Setup").

- **Claude Code**: ``.claude/settings.json`` (``--local``: ``.claude/settings.local.json``,
  which Claude Code keeps out of git), its ``hooks`` object: event → list of matcher groups
  ``{"matcher": …, "hooks": [{"type": "command", "command": …, "timeout": …}]}``.
- **Codex**: ``.codex/hooks.json`` (the same three levels; project hooks load next to
  ``~/.codex/hooks.json``), plus a section of ``AGENTS.md`` between two marker comments.

Merging: gitst adds one matcher group per event whose command is ``git st hook-agent
EVENT``; every other key, event and group is left as it is, and a group gitst added before
is not added twice (idempotent). ``--remove`` takes back exactly those groups: when the
rest is what the file held before the first setup, the file's own bytes from then are
written back (byte for byte), a file setup created is deleted, and otherwise (you edited it
since) the rest is written as JSON with two-space indents. The bytes from before live in the
work tree's git dir (``<git-dir>/gitst/setup/``): never in the work tree, never committed.

It works in the main checkout and in every linked worktree: each has its own ``.claude/``
(Claude Code looks for it relative to its working directory, anthropics/claude-code
#46808) and its own git dir.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from gitst.core import jsonio
from gitst.core.errors import UsageError
from gitst.core.safepaths import check
from gitst.core.values import field, value_class
from gitst.git.repo import require_repo

__all__ = ["HARNESSES", "MARK_BEGIN", "MARK_END", "Written", "hook_groups", "remove", "setup"]

COMMAND = "git st hook-agent"
WRITES = "Edit|Write|MultiEdit|NotebookEdit|Bash"
# event: (matcher or None, timeout in seconds)
CLAUDE_EVENTS: dict[str, tuple[str | None, int]] = {
    "SessionStart": (None, 30),
    "UserPromptSubmit": (None, 30),
    "PreToolUse": (WRITES, 10),
    "PostToolUse": (None, 30),
    "PreCompact": (None, 30),
    "Stop": (None, 30),
    "SessionEnd": (None, 60),
    "WorktreeCreate": (None, 600),
    "WorktreeRemove": (None, 120),
    "TaskCreated": (None, 30),
    "TaskCompleted": (None, 30),
}
CODEX_EVENTS: dict[str, tuple[str | None, int]] = {
    "SessionStart": (None, 30),
    "UserPromptSubmit": (None, 30),
    "PreToolUse": ("Bash|apply_patch|shell", 10),
    "PostToolUse": (None, 30),
    "PreCompact": (None, 30),
    "Stop": (None, 30),
}
HARNESSES = ("claude", "codex")
MARK_BEGIN = "<!-- gitst:begin (git st setup codex; `git st setup codex --remove` takes it out) -->"
MARK_END = "<!-- gitst:end -->"
AGENTS_SECTION = """## Coordination: gitst

This repository coordinates parallel agents with gitst. Hooks register this session, keep
its claims alive and save a snapshot before compaction (`.codex/hooks.json`); `git st
prime` prints the same context on demand.

1. `git st next --format json` takes the next ready item: claims it, opens its worktree.
2. Work only in that worktree (`.path` of the JSON).
3. `git st land --format json` lands it; repeat until `next` exits 1.
4. Keep `update_plan` current: `git st import-update-plan` mirrors it into the team's plan.

gitst names your session by `CODEX_THREAD_ID` (the id the hooks get); where your shell lacks
it, export `ST_SESSION_ID` with one stable id for the whole session.
"""


@value_class
class Written:
    path: Path
    action: str  # "created", "updated", "unchanged", "restored", "removed", "cleaned"
    events: list[str] = field(default_factory=list)
    content: bytes | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "action": self.action, "events": self.events}


def hook_groups(harness: str) -> dict[str, dict[str, Any]]:
    """The matcher group gitst adds per event of ``harness``."""
    events = CLAUDE_EVENTS if harness == "claude" else CODEX_EVENTS
    groups = {}
    for event, (matcher, timeout) in events.items():
        group: dict[str, Any] = {}
        if matcher is not None:
            group["matcher"] = matcher
        group["hooks"] = [{"type": "command", "command": f"{COMMAND} {event}", "timeout": timeout}]
        groups[event] = group
    return groups


def _ours(group: object) -> bool:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(hooks, list) and any(
        isinstance(h, dict) and str(h.get("command", "")).startswith(COMMAND) for h in hooks
    )


def _targets(harness: str, local: bool, cwd: str | None) -> tuple[Path, Path, Path | None]:
    """(work tree top, hooks file, AGENTS.md or None)."""
    if harness not in HARNESSES:
        raise UsageError(f"unknown harness {harness!r}", fix="use one of: " + ", ".join(HARNESSES))
    info = require_repo(cwd)
    top = info.work_tree
    if harness == "claude":
        name = "settings.local.json" if local else "settings.json"
        return top, top / ".claude" / name, None
    if local:
        raise UsageError("--local is for Claude Code only", fix="`git st setup codex` writes .codex/hooks.json")
    return top, top / ".codex" / "hooks.json", top / "AGENTS.md"


def _backup(path: Path, top: Path, cwd: str | None) -> Path:
    info = require_repo(cwd)
    rel = os.path.relpath(path, top).replace(os.sep, "__")
    return Path(info.git_dir) / "gitst" / "setup" / (rel + ".orig")


def _read(path: Path, top: Path) -> bytes | None:
    check(path, top)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _parse(data: bytes | None, path: Path) -> dict[str, Any]:
    if data is None or not data.strip():
        return {}
    settings = jsonio.load_object(data, str(path))
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict) or any(not isinstance(v, list) for v in hooks.values()):
        raise UsageError(f'{path}: "hooks" must map each event to a list of matcher groups', fix="fix it by hand first")
    return settings


def _dump(value: dict[str, Any]) -> bytes:
    return jsonio.dumps_pretty(value)


def _save_backup(backup: Path, original: bytes | None) -> None:
    if backup.exists():
        return  # the bytes from before the *first* setup are the ones to restore
    marker = b"absent\n" if original is None else b"present\n" + original
    jsonio.atomic_write_bytes(backup, marker, make_parents=True)


def _load_backup(backup: Path) -> tuple[bool, bytes | None]:
    """(a backup exists, the original bytes or None when there was no file)."""
    try:
        raw = backup.read_bytes()
    except FileNotFoundError:
        return False, None
    if raw.startswith(b"present\n"):
        return True, raw[len(b"present\n") :]
    return True, None


def setup(harness: str, *, local: bool = False, cwd: str | None = None) -> list[Written]:
    """Merge gitst's hooks (and, for Codex, the AGENTS.md section) in; what was written."""
    top, path, agents = _targets(harness, local, cwd)
    done = [_merge_hooks(harness, path, top, cwd)]
    if agents is not None:
        done.append(_add_section(agents, top, cwd))
    return done


def _merge_hooks(harness: str, path: Path, top: Path, cwd: str | None) -> Written:
    original = _read(path, top)
    settings = _parse(original, path)
    hooks = settings.setdefault("hooks", {})
    added = []
    for event, group in hook_groups(harness).items():
        groups = hooks.setdefault(event, [])
        if any(_ours(g) for g in groups):
            continue
        groups.append(group)
        added.append(event)
    if not added:
        return Written(path, "unchanged", [], original)
    _save_backup(_backup(path, top, cwd), original)
    data = _dump(settings)
    jsonio.atomic_write_bytes(path, data, make_parents=True)
    return Written(path, "created" if original is None else "updated", added, data)


def _add_section(path: Path, top: Path, cwd: str | None) -> Written:
    original = _read(path, top)
    text = (original or b"").decode("utf-8", "surrogateescape")
    if MARK_BEGIN in text:
        return Written(path, "unchanged", [], original)
    _save_backup(_backup(path, top, cwd), original)
    joiner = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
    new = text + joiner + MARK_BEGIN + "\n" + AGENTS_SECTION + MARK_END + "\n"
    data = new.encode("utf-8", "surrogateescape")
    jsonio.atomic_write_bytes(path, data, make_parents=True)
    return Written(path, "created" if original is None else "updated", ["AGENTS.md section"], data)


def remove(harness: str, *, local: bool = False, cwd: str | None = None) -> list[Written]:
    """Take back what :func:`setup` added (module docstring); what was written."""
    top, path, agents = _targets(harness, local, cwd)
    done = [_remove_hooks(path, top, cwd)]
    if agents is not None:
        done.append(_remove_section(agents, top, cwd))
    return done


def _restore(path: Path, rest_equal: bool, backup: Path, fallback: bytes | None, removed: list[str]) -> Written:
    """Write back the original bytes when what is left equals them, else ``fallback``; None
    for either means delete the file."""
    had, original = _load_backup(backup)
    if had and rest_equal:
        data, action = original, "restored"
    else:
        data, action = fallback, "cleaned"
    if data is None:
        path.unlink(missing_ok=True)
        _drop_empty_dir(path.parent)
        action = "removed"
    else:
        jsonio.atomic_write_bytes(path, data, make_parents=False)
    backup.unlink(missing_ok=True)
    return Written(path, action, removed, data)


def _drop_empty_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        directory.rmdir()  # only when empty: a .claude/ holding anything else stays


def _remove_hooks(path: Path, top: Path, cwd: str | None) -> Written:
    current = _read(path, top)
    backup = _backup(path, top, cwd)
    if current is None:
        backup.unlink(missing_ok=True)
        return Written(path, "unchanged", [])
    settings = _parse(current, path)
    hooks = settings.get("hooks", {})
    removed = []
    for event in list(hooks):
        kept = [g for g in hooks[event] if not _ours(g)]
        if len(kept) != len(hooks[event]):
            removed.append(event)
            if kept:
                hooks[event] = kept
            else:
                del hooks[event]
    if not removed:
        return Written(path, "unchanged", [], current)
    had, original = _load_backup(backup)
    before = _parse(original, path) if had else None
    if had and before is not None and not before.get("hooks") and not hooks:
        settings.pop("hooks", None)
        before.pop("hooks", None)
    rest_equal = had and before == settings
    fallback = None if not settings else _dump(settings)
    return _restore(path, rest_equal, backup, fallback, removed)


def _remove_section(path: Path, top: Path, cwd: str | None) -> Written:
    current = _read(path, top)
    backup = _backup(path, top, cwd)
    text = (current or b"").decode("utf-8", "surrogateescape")
    start, end = text.find(MARK_BEGIN), text.find(MARK_END)
    if current is None or start < 0 or end < start:
        return Written(path, "unchanged", [], current)
    rest = text[:start].rstrip("\n") + ("\n" if text[:start].strip() else "") + text[end + len(MARK_END) :].lstrip("\n")
    had, original = _load_backup(backup)
    original_text = (original or b"").decode("utf-8", "surrogateescape")
    rest_equal = had and rest.strip() == original_text.strip()
    fallback = rest.encode("utf-8", "surrogateescape") if rest.strip() else None
    return _restore(path, rest_equal, backup, fallback, ["AGENTS.md section"])
