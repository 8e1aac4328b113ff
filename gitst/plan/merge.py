"""Three-way merge of st plan files (git's merge driver for ``.step/*.jsonl``).

A plan is append-only, so a merge never needs to edit a line: :func:`merge_plan` keeps
*ours* byte for byte and appends the events *theirs* added, re-sequenced after our
watermark, then a checkpoint. The result replays cleanly (its last checkpoint is
canonical: seq = watermark, items = the full replay), so ``git merge`` and ``git rebase`` of
branches that both appended to a plan need no hand editing.

Which of theirs' events are new: an event is identified by its content without ``seq``
(the only field a merge changes), counted as a multiset. New = theirs − base − ours: what
theirs added since the merge base and ours does not already hold. So merging the same
branch twice, merging back a branch that merged us, a rebase (whose "ours" holds earlier
picks re-sequenced) and ``rebase --onto`` that drops commits all come out right. Theirs'
checkpoints are not carried over: the appended checkpoint replaces them.

When it refuses (:class:`MergeConflict`, exit 1, nothing written):

- both sides changed the same field of the same item to different values since the merge
  base, or one side removed an item the other changed — named with the item and fields;
- appending theirs' events after ours would not give the three-way result (e.g. their
  ``upsert`` of a whole item would undo a field only we changed) — named likewise;
- a side has bytes that are not records (bad JSON, a torn last line) — named with the line.
"""

from __future__ import annotations

from collections import Counter

import orjson

from gitst.errors import ProblemsFound

_ADDITIVE = ("comments",)  # list fields both sides may append to independently
# ours, because a commit's plan must extend HEAD's (the pre-commit hook's append-only rule)
RESOLVE = (
    "keep our plan (git checkout --ours -- PATH), redo the changes you want from their side with "
    "git st commands (they append), then git add PATH and commit"
)


class MergeConflict(ProblemsFound):
    """The plans cannot be merged without a person deciding (exit 1)."""


def _key(record: dict) -> bytes:
    """A record's identity across re-sequencing: its content without ``seq``."""
    return orjson.dumps({k: v for k, v in record.items() if k != "seq"}, option=orjson.OPT_SORT_KEYS)


def _event_keys(records: list[dict]) -> Counter:
    return Counter(_key(r) for r in records if r.get("lane") == "event")


def _minus(events: list[dict], credits: Counter) -> list[dict]:
    """``events`` without one occurrence per credit (multiset difference, order kept)."""
    credits = Counter(credits)
    kept = []
    for record in events:
        key = _key(record)
        if credits[key] > 0:
            credits[key] -= 1
        else:
            kept.append(record)
    return kept


def _records(data: bytes, side: str) -> list[dict]:
    from gitst.plan.store import parse_plan_bytes

    parsed = parse_plan_bytes(data)
    if parsed.bad:
        line, why, _raw = parsed.bad[0]
        raise MergeConflict(f"{side}: line {line} is not a plan record ({why})", fix="repair that side's plan first (git st doctor)")
    if parsed.torn is not None:
        raise MergeConflict(
            f"{side}: line {parsed.torn.line} is a torn write (a record cut short)",
            fix="repair that side's plan first: git st doctor --repair-seq",
        )
    return parsed.only_records()


def _state(records: list[dict]) -> dict[str, dict]:
    """The full replay (events only, as the doctor defines it): id -> item."""
    from gitst.plan.reducer import PlanState, ReplayError

    state = PlanState()
    for record in records:
        if record.get("lane") == "event":
            try:
                state.apply_event(record)
            except ReplayError:
                pass  # the doctor's full replay skips an event that does not apply
    return {item["id"]: item for item in state.items()}


def _describe(value) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= 60 else text[:57] + "..."


def _changed_fields(base: dict, side: dict) -> set[str]:
    return {k for k in set(base) | set(side) if base.get(k) != side.get(k)}


def _is_extension(base_list, side_list) -> bool:
    return isinstance(base_list, list) and isinstance(side_list, list) and side_list[: len(base_list)] == base_list


