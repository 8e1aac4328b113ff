"""Where a value sits in JSON text: JSON pointer parts -> (line, column).

Used only on the error path (a schema violation wants a line), so it is a small scanner,
not a parser: the text is already known to be valid JSON (orjson parsed it). Duplicate
keys resolve to the last occurrence, as orjson does. Columns count characters, 1-based.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_WS = re.compile(r"[ \t\r\n]*")
_SCALAR_END = re.compile(r"[,\]}\s]|$")
_STRUCT = re.compile(r'["\[\]{}]')


def _skip_ws(text: str, pos: int) -> int:
    match = _WS.match(text, pos)  # never None: the pattern matches the empty string
    return match.end() if match else pos


def _skip_value(text: str, pos: int) -> int:
    """Position just after the value starting at ``pos`` (iterative: no recursion limit)."""
    char = text[pos] if pos < len(text) else ""
    if char == '"':
        match = _STRING.match(text, pos)
        return match.end() if match else len(text)
    if char not in "[{":
        end = _SCALAR_END.search(text, pos)  # never None: ``$`` matches at the end
        return end.start() if end else len(text)
    depth = 0
    while True:
        match = _STRUCT.search(text, pos)
        if match is None:
            return len(text)
        token = match.group()
        if token == '"':  # noqa: S105 - a JSON token, not a password
            string = _STRING.match(text, match.start())
            pos = string.end() if string else len(text)
            continue
        pos = match.end()
        depth += 1 if token in "[{" else -1  # noqa: S105 - a JSON token, not a password
        if depth == 0:
            return pos


def _decode_key(raw: str) -> str:
    if "\\" not in raw:
        return raw[1:-1]
    import json  # lazy: a key with an escape is rare, and json costs the validate path its import

    try:
        return str(json.loads(raw))
    except ValueError:
        return raw[1:-1]


def _member(text: str, pos: int, wanted: str) -> int | None:
    """Offset of member ``wanted``'s value in the object opening at ``pos`` (the last one
    when the key repeats, as orjson keeps it)."""
    pos = _skip_ws(text, pos + 1)
    found = None
    while pos < len(text) and text[pos] == '"':
        key_match = _STRING.match(text, pos)
        if key_match is None:
            return None
        key = _decode_key(key_match.group())
        pos = _skip_ws(text, key_match.end())
        if pos >= len(text) or text[pos] != ":":
            return None
        pos = _skip_ws(text, pos + 1)
        if key == wanted:
            found = pos
        pos = _skip_ws(text, _skip_value(text, pos))
        if pos < len(text) and text[pos] == ",":
            pos = _skip_ws(text, pos + 1)
        else:
            break
    return found


def _element(text: str, pos: int, part: object) -> int | None:
    """Offset of element ``part`` (an index) of the array opening at ``pos``."""
    if not isinstance(part, int) and not (isinstance(part, str) and part.isdigit()):
        return None
    pos = _skip_ws(text, pos + 1)
    for _ in range(int(part)):
        if pos >= len(text) or text[pos] == "]":
            return None
        pos = _skip_ws(text, _skip_value(text, pos))
        if pos < len(text) and text[pos] == ",":
            pos = _skip_ws(text, pos + 1)
        else:
            return None
    if pos >= len(text) or text[pos] == "]":
        return None
    return pos


def offset_of(text: str, path: Sequence[Any]) -> int | None:
    """Character offset of the value at ``path`` (None when the path is not there)."""
    pos: int | None = _skip_ws(text, 0)
    for part in path:
        if pos is None or pos >= len(text):
            return None
        char = text[pos]
        if char == "{":
            pos = _member(text, pos, str(part))
        elif char == "[":
            pos = _element(text, pos, part)
        else:
            return None
    return pos


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset."""
    line = text.count("\n", 0, offset) + 1
    start = text.rfind("\n", 0, offset) + 1
    return line, offset - start + 1


def locate(text: str, path: Sequence[Any]) -> tuple[int, int] | None:
    """(line, column) of the value at ``path``; the nearest existing parent when absent."""
    path = list(path)
    while True:
        offset = offset_of(text, path)
        if offset is not None:
            return line_col(text, offset)
        if not path:
            return None
        path.pop()
