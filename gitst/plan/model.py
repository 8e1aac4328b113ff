"""Plan items: statuses, normalization, dependency edges, derived read fields, update_plan.

Everything here is pure (no files, no git) and cheap to import.

- Statuses are the six of seed 000; common aliases (``open``, ``doing``, ``done``,
  ``cancelled`` ...) are accepted on input and stored canonical.
- :func:`normalize_item` gives an item the canonical field order ``id, step, status, deps,
  notes, comments`` followed by every unknown field exactly as given. ``notes`` is kept
  exactly as given (never trimmed); ``id`` and ``step`` are trimmed. The derived read fields
  ``dep_state`` / ``waiting_on`` are dropped (they are computed, never stored), so the output
  of ``show --format json`` can be imported back.
- Dependency edges are ``{"id", "type"}``; a bare string is an edge of type ``blocks``;
  ``type`` is kebab-case (lower-cased on input), missing/empty means ``blocks``; edges are
  deduplicated by ``(id, type)``, first one kept.
"""

from __future__ import annotations

import re

from gitst.core.errors import UsageError
from gitst.core.jsonio import MAX_SAFE_INTEGER

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    Item = dict[str, Any]  # a plan item, or an edge or comment of one: a JSON object
    Record = dict[str, Any]  # a plan record (an event or a checkpoint) as read from a line

STATUSES: tuple[str, ...] = ("pending", "in_progress", "completed", "blocked", "deferred", "canceled")
STATUS_SET = frozenset(STATUSES)

# Input spellings (lower-cased, '-' and ' ' read as '_') that mean a canonical status.
STATUS_ALIASES: dict[str, str] = {
    "open": "pending",
    "todo": "pending",
    "to_do": "pending",
    "queued": "pending",
    "new": "pending",
    "doing": "in_progress",
    "active": "in_progress",
    "started": "in_progress",
    "wip": "in_progress",
    "inprogress": "in_progress",
    "done": "completed",
    "complete": "completed",
    "closed": "completed",
    "finished": "completed",
    "cancelled": "canceled",
    "cancel": "canceled",
    "dropped": "canceled",
    "on_hold": "deferred",
    "later": "deferred",
    "postponed": "deferred",
    "stuck": "blocked",
}

DEFAULT_DEP_TYPE = "blocks"
DEP_TYPE_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
DERIVED_FIELDS = ("dep_state", "waiting_on")
CORE_FIELDS = ("id", "step", "status", "deps", "notes", "comments")

# dep_state values
READY = "ready"
WAITING = "waiting_on_deps"
BLOCKED_MANUAL = "blocked_manual"
NOT_APPLICABLE = "n/a"

# update_plan status map (seed 000 translation contract)
UPDATE_PLAN_STATUS = {
    "in_progress": "in_progress",
    "completed": "completed",
    "pending": "pending",
    "blocked": "pending",
    "deferred": "pending",
    "canceled": "pending",
}


class ItemError(UsageError):
    """Input that cannot be normalized into a valid item (exit 2). ``code`` says which rule
    (``BAD_ITEM``, ``BAD_STATUS``, ``BAD_DEPS``, ``BAD_NOTES``, ``BAD_COMMENT``,
    ``DUPLICATE_ID``); a replay reports it as the diagnostic code ``ST_REPLAY_<code>``."""

    def __init__(self, message: str, code: str = "BAD_ITEM"):
        super().__init__(message)
        self.code = code


