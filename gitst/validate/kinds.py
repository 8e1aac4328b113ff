"""The format kinds gitst checks: one typed protocol, one registry.

A kind is what a state file *is* (an st plan, a pipeline file, an SDLC ``state.json``, …):
its name, the JSON Schema a file (or each record of a stream) follows, and a ``check`` that
returns every problem as a :class:`~gitst.core.diagnostics.Diagnostic`. Two shapes of kind
fill :data:`REGISTRY`:

- :class:`SchemaKind` - a JSON document whose schema is the whole check (the state records
  of seed 001 that carry no rules beyond their shape);
- :class:`FeatureKind` - a kind whose rules live in its feature package (the plan engine's
  doctor, the pipeline reader, the aide reducer, the SDLC transition rules). The package is
  imported only when a file of that kind is checked, so listing kinds stays cheap.

Which kind a file is: :mod:`gitst.validate.detect`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from gitst.validate.detect import KIND_NAMES, PATTERNS

if TYPE_CHECKING:
    from gitst.core.diagnostics import Diagnostic
    from gitst.validate.detect import KindName

__all__ = [
    "REGISTRY",
    "FeatureKind",
    "Kind",
    "SchemaKind",
    "check",
    "check_blob",
    "get",
    "patterns_of",
    "streams_blobs",
]


class Kind(Protocol):
    """What every kind offers."""

    @property
    def name(self) -> KindName: ...

    @property
    def schema(self) -> str:
        """The schema (``git st schema show``) a file, or each record of a stream, follows."""
        ...

    @property
    def summary(self) -> str:
        """One line for people: what files of this kind are."""
        ...

    def check(self, data: bytes, path: str, *, against: bytes | None = None) -> list[Diagnostic]:
        """Every problem of ``data`` (the bytes of a file shown as ``path``). ``against`` is an
        older version of the same file; kinds with transition rules compare with it."""
        ...


@dataclass(frozen=True)
class SchemaKind:
    """A JSON document checked by its schema alone."""

    name: KindName
    schema: str
    summary: str

    def check(self, data: bytes, path: str, *, against: bytes | None = None) -> list[Diagnostic]:
        from gitst.schemas.report import check_document

        return check_document(data, path, self.schema)


@dataclass(frozen=True)
class FeatureKind:
    """A kind whose rules live in a feature package: ``checker`` is ``module:function``,
    a function with :meth:`Kind.check`'s signature, imported on first use. ``blob_checker``
    (optional, same form) checks git blobs without holding them in memory:
    ``(cwd, oid, path, *, against=older oid or None) -> list[Diagnostic]``, the same findings."""

    name: KindName
    schema: str
    summary: str
    checker: str
    blob_checker: str = ""

    def check(self, data: bytes, path: str, *, against: bytes | None = None) -> list[Diagnostic]:
        result: list[Diagnostic] = _function(self.checker)(data, path, against=against)
        return result

    def check_blob(self, cwd: str, oid: str, path: str, *, against: str | None = None) -> list[Diagnostic]:
        result: list[Diagnostic] = _function(self.blob_checker)(cwd, oid, path, against=against)
        return result


def _function(name: str):
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module), function)


_ALL: tuple[Kind, ...] = (
    FeatureKind(
        "st-plan",
        "st-record",
        "an st plan: append-only JSONL of events and checkpoints (seed 000)",
        "gitst.plan.check:check",
        "gitst.plan.check:check_blob",
    ),
    FeatureKind(
        "pipeline",
        "pipeline-file",
        "state/pipeline/<N>.json: one issue's pipeline state (seed 001)",
        "gitst.pipeline.check:check",
    ),
    SchemaKind("live-session", "live-session", "state/live-session.json: the UI server's live session (seed 001)"),
    SchemaKind("watch-list", "watch-list", "state/watch-list.json: the UI server's watch list (seed 001)"),
    SchemaKind("lock", "state-lock", "state/locks/<name>.json: a TTL lock (docs/parallel.md)"),
    SchemaKind(
        "active-chat",
        "state-active-chat",
        "state/active-chats/<session>.json: one agent session's record (docs/parallel.md)",
    ),
    SchemaKind(
        "pending-release",
        "state-pending-release",
        "state/pending-releases/<issue>.json: a remote claim whose release did not reach the remote (docs/parallel.md)",
    ),
    SchemaKind(
        "active-worktree",
        "state-active-worktree",
        "state/active-worktrees/<issue>.json: one issue's worktree (docs/parallel.md)",
    ),
    FeatureKind(
        "aide-wire",
        "aide-wire",
        "*.aide.jsonl: an aide wire stream, replayed by the reducer (seed 002)",
        "gitst.aide.stream:check_wire",
    ),
    FeatureKind(
        "aide-envelope",
        "aide-envelope",
        "*.aide.events.jsonl: an aide event log, replayed by the reducer (seed 002)",
        "gitst.aide.stream:check_envelope",
    ),
    FeatureKind(
        "sdlc-state",
        "sdlc-state",
        "state.json: an Agentic SDLC run and its transitions (seed 003)",
        "gitst.sdlc.check:check",
    ),
    SchemaKind(
        "deliberation",
        "state-deliberation",
        "state/deliberations/<id>.json: one agent invocation and its verdict (seed 001; docs/store.md)",
    ),
    SchemaKind(
        "session-snapshot",
        "state-session-snapshot",
        "state/session-snapshots/<session>.json: what one chat saved for the next (seed 001; docs/store.md)",
    ),
    SchemaKind(
        "circuit",
        "state-circuit",
        "state/circuit/<service>.json: a service's circuit breaker (seed 001; docs/store.md)",
    ),
)

REGISTRY: dict[str, Kind] = {kind.name: kind for kind in _ALL}


def get(name: str) -> Kind:
    """The kind called ``name`` (UsageError, exit 2, for an unknown name)."""
    try:
        return REGISTRY[name]
    except KeyError:
        from gitst.core.errors import UsageError

        raise UsageError(f"unknown kind {name!r}; known kinds: {', '.join(KIND_NAMES)}") from None


def check(kind: str, data: bytes, path: str, *, against: bytes | None = None) -> list[Diagnostic]:
    """Every problem of ``data`` (the bytes of a ``kind`` file shown as ``path``)."""
    return get(kind).check(data, path, against=against)


def check_blob(kind: str, cwd: str, oid: str, path: str, *, against: str | None = None) -> list[Diagnostic]:
    """Every problem of git blob ``oid`` of a kind that :func:`streams_blobs` (``against``: the
    blob of its older version)."""
    found = get(kind)
    if not isinstance(found, FeatureKind) or not found.blob_checker:
        raise ValueError(f"kind {kind!r} does not check blobs itself")
    return found.check_blob(cwd, oid, path, against=against)


def streams_blobs(kind: str) -> bool:
    """Whether ``kind`` checks git blobs itself, in bounded memory (:meth:`FeatureKind.check_blob`)."""
    found = get(kind)
    return isinstance(found, FeatureKind) and bool(found.blob_checker)


def patterns_of(kind: str) -> list[str]:
    """The built-in path patterns that give ``kind``."""
    return [pattern for pattern, name in PATTERNS if name == kind]
