"""Three-way merge of st plan files (git's merge driver for ``.step/*.jsonl``).

A plan is append-only, so a merge never needs to edit a line: :func:`merge` keeps
*ours* byte for byte and appends the events *theirs* added, re-sequenced after our
watermark, then a checkpoint. The result replays cleanly (its last checkpoint is
canonical: seq = watermark, items = the full replay), so ``git merge`` and ``git rebase`` of
branches that both appended to a plan need no hand editing.

Which of theirs' events are new: an event is identified by its content without ``seq``
(the only field a merge changes) once its ids name ours' items, counted as a multiset.
New = theirs - base - ours: what theirs added since the merge base and ours does not
already hold. So merging the same branch twice, merging back a branch that merged us, a
rebase (whose "ours" holds earlier picks re-sequenced) and ``rebase --onto`` that drops
commits all come out right. Theirs' checkpoints are not carried over: the appended
checkpoint replaces them.

Ids: both sides running ``git st add`` without ``--id`` allocate the same ``st-NNN`` for
different items. Ours keeps its ids; an item theirs created since the base under an
allocator-shaped id that ours gave to another item gets the allocator's next id
(:func:`gitst.plan.model.next_id` over every id either side uses), and every reference in
theirs' events follows (:class:`Renumbered`, one per item, is what the driver reports).
An item is known along each side's history by the event that created it, so the same
item added alike on both sides is one item, and an event that looks the same on both
sides but names two different items is kept. A renumbered event carries
``{"merge": {"renamed": {first: here}}}`` (composed over merges): with it a later merge
sees the copy as the same event naming the same item (docs/hooks.md, "The rename note").

When it refuses (:class:`MergeConflict`, exit 1, nothing written):

- both sides changed the same field of the same item to different values since the merge
  base, or one side removed an item the other changed, or both added an explicit id with
  different fields — named with the item and fields;
- appending theirs' events after ours would not give the three-way result (e.g. their
  ``upsert`` of a whole item would undo a field only we changed) — named likewise;
- a side has bytes that are not records (bad JSON, a torn last line) — named with the line.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import pairwise

import orjson

from gitst.core.errors import ProblemsFound
from gitst.plan.reducer import OP_ALIASES, OPS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeGuard

_ADDITIVE = ("comments",)  # list fields both sides may append to independently
# ours, because a commit's plan must extend HEAD's (the pre-commit hook's append-only rule)
RESOLVE = (
    "keep our plan (git checkout --ours -- PATH), redo the changes you want from their side with "
    "git st commands (they append), then git add PATH and commit"
)
# The note a merge leaves on an event it renumbered: {"merge": {"renamed": {first: here}}}
NOTE = "merge"
RENAMED = "renamed"


class MergeConflict(ProblemsFound):
    """The plans cannot be merged without a person deciding (exit 1)."""


@dataclass(frozen=True)
class Renumbered:
    """One of theirs' items that got a fresh id: ours holds another item under ``old``."""

    old: str
    new: str
    step: str
    ours_new: bool  # the side that kept ``old`` created it since the merge base too (else it had it already)
    published: str = ""  # set when the item that moved is ours: theirs is published on this branch

    def line(self) -> str:
        if self.published:
            why = (
                f"{self.published} created {{}} too" if self.ours_new else f"{self.published} already has another {{}}"
            )
            return (
                f"gitst merge: this branch's {self.old} {_describe(self.step)} is now {self.new} "
                f"({why.format(self.old)}; ids on {self.published} never change)"
            )
        why = "ours created {} too" if self.ours_new else "ours already has another {}"
        return f"gitst merge: theirs' {self.old} {_describe(self.step)} is now {self.new} ({why.format(self.old)})"

    def repaired_line(self) -> str:
        """What ``doctor --repair-seq`` says of an item it renumbered in a text-merged plan."""
        return (
            f"renumbered {self.old} {_describe(self.step)} to {self.new}: two branches both added {self.old} "
            "and were joined without the plan merge driver"
        )


@dataclass
class Merged:
    """What :func:`merge` made: the plan's bytes and the renumbered items of theirs."""

    data: bytes
    renumbered: list[Renumbered] = field(default_factory=list)
    kept: str = "ours"  # the side kept byte for byte, whose ids never change: "ours" or "theirs"


# --- ids inside events ----------------------------------------------------------------------

_ID_OPS = frozenset(OPS) - {"init", "replace", "upsert"}  # the ops that name one item by ``id``


