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
from itertools import pairwise

from gitst import settings
from gitst.core.errors import ProblemsFound, UsageError
from gitst.core.jsonio import atomic_write_bytes
from gitst.core.safepaths import read_bytes
from gitst.core.terminal import sanitize
from gitst.core.values import Value
from gitst.git.objects import read_objects
from gitst.git.runner import GitError
from gitst.plan.reducer import PlanState, ReplayError
from gitst.plan.renumber import Renumbering, describe, event_key, state_of, walk_events
from gitst.plan.store import (
    build_checkpoint,
    encode_record,
    parse_plan_bytes,
    seq_of,
    trailing_events,
    watermark,
)

# No dataclass and no typing at run time: git runs the driver in a fresh interpreter inside
# every merge of a plan, and those two imports cost it more than a small plan's merge does
# (tests/unit/cli/test_merge_fast.py pins what it imports).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any, TypeGuard

    from gitst.plan.renumber import Item, Record, Renumbered

_ADDITIVE = ("comments",)  # list fields both sides may append to independently
# ours, because a commit's plan must extend HEAD's (the pre-commit hook's append-only rule)
RESOLVE = (
    "keep our plan (git checkout --ours -- PATH), redo the changes you want from their side with "
    "git st commands (they append), then git add PATH and commit"
)


class MergeConflict(ProblemsFound):
    """The plans cannot be merged without a person deciding (exit 1)."""


class Merged(Value):
    """What :func:`merge` made: the plan's bytes and the renumbered items of theirs."""

    __slots__ = ("data", "kept", "renumbered")

    def __init__(self, data: bytes, renumbered: list[Renumbered] | None = None, kept: str = "ours") -> None:
        self.data = data
        self.renumbered: list[Renumbered] = [] if renumbered is None else renumbered
        self.kept = kept  # the side kept byte for byte, whose ids never change: "ours" or "theirs"


def _minus(events: list[Record], keys: Counter[bytes]) -> list[Record]:
    """``events`` without one occurrence per key counted in ``keys`` (multiset difference,
    order kept)."""
    left = Counter(keys)
    kept = []
    for record in events:
        key = event_key(record)
        if left[key] > 0:
            left[key] -= 1
        else:
            kept.append(record)
    return kept


def _records(data: bytes, side: str) -> list[Record]:
    """The records of one side; a line that is not a record, a torn last line, or a record
    that is neither an event nor a checkpoint (which the merge could only drop) is refused."""
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
                f"{side}: line {line} is not a plan record (lane {describe(record.get('lane'))} is neither "
                '"event" nor "checkpoint"; a merge would drop it)',
                fix="repair that side's plan first (git st doctor names the line)",
            )
    return parsed.only_records()


def _changed_fields(base: Item, side: Item) -> set[str]:
    return {k for k in set(base) | set(side) if base.get(k) != side.get(k)}


def _is_extension(side_list: object, base_list: object) -> TypeGuard[list[Any]]:
    """True when ``side_list`` is ``base_list`` with items appended (both lists)."""
    return isinstance(base_list, list) and isinstance(side_list, list) and side_list[: len(base_list)] == base_list


def three_way(
    base: dict[str, Item], ours: dict[str, Item], theirs: dict[str, Item], *, swapped: bool = False
) -> tuple[dict[str, Item], list[str]]:
    """The field-level three-way merge of materialized items, and the contradictions.
    ``swapped``: ``ours`` is git's theirs (the kept side was theirs); messages still say
    ours/theirs as git does."""
    expected: dict[str, Item] = {}
    problems: list[str] = []
    for item_id in dict.fromkeys([*ours, *theirs, *base]):
        b, o, t = base.get(item_id), ours.get(item_id), theirs.get(item_id)
        if o == t or t == b:  # theirs left it as it was, or both sides made it alike
            kept = o
        elif o == b:  # only theirs changed it
            kept = t
        elif o is None or t is None:  # one side removed it (both removing it is o == t above)
            problems.append(_removed_and_changed(item_id, b, o, t, swapped=swapped))
            continue
        else:  # both sides changed this item, differently
            merged, clashes = _merge_fields(b or {}, o, t, swapped=swapped)
            if clashes:
                origin = "added on both sides" if b is None else "changed on both sides"
                problems.append(f"item '{item_id}' {origin}: {'; '.join(clashes)}")
                continue
            kept = merged
        if kept is not None:
            expected[item_id] = kept
    return expected, problems


def _removed_and_changed(item_id: str, b: Item | None, o: Item | None, t: Item | None, *, swapped: bool) -> str:
    """The contradiction of an item one side removed and the other changed."""
    our_label, their_label = ("their side", "our side") if swapped else ("our side", "their side")
    gone, kept, other = (our_label, their_label, t) if o is None else (their_label, our_label, o)
    fields = sorted(_changed_fields(b or {}, other or {}))
    return f"item '{item_id}': removed on {gone} but changed on {kept} ({', '.join(fields) or 'its fields'})"


