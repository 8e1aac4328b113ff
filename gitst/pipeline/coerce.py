"""JavaScript's ``String()`` and ``parseInt()`` for JSON values, in Python.

Seed 001's pipeline state is written and read by JavaScript (``parseInt(pr_number)``,
"NaN → null"); gitst must read the same files and get the same numbers, so these follow
ECMAScript exactly for every value JSON can hold:

- ``js_string``: ``String(v)`` — ``null`` → ``"null"``, booleans → ``"true"``/``"false"``,
  integral numbers below 1e21 in plain digits, arrays joined with ``,`` (``null`` items as
  empty), objects → ``"[object Object]"``.
- ``js_parse_int``: ``parseInt(v)`` without a radix — ``String(v)``, then leading
  JavaScript white space (not Python's ``isspace``: no ``\\x1c``-``\\x1f``, no ``\\x85``)
  is skipped, an optional ``+``/``-``, a ``0x``/``0X`` prefix switches to hexadecimal, and
  the longest run of ASCII digits that follows is the number (``"42abc"`` → 42). No digits
  at all is NaN, returned as ``None``.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

# ECMAScript WhiteSpace + LineTerminator (StrWhiteSpaceChar): TAB VT FF SP NBSP ZWNBSP,
# every Unicode "Zs" space, LF CR LS PS.
_JS_SPACE = (
    "\t\x0b\x0c \u00a0\ufeff"
    "\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u202f\u205f\u3000"
    "\n\r\u2028\u2029"
)
_DEC = re.compile(r"[0-9]+")
_HEX = re.compile(r"[0-9A-Fa-f]+")


def js_string(value: Any) -> str:
    """``String(value)`` for a value decoded from JSON."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, (list, tuple)):
        return ",".join("" if item is None else js_string(item) for item in value)
    return "[object Object]"


def _js_number(value: float) -> str:
    """Number::toString (ECMAScript 6.1.6.1.20) from Python's shortest round-trip digits."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    parts = Decimal(repr(abs(value))).as_tuple()
    exponent = parts.exponent
    if not isinstance(exponent, int):  # "n", "N", "F": NaN and the infinities, answered above
        raise ValueError(f"not a finite number: {value!r}")
    raw = "".join(map(str, parts.digits))
    digits = raw.rstrip("0")
    k = len(digits)
    n = exponent + (len(raw) - k) + k  # value = digits * 10**(n - k)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        exp = n - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        text = f"{mantissa}e{'+' if exp >= 0 else '-'}{abs(exp)}"
    return sign + text


def js_parse_int(value: Any) -> int | None:
    """``parseInt(value)`` (no radix); ``None`` where JavaScript gives NaN."""
    text = js_string(value)
    pos = len(text) - len(text.lstrip(_JS_SPACE))  # the leading JavaScript white space
    sign = 1
    if text[pos : pos + 1] in ("+", "-"):
        sign = -1 if text[pos] == "-" else 1
        pos += 1
    digits_re, base = _DEC, 10
    if text[pos : pos + 2] in ("0x", "0X"):
        digits_re, base = _HEX, 16
        pos += 2
    match = digits_re.match(text, pos)
    if match is None:
        return None
    return sign * int(match.group(0), base)
