"""Path globs of reservations: what a pattern covers, and whether two patterns can cover one path.

A pattern is **repository-relative and anchored at the top** (``src/api/*.py`` never matches
``lib/src/api/x.py``; write ``**/api/*.py`` for any depth), in the gitwildmatch style of
``.gitignore`` without its unanchored-name rule:

- ``*`` any run of characters within one path segment (never ``/``), ``?`` one character,
  ``[abc]``, ``[a-z]``, ``[!abc]`` one character of (not of) a set;
- a segment that is exactly ``**`` any number of whole segments, none included;
- a pattern whose last segment is a plain name (no glob character) also covers everything
  below it, as a directory: ``src/api`` (or ``src/api/``) covers ``src/api/v1/x.py``; a
  pattern ending in a glob (``src/*.py``) covers only what it matches (``src/api/**`` for a
  whole tree).

``./`` and a leading or trailing ``/`` are dropped; an empty pattern, ``..``, a backslash or a
control character is refused (:class:`~gitst.core.errors.UsageError`).

:func:`overlap` decides exactly whether some path is covered by both patterns (a product of
the two patterns' automata: segment by segment, and inside a segment character class by
character class), so two sessions never hold intersecting reservations.
"""

from __future__ import annotations

import re
from functools import lru_cache

from gitst.core.errors import UsageError

__all__ = ["covers", "normalize", "overlap"]

# One character of a segment pattern: ("lit", c), ("any",), ("set", chars, negated), ("star",).
Token = tuple[object, ...]
STAR: Token = ("star",)
ANY: Token = ("any",)
MAX_PATTERN = 1024


def normalize(pattern: str) -> str:
    """``pattern`` in its one spelling (``./a//b/`` → ``a/b``), or UsageError saying why not."""
    text = pattern.strip() if isinstance(pattern, str) else ""
    parts = [p for p in text.split("/") if p not in ("", ".")]
    bad = _why_bad(text, parts)
    if bad is not None:
        raise UsageError(
            f"invalid path pattern {pattern!r}: {bad}",
            fix="give a repository-relative glob such as src/api/** or docs/*.md",
        )
    collapsed: list[str] = []
    for part in parts:  # a/**/**/b is a/**/b
        if not (part == "**" and collapsed and collapsed[-1] == "**"):
            collapsed.append(part)
    return "/".join(collapsed)


def _why_bad(text: str, parts: list[str]) -> str | None:
    if not text:
        return "it is empty"
    if len(text) > MAX_PATTERN:
        return f"it is longer than {MAX_PATTERN} characters"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in text) or "\\" in text:
        return "it holds a backslash or a control character"
    if any(p == ".." for p in parts):
        return "'..' leaves the repository"
    if not parts:
        return "it names no path (use ** for the whole repository)"
    return None


# --- one segment ----------------------------------------------------------------------------


def _set_token(segment: str, start: int) -> tuple[Token, int] | None:
    """The ``[...]`` class at ``segment[start]`` and the index after it; None when unclosed
    (then ``[`` is a plain character, as in fnmatch)."""
    i = start + 1
    negated = i < len(segment) and segment[i] in "!^"
    if negated:
        i += 1
    chars: set[str] = set()
    first = True
    while i < len(segment) and (first or segment[i] != "]"):
        first = False
        if i + 2 < len(segment) and segment[i + 1] == "-" and segment[i + 2] != "]":
            low, high = ord(segment[i]), ord(segment[i + 2])
            chars.update(chr(c) for c in range(low, min(high, low + 4096) + 1))
            i += 3
        else:
            chars.add(segment[i])
            i += 1
    if i >= len(segment):
        return None
    return ("set", frozenset(chars), negated), i + 1


@lru_cache(maxsize=4096)
def _tokens(segment: str) -> tuple[Token, ...]:
    out: list[Token] = []
    i = 0
    while i < len(segment):
        ch = segment[i]
        if ch == "*":
            if not out or out[-1] != STAR:
                out.append(STAR)
            i += 1
        elif ch == "?":
            out.append(ANY)
            i += 1
        elif ch == "[" and (found := _set_token(segment, i)) is not None:
            out.append(found[0])
            i = found[1]
        else:
            out.append(("lit", ch))
            i += 1
    return tuple(out)


def _chars(token: Token) -> frozenset[str]:
    """The characters a ``set`` token lists."""
    chars = token[1]
    return chars if isinstance(chars, frozenset) else frozenset()


def _accepts(token: Token, ch: str) -> bool:
    if token[0] == "lit":
        return token[1] == ch
    if token[0] == "set":
        return (ch in _chars(token)) != bool(token[2])
    return True  # any


def _chars_meet(a: Token, b: Token) -> bool:
    """True when some one character (never ``/``) is accepted by both single-character tokens."""
    for token, other in ((a, b), (b, a)):
        if token[0] == "lit":
            return _accepts(other, str(token[1]))
    if a[0] == "any" or b[0] == "any":
        return True
    chars_a, chars_b = _chars(a), _chars(b)
    if a[2] and b[2]:
        return True  # two negated sets: infinitely many characters are in neither list
    if a[2]:
        return bool(chars_b - chars_a)
    if b[2]:
        return bool(chars_a - chars_b)
    return bool(chars_a & chars_b)


