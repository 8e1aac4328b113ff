"""Which files a tool call is about to write, from its ``tool_input`` (PreToolUse).

- Claude Code's ``Edit``, ``Write``, ``MultiEdit`` (``file_path``) and ``NotebookEdit``
  (``notebook_path``);
- a shell command (Claude Code's ``Bash``, Codex's ``Bash``/``shell``: ``command``, a string
  or an argv list): the targets of output redirections (``>``, ``>>``, ``&>``) and the
  operands of the commands that write files (``tee``, ``cp``, ``mv``, ``rm``, ``touch``,
  ``truncate``, ``ln``, ``install``, ``sed -i``/``perl -i``, ``git mv|rm|checkout|restore``).
  A command that only reads (``cat reserved.py``) is not stopped;
- Codex's ``apply_patch`` (``input``/``patch``/``command``): the ``*** Add File:``,
  ``*** Update File:``, ``*** Delete File:`` and ``*** Move to:`` headers.

Paths are made repository-relative (what reservations match); one outside the repository
is dropped. A command that cannot be split (an open quote) yields what could be read.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from typing import Any

__all__ = ["EDIT_TOOLS", "SHELL_TOOLS", "written_paths"]

EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
SHELL_TOOLS = frozenset({"Bash", "shell", "local_shell", "exec_command"})
PATCH_TOOLS = frozenset({"apply_patch"})
WRITERS = frozenset({"tee", "cp", "mv", "rm", "touch", "truncate", "ln", "install", "rmdir", "mkdir"})
IN_PLACE = frozenset({"sed", "perl"})
GIT_WRITES = frozenset({"mv", "rm", "checkout", "restore"})
SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")"})
REDIRECTS = (">>", "&>", ">|", ">", "1>", "2>")
PATCH_HEADERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")


def written_paths(tool: str, tool_input: Any, *, cwd: str, top: str) -> list[str]:
    """The repository-relative paths the call writes (empty: nothing to check)."""
    if not isinstance(tool_input, dict):
        return []
    if tool in EDIT_TOOLS:
        raw = [v for k in ("file_path", "notebook_path") if isinstance(v := tool_input.get(k), str)]
    elif tool in SHELL_TOOLS:
        raw = _shell_input(tool_input)
    elif tool in PATCH_TOOLS:
        raw = _patch_targets(tool_input)
    else:
        raw = []
    return _relative(raw, cwd=cwd, top=top)


def _shell_input(tool_input: dict[str, Any]) -> list[str]:
    command = tool_input.get("command") or tool_input.get("cmd")
    if isinstance(command, list):
        command = " ".join(shlex.quote(str(part)) for part in command)
    return _shell_targets(command) if isinstance(command, str) else []


def _patch_targets(tool_input: dict[str, Any]) -> list[str]:
    patch = next((v for k in ("input", "patch", "command") if isinstance(v := tool_input.get(k), str)), "")
    return [line[len(h) :].strip() for line in patch.splitlines() for h in PATCH_HEADERS if line.startswith(h)]


def _relative(paths: list[str], *, cwd: str, top: str) -> list[str]:
    out: list[str] = []
    real_top = os.path.realpath(top)
    for path in paths:
        if not path:
            continue
        full = os.path.realpath(os.path.join(cwd, os.path.expanduser(path)))
        if full == real_top or not full.startswith(real_top + os.sep):
            continue
        rel = os.path.relpath(full, real_top)
        if rel not in out:
            out.append(rel)
    return out


def _words(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    words: list[str] = []
    with contextlib.suppress(ValueError):  # an open quote: what was read so far
        words.extend(lexer)
    return words


def _shell_targets(command: str) -> list[str]:
    words = _words(command)
    targets: list[str] = []
    segment: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word in (">", ">>", "&>", ">|") and index + 1 < len(words):
            targets.append(words[index + 1])
            index += 2
            continue
        if word in SEPARATORS:
            targets.extend(_operands(segment))
            segment = []
        else:
            segment.append(word)
        index += 1
    targets.extend(_operands(segment))
    return [t for t in targets if t and not t.startswith("&")]


def _in_place(args: list[str], plain: list[str]) -> list[str]:
    """``sed -i``/``perl -i``: the operands after the script; none without ``-i``."""
    if not any(a.startswith("-i") or a == "--in-place" for a in args):
        return []
    return plain[1:]


def _git_writes(plain: list[str]) -> list[str]:
    if not plain or plain[0] not in GIT_WRITES:
        return []
    return [a for a in plain[1:] if a != "--"]


def _operands(segment: list[str]) -> list[str]:
    """The files one simple command writes (its name first, after any ``VAR=value``)."""
    while segment and "=" in segment[0] and not segment[0].startswith("-"):
        segment = segment[1:]
    if not segment:
        return []
    name, args = os.path.basename(segment[0]), segment[1:]
    plain = [a for a in args if not a.startswith("-")]
    if name in WRITERS:
        return plain
    if name in IN_PLACE:
        return _in_place(args, plain)
    return _git_writes(plain) if name == "git" else []