def _canonical_op(record: dict):
    op = record.get("op")
    return OP_ALIASES.get(op, op) if isinstance(op, str) else op


def _map_edge(edge, fn: Callable[[str], str]):
    if isinstance(edge, str):
        return fn(edge)
    if isinstance(edge, dict) and isinstance(edge.get("id"), str):
        return {**edge, "id": fn(edge["id"])}
    return edge


def _map_item(item, fn: Callable[[str], str]):
    if not isinstance(item, dict):
        return item
    out = dict(item)
    if isinstance(out.get("id"), str):
        out["id"] = fn(out["id"])
    if isinstance(out.get("deps"), list):
        out["deps"] = [_map_edge(edge, fn) for edge in out["deps"]]
    return out


def _map_ids(record: dict, fn: Callable[[str], str]) -> dict:
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


def _referenced(record: dict) -> list[str]:
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


def _renames(record: dict) -> dict[str, str]:
    """The renames earlier merges noted on ``record``: {id as first written: id here}."""
    note = record.get(NOTE)
    renamed = note.get(RENAMED) if isinstance(note, dict) else None
    if not isinstance(renamed, dict):
        return {}
    return {k: v for k, v in renamed.items() if isinstance(k, str) and isinstance(v, str)}


def _without_note(record: dict) -> dict:
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


def _renumber(record: dict, changed: dict[str, str]) -> dict:
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


def _key(record: dict) -> bytes:
    """A record's identity across merges: its content without ``seq`` and without a merge's
    rename note (compared once every side's ids name ours' items)."""
    return orjson.dumps(_without_note(record), option=orjson.OPT_SORT_KEYS)


def _minus(events: list[dict], keys: Counter) -> list[dict]:
    """``events`` without one occurrence per key counted in ``keys`` (multiset difference,
    order kept)."""
    left = Counter(keys)
    kept = []
    for record in events:
        key = _key(record)
        if left[key] > 0:
            left[key] -= 1
        else:
            kept.append(record)
    return kept


def _records(data: bytes, side: str) -> list[dict]:
    """The records of one side; a line that is not a record, a torn last line, or a record
    that is neither an event nor a checkpoint (which the merge could only drop) is refused."""
    from gitst.plan.store import parse_plan_bytes

    parsed = parse_plan_bytes(data)
    if parsed.bad:
        line, why, _raw = parsed.bad[0]
        raise MergeConflict(
            f"{side}: line {line} is not a plan record ({why})", fix="repair that side's plan first (git st doctor)"
        )
    if parsed.torn is not None:
        raise MergeConflict(
            f"{side}: line {parsed.torn.line} is a torn write (a record cut short)",
            fix="repair that side's plan first: git st doctor --repair-seq",
        )
    for line, record in parsed.records:
        if record.get("lane") not in ("event", "checkpoint"):
            raise MergeConflict(
                f"{side}: line {line} is not a plan record (lane {_describe(record.get('lane'))} is neither "
                '"event" nor "checkpoint"; a merge would drop it)',
                fix="repair that side's plan first (git st doctor names the line)",
            )
    return parsed.only_records()


@dataclass
class _Walk:
    """One side's events replayed (events only, as the doctor's full replay), remembering
    which item each id names at each event.

    An item is known by the event that created it — as first written: without ``seq``, an
    earlier merge's renames undone — and the id that event gave it. So an item keeps that
    identity in every copy of the event, renumbered or not.
    """

    steps: list = field(default_factory=list)  # per event: ({id: identity or None}, [(id, identity, item)])
    ids: set = field(default_factory=set)  # every id the events name
    items: dict = field(default_factory=dict)  # id -> item: the full replay