def three_way(base: dict[str, dict], ours: dict[str, dict], theirs: dict[str, dict]) -> tuple[dict[str, dict], list[str]]:
    """The field-level three-way merge of materialized items, and the contradictions."""
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
        if o is None or t is None:
            gone, kept, other = ("our side", "their side", t) if o is None else ("their side", "our side", o)
            fields = sorted(_changed_fields(b or {}, other))
            problems.append(
                f"item '{item_id}': removed on {gone} but changed on {kept} ({', '.join(fields) or 'its fields'})"
            )
            continue
        start = b or {}
        merged = dict(start)
        clashes = []
        for field in dict.fromkeys([*o, *t, *start]):
            bv, ov, tv = start.get(field), o.get(field), t.get(field)
            if ov == tv or tv == bv:
                value = ov
            elif ov == bv:
                value = tv
            elif field in _ADDITIVE and _is_extension(bv or [], ov) and _is_extension(bv or [], tv):
                value = ov + tv[len(bv or []):]
            else:
                clashes.append(f"{field} (ours: {_describe(ov)}, theirs: {_describe(tv)})")
                continue
            if value is None and field not in o and field not in t:
                merged.pop(field, None)
            else:
                merged[field] = value
        if clashes:
            origin = "added on both sides" if b is None else "changed on both sides"
            problems.append(f"item '{item_id}' {origin}: {'; '.join(clashes)}")
        else:
            expected[item_id] = merged
    return expected, problems


def merge_plan(base: bytes, ours: bytes, theirs: bytes, *, interval: int) -> bytes:
    """Ours byte for byte + theirs' new events re-sequenced + a checkpoint (see module doc)."""
    from gitst.plan.reducer import PlanState, ReplayError
    from gitst.plan.store import build_checkpoint, encode_record, trailing_events, watermark

    base_records = _records(base, "the merge base")
    our_records = _records(ours, "our side")
    their_records = _records(theirs, "their side")

    base_keys = _event_keys(base_records)
    ours_added = _event_keys(our_records) - base_keys  # what our side holds beyond the base
    since_base = _minus([r for r in their_records if r.get("lane") == "event"], base_keys)
    new = _minus(since_base, ours_added)
    if not new:
        return ours

    base_state, our_state, their_state = _state(base_records), _state(our_records), _state(their_records)
    expected, problems = three_way(base_state, our_state, their_state)
    if problems:
        raise MergeConflict(
            "the plans contradict each other: " + "; ".join(problems),
            fix=RESOLVE,
        )

    state = PlanState(our_state.values())
    high = watermark(our_records)
    trailing = trailing_events(our_records)
    latest_ts = max((r.get("ts") for r in our_records + new if isinstance(r.get("ts"), str)), default=None)
    out = [ours if not ours or ours.endswith(b"\n") else ours + b"\n"]
    for record in new:
        high += 1
        record = {k: (high if k == "seq" else v) for k, v in record.items()}
        try:
            state.apply_event(record)
        except ReplayError as exc:
            raise MergeConflict(
                f"their event {record.get('op')!r} on item {record.get('id')!r} does not apply after our changes: {exc.message}",
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
        undone.append(f"item '{item_id}': {', '.join(fields)} would end up {', '.join(_describe(got.get(f)) for f in fields)} instead of {', '.join(_describe(want.get(f)) for f in fields)}")
    if undone:
        raise MergeConflict(
            "appending their events after ours would undo changes: " + "; ".join(undone),
            fix=RESOLVE,
        )
    return b"".join(out)


def merge_files(base_path: str, ours_path: str, theirs_path: str, *, interval: int) -> bool:
    """Merge three plan files as git's merge driver does: the result replaces OURS.

    Returns True when OURS was rewritten (False: theirs added nothing). Raises
    :class:`MergeConflict` leaving OURS untouched.
    """
    import os

    from gitst.jsonio import atomic_write_bytes

    def read(path: str) -> bytes:
        with open(path, "rb") as handle:
            return handle.read()

    ours = read(ours_path)
    merged = merge_plan(read(base_path), ours, read(theirs_path), interval=interval)
    if merged == ours:
        return False
    mode = os.stat(ours_path).st_mode & 0o777
    atomic_write_bytes(ours_path, merged, mode=mode)
    return True
