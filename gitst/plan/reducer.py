"""The pure replay of st v3 records into the materialized plan.

``replay(records)`` applies records in order: a ``checkpoint`` replaces the state with its
``items``; an ``event`` applies its ``op``. ``replay(records, events_only=True)`` ignores
checkpoints: that is the *full replay* the replay contract compares checkpoints against.

Ops (seed 000): ``init`` (a marker), ``replace`` / ``replace_all``, ``upsert`` /
``upsert_item``, ``set_status``, ``set_deps``, ``set_notes``, ``add_comment``, ``remove``
(removing an id that is not there is a no-op, so replays of merged histories stay
possible). Items are normalized (:func:`gitst.plan.model.normalize_item`) as they enter the
state, so unknown fields survive and aliases become canonical.

Item dicts are never changed in place: every op builds a new dict for the item it touches.
So :meth:`PlanState.copy` is cheap and a copy never sees changes made to the original.
A record that cannot be applied raises :class:`ReplayError` with a stable ``code``:
``ST_REPLAY_*`` for an event that does not apply, ``SCHEMA`` for a record whose shape is
wrong (not an object, ``v`` not 3, an unknown lane) - the code the plan doctor and every
other kind give a record that breaks its schema.
"""

from __future__ import annotations

from collections.abc import Iterable

from gitst.plan import model
from gitst.plan.model import ItemError, json_text, json_type

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import ClassVar

    from gitst.plan.model import Item, Record

OP_ALIASES = {"replace_all": "replace", "upsert_item": "upsert"}
OPS = ("init", "replace", "upsert", "set_status", "set_deps", "set_notes", "add_comment", "remove")


class ReplayError(Exception):
    """A record that cannot be applied. ``code`` is stable (documented in docs/plan.md);
    ``index`` is the record's 0-based position in what was replayed, when known."""

    def __init__(self, code: str, message: str, index: int | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.index = index

    def __str__(self) -> str:
        return self.message


class PlanState:
    """The materialized plan: items by id, in plan order."""

    __slots__ = ("_items",)
    # Compared by content and changed in place, so never hashable (as __eq__ alone makes it);
    # the declaration is typeshed's own for list and dict, hence the same ignore.
    __hash__: ClassVar[None]  # type: ignore[assignment]

    def __init__(self, items: Iterable[Item] = ()):
        self._items: dict[str, Item] = {}
        for item in items:
            self._items[item["id"]] = item

    # reading
    def items(self) -> list[Item]:
        """The items in plan order (do not change them in place)."""
        return list(self._items.values())

    def ids(self) -> list[str]:
        return list(self._items)

    def get(self, item_id: str) -> Item | None:
        return self._items.get(item_id)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PlanState) and self.items() == other.items()

    def __repr__(self) -> str:
        return f"PlanState({self.items()!r})"

    def copy(self) -> PlanState:
        clone = PlanState()
        clone._items = dict(self._items)
        return clone

    # applying
    def apply(self, record: Record) -> None:
        """Apply one record (checkpoint: reset to its items; event: its op)."""
        lane = _lane(record)
        if lane == "checkpoint":
            self._items = _snapshot(record, "checkpoint")
        else:
            self.apply_event(record)

    def apply_event(self, record: Record) -> None:
        try:
            apply = _APPLY[record["op"]]
        except (KeyError, TypeError):  # no op, not an op (TypeError: not even hashable)
            raw_op = record.get("op")
            if not isinstance(raw_op, str):
                raise ReplayError(
                    "ST_REPLAY_UNKNOWN_OP",
                    f"op must be a string, got {json_text(raw_op)}; expected one of: {', '.join(OPS)}",
                ) from None
            raise ReplayError(
                "ST_REPLAY_UNKNOWN_OP", f"unknown op {raw_op!r}; expected one of: {', '.join(OPS)}"
            ) from None
        apply(self, record)

    # One function per op (the hot path of a full check: looked up once, no chain of tests).

    def _init(self, record: Record) -> None:
        return

    def _replace(self, record: Record) -> None:
        self._items = _snapshot(record, "replace")

    def _upsert(self, record: Record) -> None:
        try:
            item = model.normalize_item(record.get("item"))
        except ItemError as exc:
            raise ReplayError(f"ST_REPLAY_{exc.code}", f"upsert: {exc.message}") from None
        self._items[item["id"]] = item

    def _remove(self, record: Record) -> None:
        self._items.pop(_target_id(record, "remove"), None)

    def _current(self, record: Record, op: str) -> tuple[str, Item]:
        item_id = _target_id(record, op)
        current = self._items.get(item_id)
        if current is None:
            raise ReplayError("ST_REPLAY_UNKNOWN_ID", f"{op} references unknown id '{item_id}'")
        return item_id, current