def _walk(events: list[dict]) -> _Walk:
    from gitst.plan.reducer import PlanState, ReplayError

    walk = _Walk()
    state = PlanState()
    present: dict[str, tuple] = {}
    for record in events:
        refs = _referenced(record)
        walk.ids.update(refs)
        op = _canonical_op(record)
        try:
            state.apply_event(record)
        except ReplayError:  # the doctor's full replay skips an event that does not apply
            walk.steps.append(({x: present.get(x) for x in refs}, []))
            continue
        gone: dict[str, tuple] = {}
        made: list[str] = []
        if op == "upsert":
            item_id = record["item"]["id"].strip()
            if item_id not in present:
                made.append(item_id)
        elif op == "replace":
            gone, present = present, {}
            for item_id in state.ids():
                if item_id in gone:
                    present[item_id] = gone[item_id]
                else:
                    made.append(item_id)
        elif op == "remove":
            item_id = record["id"].strip()
            if item_id in present:
                gone[item_id] = present.pop(item_id)
        created = []
        if made:
            first = {here: was for was, here in _renames(record).items()}
            origin = _key(_map_ids(record, _rename_with(first)))
            for item_id in made:
                identity = (origin, first.get(item_id, item_id))
                present[item_id] = identity
                created.append((item_id, identity, state.get(item_id)))
        walk.steps.append(({x: present.get(x, gone.get(x)) for x in refs}, created))
    walk.items = {item["id"]: item for item in state.items()}
    return walk


class _Renumbering:
    """Where the items that base's and theirs' ids name are in ours: ours' ids are kept; an
    item ours holds under another id (renumbered by an earlier merge) is found by identity;
    an item of theirs created since the base under an auto id (``st-NNN``) that ours gave to
    a different item gets a fresh id from the plan engine's allocator."""

    def __init__(self, base: _Walk, ours: _Walk, theirs: _Walk, *, published: str = ""):
        from gitst.plan.model import is_auto_id, next_id

        self.published = published  # set: "ours" here is git's theirs, published there

        self._is_auto_id, self._next_id = is_auto_id, next_id
        self.ours_index: dict[tuple, str] = {}  # identity -> ours' id
        self.ours_latest: dict[str, tuple] = {}  # ours' id -> (identity, item) of its latest creation
        for _names, created in ours.steps:
            for item_id, identity, item in created:
                self.ours_index[identity] = item_id
                self.ours_latest[item_id] = (identity, item)
        self.made: dict[tuple, dict] = {}  # identity -> item as created (base's and theirs')
        for walk in (base, theirs):
            for _names, created in walk.steps:
                for _item_id, identity, item in created:
                    self.made.setdefault(identity, item)
        self.base_made = {identity for _names, created in base.steps for _i, identity, _x in created}
        self.taken = set(ours.ids) | set(theirs.ids) | set(base.ids)
        self.decided: dict[tuple, str] = {}
        self.same_as_ours: set[tuple] = set()  # created with ours' id and content: one item
        self.renumbered: list[Renumbered] = []

    def target(self, item_id: str, identity: tuple | None) -> str:
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
            elif item is not None and self._is_auto_id(item_id) and identity not in self.base_made:
                target = self._next_id(self.taken)
                self.taken.add(target)
                self.renumbered.append(
                    Renumbered(
                        item_id, target, item.get("step", ""), ours_identity not in self.base_made, self.published
                    )
                )
        self.decided[identity] = target
        return target

    def apply(self, events: list[dict], walk: _Walk) -> list[dict]:
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

    def duplicate_creations(self, events: list[dict], walk: _Walk) -> set[int]:
        """Positions of the upserts that created an item ours created identically."""
        return {
            n
            for n, (record, (_names, created)) in enumerate(zip(events, walk.steps, strict=True))
            if _canonical_op(record) == "upsert" and any(identity in self.same_as_ours for _i, identity, _x in created)
        }


def _state(events: list[dict]) -> dict[str, dict]:
    """The full replay (events only, as the doctor defines it): id -> item."""
    return _walk(events).items


def _describe(value) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= 60 else text[:57] + "..."


def _changed_fields(base: dict, side: dict) -> set[str]:
    return {k for k in set(base) | set(side) if base.get(k) != side.get(k)}


def _is_extension(side_list: object, base_list: object) -> TypeGuard[list]:
    """True when ``side_list`` is ``base_list`` with items appended (both lists)."""
    return isinstance(base_list, list) and isinstance(side_list, list) and side_list[: len(base_list)] == base_list