def _merge_fields(start: Item, o: Item, t: Item, *, swapped: bool) -> tuple[Item, list[str]]:
    """One item both sides changed, merged field by field from its base ``start``: the
    merged item, and the fields both changed differently (each with both values)."""
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
            clashes.append(f"{key} (ours: {describe(mine)}, theirs: {describe(yours)})")
            continue
        if value is None and key not in o and key not in t:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged, clashes


def _events(records: list[Record]) -> list[Record]:
    return [r for r in records if r.get("lane") == "event"]


def _holds(plan_keys: set[bytes], events: list[Record]) -> bool:
    return all(event_key(r) in plan_keys for r in events)


def published_side(
    our_events: list[Record], their_events: list[Record], published: Iterable[tuple[str, bytes]]
) -> str | None:
    """Where theirs is published, when theirs is the side to keep (None: keep ours).

    ``published``: (name, plan bytes) of the published branch, most authoritative first (the
    remote's base branch, then the local one). The first plan that holds every event of
    exactly one side decides: theirs is kept when that plan holds all of theirs and not all of
    ours (``git merge main`` on a PR branch); when it holds both, the side with more events
    (the later state of that branch). A plan that cannot be read is skipped."""
    for name, data in published:
        try:
            plan_keys = {event_key(r) for r in _events(_records(data, name))}
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
    base_events: list[Record],
    ours: bytes,
    our_records: list[Record],
    their_events: list[Record],
    *,
    interval: int,
    published: str = "",
) -> Merged:
    """``ours`` (the side kept: git's theirs when ``published`` says where it is published)
    byte for byte + theirs' new events re-sequenced + a checkpoint."""
    our_events = _events(our_records)
    base_walk, our_walk, their_walk = walk_events(base_events), walk_events(our_events), walk_events(their_events)
    ids = Renumbering(base_walk, our_walk, their_walk, published=published)
    base_events = ids.apply(base_events, base_walk)
    their_events = ids.apply(their_events, their_walk)
    new = _new_events(base_events, our_events, their_events, ids.duplicate_creations(their_events, their_walk))
    if not new:
        return Merged(ours)
    expected = _expected(ids, base_events, our_walk.items, their_events, swapped=bool(published))
    # whose events are appended after whose (git's names: when theirs is the published side
    # kept, it is our events that go after theirs)
    appended, kept = ("our", f"theirs (published on {published})") if published else ("their", "ours")
    data, state = _appended(ours, our_records, new, our_walk.items, interval=interval, sides=(appended, kept))
    _refuse_undone(expected, state, sides=(appended, kept))
    return Merged(data, ids.renumbered)


def _new_events(
    base_events: list[Record], our_events: list[Record], their_events: list[Record], duplicates: set[int]
) -> list[Record]:
    """Theirs' events that are new: theirs - base - what ours added beyond the base (multisets,
    by :func:`event_key`), leaving out theirs' creations of items ours created alike."""
    base_keys = Counter(event_key(r) for r in base_events)
    ours_added = Counter(event_key(r) for r in our_events) - base_keys  # what our side holds beyond the base
    since_base = _minus([r for n, r in enumerate(their_events) if n not in duplicates], base_keys)
    return _minus(since_base, ours_added)


def _expected(
    ids: Renumbering,
    base_events: list[Record],
    our_state: dict[str, Item],
    their_events: list[Record],
    *,
    swapped: bool,
) -> dict[str, Item]:
    """The items the merge must give (:func:`three_way` of the three full replays); exit 1
    naming the contradictions when there are any."""
    base_state, their_state = state_of(base_events), state_of(their_events)
    for identity in ids.same_as_ours:  # created alike on both sides: that creation is the base
        item_id = ids.decided[identity]
        created = ids.ours_latest[item_id][1]
        if item_id not in base_state and created is not None:
            base_state[item_id] = created
    expected, problems = three_way(base_state, our_state, their_state, swapped=swapped)
    if problems:
        raise MergeConflict(
            "the plans contradict each other: " + "; ".join(problems),
            fix=RESOLVE,
        )
    return expected