@lru_cache(maxsize=8192)
def _segments_meet(a: str, b: str) -> bool:
    """True when one non-empty segment is matched by both segment patterns ``a`` and ``b``."""
    ta, tb = _tokens(a), _tokens(b)
    seen: set[tuple[int, int, bool]] = set()
    todo = [(0, 0, False)]
    while todo:
        state = todo.pop()
        if state in seen:
            continue
        seen.add(state)
        i, j, used = state
        if i == len(ta) and j == len(tb) and used:
            return True
        todo.extend(_segment_steps(ta, tb, i, j, used))
    return False


def _segment_steps(
    ta: tuple[Token, ...], tb: tuple[Token, ...], i: int, j: int, used: bool
) -> list[tuple[int, int, bool]]:
    """The moves of :func:`_segments_meet` from state ``(i, j, used)``."""
    star_a = i < len(ta) and ta[i] == STAR
    star_b = j < len(tb) and tb[j] == STAR
    steps = []
    if star_a:
        steps.append((i + 1, j, used))  # the star matches nothing more
    if star_b:
        steps.append((i, j + 1, used))
    if star_a and star_b:
        steps.append((i, j, True))  # both stars take one character
    elif star_a and j < len(tb):
        steps.append((i, j + 1, True))  # a's star takes b's one character
    elif star_b and i < len(ta):
        steps.append((i + 1, j, True))
    elif i < len(ta) and j < len(tb) and _chars_meet(ta[i], tb[j]):
        steps.append((i + 1, j + 1, True))
    return steps


# --- whole patterns ---------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def overlap(a: str, b: str) -> bool:
    """True when some path is covered by both patterns (normalized ones: :func:`normalize`).

    A walk over both segment lists at once (``**`` takes none or more segments of the other);
    it succeeds when both are used up together, or when one is used up and its last segment
    is a plain name (a directory: it covers whatever the other goes on to match below it)."""
    sa, sb = _walked(a), _walked(b)
    seen: set[tuple[int, int]] = set()
    todo = [(0, 0)]
    while todo:
        state = todo.pop()
        if state in seen:
            continue
        seen.add(state)
        i, j = state
        done_a, done_b = i == len(sa), j == len(sb)
        if (done_a and done_b) or (done_a and _plain(sa[-1])) or (done_b and _plain(sb[-1])):
            return True
        todo.extend(_pattern_steps(sa, sb, i, j))
    return False


def _walked(pattern: str) -> list[str]:
    """The segments :func:`overlap` walks: a trailing ``**`` is one or more segments (``src/**``
    is what is inside ``src``), so it is walked as ``*/**``."""
    parts = pattern.split("/")
    return [*parts[:-1], "*", "**"] if parts[-1] == "**" else parts


def _plain(segment: str) -> bool:
    """True when ``segment`` has no glob character: it names one file or directory."""
    return all(token[0] == "lit" for token in _tokens(segment))


def _pattern_steps(sa: list[str], sb: list[str], i: int, j: int) -> list[tuple[int, int]]:
    """The moves of :func:`overlap` from state ``(i, j)``."""
    deep_a = i < len(sa) and sa[i] == "**"
    deep_b = j < len(sb) and sb[j] == "**"
    steps = []
    if deep_a:
        steps.append((i + 1, j))  # ** takes no segment
        if j < len(sb):
            steps.append((i, j + 1))  # or b's next one
    if deep_b:
        steps.append((i, j + 1))
        if i < len(sa):
            steps.append((i + 1, j))
    if not deep_a and not deep_b and i < len(sa) and j < len(sb) and _segments_meet(sa[i], sb[j]):
        steps.append((i + 1, j + 1))
    return steps


@lru_cache(maxsize=4096)
def _regex(pattern: str) -> re.Pattern[str]:
    segments = pattern.split("/")
    parts = []
    for segment in segments:
        if segment == "**":
            parts.append("(?:[^/]+/)*")
        else:
            parts.append("".join(_token_regex(token) for token in _tokens(segment)) + "/")
    body = "".join(parts)
    if segments[-1] == "**":  # a trailing ** is one or more segments (none after a prefix)
        body = body.removesuffix("(?:[^/]+/)*") + "(?:[^/]+(?:/[^/]+)*)?"
    else:
        body = body[:-1] + ("(?:/.+)?" if _plain(segments[-1]) else "")
    return re.compile(body)


def _token_regex(token: Token) -> str:
    if token == STAR:
        return "[^/]*"
    if token == ANY:
        return "[^/]"
    if token[0] == "lit":
        return re.escape(str(token[1]))
    inner = "".join(re.escape(c) for c in sorted(_chars(token)))
    if token[2]:
        return f"[^/{inner}]"
    return f"[{inner}]" if inner else "(?!)"


def covers(pattern: str, path: str) -> bool:
    """True when normalized ``pattern`` covers repository-relative ``path`` (matches it, or names
    a directory above it)."""
    return _regex(pattern).fullmatch(path.strip("/")) is not None