def three_way(
    base: dict[str, dict], ours: dict[str, dict], theirs: dict[str, dict], *, swapped: bool = False
) -> tuple[dict[str, dict], list[str]]:
    """The field-level three-way merge of materialized items, and the contradictions.
    ``swapped``: ``ours`` is git's theirs (the kept side was theirs); messages still say
    ours/theirs as git does."""
    our_label, their_label = ("their side", "our side") if swapped else ("our side", "their side")
    expected: dict[str, dict] = {}
    problems: list[str] = []
    for item_id in dict.fromkeys([*ours, *theirs, *base]):
        b, o, t = base.get(item_id), ours.get(item_id), theirs.get(item_id)
        if o == t or t == b:
            if o is not None:
                expected[item_id] = o
            continue
        if o == b:
            if t is not None:
                expected[item_id] = t
            continue
        # both sides changed this item, differently
        if o is None or t is None:  # one side removed it (both removing it is o == t above)
            gone, kept, other = (our_label, their_label, t) if o is None else (their_label, our_label, o)
            fields = sorted(_changed_fields(b or {}, other or {}))
            problems.append(
                f"item '{item_id}': removed on {gone} but changed on {kept} ({', '.join(fields) or 'its fields'})"
            )
            continue
        start = b or {}
        merged = dict(start)
        clashes = []
        for key in dict.fromkeys([*o, *t, *start]):
            bv, ov, tv = start.get(key), o.get(key), t.get(key)
            if ov == tv or tv == bv:
                value = ov
            elif ov == bv:
                value = tv
            elif key in _ADDITIVE and _is_extension(ov, bv or []) and _is_extension(tv, bv or []):
                value = ov + tv[len(bv or []) :]
            else:
                mine, yours = (tv, ov) if swapped else (ov, tv)
                clashes.append(f"{key} (ours: {_describe(mine)}, theirs: {_describe(yours)})")
                continue
            if value is None and key not in o and key not in t:
                merged.pop(key, None)
            else:
                merged[key] = value
        if clashes:
            origin = "added on both sides" if b is None else "changed on both sides"
            problems.append(f"item '{item_id}' {origin}: {'; '.join(clashes)}")
        else:
            expected[item_id] = merged
    return expected, problems


def _events(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("lane") == "event"]


def _holds(plan_keys: set[bytes], events: list[dict]) -> bool:
    return all(_key(r) in plan_keys for r in events)


def published_side(
    our_events: list[dict], their_events: list[dict], published: Iterable[tuple[str, bytes]]
) -> str | None:
    """Where theirs is published, when theirs is the side to keep (None: keep ours).

    ``published``: (name, plan bytes) of the published branch, most authoritative first (the
    remote's base branch, then the local one). The first plan that holds every event of
    exactly one side decides: theirs is kept when that plan holds all of theirs and not all of
    ours (``git merge main`` on a PR branch); when it holds both, the side with more events
    (the later state of that branch). A plan that cannot be read is skipped."""
    for name, data in published:
        try:
            plan_keys = {_key(r) for r in _events(_records(data, name))}
        except MergeConflict:
            continue
        has_theirs, has_ours = _holds(plan_keys, their_events), _holds(plan_keys, our_events)
        if has_theirs and not has_ours:
            return name
        if has_ours and not has_theirs:
            return None
        if has_ours and has_theirs:
            return name if len(their_events) > len(our_events) else None
    return None


def merge(
    base: bytes, ours: bytes, theirs: bytes, *, interval: int, published: Iterable[tuple[str, bytes]] = ()
) -> Merged:
    """The published side byte for byte + the other side's new events re-sequenced + a
    checkpoint (see module doc). The published side is ours unless :func:`published_side`
    finds theirs on the published branch (``published``) and ours not."""
    base_events = _events(_records(base, "the merge base"))
    our_records = _records(ours, "our side")
    their_records = _records(theirs, "their side")
    our_events, their_events = _events(our_records), _events(their_records)
    where = published_side(our_events, their_events, published)
    if where is not None:
        merged = _append(base_events, theirs, their_records, our_events, interval=interval, published=where)
        merged.kept = "theirs"
        return merged
    return _append(base_events, ours, our_records, their_events, interval=interval)