def _appended(
    ours: bytes,
    our_records: list[Record],
    new: list[Record],
    our_state: dict[str, Item],
    *,
    interval: int,
    sides: tuple[str, str],
) -> tuple[bytes, PlanState]:
    """``ours`` byte for byte + ``new`` re-sequenced after its watermark, a checkpoint each
    ``interval`` trailing events and one at the end; and the state they give."""
    state = PlanState(our_state.values())
    high = watermark(our_records)
    trailing = trailing_events(our_records)
    latest_ts = max((r["ts"] for r in our_records + new if isinstance(r.get("ts"), str)), default=None)
    out = [ours if not ours or ours.endswith(b"\n") else ours + b"\n"]
    for theirs_event in new:
        high += 1
        record = {k: (high if k == "seq" else v) for k, v in theirs_event.items()}
        _apply_appended(state, record, sides)
        out.append(encode_record(record))
        trailing += 1
        if trailing >= interval:
            out.append(encode_record(build_checkpoint(state.items(), high, ts=latest_ts)))
            trailing = 0
    if trailing:
        out.append(encode_record(build_checkpoint(state.items(), high, ts=latest_ts)))
    return b"".join(out), state


def _apply_appended(state: PlanState, record: Record, sides: tuple[str, str]) -> None:
    """Apply one appended event; exit 1 when it does not apply after the kept side."""
    appended, kept = sides
    try:
        state.apply_event(record)
    except ReplayError as exc:
        raise MergeConflict(
            f"{appended} event {record.get('op')!r} on item {record.get('id')!r} does not apply after {kept}: "
            f"{exc.message}",
            fix=RESOLVE,
        ) from None


def _refuse_undone(expected: dict[str, Item], state: PlanState, *, sides: tuple[str, str]) -> None:
    """Exit 1 when the appended plan does not give the three-way result (an event of the
    appended side would undo a change of the kept side), naming each item and field."""
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
        would_be = ", ".join(describe(got.get(f)) for f in fields)
        instead_of = ", ".join(describe(want.get(f)) for f in fields)
        undone.append(f"item '{item_id}': {', '.join(fields)} would end up {would_be} instead of {instead_of}")
    if undone:
        appended, kept = sides
        raise MergeConflict(
            f"appending {appended} events after {kept} would undo changes: " + "; ".join(undone),
            fix=RESOLVE,
        )


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


def _read_version(path: str) -> bytes:
    """A version git wrote for the driver: a regular file (a FIFO never blocks the merge)."""
    data = read_bytes(path)
    if data is None:
        raise UsageError(
            f"merge driver: {path} does not exist",
            fix="git runs the driver as `git st merge-driver %O %A %B %P` with the three versions it wrote",
        )
    return data


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
    ours = _read_version(ours_path)
    base, theirs = _read_version(base_path), _read_version(theirs_path)
    published = published_plans(path, published_refs) if ours != theirs else []
    merged = merge(base, ours, theirs, interval=interval, published=published)
    if merged.data == ours:
        return None
    mode = os.stat(ours_path).st_mode & 0o777
    atomic_write_bytes(ours_path, merged.data, mode=mode)
    say = report or (lambda line: print(sanitize(line), file=sys.stderr))  # ids come from their branch
    for renumbered in merged.renumbered:
        say(renumbered.line())
    return merged


# --- a plan two branches' appends were concatenated into ------------------------------------


class Untangled(Value):
    """What the merge driver would have made of a concatenated plan: its items, in order,
    and the items it renumbered (:func:`untangle`)."""

    __slots__ = ("items", "renumbered")

    def __init__(self, items: list[Record], renumbered: list[Renumbered]) -> None:
        self.items = items
        self.renumbered = renumbered


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
    parsed = parse_plan_bytes(data)
    if parsed.bad or parsed.torn is not None:
        return None  # lines for a person to fix first (the doctor names them)
    records = parsed.only_records()
    starts = _run_starts(records)
    if not starts:
        return None
    published = list(published)
    current = b"".join(encode_record(r) for r in records[: starts[0]])
    renumbered: list[Renumbered] = []
    for start, end in pairwise([*starts, len(records)]):
        first = seq_of(records[start]) or 0
        fork = next(n for n, r in enumerate(records[:start]) if (seq_of(r) or 0) >= first)  # (the drop's reason)
        base = b"".join(encode_record(r) for r in records[:fork])
        theirs = base + b"".join(encode_record(r) for r in records[start:end])
        merged = merge(base, current, theirs, interval=interval, published=published)
        current = merged.data
        renumbered.extend(merged.renumbered)
    return Untangled(list(state_of(_events(_records(current, "the merged plan"))).values()), renumbered)


def _run_starts(records: list[Record]) -> list[int]:
    """Where each branch's run after the first starts: an event whose seq does not rise above
    every seq before it."""
    starts: list[int] = []
    high = -1
    for n, record in enumerate(records):
        seq = seq_of(record)
        if seq is None:
            continue
        if record.get("lane") == "event" and seq <= high:
            starts.append(n)
        high = max(high, seq)
    return starts
