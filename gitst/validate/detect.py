"""Which kind of state file a path is: the path patterns, the ``st-kind`` attribute, the
content; cheap to import (the pre-commit hook's fast path imports it, and nothing else of
validation, before it knows there is anything to check).

Which kind a file is (first answer wins): ``--kind``; the git attribute ``st-kind``
(``-st-kind`` turns checking off); the built-in path patterns (:data:`PATTERNS`); the
content (:func:`sniff_kind`, for files named explicitly). What each kind checks is
:mod:`gitst.validate.kinds`.

Some patterns are too wide to trust alone: ``**/state.json`` is any web app's store, not
only an SDLC run. A file those patterns claim is checked only when its content looks like
that kind (:data:`CONFIRMED_BY_CONTENT`); otherwise it is skipped, saying how to claim it
with ``st-kind`` (:func:`unconfirmed`).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar, Literal

    from gitst.schemas.report import Parsed

    KindName = Literal[
        "st-plan",
        "pipeline",
        "live-session",
        "watch-list",
        "lock",
        "active-chat",
        "pending-release",
        "active-worktree",
        "aide-wire",
        "aide-envelope",
        "sdlc-state",
        "deliberation",
        "session-snapshot",
        "circuit",
    ]
    KindSource = Literal["option", "attribute", "pattern", "content"]

# Every kind, in the order `git st schema list` shows them (the registry in
# gitst.validate.kinds has one entry for each, in this order; a test keeps them equal).
KIND_NAMES: tuple[KindName, ...] = (
    "st-plan",
    "pipeline",
    "live-session",
    "watch-list",
    "lock",
    "active-chat",
    "pending-release",
    "active-worktree",
    "aide-wire",
    "aide-envelope",
    "sdlc-state",
    "deliberation",
    "session-snapshot",
    "circuit",
)

# (pattern, kind), first match wins. ``**/`` matches any leading directories (or none);
# ``*`` (only as a component's first character) matches within one component. Paths are
# relative to the repository's top (files of the state dir are matched as
# ``state/<path inside the state dir>`` wherever it lives).
PATTERNS: list[tuple[str, str]] = [
    ("**/.step/*.jsonl", "st-plan"),
    ("**/state/pipeline/*.json", "pipeline"),
    ("**/state/live-session.json", "live-session"),
    ("**/state/watch-list.json", "watch-list"),
    ("**/state/locks/*.json", "lock"),
    ("**/state/active-chats/*.json", "active-chat"),
    ("**/state/pending-releases/*.json", "pending-release"),
    ("**/state/active-worktrees/*.json", "active-worktree"),
    ("**/state/deliberations/*.json", "deliberation"),
    ("**/state/session-snapshots/*.json", "session-snapshot"),
    ("**/state/circuit/*.json", "circuit"),
    ("**/*.aide.events.jsonl", "aide-envelope"),
    ("**/*.aide.jsonl", "aide-wire"),
    ("**/state.json", "sdlc-state"),
]

ATTRIBUTE = "st-kind"

# Kinds whose path pattern is only a guess: claimed by pattern, a file is checked only when
# its content has at least one of the kind's own top-level keys (``any``); when it lacks some
# of the keys that make it unmistakable (``all``), it is checked but the first finding also
# says how to opt out: it may be somebody else's file. By attribute or --kind: always checked.
CONFIRMED_BY_CONTENT: dict[str, dict[str, tuple[str, ...]]] = {
    "sdlc-state": {"any": ("run_id", "phase", "phase_status", "prd_url"), "all": ("run_id", "phase")},
}


def unconfirmed(choice: KindChoice, content: Parsed) -> str | None:
    """Why a file claimed by a too-wide pattern is not that kind after all (None: it may be).

    ``content`` (a file's bytes, parsed at most once whoever asks) must be a JSON object with
    one of the kind's own keys at the top; another JSON
    document, or a text that is not JSON at all, is somebody else's file. A text that opens
    an object but does not parse (cut short, nested too deep) is checked: whose it was can no
    longer be told, and a corrupt run state must not pass as "skipped" (its findings say how
    to opt out)."""
    keys = CONFIRMED_BY_CONTENT.get(choice.kind or "")
    if choice.source != "pattern" or keys is None:
        return None
    document = content.top_level()
    if document is not None and any(key in document for key in keys["any"]):
        return None
    if document is None and content.data.lstrip().startswith(b"{"):
        return None  # meant as a JSON object but broken (or beyond a limit): nobody can tell whose; reported
    return (
        f"matches the {choice.kind} path pattern but its content does not look like kind {choice.kind} "
        f"(no {' / '.join(keys['any'])} at the top); skipped. To check it anyway: `PATH st-kind={choice.kind}` "
        "in .gitattributes"
    )


def may_not_be(choice: KindChoice, content: Parsed) -> bool:
    """Whether a file claimed by a too-wide pattern lacks some of the keys that make the
    kind unmistakable (its findings then say how to opt out)."""
    keys = CONFIRMED_BY_CONTENT.get(choice.kind or "")
    if choice.source != "pattern" or keys is None:
        return False
    document = content.top_level()
    return document is None or not all(key in document for key in keys["all"])


def _component_matches(part: str, want: str) -> bool:
    # Patterns use `*` only as a whole leading wildcard of a component ("*.json").
    if want.startswith("*"):
        return part.endswith(want[1:]) and len(part) > len(want) - 1
    return part == want


def _matches(pattern: str, parts: list[str]) -> bool:
    anywhere = pattern.startswith("**/")
    wanted = (pattern[3:] if anywhere else pattern).split("/")
    if len(parts) < len(wanted) or (not anywhere and len(parts) != len(wanted)):
        return False
    tail = parts[len(parts) - len(wanted) :]
    return all(_component_matches(part, want) for part, want in zip(tail, wanted, strict=True))


def kind_for_path(relpath: str) -> str | None:
    """The kind the built-in patterns give ``relpath`` (no git, no file access)."""
    parts = [p for p in relpath.replace(os.sep, "/").split("/") if p not in ("", ".")]
    if not parts:
        return None
    for pattern, kind in PATTERNS:
        if _matches(pattern, parts):
            return kind
    return None


class KindChoice:
    """Which kind a file is and why. ``kind`` None means: not checked (see skip/problem).

    (A plain class, not a dataclass: this module must stay cheap to import.)"""

    __slots__ = ("kind", "problem", "skip", "source")
    # Compared by value, never hashed (as __eq__ alone makes it); typeshed's declaration for
    # an unhashable class, hence its ignore.
    __hash__: ClassVar[None]  # type: ignore[assignment]

    def __init__(
        self,
        kind: str | None,
        source: KindSource | None = None,
        *,
        skip: str | None = None,
        problem: str | None = None,
    ):
        self.kind = kind
        self.source = source
        self.skip = skip  # why the file is deliberately not checked (e.g. -st-kind)
        self.problem = problem  # why the kind is unusable (e.g. unknown st-kind value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KindChoice) and all(getattr(self, a) == getattr(other, a) for a in self.__slots__)

    def __repr__(self) -> str:
        return "KindChoice(" + ", ".join(f"{a}={getattr(self, a)!r}" for a in self.__slots__) + ")"


def choice_from_attribute(value: str | None) -> KindChoice | None:
    """What an ``st-kind`` attribute value (as ``git check-attr`` prints it) decides."""
    if value is None or value == "unspecified":
        return None
    if value == "unset":
        return KindChoice(None, "attribute", skip="st-kind is unset (-st-kind) for this path")
    if value == "set":
        return KindChoice(None, "attribute", problem="st-kind is set without a value; write st-kind=KIND or -st-kind")
    if value in KIND_NAMES:
        return KindChoice(value, "attribute")
    return KindChoice(None, "attribute", problem=f"st-kind={value} names no kind; known kinds: {', '.join(KIND_NAMES)}")


def resolve_kind(
    relpath: str,
    *,
    option: str | None = None,
    attribute: str | None = None,
    content: Parsed | None = None,
) -> KindChoice:
    """The kind of a file: ``option`` (--kind), the ``st-kind`` attribute value, the
    built-in patterns on ``relpath``, then the ``content`` when given."""
    if option:
        if option not in KIND_NAMES:
            return KindChoice(None, "option", problem=f"unknown kind {option!r}; known kinds: {', '.join(KIND_NAMES)}")
        return KindChoice(option, "option")
    chosen = choice_from_attribute(attribute)
    if chosen is not None:
        return chosen
    by_path = kind_for_path(relpath)
    if by_path:
        return KindChoice(by_path, "pattern")
    if content is not None:
        sniffed = sniff_kind(content.data, content)
        if sniffed:
            return KindChoice(sniffed, "content")
    return KindChoice(None)


def sniff_kind(data: bytes, content: Parsed | None = None) -> str | None:
    """The kind the content looks like (None when it looks like none of them); ``content``:
    ``data`` already parsed (or to be parsed once, for its checks too).

    JSONL streams are told by their first record: ``v`` + ``lane`` (st plan), a ``t``
    naming an aide primitive (wire), ``type`` naming one + ``payload`` (envelope). JSON
    documents: ``run_id`` + ``phase`` (SDLC state.json), a numeric key holding an object
    (pipeline file). The other kinds are only recognised by path or attribute.
    """
    from gitst.core.jsonio import JSONDecodeError, loads  # lazy: the hook's fast path imports this module

    text = data.lstrip()
    if not text.startswith(b"{"):
        return None
    document = _whole(data, text, content)
    if document is None:
        first = text.split(b"\n", 1)[0]
        try:
            document = loads(first)
        except JSONDecodeError:
            return None
        as_stream = True
    else:
        as_stream = False
    if not isinstance(document, dict):
        return None
    stream_kind = _sniff_record(document)
    if stream_kind:
        return stream_kind
    if as_stream:
        return None
    if "run_id" in document and "phase" in document:
        return "sdlc-state"
    if any(key.isdigit() and isinstance(value, dict) for key, value in document.items()):
        return "pipeline"
    return None


def _whole(data: bytes, text: bytes, content: Parsed | None) -> Any:
    """The JSON value of ``text`` (``data`` without its leading white space), None when it is
    not JSON: ``content``'s own parse when the white space stripped is JSON's, which a JSON
    parser skips (bytes.lstrip also strips form feeds and vertical tabs, which it refuses)."""
    from gitst.core.jsonio import JSONDecodeError, loads  # lazy: the hook's fast path imports this module

    if content is not None and not data[: len(data) - len(text)].strip(b" \t\r\n"):
        return None if content.error is not None else content.value
    try:
        return loads(text)
    except JSONDecodeError:
        return None


def _sniff_record(record: dict[str, Any]) -> str | None:
    if "v" in record and "lane" in record:
        return "st-plan"
    from gitst.schemas.catalog import load  # lazy: the hook's fast path imports this module

    primitives = load("aide-wire")["properties"]["t"]["enum"]
    if record.get("t") in primitives:
        return "aide-wire"
    if record.get("type") in primitives and "payload" in record:
        return "aide-envelope"
    return None