_MISSING = object()


def _status_of(record: Record, current: Item) -> str:
    status = record.get("status", _MISSING)
    if type(status) is str and status in model.STATUS_SET:  # the common case: stored records
        return status
    if status is _MISSING:
        raise ItemError("set_status needs 'status'", "BAD_STATUS")
    return model.normalize_status(status)


def _deps_of(record: Record, current: Item) -> list[Item]:
    if "deps" not in record:
        raise ItemError("set_deps needs 'deps'", "BAD_DEPS")
    return model.normalize_deps(record["deps"])


def _notes_of(record: Record, current: Item) -> str:
    notes = record.get("notes")
    return notes if type(notes) is str else model.normalize_notes(notes)


def _comments_of(record: Record, current: Item) -> list[Item]:
    return [*current.get("comments", ()), model.normalize_comment(record.get("comment"))]


def _field_op(op: str, field: str, value_of: Callable[[Record, Item], object]) -> Callable[[PlanState, Record], None]:
    """The op that gives one existing item a new ``field`` (``value_of(record, item)``): a new
    dict for the item, its fields in the same order."""

    def apply(state: PlanState, record: Record) -> None:
        item_id = record.get("id", "")
        current = state._items.get(item_id) if type(item_id) is str else None
        if current is None:  # not the exact id of an item: trimmed, or an error
            item_id, current = state._current(record, op)
        try:
            value = value_of(record, current)
        except ItemError as exc:
            raise _item_error(op, item_id, exc) from None
        updated = current.copy()
        updated[field] = value
        state._items[item_id] = updated

    return apply


_APPLY = {
    "init": PlanState._init,
    "replace": PlanState._replace,
    "replace_all": PlanState._replace,
    "upsert": PlanState._upsert,
    "upsert_item": PlanState._upsert,
    "set_status": _field_op("set_status", "status", _status_of),
    "set_deps": _field_op("set_deps", "deps", _deps_of),
    "set_notes": _field_op("set_notes", "notes", _notes_of),
    "add_comment": _field_op("add_comment", "comments", _comments_of),
    "remove": PlanState._remove,
}


def _target_id(record: Record, op: str) -> str:
    """The trimmed ``id`` an op on one item names (ReplayError when there is none)."""
    item_id = record.get("id")
    if not isinstance(item_id, str) or not item_id.strip():
        raise ReplayError("ST_REPLAY_BAD_ITEM", f"{op} needs a non-empty string 'id', got {json_text(item_id)}")
    return item_id.strip()


def _item_error(op: str, item_id: str, exc: ItemError) -> ReplayError:
    return ReplayError(f"ST_REPLAY_{exc.code}", f"{op} '{item_id}': {exc.message}")


def _lane(record: Record) -> str:
    if not isinstance(record, dict):
        raise _shape_error(f"a record must be a JSON object, got {json_type(record)}")
    if record.get("v") != 3:
        raise _shape_error(f"unsupported record version {record.get('v')!r}; expected 3")
    lane = record.get("lane")
    if lane == "checkpoint" or lane == "event":
        return lane
    raise _shape_error(f"invalid lane {lane!r}; expected 'event' or 'checkpoint'")


def _shape_error(message: str) -> ReplayError:
    """A record whose shape is wrong: the generic ``SCHEMA`` code (imported only then)."""
    from gitst.core.diagnostics import SCHEMA  # lazy: error path; not in the pinned imports of show/add

    return ReplayError(SCHEMA, message)


def _snapshot(record: Record, what: str) -> dict[str, Item]:
    try:
        items = model.normalize_items(record.get("items"))
    except ItemError as exc:
        raise ReplayError(f"ST_REPLAY_{exc.code}", f"{what}: {exc.message}") from None
    return {item["id"]: item for item in items}


def checkpoint_items(record: Record) -> list[Item]:
    """The normalized items of a checkpoint record (ReplayError if they are not valid)."""
    return list(_snapshot(record, "checkpoint").values())


def apply_record(state: PlanState, record: Record, *, events_only: bool = False) -> None:
    """Apply one record to ``state`` (checkpoints ignored with ``events_only``)."""
    if _lane(record) == "checkpoint":
        if not events_only:
            state._items = _snapshot(record, "checkpoint")
        return
    state.apply_event(record)


def replay(records: Iterable[Record], *, events_only: bool = False, start: PlanState | None = None) -> PlanState:
    """Materialize ``records`` (in order) on top of ``start`` (empty by default)."""
    state = start.copy() if start is not None else PlanState()
    for index, record in enumerate(records):
        try:
            apply_record(state, record, events_only=events_only)
        except ReplayError as exc:
            exc.index = index
            raise
    return state
