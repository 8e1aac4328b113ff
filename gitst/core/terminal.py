"""Text for a terminal: what a person reads never carries control sequences.

A cloned repository, a lock record or an argument can hold ESC, CR, BEL or C1 bytes in an
id, a step, a branch name or a path; printed raw they move the cursor, recolour or rewrite
what a person sees (docs/security.md). :func:`sanitize` shows them escaped (``\\x1b``).
Every human rendering uses it - :meth:`gitst.core.diagnostics.Diagnostic.to_text`, the
CLI's error messages and tables (:mod:`gitst.cli.output` re-exports it for the CLI) and the
hooks' messages. JSON output is never sanitized: it is exact, and JSON escapes control
characters itself.
"""

from __future__ import annotations

import re

__all__ = ["escape_json_controls", "sanitize"]

# C0 controls but tab and newline, DEL, and the C1 controls (U+0080-U+009F).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def sanitize(text: str) -> str:
    """``text`` with every control character but tab and newline escaped (``\\x1b``)."""
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def escape_json_controls(json_text: str) -> str:
    """Compact JSON text with the control characters :func:`sanitize` escapes written as JSON
    ``\\uXXXX`` escapes (a JSON encoder leaves DEL and C1 raw): still valid JSON that reads
    back to the same values, and safe on a terminal (the ``update_plan:`` line)."""
    return _CONTROL.sub(lambda match: f"\\u{ord(match.group()):04x}", json_text)
