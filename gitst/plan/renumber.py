"""Which item an id names on each side of a plan merge, and the fresh ids of colliding ones
(:mod:`gitst.plan.merge` explains the merge; this is its bookkeeping of ids).

An event's ids are mapped one by one (:func:`map_ids`); an event is identified across merges
by :func:`event_key` (its content without ``seq`` and without a merge's rename note); an item by
the event that created it, as first written, and the id that event gave it (:func:`walk_events`);
:class:`Renumbering` decides which id each item has in the merged plan.
"""

from __future__ import annotations

import orjson

from gitst.core.values import Value
from gitst.plan.model import is_auto_id, next_id
from gitst.plan.reducer import OP_ALIASES, OPS, PlanState, ReplayError

# No dataclass and no typing at run time: the merge driver's start-up (gitst.plan.merge).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Record = dict[str, Any]  # one plan record (an event or a checkpoint), as parsed
    Item = dict[str, Any]  # one plan item, as the reducer holds it
    Identity = tuple[bytes, str]  # an item across merges: (its creating event's key, the id it gave it)
    Names = dict[str, Identity | None]  # the item each id an event names is (None: no item has that id)
    Created = list[tuple[str, Identity, Item | None]]  # the items an event created: (id, identity, item)

__all__ = [
    "NOTE",
    "RENAMED",
    "Created",
    "Identity",
    "Item",
    "Names",
    "Record",
    "Renumbered",
    "Renumbering",
    "Walk",
    "describe",
    "event_key",
    "state_of",
    "walk_events",
]

# The note a merge leaves on an event it renumbered: {"merge": {"renamed": {first: here}}}
NOTE = "merge"
RENAMED = "renamed"


class Renumbered(Value):
    """One of theirs' items that got a fresh id: ours holds another item under ``old``."""

    __slots__ = ("new", "old", "ours_new", "published", "step")

    def __init__(self, old: str, new: str, step: str, ours_new: bool, published: str = "") -> None:
        self.old = old
        self.new = new
        self.step = step
        self.ours_new = ours_new  # the side that kept ``old`` created it since the merge base too (else it had it)
        self.published = published  # set when the item that moved is ours: theirs is published on this branch

    def line(self) -> str:
        if self.published:
            why = (
                f"{self.published} created {{}} too" if self.ours_new else f"{self.published} already has another {{}}"
            )
            return (
                f"gitst merge: this branch's {self.old} {describe(self.step)} is now {self.new} "
                f"({why.format(self.old)}; ids on {self.published} never change)"
            )
        why = "ours created {} too" if self.ours_new else "ours already has another {}"
        return f"gitst merge: theirs' {self.old} {describe(self.step)} is now {self.new} ({why.format(self.old)})"

    def repaired_line(self) -> str:
        """What ``doctor --repair-seq`` says of an item it renumbered in a text-merged plan."""
        return (
            f"renumbered {self.old} {describe(self.step)} to {self.new}: two branches both added {self.old} "
            "and were joined without the plan merge driver"
        )


# --- ids inside events ----------------------------------------------------------------------

_ID_OPS = frozenset(OPS) - {"init", "replace", "upsert"}  # the ops that name one item by ``id``


def _canonical_op(record: Record) -> object:
    op = record.get("op")
    return OP_ALIASES.get(op, op) if isinstance(op, str) else op


def _map_edge(edge: object, fn: Callable[[str], str]) -> object:
    if isinstance(edge, str):
        return fn(edge)
    if isinstance(edge, dict) and isinstance(edge.get("id"), str):
        return {**edge, "id": fn(edge["id"])}
    return edge


def _map_item(item: object, fn: Callable[[str], str]) -> object:
    if not isinstance(item, dict):
        return item
    out = dict(item)
    if isinstance(out.get("id"), str):
        out["id"] = fn(out["id"])
    if isinstance(out.get("deps"), list):
        out["deps"] = [_map_edge(edge, fn) for edge in out["deps"]]
    return out


def _map_ids(record: Record, fn: Callable[[str], str]) -> Record:
    """A copy of event ``record`` with every item id it names passed through ``fn``: ``id``
    of the id ops, ``item.id``, the items of ``replace``, every dependency edge's ``id``."""
    op = _canonical_op(record)
    out = dict(record)
    if op == "upsert" and "item" in out:
        out["item"] = _map_item(out["item"], fn)
    elif op == "replace" and isinstance(out.get("items"), list):
        out["items"] = [_map_item(item, fn) for item in out["items"]]
    elif op in _ID_OPS:
        if isinstance(out.get("id"), str):
            out["id"] = fn(out["id"])
        if op == "set_deps" and isinstance(out.get("deps"), list):
            out["deps"] = [_map_edge(edge, fn) for edge in out["deps"]]
    return out


