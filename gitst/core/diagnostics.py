"""One Diagnostic type and its renderers (text, json, github).

Text form, one line per problem::

    path:line[:col]: error[CODE]: message
      fix: what to run or change          (only when there is a fix)

Codes are stable UPPER_SNAKE identifiers, prefixed by the area that owns the rule
(``ST_``, ``AIDE_``, ``SDLC_``, ``PIPELINE_``, ``HOOK_``); docs/conventions.md says where each
area's table is. The generic ones below name one problem wherever it happens - in
``git st validate``, the plan doctor, the pipeline and state-record readers - so a file
that is not JSON is ``JSON`` in every kind and every command.
"""

from __future__ import annotations

from gitst.core.terminal import sanitize
from gitst.core.values import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, Final, Literal

    Severity = Literal["error", "warning"]

__all__ = [
    "ERROR",
    "JSON",
    "READ",
    "SCHEMA",
    "WARNING",
    "Diagnostic",
    "by_position",
    "render_github",
    "render_text",
]

ERROR: Final = "error"
WARNING: Final = "warning"

# Generic codes (docs/validate.md, "Any kind").
JSON = "JSON"  # the bytes (a document, or one line of a stream) are not JSON
SCHEMA = "SCHEMA"  # a schema violation without a more specific code (e.g. a line that is not an object)
READ = "READ"  # the file cannot be read


class Diagnostic(Value):
    """One finding. Immutable and hashable; ``extra`` (fields for the JSON form) is not
    compared. A plain slotted class (:class:`gitst.core.values.Value`): every command that
    checks anything imports it, and a frozen dataclass costs an import ~1 ms."""

    __slots__ = ("code", "col", "extra", "fix", "line", "message", "path", "severity")
    _compared = ("path", "line", "code", "message", "severity", "col", "fix")

    path: str
    line: int | None
    code: str
    message: str
    severity: Severity
    col: int | None
    fix: str | None
    extra: dict[str, Any]

    def __init__(
        self,
        path: str,
        line: int | None,
        code: str,
        message: str,
        severity: Severity = ERROR,
        col: int | None = None,
        fix: str | None = None,
        extra: dict[str, Any] | None = None,
    ):
        setter = object.__setattr__
        setter(self, "path", path)
        setter(self, "line", line)
        setter(self, "code", code)
        setter(self, "message", message)
        setter(self, "severity", severity)
        setter(self, "col", col)
        setter(self, "fix", fix)
        setter(self, "extra", {} if extra is None else extra)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a Diagnostic is immutable: use .replace({name}=...)")

    def __hash__(self) -> int:  # type: ignore[override]  # Value is unhashable; a Diagnostic is immutable
        return hash(tuple(getattr(self, name) for name in self._compared))

    def replace(self, **changes: Any) -> Diagnostic:
        """A copy with ``changes`` (as ``dataclasses.replace`` did)."""
        fields = {name: getattr(self, name) for name in self.__slots__}
        fields.update(changes)
        return Diagnostic(**fields)

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR

    def location(self) -> str:
        loc = self.path
        if self.line is not None:
            loc += f":{self.line}"
            if self.col is not None:
                loc += f":{self.col}"
        return loc

    def to_text(self) -> str:
        """The line a person reads; control characters (from a path or a value) escaped."""
        text = f"{self.location()}: {self.severity}[{self.code}]: {self.message}"
        if self.fix:
            text += f"\n  fix: {self.fix}"
        return sanitize(text)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
        }
        if self.fix:
            data["fix"] = self.fix
        if self.extra:
            data.update(self.extra)
        return data

    def to_github(self) -> str:
        props = [f"file={_gh_escape_prop(self.path)}"]
        if self.line is not None:
            props.append(f"line={self.line}")
        if self.col is not None:
            props.append(f"col={self.col}")
        props.append(f"title={_gh_escape_prop(self.code)}")
        level = "error" if self.is_error else "warning"
        message = self.message + (f" (fix: {self.fix})" if self.fix else "")
        return f"::{level} {','.join(props)}::{_gh_escape_data(message)}"


def by_position(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """``diagnostics`` in reading order: by path, then line, then column (a whole-file one —
    no line — first); the order they were found in breaks ties."""
    return sorted(diagnostics, key=lambda d: (d.path, d.line or 0, d.col or 0))


def render_text(diagnostics: Iterable[Diagnostic]) -> str:
    return "\n".join(d.to_text() for d in diagnostics)


def render_github(diagnostics: Iterable[Diagnostic]) -> str:
    return "\n".join(d.to_github() for d in diagnostics)


def _gh_escape_data(value: str) -> str:
    return sanitize(value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _gh_escape_prop(value: str) -> str:
    return _gh_escape_data(value).replace(":", "%3A").replace(",", "%2C")
