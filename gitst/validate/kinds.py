"""The format kinds gitst checks: one typed protocol, one registry.

A kind is what a state file *is* (an st plan, a pipeline file, an SDLC ``state.json``, …):
its name, the JSON Schema a file (or each record of a stream) follows, and a ``check`` that
returns every problem as a :class:`~gitst.core.diagnostics.Diagnostic`. Two shapes of kind
fill :data:`REGISTRY`:

- :class:`SchemaKind` - a JSON document whose schema is the whole check (the state records
  of seed 001 that carry no rules beyond their shape);
- :class:`FeatureKind` - a kind whose rules live in its feature package (the plan engine's
  doctor, the pipeline reader, the aide reducer, the SDLC transition rules). Its ``checker``
  is one of the typed functions below (``_check_*``), which imports the feature package in
  its body: the package is loaded only when a file of that kind is checked (listing kinds and
  the hook's fast path stay cheap), yet the import is a real one that import-linter checks
  against the layers, mypy checks against the signature and a reader can follow.

Which kind a file is: :mod:`gitst.validate.detect`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from gitst.core.errors import UsageError
from gitst.core.values import value_class
from gitst.schemas.report import Parsed, check_document
from gitst.validate.detect import KIND_NAMES, PATTERNS

if TYPE_CHECKING:
    from gitst.core.diagnostics import Diagnostic
    from gitst.validate.detect import KindName

__all__ = [
    "REGISTRY",
    "BlobChecker",
    "Checker",
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

    def check(
        self, data: bytes, path: str, *, against: bytes | None = None, parsed: Parsed | None = None
    ) -> list[Diagnostic]:
        """Every problem of ``data`` (the bytes of a file shown as ``path``). ``against`` is an
        older version of the same file; kinds with transition rules compare with it.
        ``parsed``: ``data`` as parsed once for every step that reads its JSON (a kind that
        reads a whole JSON document takes its value from there, never parsing it again)."""
        ...


@value_class(frozen=True)
class SchemaKind:
    """A JSON document checked by its schema alone."""

    name: KindName
    schema: str
    summary: str

    def check(
        self, data: bytes, path: str, *, against: bytes | None = None, parsed: Parsed | None = None
    ) -> list[Diagnostic]:
        return check_document(data, path, self.schema, parsed=parsed)


class Checker(Protocol):
    """A feature kind's check: :meth:`Kind.check`'s signature."""

    def __call__(
        self, data: bytes, path: str, *, against: bytes | None = None, parsed: Parsed | None = None
    ) -> list[Diagnostic]: ...


class BlobChecker(Protocol):
    """A feature kind's check of git blob ``oid`` (``against``: the blob of its older version),
    in bounded memory, with the same findings as its :class:`Checker`."""

    def __call__(self, cwd: str, oid: str, path: str, *, against: str | None = None) -> list[Diagnostic]: ...


@value_class(frozen=True)
class FeatureKind:
    """A kind whose rules live in a feature package: ``checker`` is one of the ``_check_*``
    functions of this module, which import their package on first use. ``blob_checker``
    (optional) checks git blobs without holding them in memory."""

    name: KindName
    schema: str
    summary: str
    checker: Checker
    blob_checker: BlobChecker | None = None

    def check(
        self, data: bytes, path: str, *, against: bytes | None = None, parsed: Parsed | None = None
    ) -> list[Diagnostic]:
        return self.checker(data, path, against=against, parsed=parsed)

    def check_blob(self, cwd: str, oid: str, path: str, *, against: str | None = None) -> list[Diagnostic]:
        if self.blob_checker is None:
            raise ValueError(f"kind {self.name!r} does not check blobs itself")
        return self.blob_checker(cwd, oid, path, against=against)


# The feature checkers. Each imports its package in its body (start-up: the pinned import sets
# of tests/e2e/hooks/test_precommit.py and tests/unit/cli/test_plan_fast.py), so the layer
# validate -> plan/pipeline/aide/sdlc is an import import-linter sees. The stream kinds (st plan,
# aide) read lines, never a whole document: they leave ``parsed`` alone.


def _check_st_plan(
    data: bytes, path: str, *, against: bytes | None = None, parsed: Parsed | None = None
) -> list[Diagnostic]:
    from gitst.plan import check as plan_check  # lazy: loaded only when a plan is checked (pinned start-up)

    return plan_check.check(data, path, against=against)


def _check_st_plan_blob(cwd: str, oid: str, path: str, *, against: str | None = None) -> list[Diagnostic]:
    from gitst.plan import check as plan_check  # lazy: loaded only when a plan is checked (pinned start-up)

    return plan_check.check_blob(cwd, oid, path, against=against)


def _check_pipeline(
    data: bytes, path: str, *, against: bytes | None = None, parsed: Parsed | None = None
) -> list[Diagnostic]:
    from gitst.pipeline import check as pipeline_check  # lazy: loaded only when its kind is checked

    return pipeline_check.check(data, path, against=against)


def _check_aide_wire(
    data: bytes, path: str, *, against: bytes | None = None, parsed: Parsed | None = None
) -> list[Diagnostic]:
    from gitst.aide import stream  # lazy: loaded only when its kind is checked

    return stream.check_wire(data, path, against=against)


def _check_aide_envelope(
    data: bytes, path: str, *, against: bytes | None = None, parsed: Parsed | None = None
) -> list[Diagnostic]:
    from gitst.aide import stream  # lazy: loaded only when its kind is checked

    return stream.check_envelope(data, path, against=against)


def _check_sdlc_state(
    data: bytes, path: str, *, against: bytes | None = None, parsed: Parsed | None = None
) -> list[Diagnostic]:
    from gitst.sdlc import check as sdlc_check  # lazy: loaded only when its kind is checked

    return sdlc_check.check(data, path, against=against, parsed=parsed)


_ALL: tuple[Kind, ...] = (
    FeatureKind(
        "st-plan",
        "st-record",
        "an st plan: append-only JSONL of events and checkpoints (seed 000)",
        _check_st_plan,
        _check_st_plan_blob,
    ),
    FeatureKind(
        "pipeline",
        "pipeline-file",
        "state/pipeline/<N>.json: one issue's pipeline state (seed 001)",
        _check_pipeline,
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
        _check_aide_wire,
    ),
    FeatureKind(
        "aide-envelope",
        "aide-envelope",
        "*.aide.events.jsonl: an aide event log, replayed by the reducer (seed 002)",
        _check_aide_envelope,
    ),
    FeatureKind(
        "sdlc-state",
        "sdlc-state",
        "state.json: an Agentic SDLC run and its transitions (seed 003)",
        _check_sdlc_state,
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
        raise UsageError(f"unknown kind {name!r}; known kinds: {', '.join(KIND_NAMES)}") from None


def check(
    kind: str, data: bytes, path: str, *, against: bytes | None = None, parsed: Parsed | None = None
) -> list[Diagnostic]:
    """Every problem of ``data`` (the bytes of a ``kind`` file shown as ``path``; ``parsed``:
    the same bytes, parsed at most once for every step that reads them)."""
    return get(kind).check(data, path, against=against, parsed=parsed)


def check_blob(kind: str, cwd: str, oid: str, path: str, *, against: str | None = None) -> list[Diagnostic]:
    """Every problem of git blob ``oid`` of a kind that :func:`streams_blobs` (``against``: the
    blob of its older version)."""
    found = get(kind)
    if not isinstance(found, FeatureKind) or found.blob_checker is None:
        raise ValueError(f"kind {kind!r} does not check blobs itself")
    return found.check_blob(cwd, oid, path, against=against)


def streams_blobs(kind: str) -> bool:
    """Whether ``kind`` checks git blobs itself, in bounded memory (:meth:`FeatureKind.check_blob`)."""
    found = get(kind)
    return isinstance(found, FeatureKind) and found.blob_checker is not None


def patterns_of(kind: str) -> list[str]:
    """The built-in path patterns that give ``kind``."""
    return [pattern for pattern, name in PATTERNS if name == kind]
