"""Text for a terminal: what a person reads never carries control sequences.

A cloned repository, a lock record or an argument can hold ESC, CR, BEL or C1 bytes in an
id, a step, a branch name or a path; printed raw they move the cursor, recolour or rewrite
what a person sees (docs/security.md); a bidi override (U+202E) or a zero-width character
reorders or hides text without a control byte. :func:`sanitize` shows them all escaped
(``\\x1b``, ``\\u202e``).
Every human rendering uses it - :meth:`gitst.core.diagnostics.Diagnostic.to_text`, the
CLI's error messages and tables (:mod:`gitst.cli.output` re-exports it for the CLI) and the
hooks' messages. JSON output is never sanitized: it is exact, and JSON escapes control
characters itself.
"""

from __future__ import annotations

import re

__all__ = ["escape_json_controls", "sanitize"]

# C0 controls but tab and newline, DEL, the C1 controls (U+0080-U+009F), and every format
# character (Unicode category Cf: bidi overrides and isolates U+202A-U+202E, U+2066-U+2069,
# zero-width U+200B-U+200F, U+2060-U+2064, the BOM U+FEFF, tag characters, ...) plus the
# line and paragraph separators U+2028/U+2029: invisible, yet they reorder or hide what is
# shown ("Trojan Source"). The list is Unicode 15's; a test compares it with unicodedata.
_CONTROL = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    r"\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    r"\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    r"\U000e0001\U000e0020-\U000e007f]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def sanitize(text: str) -> str:
    """``text`` with every control character but tab and newline, and every invisible format
    character, escaped (``\\x1b``, ``\\u202e``, ``\\U000e0041``)."""
    return _CONTROL.sub(_escape, text)


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON spells a character beyond the BMP as a surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def escape_json_controls(json_text: str) -> str:
    """Compact JSON text with the characters :func:`sanitize` escapes written as JSON
    ``\\uXXXX`` escapes (a JSON encoder leaves DEL, C1 and format characters raw): still valid
    JSON that reads back to the same values, and safe on a terminal (the ``update_plan:`` line)."""
    return _CONTROL.sub(_json_escape, json_text)
