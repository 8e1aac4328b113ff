"""The append-only rule for st plans: a new version must extend the old one byte for byte.

Every line the old version holds — a torn last line included — must be in the new version
unchanged and in place; only whole lines may follow. The first line where that fails is
named, with both versions of it, so the author sees exactly what changed.
"""

from __future__ import annotations

from gitst.diagnostics import Diagnostic

CODE = "plan-rewrite"
_SHOW = 100  # characters of a line quoted in the message


def first_changed_line(old: bytes, new: bytes) -> int | None:
    """1-based number of the first line of ``old`` that ``new`` does not keep; None if none.

    ``new`` extends ``old`` when it starts with ``old`` and ``old`` is empty or ends with a
    newline (text added to a torn last line changes that line).
    """
    if new.startswith(old) and (not old or old.endswith(b"\n") or len(new) == len(old)):
        return None
    pos = 0
    number = 0
    while pos < len(old):
        number += 1
        end = old.find(b"\n", pos)
        end = len(old) if end < 0 else end + 1
        if new[pos:end] != old[pos:end]:
            return number
        pos = end
    return number  # every byte kept, but the torn last line was extended


def _line(data: bytes, number: int) -> bytes | None:
    lines = data.split(b"\n")
    if number - 1 < len(lines):
        line = lines[number - 1]
        if line or number < len(lines):
            return line
    return None


def _quote(line: bytes | None) -> str:
    if line is None:
        return "nothing (the line was removed)"
    text = line.decode("utf-8", "replace")
    return repr(text if len(text) <= _SHOW else text[:_SHOW] + "…")


def check_append_only(path: str, old: bytes | None, new: bytes, *, old_name: str = "HEAD", new_name: str = "the staged file") -> Diagnostic | None:
    """A ``plan-rewrite`` diagnostic when ``new`` does not extend ``old`` (None: fine)."""
    if old is None:
        return None
    number = first_changed_line(old, new)
    if number is None:
        return None
    before, after = _line(old, number), _line(new, number)
    kept = old.count(b"\n") + (0 if old.endswith(b"\n") else 1)
    return Diagnostic(
        path=path,
        line=number,
        code=CODE,
        message=(
            f"line {number} differs from {old_name}: a plan is append-only, the lines {old_name} holds must stay "
            f"byte for byte ({old_name} has {_quote(before)}; {new_name} has {_quote(after)})"
        ),
        fix=(
            f"restore lines 1-{kept} from `git show {old_name}:{path}` and record the change as a "
            f"new event (git st set-status/set-notes/...); for a broken seq history `git st doctor --repair-seq` "
            f"appends a sealing checkpoint instead of rewriting"
        ),
    )