def json_type(value: Any) -> str:
    """The JSON name of ``value``'s type, for messages (never a Python type name)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "a value of another type"


def json_text(value: Any, limit: int = 60) -> str:
    """``value`` as JSON writes it (``null``, ``true``, ``["a"]``), cut to ``limit`` characters:
    how a value from a record is shown in a message (never Python's ``None``/``True``)."""
    import json  # lazy: messages only; keeps json off the start-up of `git st show`/`add`

    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = json_type(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _bad_status(value: Any) -> ItemError:
    shown = repr(value) if isinstance(value, str) else json_text(value)
    message = f"invalid status {shown}; expected one of: {', '.join(STATUSES)}"
    if isinstance(value, str):
        from gitst.core.suggest import closest  # lazy: error path; not in the pinned imports of show/add

        guess = closest(value.strip().lower().replace("-", "_").replace(" ", "_"), (*STATUSES, *STATUS_ALIASES), n=1)
        if guess:
            message += f"; did you mean {guess[0]!r}?"
    return ItemError(message, "BAD_STATUS")


def normalize_status(value: str) -> str:
    """Canonical status for ``value`` (aliases accepted, case-insensitive); ItemError if unknown."""
    if not isinstance(value, str):
        raise _bad_status(value)
    if value in STATUS_SET:  # the common case, stored records
        return value
    key = value.strip().lower().replace("-", "_").replace(" ", "_")
    key = STATUS_ALIASES.get(key, key)
    if key not in STATUS_SET:
        raise _bad_status(value)
    return key


def _nonblank(value: Any, what: str, code: str) -> str:
    if not isinstance(value, str):
        raise ItemError(f"{what} must be a string, got {json_type(value)}", code)
    text = value.strip()
    if not text:
        raise ItemError(f"{what} cannot be empty", code)
    return text


def normalize_dep_type(value: Any) -> str:
    if value is None:
        return DEFAULT_DEP_TYPE
    if not isinstance(value, str):
        raise ItemError(f"invalid dependency type {value!r}; expected kebab-case such as 'blocks'", "BAD_DEPS")
    dep_type = value.strip().lower()
    if not dep_type:
        return DEFAULT_DEP_TYPE
    if not DEP_TYPE_RE.match(dep_type):
        raise ItemError(
            f"invalid dependency type {value!r}; expected kebab-case such as 'blocks' or 'relates-to'", "BAD_DEPS"
        )
    return dep_type


def normalize_edge(raw: Any) -> Item:
    """One edge: a bare id string, or an object with ``id`` and optional ``type`` (extras kept)."""
    if isinstance(raw, str):
        return {"id": _nonblank(raw, "dependency id", "BAD_DEPS"), "type": DEFAULT_DEP_TYPE}
    if not isinstance(raw, dict):
        raise ItemError(f"a dependency must be an id or an object with id and type, got {json_text(raw)}", "BAD_DEPS")
    edge = {"id": _nonblank(raw.get("id"), "dependency id", "BAD_DEPS"), "type": normalize_dep_type(raw.get("type"))}
    for key, value in raw.items():
        if key not in edge:
            edge[key] = value
    return edge


def normalize_deps(raw: Any) -> list[Item]:
    """Edges normalized and deduplicated by (id, type), order kept."""
    if raw is None or raw == []:
        return []
    if not isinstance(raw, list):
        raise ItemError(f"deps must be an array of edges, got {json_type(raw)}", "BAD_DEPS")
    return _unique_edges(normalize_edge(entry) for entry in raw)


def _unique_edges(edges: Iterable[Item]) -> list[Item]:
    """``edges`` without repeats of the same (id, type), first occurrence kept, order kept."""
    deps: list[Item] = []
    seen: set[tuple[str, str]] = set()
    for edge in edges:
        key = (edge["id"], edge["type"])
        if key not in seen:
            seen.add(key)
            deps.append(edge)
    return deps


def parse_deps_arg(text: str) -> list[Item]:
    """``--deps "a,b:relates-to"``: comma-separated ``id`` or ``id:type`` tokens; "" means none."""
    if text is None or not text.strip():
        return []
    edges = []
    for token in text.split(","):
        part = token.strip()
        if not part:
            raise ItemError(f"--deps {text!r} contains an empty dependency token", "BAD_DEPS")
        dep_id, _, dep_type = part.partition(":")
        edges.append({"id": _nonblank(dep_id, "dependency id", "BAD_DEPS"), "type": normalize_dep_type(dep_type)})
    return _unique_edges(edges)


def normalize_notes(raw: Any) -> str:
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise ItemError(f"notes must be a string, got {json_type(raw)}", "BAD_NOTES")
    return raw


def normalize_comment(raw: Any) -> Item:
    """``{ts, author, text}`` (non-blank strings; ``text`` kept as given; extras kept)."""
    if not isinstance(raw, dict):
        raise ItemError(f"a comment must be an object with ts, author and text, got {json_text(raw)}", "BAD_COMMENT")
    comment = {
        "ts": _nonblank(raw.get("ts"), "comment ts", "BAD_COMMENT"),
        "author": _nonblank(raw.get("author"), "comment author", "BAD_COMMENT"),
        "text": raw.get("text"),
    }
    _nonblank(comment["text"], "comment text", "BAD_COMMENT")
    for key, value in raw.items():
        if key not in comment:
            comment[key] = value
    return comment


def normalize_comments(raw: Any) -> list[Item]:
    if raw is None or raw == []:
        return []
    if not isinstance(raw, list):
        raise ItemError(f"comments must be an array, got {json_type(raw)}", "BAD_COMMENT")
    return [normalize_comment(entry) for entry in raw]


def normalize_item(raw: object) -> Item:
    """The canonical form of one item; unknown fields kept (after the core ones, in order)."""
    if not isinstance(raw, dict):
        raise ItemError(f"an item must be an object, got {json_type(raw)}")
    item_id = _nonblank(raw.get("id"), "item id", "BAD_ITEM")
    # Every full check and replay normalizes each upserted item: the stored form (plain
    # strings, a canonical status, no deps or comments) takes the first test of each field.
    step = raw.get("step")
    if type(step) is not str or not (step := step.strip()):
        step = _nonblank(raw.get("step"), f"step of item {item_id!r}", "BAD_ITEM")
    status = raw.get("status", "pending")
    if type(status) is not str or status not in STATUS_SET:
        status = normalize_status(status)
    deps = raw.get("deps")
    notes = raw.get("notes")
    comments = raw.get("comments")
    item = {
        "id": item_id,
        "step": step,
        "status": status,
        "deps": [] if deps == [] else normalize_deps(deps),
        "notes": notes if type(notes) is str else normalize_notes(notes),
        "comments": [] if comments == [] else normalize_comments(comments),
    }
    if len(raw) > len(item) or not raw.keys() <= item.keys():  # unknown fields, kept in order
        for key, value in raw.items():
            if key not in item and key not in DERIVED_FIELDS:
                big = _unsafe_integer(value)
                if big is not None:  # the limit every reader applies (docs/security.md)
                    raise ItemError(
                        f"field {key!r} of item {item_id!r} holds the integer {str(big)[:40]}, beyond 2^53-1 "
                        "(the JSON interop limit); write it as a string"
                    )
                item[key] = value
    return item


def _unsafe_integer(value: Any) -> int | None:
    """The first integer in ``value`` beyond 2^53-1 in magnitude (None when there is none)."""
    pending = [value]
    while pending:
        current = pending.pop()
        if type(current) is int:
            if abs(current) > MAX_SAFE_INTEGER:
                return current
        elif type(current) is dict:
            pending.extend(current.values())
        elif type(current) is list:
            pending.extend(current)
    return None


def normalize_items(raw_items: Any) -> list[Item]:
    """A list of items, normalized; duplicate ids are rejected."""
    if not isinstance(raw_items, list):
        raise ItemError(f"items must be an array, got {json_type(raw_items)}")
    items = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_items):
        try:
            item = normalize_item(raw)
        except ItemError as exc:
            raise ItemError(f"item {index}: {exc.message}", exc.code) from None
        if item["id"] in seen:
            raise ItemError(f"duplicate item id {item['id']!r}", "DUPLICATE_ID")
        seen.add(item["id"])
        items.append(item)
    return items


# --- derived read fields ---------------------------------------------------------------


def _unresolved(item: Item, status_of: dict[str, str]) -> list[str]:
    waiting: list[str] = []
    for edge in item.get("deps") or ():
        dep_id = edge["id"]
        if status_of.get(dep_id) != "completed" and dep_id not in waiting:
            waiting.append(dep_id)
    return waiting


def dep_state_of(status: str, waiting_on: list[str]) -> str:
    if status == "blocked":
        return BLOCKED_MANUAL
    if status in ("completed", "deferred", "canceled"):
        return NOT_APPLICABLE
    return WAITING if waiting_on else READY


def derive(items: list[Item]) -> list[Item]:
    """Copies of ``items`` with ``dep_state`` and ``waiting_on`` added (order kept).

    Only a ``completed`` dependency is resolved; a dependency on a missing item is
    unresolved. ``waiting_on`` lists the unresolved dependency ids in edge order.
    """
    status_of = {item["id"]: item.get("status", "pending") for item in items}
    out = []
    for item in items:
        row = {key: value for key, value in item.items() if key not in DERIVED_FIELDS}
        waiting = _unresolved(item, status_of)
        row["dep_state"] = dep_state_of(item.get("status", "pending"), waiting)
        row["waiting_on"] = waiting
        out.append(row)
    return out


def ready_items(items: list[Item]) -> list[Item]:
    """Pending items whose dependencies are all resolved (derived rows)."""
    return [row for row in derive(items) if row["status"] == "pending" and row["dep_state"] == READY]


def blocked_items(items: list[Item]) -> list[Item]:
    """Items blocked by hand, and pending items waiting on dependencies (derived rows)."""
    return [
        row
        for row in derive(items)
        if row["status"] == "blocked" or (row["status"] == "pending" and row["dep_state"] == WAITING)
    ]


VIEWS = {"derive": derive, "ready": ready_items, "blocked": blocked_items}  # show, ready, blocked


def status_filter(values: Iterable[str]) -> set[str] | None:
    """``--status a,b --status c``: the canonical statuses to keep (aliases accepted); None
    when none is named (keep every row)."""
    wanted: set[str] = set()
    for value in values:
        for part in value.split(","):
            if part.strip():
                wanted.add(normalize_status(part))
    return wanted or None


def view_rows(items: list[Item], view: str, statuses: Iterable[str] = ()) -> list[Item]:
    """The derived rows of one view of the plan (``derive``: every item, ``ready``,
    ``blocked``), kept to ``statuses`` when any are named: what ``show``, ``ready``,
    ``blocked`` and the MCP ``show`` tool list."""
    wanted = status_filter(statuses)
    rows = VIEWS[view](items)
    return rows if wanted is None else [row for row in rows if row["status"] in wanted]


def to_update_plan(items: list[Item]) -> Item:
    """``{"plan": [{"step", "status"}, ...]}`` in item order (seed 000 translation contract).

    blocked/deferred/canceled map to pending, and an item waiting on dependencies is never
    reported ``in_progress``.
    """
    rows = items if all("dep_state" in item for item in items) else derive(items)
    plan = []
    for row in rows:
        status = UPDATE_PLAN_STATUS[normalize_status(row.get("status", "pending"))]
        if status == "in_progress" and row["dep_state"] == WAITING:
            status = "pending"
        plan.append({"step": row["step"], "status": status})
    return {"plan": plan}


# --- ids and rendering helpers -----------------------------------------------------------

_ID_NUMBER_RE = re.compile(r"^(?:st|kt)-(\d+)$", re.IGNORECASE)
_AUTO_ID_RE = re.compile(r"st-[0-9]{3,}")


def next_id(ids: Iterable[str]) -> str:
    """``st-NNN`` one above the highest ``st-``/``kt-`` number in use (``st-001`` first), padded
    like the widest id in use, so a plan that started at ``st-0001`` keeps four digits (never
    fewer than three: the original st's width)."""
    highest = 0
    width = 3
    for item_id in ids:
        match = _ID_NUMBER_RE.match(item_id)
        if match:
            digits = match.group(1)
            highest = max(highest, int(digits))
            width = max(width, len(digits))
    return f"st-{highest + 1:0{width}d}"


def is_auto_id(item_id: str) -> bool:
    """Whether ``item_id`` has the form :func:`next_id` allocates (``st-`` and 3+ digits)."""
    return isinstance(item_id, str) and _AUTO_ID_RE.fullmatch(item_id) is not None


def dep_token(edge: Item) -> str:
    return edge["id"] if edge.get("type", DEFAULT_DEP_TYPE) == DEFAULT_DEP_TYPE else f"{edge['id']}:{edge['type']}"


def format_deps(deps: list[Item]) -> str:
    """``a, b:relates-to`` (the --deps syntax, blocks implied)."""
    return ", ".join(dep_token(edge) for edge in deps)
