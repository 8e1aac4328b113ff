"""Steps every kind checker shares: parse a JSON document or JSONL lines with orjson, and
turn schema violations into diagnostics that carry a line (and column).

Generic codes (documented in docs/validate.md):

- ``JSON``   the bytes are not JSON (a document), or a line is not JSON (a stream);
- ``SCHEMA`` a schema violation whose schema declares no more specific code
  (``x-gitst-code``, see :mod:`gitst.schemas.catalog`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from gitst.core.diagnostics import JSON, SCHEMA, WARNING, Diagnostic
from gitst.core.jsonio import JSONDecodeError, loads
from gitst.schemas import catalog
from gitst.schemas.jsonpos import locate

if TYPE_CHECKING:
    from gitst.core.diagnostics import Severity
    from gitst.schemas.catalog import SchemaError

MISSING: Any = object()  # "did not parse" (None is a valid JSON value)
_UNPARSED: Any = object()


class Parsed:
    """A file's bytes and their JSON value, parsed on first use and never again: every step
    that looks at one file's JSON (which kind it is, whether a wide pattern's claim holds,
    the kind's own check) shares one. ``value`` is :data:`MISSING` when the bytes are not
    JSON (or break a limit every reader applies), and ``error`` then says why."""

    __slots__ = ("_error", "_value", "data")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._value: Any = _UNPARSED
        self._error: JSONDecodeError | None = None

    def _parse(self) -> None:
        try:
            self._value = loads(self.data)
        except JSONDecodeError as exc:
            self._value, self._error = MISSING, exc

    @property
    def value(self) -> Any:
        if self._value is _UNPARSED:
            self._parse()
        return self._value

    @property
    def error(self) -> JSONDecodeError | None:
        if self._value is _UNPARSED:
            self._parse()
        return self._error

    def top_level(self) -> dict[str, Any] | None:
        """The document when it is a JSON object, else None."""
        value = self.value
        return value if isinstance(value, dict) else None


MAX_MESSAGE = 400  # an enum error lists every valid value (the longest list: ~250 characters)


def short(value: Any, limit: int = 60) -> str:
    """A compact JSON rendering of ``value`` for messages, cut in the middle when long
    (:func:`gitst.schemas.catalog.short`, which the validator's messages use too)."""
    return catalog.short(value, limit)


def clip(message: str, limit: int = MAX_MESSAGE) -> str:
    return message if len(message) <= limit else message[: limit - 30] + " … " + message[-20:]


def pointer(parts: Sequence[Any]) -> str:
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in parts) if parts else ""


def parse_document(data: bytes, path: str, *, parsed: Parsed | None = None) -> tuple[Any, list[Diagnostic]]:
    """The JSON value of a whole file, or MISSING and one ``JSON`` diagnostic (``parsed``:
    the same bytes already parsed, not parsed again)."""
    content = parsed if parsed is not None else Parsed(data)
    exc = content.error
    if exc is None:
        return content.value, []
    code = getattr(exc, "code", JSON)  # JSON_DEPTH / JSON_NUMBER: a limit every reader applies
    if code != JSON:
        return MISSING, [Diagnostic(path, None, code, exc.msg)]
    message = "empty file: expected one JSON document" if not data.strip() else f"not valid JSON: {exc.msg}"
    return MISSING, [Diagnostic(path, exc.lineno, JSON, message, col=exc.colno)]