def _append(
    base_events: list[dict],
    ours: bytes,
    our_records: list[dict],
    their_events: list[dict],
    *,
    interval: int,
    published: str = "",
) -> Merged:
    """``ours`` (the side kept: git's theirs when ``published`` says where it is published)
    byte for byte + theirs' new events re-sequenced + a checkpoint."""
    from gitst.plan.reducer import PlanState, ReplayError
    from gitst.plan.store import build_checkpoint, encode_record, trailing_events, watermark

    our_events = _events(our_records)
    base_walk, our_walk, their_walk = _walk(base_events), _walk(our_events), _walk(their_events)
    ids = _Renumbering(base_walk, our_walk, their_walk, published=published)
    base_events = ids.apply(base_events, base_walk)
    their_events = ids.apply(their_events, their_walk)
    duplicates = ids.duplicate_creations(their_events, their_walk)

    base_keys = Counter(_key(r) for r in base_events)
    ours_added = Counter(_key(r) for r in our_events) - base_keys  # what our side holds beyond the base
    since_base = _minus([r for n, r in enumerate(their_events) if n not in duplicates], base_keys)
    new = _minus(since_base, ours_added)
    if not new:
        return Merged(ours)

    base_state, our_state, their_state = _state(base_events), our_walk.items, _state(their_events)
    for identity in ids.same_as_ours:  # created alike on both sides: that creation is the base
        item_id = ids.decided[identity]
        if item_id not in base_state:
            base_state[item_id] = ids.ours_latest[item_id][1]
    expected, problems = three_way(base_state, our_state, their_state, swapped=bool(published))
    if problems:
        raise MergeConflict(
            "the plans contradict each other: " + "; ".join(problems),
            fix=RESOLVE,
        )

    state = PlanState(our_state.values())
    high = watermark(our_records)
    trailing = trailing_events(our_records)
    latest_ts = max((r["ts"] for r in our_records + new if isinstance(r.get("ts"), str)), default=None)
    out = [ours if not ours or ours.endswith(b"\n") else ours + b"\n"]
    # whose events are appended after whose (git's names: when theirs is the published side
    # kept, it is our events that go after theirs)
    appended, kept = ("our", f"theirs (published on {published})") if published else ("their", "ours")
    for theirs_event in new:
        high += 1
        record = {k: (high if k == "seq" else v) for k, v in theirs_event.items()}
        try:
            state.apply_event(record)
        except ReplayError as exc:
            raise MergeConflict(
                f"{appended} event {record.get('op')!r} on item {record.get('id')!r} does not apply after {kept}: "
                f"{exc.message}",
                fix=RESOLVE,
            ) from None
        out.append(encode_record(record))
        trailing += 1
        if trailing >= interval:
            out.append(encode_record(build_checkpoint(state.items(), high, ts=latest_ts)))
            trailing = 0
    if trailing:
        out.append(encode_record(build_checkpoint(state.items(), high, ts=latest_ts)))

    result = {item["id"]: item for item in state.items()}
    undone = []
    for item_id in dict.fromkeys([*expected, *result]):
        want, got = expected.get(item_id), result.get(item_id)
        if want == got:
            continue
        if want is None or got is None:
            undone.append(f"item '{item_id}' would be {'removed' if got is None else 'brought back'}")
            continue
        fields = sorted(_changed_fields(want, got))
        would_be = ", ".join(_describe(got.get(f)) for f in fields)
        instead_of = ", ".join(_describe(want.get(f)) for f in fields)
        undone.append(f"item '{item_id}': {', '.join(fields)} would end up {would_be} instead of {instead_of}")
    if undone:
        raise MergeConflict(
            f"appending {appended} events after {kept} would undo changes: " + "; ".join(undone),
            fix=RESOLVE,
        )
    return Merged(b"".join(out), ids.renumbered)


def merge_plan(base: bytes, ours: bytes, theirs: bytes, *, interval: int) -> bytes:
    """The merged plan's bytes (:func:`merge` without the list of renumbered items)."""
    return merge(base, ours, theirs, interval=interval).data


def published_plans(
    path: str | None, refs: Iterable[str] | None = None, *, cwd: str | os.PathLike[str] | None = None
) -> list[tuple[str, bytes]]:
    """The plan at ``path`` (relative to the top, git's ``%P``) on the published branch:
    ``refs`` in that order, by default the remote's base branch, the local one and the remote's
    HEAD (``st.sync.base``, default main; ``st.remote``, default origin). Missing ones are left
    out; so is everything when git cannot say (no path, not in a repository)."""
    if not path:
        return []
    from gitst import settings
    from gitst.git.objects import read_objects
    from gitst.git.runner import GitError

    if refs is None:
        base = settings.str_setting("sync_base", cwd)
        remote = settings.optional_str_setting("remote", cwd) or "origin"
        refs = [f"refs/remotes/{remote}/{base}", f"refs/heads/{base}", f"refs/remotes/{remote}/HEAD"]
    refs = [ref for ref in refs if ref and not ref.startswith("-")]
    try:
        found = read_objects(cwd, [f"{ref}:{path}" for ref in refs])
    except (GitError, OSError):
        return []
    names = {ref: ref.removeprefix("refs/remotes/").removeprefix("refs/heads/") for ref in refs}
    return [(names[ref], data) for ref, data in zip(refs, found, strict=True) if data is not None]