def _referenced(record: Record) -> list[str]:
    """The item ids ``record`` names (trimmed, as the reducer reads them), in order."""
    found: list[str] = []

    def note(raw: str) -> str:
        found.append(raw.strip())
        return raw

    _map_ids(record, note)
    return found


def _rename_with(names: dict[str, str]) -> Callable[[str], str]:
    """An id mapper for :func:`_map_ids`: an id ``names`` holds (trimmed, as the reducer reads
    it) becomes its new id, any other id stays as written."""
    return lambda raw: names.get(raw.strip(), raw)


def _renames(record: Record) -> dict[str, str]:
    """The renames earlier merges noted on ``record``: {id as first written: id here}."""
    note = record.get(NOTE)
    renamed = note.get(RENAMED) if isinstance(note, dict) else None
    if not isinstance(renamed, dict):
        return {}
    return {k: v for k, v in renamed.items() if isinstance(k, str) and isinstance(v, str)}


def _without_note(record: Record) -> Record:
    """``record`` without ``seq`` and without a merge's rename note."""
    out = {k: v for k, v in record.items() if k != "seq"}
    note = out.get(NOTE)
    if isinstance(note, dict) and RENAMED in note:
        rest = {k: v for k, v in note.items() if k != RENAMED}
        if rest:
            out[NOTE] = rest
        else:
            del out[NOTE]
    return out


def _renumber(record: Record, changed: dict[str, str]) -> Record:
    """``record`` with the ids in ``changed`` replaced, its rename note saying so (composed
    with the note of an earlier merge, so the note always leads back to the first write)."""
    out = _map_ids(record, _rename_with(changed))
    earlier = _renames(record)
    renamed = {first: changed.get(here, here) for first, here in earlier.items() if changed.get(here, here) != first}
    noted = set(earlier.values())
    renamed.update({here: now for here, now in changed.items() if here not in noted})
    note = out.get(NOTE, {})
    if not isinstance(note, dict):
        return out  # a field of someone else's under our name: kept, nothing noted
    rest = {k: v for k, v in note.items() if k != RENAMED}
    if renamed:
        out[NOTE] = {**rest, RENAMED: renamed}
    elif rest:
        out[NOTE] = rest
    else:
        out.pop(NOTE, None)
    return out


# --- which item an id names -----------------------------------------------------------------


def event_key(record: Record) -> bytes:
    """A record's identity across merges: its content without ``seq`` and without a merge's
    rename note (compared once every side's ids name ours' items)."""
    return orjson.dumps(_without_note(record), option=orjson.OPT_SORT_KEYS)


class Walk(Value):
    """One side's events replayed (events only, as the doctor's full replay), remembering
    which item each id names at each event.

    An item is known by the event that created it — as first written: without ``seq``, an
    earlier merge's renames undone — and the id that event gave it. So an item keeps that
    identity in every copy of the event, renumbered or not.
    """

    __slots__ = ("ids", "items", "steps")

    def __init__(self) -> None:
        self.steps: list[tuple[Names, Created]] = []  # one per event
        self.ids: set[str] = set()  # every id the events name
        self.items: dict[str, Item] = {}  # id -> item: the full replay


def walk_events(events: list[Record]) -> Walk:
    """One side's events replayed (:class:`Walk`): the item each id names at each event."""
    walk = Walk()
    state = PlanState()
    present: dict[str, Identity] = {}  # id -> identity of the item it names now
    for record in events:
        refs = _referenced(record)
        walk.ids.update(refs)
        try:
            state.apply_event(record)
        except ReplayError:  # the doctor's full replay skips an event that does not apply
            walk.steps.append(({x: present.get(x) for x in refs}, []))
            continue
        made, gone = _made_and_gone(record, state, present)
        created = _created(record, made, state, present)
        walk.steps.append(({x: present.get(x, gone.get(x)) for x in refs}, created))
    walk.items = {item["id"]: item for item in state.items()}
    return walk