def iter_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of every non-blank line (1-based; ``\\r\\n`` accepted)."""
    for number, raw in enumerate(data.split(b"\n"), 1):
        if raw.strip():
            yield number, raw


def parse_line(raw: bytes, path: str, line: int) -> tuple[Any, Diagnostic | None]:
    try:
        return loads(raw), None
    except JSONDecodeError as exc:
        code = getattr(exc, "code", JSON)
        if code != JSON:
            return MISSING, Diagnostic(path, line, code, f"line is {exc.msg}" if code == "JSON_DEPTH" else exc.msg)
        return MISSING, Diagnostic(path, line, JSON, f"line is not valid JSON: {exc.msg}", col=exc.colno)


def value_at(instance: Any, parts: Sequence[Any]) -> Any:
    node = instance
    for part in parts:
        if (isinstance(node, dict) and part in node) or (
            isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        ):
            node = node[part]
        else:
            return MISSING
    return node


def schema_message(error: SchemaError, instance: Any) -> str:
    """The message for one schema violation: where (JSON pointer) and what."""
    custom = error.schema_message
    if custom:
        value = value_at(instance, error.path)
        if value is not MISSING and not isinstance(value, (dict, list)):
            custom += f" (got {short(value)})"
        text = custom
    else:
        text = error.message
    where = pointer(error.path)
    return clip(f"{where}: {text}" if where else text)


def schema_diagnostics(
    schema: str,
    instance: Any,
    path: str,
    *,
    text: str | bytes | None = None,
    line: int | None = None,
    line_text: str | bytes | None = None,
) -> list[Diagnostic]:
    """Diagnostics for ``instance`` against schema ``schema`` (none when valid).

    A whole document gives ``text`` (line and column come from it); a JSONL record gives
    its ``line`` and ``line_text`` (the column comes from the line). Bytes are decoded
    only when there is something to report.
    """
    check = catalog.validator(schema)
    if check.is_valid(instance):
        return []
    if isinstance(text, bytes):
        text = decode(text)
    if isinstance(line_text, bytes):
        line_text = decode(line_text)
    out = []
    for error in check.errors(instance):
        where_line, col = line, None
        source = text if text is not None else line_text
        if source is not None:
            found = _locate(source, error.path)
            if found is not None:
                if text is not None:
                    where_line, col = found
                else:
                    col = found[1] if found[0] == 1 else None
        extra = {"pointer": pointer(error.path)}
        out.append(
            Diagnostic(path, where_line, error.code or SCHEMA, schema_message(error, instance), col=col, extra=extra)
        )
    return out


def _locate(text: str, parts: Sequence[Any]) -> tuple[int, int] | None:
    return locate(text, parts)


def decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def locate_in(text: str, parts: Sequence[Any]) -> tuple[int | None, int | None]:
    """(line, col) of the value at ``parts`` in a document's text, (None, None) if absent."""
    found = _locate(text, parts)
    return found if found is not None else (None, None)


def warning(path: str, line: int | None, code: str, message: str, **kwargs: Any) -> Diagnostic:
    return Diagnostic(path, line, code, message, severity=WARNING, **kwargs)


class DocumentReport:
    """Collects diagnostics about a JSON document, placing each at the line and column of
    the value it is about (the text is decoded only when something is reported)."""

    def __init__(self, data: bytes, path: str):
        self.data, self.path = data, path
        self._text: str | None = None
        self.items: list[Diagnostic] = []

    def add(
        self,
        parts: Sequence[Any],
        code: str,
        message: str,
        *,
        severity: Severity = "error",
        fix: str | None = None,
        placed: bool = True,
    ) -> None:
        line = col = None
        if placed:
            if self._text is None:
                self._text = decode(self.data)
            line, col = locate_in(self._text, parts)
        self.items.append(Diagnostic(self.path, line, code, message, severity=severity, col=col, fix=fix))


NO_SCHEMA = "NO_SCHEMA"


def load_document(
    data: bytes, path: str, schema: str, *, parsed: Parsed | None = None
) -> tuple[object, list[Diagnostic]]:
    """The parsed document (MISSING when it is not JSON) and its parse/schema problems
    (``parsed``: the same bytes already parsed, not parsed again)."""
    if schema not in catalog.names():
        return MISSING, [Diagnostic(path, None, NO_SCHEMA, f"gitst ships no schema {schema!r} to check this file with")]
    value, problems = parse_document(data, path, parsed=parsed)
    if value is MISSING:
        return MISSING, problems
    return value, schema_diagnostics(schema, value, path, text=data)


def check_document(data: bytes, path: str, schema: str, *, parsed: Parsed | None = None) -> list[Diagnostic]:
    return load_document(data, path, schema, parsed=parsed)[1]