def merge_files(
    base_path: str,
    ours_path: str,
    theirs_path: str,
    *,
    interval: int,
    report: Callable[[str], None] | None = None,
    path: str | None = None,
    published_refs: Iterable[str] | None = None,
) -> Merged | None:
    """Merge three plan files as git's merge driver does: the result replaces OURS.

    Returns what was merged when OURS was rewritten (None: nothing to add). Which side keeps its
    ids: :func:`published_side` over the plan at ``path`` (git's ``%P``) on the published
    branch (:func:`published_plans` of ``published_refs``). Each item given a fresh id is
    reported as one line (``Renumbered.line``) through ``report``, stderr by default: git shows
    a merge driver's stderr. Raises :class:`MergeConflict` leaving OURS untouched.
    """
    from gitst.core.jsonio import atomic_write_bytes

    def read(path: str) -> bytes:
        """A version git wrote for the driver: a regular file (a FIFO never blocks the merge)."""
        from gitst.core.errors import UsageError
        from gitst.core.safepaths import read_bytes

        data = read_bytes(path)
        if data is None:
            raise UsageError(
                f"merge driver: {path} does not exist",
                fix="git runs the driver as `git st merge-driver %O %A %B %P` with the three versions it wrote",
            )
        return data

    ours = read(ours_path)
    base, theirs = read(base_path), read(theirs_path)
    published = published_plans(path, published_refs) if ours != theirs else []
    merged = merge(base, ours, theirs, interval=interval, published=published)
    if merged.data == ours:
        return None
    mode = os.stat(ours_path).st_mode & 0o777
    atomic_write_bytes(ours_path, merged.data, mode=mode)
    from gitst.core.terminal import sanitize

    say = report or (lambda line: print(sanitize(line), file=sys.stderr))  # ids come from their branch
    for renumbered in merged.renumbered:
        say(renumbered.line())
    return merged


# --- a plan two branches' appends were concatenated into ------------------------------------


@dataclass
class Untangled:
    """What the merge driver would have made of a concatenated plan: its items, in order,
    and the items it renumbered (:func:`untangle`)."""

    items: list[dict]
    renumbered: list[Renumbered]


def untangle(data: bytes, *, interval: int, published: Iterable[tuple[str, bytes]] = ()) -> Untangled | None:
    """The plan a text or union merge made (``git merge-file --union``, a host, ``merge=union``)
    taken apart and merged again as the driver does: None when it is not one.

    Such a plan is the common part, then one branch's appends, then the other's, whose
    ``seq`` starts again after the common part's watermark: each event whose seq does not
    rise above every seq before it starts another branch's run. Run k's base is the part
    before the first record whose seq reaches the run's first seq; the runs are merged one
    after the other into what came before them (:func:`merge`: the same identities, the same
    renumbering of colliding auto ids, the same published rule). Raises
    :class:`MergeConflict` when the branches contradict each other."""
    from gitst.plan.store import encode_record, parse_plan_bytes, seq_of

    parsed = parse_plan_bytes(data)
    if parsed.bad or parsed.torn is not None:
        return None  # lines for a person to fix first (the doctor names them)
    records = parsed.only_records()
    starts: list[int] = []
    high = -1
    for n, record in enumerate(records):
        seq = seq_of(record)
        if seq is None:
            continue
        if record.get("lane") == "event" and seq <= high:
            starts.append(n)
        high = max(high, seq)
    if not starts:
        return None
    published = list(published)
    bounds = [*starts, len(records)]
    current = b"".join(encode_record(r) for r in records[: starts[0]])
    renumbered: list[Renumbered] = []
    for start, end in pairwise(bounds):
        first = seq_of(records[start]) or 0
        fork = next(n for n, r in enumerate(records[:start]) if (seq_of(r) or 0) >= first)  # (the drop's reason)
        base = b"".join(encode_record(r) for r in records[:fork])
        theirs = base + b"".join(encode_record(r) for r in records[start:end])
        merged = merge(base, current, theirs, interval=interval, published=published)
        current = merged.data
        renumbered.extend(merged.renumbered)
    return Untangled(list(_state(_events(_records(current, "the merged plan"))).values()), renumbered)