def _made_and_gone(
    record: Record, state: PlanState, present: dict[str, Identity]
) -> tuple[list[str], dict[str, Identity]]:
    """The ids of the items an applied event created, and the identities of the ids it
    dropped; ``present`` loses what was dropped (a replace keeps the items it holds again)."""
    op = _canonical_op(record)
    if op == "upsert":
        item_id = record["item"]["id"].strip()
        return ([] if item_id in present else [item_id]), {}
    if op == "replace":
        gone = dict(present)
        present.clear()
        made = []
        for item_id in state.ids():
            if item_id in gone:
                present[item_id] = gone[item_id]
            else:
                made.append(item_id)
        return made, gone
    if op == "remove":
        item_id = record["id"].strip()
        if item_id in present:
            return [], {item_id: present.pop(item_id)}
    return [], {}


def _created(record: Record, made: list[str], state: PlanState, present: dict[str, Identity]) -> Created:
    """The identities of the items ``record`` created (``made``), now in ``present``: the
    event as first written (an earlier merge's renames undone) and the id it gave each."""
    if not made:
        return []
    first = {here: was for was, here in _renames(record).items()}
    origin = event_key(_map_ids(record, _rename_with(first)))
    created: Created = []
    for item_id in made:
        identity = (origin, first.get(item_id, item_id))
        present[item_id] = identity
        created.append((item_id, identity, state.get(item_id)))
    return created


class Renumbering:
    """Where the items that base's and theirs' ids name are in ours: ours' ids are kept; an
    item ours holds under another id (renumbered by an earlier merge) is found by identity;
    an item of theirs created since the base under an auto id (``st-NNN``) that ours gave to
    a different item gets a fresh id from the plan engine's allocator."""

    def __init__(self, base: Walk, ours: Walk, theirs: Walk, *, published: str = ""):
        self.published = published  # set: "ours" here is git's theirs, published there

        self.ours_index: dict[Identity, str] = {}  # identity -> ours' id
        # ours' id -> (identity, item) of its latest creation
        self.ours_latest: dict[str, tuple[Identity, Item | None]] = {}
        for _names, created in ours.steps:
            for item_id, identity, item in created:
                self.ours_index[identity] = item_id
                self.ours_latest[item_id] = (identity, item)
        self.made: dict[Identity, Item | None] = {}  # identity -> item as created (base's and theirs')
        for walk in (base, theirs):
            for _names, created in walk.steps:
                for _item_id, identity, item in created:
                    self.made.setdefault(identity, item)
        self.base_made = {identity for _names, created in base.steps for _i, identity, _x in created}
        self.taken = set(ours.ids) | set(theirs.ids) | set(base.ids)
        self.decided: dict[Identity, str] = {}
        self.same_as_ours: set[Identity] = set()  # created with ours' id and content: one item
        self.renumbered: list[Renumbered] = []

    def target(self, item_id: str, identity: Identity | None) -> str:
        if identity is None:  # an id no item has here (a dependency on a missing item)
            return item_id
        if identity in self.decided:
            return self.decided[identity]
        target = self.ours_index.get(identity, item_id)
        latest = self.ours_latest.get(item_id)
        if identity not in self.ours_index and latest is not None:
            ours_identity, ours_item = latest
            item = self.made.get(identity)
            if item is not None and item == ours_item:
                self.same_as_ours.add(identity)
            elif item is not None and is_auto_id(item_id) and identity not in self.base_made:
                target = next_id(self.taken)
                self.taken.add(target)
                self.renumbered.append(
                    Renumbered(
                        item_id, target, item.get("step", ""), ours_identity not in self.base_made, self.published
                    )
                )
        self.decided[identity] = target
        return target

    def apply(self, events: list[Record], walk: Walk) -> list[Record]:
        """``events`` with ids naming ours' items (renumbered events carry the note)."""
        out = []
        for record, (names, _created) in zip(events, walk.steps, strict=True):  # one step per event
            changed = {}
            for item_id, identity in names.items():
                target = self.target(item_id, identity)
                if target != item_id:
                    changed[item_id] = target
            out.append(_renumber(record, changed) if changed else record)
        return out

    def duplicate_creations(self, events: list[Record], walk: Walk) -> set[int]:
        """Positions of the upserts that created an item ours created identically."""
        return {
            n
            for n, (record, (_names, created)) in enumerate(zip(events, walk.steps, strict=True))
            if _canonical_op(record) == "upsert" and any(identity in self.same_as_ours for _i, identity, _x in created)
        }


def state_of(events: list[Record]) -> dict[str, Item]:
    """The full replay (events only, as the doctor defines it): id -> item."""
    return walk_events(events).items


def describe(value: object) -> str:
    """``value`` as JSON, cut to 60 characters: how a merge message shows a value."""
    text = orjson.dumps(value).decode()
    return text if len(text) <= 60 else text[:57] + "..."
