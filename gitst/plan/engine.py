"""What each plan command does, independent of the CLI: reads, mutations, doctor.

A mutation: (1) checks its arguments, (2) requires the lock sidecar to be ignored and
untracked, (3) takes the lock, (4) reads the tail under it, (5) computes its events, applies
them with the reducer and checks the rules (:mod:`gitst.plan.rules`), (6) appends the
events at watermark+1 — plus a checkpoint when the trailing events reach the interval — in
one write + fsync. Rejected input raises UsageError (exit 2) before anything is written; on
a missing plan the command is first tried on an empty plan so that not even the directory
or the lock file is created for rejected input.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from gitst import settings
from gitst.core.errors import EnvironmentProblem, ProblemsFound, UsageError
from gitst.core.jsonio import JSONDecodeError, loads, write_error
from gitst.core.values import Value
from gitst.plan import files, model, rules, sidecar, store
from gitst.plan.reducer import PlanState, ReplayError
from gitst.plan.store import Target

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gitst.core.diagnostics import Diagnostic
    from gitst.plan.doctor import PlanCheck
    from gitst.plan.model import Item, Record
    from gitst.plan.store import TornTail

__all__ = [
    "Outcome",
    "Target",
    "add",
    "add_comment",
    "doctor",
    "import_plan",
    "init",
    "parse_snapshot",
    "remove",
    "set_deps",
    "set_notes",
    "set_status",
    "show_item",
    "unknown_id",
]


class Change(Value):
    """The events a mutation appends (``{"op": ..., fields}``) and its one-line message."""

    __slots__ = ("events", "messages")

    def __init__(self, events: list[Record], messages: list[str]):
        self.events = events
        self.messages = messages


class Outcome(Value):
    """What a mutation did: its messages, the state after it, the records appended."""

    __slots__ = ("messages", "records", "state", "torn_path")

    def __init__(
        self, messages: list[str], state: PlanState, records: list[Record] | None = None, torn_path: Path | None = None
    ):
        self.messages = messages
        self.state = state
        self.records: list[Record] = records if records is not None else []  # what was appended
        self.torn_path = torn_path


@contextlib.contextmanager
def _write_errors(target: Target, verb: str = "write") -> Iterator[None]:
    """An OS error on the plan file (a directory, no permission, disk full) is reported, not
    a traceback: exit 4 (environment)."""
    try:
        yield
    except IsADirectoryError:
        raise EnvironmentProblem(f"cannot {verb} plan {target.shown}: it is a directory") from None
    except OSError as exc:
        raise write_error(f"plan {target.shown}", exc, verb=verb) from None


def mutation_envelope(allow_multiple_in_progress: bool) -> dict[str, object]:
    """The ``mutation`` audit envelope: policy flag, actor, writing pid, session."""
    from gitst.sessions import identity  # lazy: not in doctor's pinned imports (doctor --repair-seq only)

    return {
        "allow_multiple_in_progress": bool(allow_multiple_in_progress),
        "actor": identity.actor(),
        "pid": os.getpid(),
        "session": identity.session_id(),
    }


# Problems a canonical checkpoint seals (doctor --repair-seq: seq out of order, events of a
# concatenated history that no longer apply); any other one is a line that is not a valid
# record (not JSON, a bad status, an unknown op: a hand edit), which must be fixed or deleted.
_SEALABLE = ("ST_TRAILING_SEQ", "ST_CHECKPOINT_SEQ", "ST_REPLAY_UNKNOWN_ID")


def refuse_broken(tail: store.Tail, target: Target) -> None:
    """Refuse (exit 1, nothing written) a plan whose tail read found an error; the diagnostics
    (their line numbers counted in the file) are made only then."""
    if not any(problem.severity == "error" for problem in tail.problems):
        return
    errors = [d for d in tail.diagnostics(target.shown) if d.is_error]
    if errors:
        listing = "\n".join(d.to_text() for d in errors[:5])
        more = f"\n(+{len(errors) - 5} more)" if len(errors) > 5 else ""
        by_hand = [d for d in errors if d.code not in _SEALABLE]
        if by_hand:
            lines = ", ".join(str(d.line) for d in by_hand[:5] if d.line is not None)
            fix = (
                f"delete or fix line {lines} of {target.shown} (a hand edit? `git diff -- {target.shown}` "
                "shows it); --repair-seq cannot fix a line that is not a valid record"
            )
        else:
            fix = f"git st doctor --file {target.shown}   then   git st doctor --repair-seq --file {target.shown}"
        raise ProblemsFound(
            f"{target.shown} breaks the st contract after its latest checkpoint; nothing written:\n{listing}{more}",
            fix=fix,
        )


def mutate(
    target: Target,
    change_fn: Callable[[PlanState], Change],
    *,
    allow_multiple_in_progress: bool = False,
    check_sidecar: bool = True,
    pre_messages: list[str] | None = None,
    may_write: bool = True,
) -> Outcome:
    """Run one mutation under the plan lock (see the module docstring). ``may_write=False``
    (``init`` of a plan that exists) skips reading the checkpoint interval up front."""
    plan = target.path
    files.check(target)
    if check_sidecar:
        sidecar.require_ignored(target)
    interval = store.checkpoint_interval(target.git_dir) if may_write else None
    if not plan.exists():
        change_fn(PlanState())  # rejected input fails here, before the lock creates anything
    with _write_errors(target), store.locked_tail(target) as tail:
        refuse_broken(tail, target)
        change = change_fn(tail.state)
        state = _applied(change, tail.state, allow_multiple_in_progress)
        records: list[Record] = []
        torn_path = None
        if change.events:
            records = _records_of(change, tail, state, target, interval, allow_multiple_in_progress)
            torn_path = store.append_records(plan, records, tail)
    messages = list(change.messages)
    if pre_messages:
        messages[1:1] = pre_messages
    if torn_path is not None:
        messages.append(f"set aside a torn last line of {target.shown} as {torn_path.name}")
    return Outcome(messages=messages, state=state, records=records, torn_path=torn_path)


def _applied(change: Change, before: PlanState, allow_multiple_in_progress: bool) -> PlanState:
    """The state after ``change``'s events, once they break no rule that was not broken before
    and hold no value nested too deep (else exit 2, nothing written)."""
    state = before.copy()
    for event in change.events:
        try:
            state.apply_event(event)
        except ReplayError as exc:  # a bug in a change_fn, never user input
            raise UsageError(exc.message) from None
    if change.events:  # (no event: the state is the one read, and breaks nothing new)
        rules.check_mutation(before.items(), state.items(), allow_multiple_in_progress=allow_multiple_in_progress)
    deep = store.too_deep_touched(state, change.events)
    if deep:
        raise UsageError(f"{store.deep_item_message(deep)}; nothing written", fix="write shallower values")
    return state


def _records_of(
    change: Change,
    tail: store.Tail,
    state: PlanState,
    target: Target,
    interval: int | None,
    allow_multiple_in_progress: bool,
) -> list[Record]:
    """The records to append: ``change``'s events at watermark+1…, with the mutation envelope,
    and a checkpoint of ``state`` when the trailing events reach ``interval`` (read now when
    it was not read up front)."""
    envelope = mutation_envelope(allow_multiple_in_progress)
    seq = tail.watermark
    if seq + len(change.events) > store.MAX_SEQ:
        raise UsageError(
            f"{target.shown} has used up its seq numbers (watermark {seq}, the limit is 2^53-1); nothing written",
            fix=f"git st export --file {target.shown} --output items.json && git st init --replace "
            f"--file {target.shown} && git st import-plan --file {target.shown} items.json",
        )
    ts = store.now_ts()
    records: list[Record] = []
    for event in change.events:
        seq += 1
        fields = {k: v for k, v in event.items() if k != "op"}
        records.append(store.build_event(event["op"], seq, fields, mutation=envelope, ts=ts))
    if interval is None:
        interval = store.checkpoint_interval(target.git_dir)
    if tail.trailing_events + len(change.events) >= interval:
        records.append(store.build_checkpoint(state.items(), seq, ts=ts))
    return records


# --- argument checks (no state needed) ------------------------------------------------------


def _arg_id(value: str | None, flag: str = "--id") -> str:
    text = (value or "").strip()
    if not text:
        raise UsageError(f"{flag} cannot be empty")
    return text


def unknown_id(item_id: str, ids: list[str], *, shown: int = 5) -> UsageError:
    """``unknown id 'x'``: a few known ids and how many more, and the nearest ones."""
    from gitst.core.suggest import closest  # lazy: error path; not in the pinned imports of add

    if not ids:
        return UsageError(f"unknown id '{item_id}' (the plan is empty)", fix="git st add --step TEXT")
    listing = ", ".join(ids[:shown]) + (f" and {len(ids) - shown} more" if len(ids) > shown else "")
    close = closest(item_id, ids)
    fix = ("did you mean " + " or ".join(close) + "?") if close else "git st show lists every item"
    return UsageError(f"unknown id '{item_id}' (known: {listing})", fix=fix)


def _require(state: PlanState, item_id: str) -> Item:
    item = state.get(item_id)
    if item is None:
        raise unknown_id(item_id, state.ids())
    return item


# --- the mutations --------------------------------------------------------------------------


def init(target: Target, *, replace: bool = False) -> Outcome:
    plan = target.path
    files.check(target, gitignore=True)
    ignore_messages = sidecar.ensure_ignored(target)

    def change(state: PlanState) -> Change:
        events: list[Record] = []
        messages = []
        fresh = not plan.exists() or plan.stat().st_size == 0
        if fresh:
            events.append({"op": "init"})
            messages.append(f"initialized {target.shown}")
        else:
            messages.append(f"already initialized: {target.shown}")
        if replace:
            events.append({"op": "replace", "items": []})
            messages.append(f"cleared plan in {target.shown}")
        return Change(events, messages)

    # ensure_ignored made the sidecar ignored and untracked (or refused): no second check
    writes = replace or not plan.exists() or plan.stat().st_size == 0
    return mutate(
        target,
        change,
        allow_multiple_in_progress=False,
        check_sidecar=False,
        pre_messages=ignore_messages,
        may_write=writes,
    )


def add(
    target: Target,
    *,
    step: str,
    item_id: str | None = None,
    status: str | None = None,
    deps: str | None = None,
    notes: str | None = None,
    allow_multiple_in_progress: bool = False,
) -> Outcome:
    """Add an item, or update the one with ``item_id`` (fields not given are kept)."""
    step_text = (step or "").strip()
    if not step_text:
        raise UsageError("--step cannot be empty")
    # --id "" allocates the next id, as in the original st; --id "  " is refused
    given_id = _arg_id(item_id) if item_id else None
    status_value = model.normalize_status(status) if status is not None else None
    deps_value = model.parse_deps_arg(deps) if deps is not None else None

    def change(state: PlanState) -> Change:
        new_id = given_id or model.next_id(state.ids())
        current = state.get(new_id)
        if current is not None:
            raw = dict(current)
            raw["step"] = step_text
            if status_value is not None:
                raw["status"] = status_value
            if deps_value is not None:
                raw["deps"] = deps_value
            if notes is not None:
                raw["notes"] = notes
        else:
            raw = {
                "id": new_id,
                "step": step_text,
                "status": status_value or "pending",
                "deps": deps_value or [],
                "notes": notes or "",
                "comments": [],
            }
        return Change([{"op": "upsert", "item": model.normalize_item(raw)}], [f"upserted {new_id}"])

    return mutate(target, change, allow_multiple_in_progress=allow_multiple_in_progress)


def _item_mutation(
    target: Target,
    item_id: str,
    op: str,
    fields: dict[str, object],
    message: str,
    allow_multiple_in_progress: bool,
    check_sidecar: bool = True,
) -> Outcome:
    """One event on one existing item (unknown id: exit 2)."""

    def change(state: PlanState) -> Change:
        _require(state, item_id)
        return Change([{"op": op, "id": item_id, **fields}], [message])

    return mutate(target, change, allow_multiple_in_progress=allow_multiple_in_progress, check_sidecar=check_sidecar)


def set_status(
    target: Target, item_id: str, status: str, *, allow_multiple_in_progress: bool = False, check_sidecar: bool = True
) -> Outcome:
    """``check_sidecar=False``: the caller knows the lock sidecar is ignored and untracked."""
    item_id = _arg_id(item_id)
    value = model.normalize_status(status)
    message = f"updated {item_id} -> {value}"
    return _item_mutation(
        target, item_id, "set_status", {"status": value}, message, allow_multiple_in_progress, check_sidecar
    )


def set_deps(target: Target, item_id: str, deps: str, *, allow_multiple_in_progress: bool = False) -> Outcome:
    item_id = _arg_id(item_id)
    edges = model.parse_deps_arg(deps)
    shown = model.format_deps(edges) if edges else "(none)"
    return _item_mutation(
        target, item_id, "set_deps", {"deps": edges}, f"updated {item_id} deps -> {shown}", allow_multiple_in_progress
    )


def set_notes(target: Target, item_id: str, notes: str, *, allow_multiple_in_progress: bool = False) -> Outcome:
    item_id = _arg_id(item_id)
    text = model.normalize_notes(notes)
    return _item_mutation(
        target, item_id, "set_notes", {"notes": text}, f"updated {item_id} notes", allow_multiple_in_progress
    )


def default_author() -> str:
    from gitst.sessions import identity  # lazy: not in doctor's pinned imports

    return settings.optional_str_setting("comment_author") or identity.actor()


def add_comment(
    target: Target, item_id: str, text: str, *, author: str | None = None, allow_multiple_in_progress: bool = False
) -> Outcome:
    item_id = _arg_id(item_id)
    if text is None or not text.strip():
        raise UsageError("--text cannot be empty")
    who = author.strip() if author else default_author()  # --author "" is the default author
    if not who:
        raise UsageError("--author cannot be empty")
    comment = {"ts": store.now_ts(), "author": who, "text": text}
    return _item_mutation(
        target, item_id, "add_comment", {"comment": comment}, f"added comment to {item_id}", allow_multiple_in_progress
    )


def remove(target: Target, item_id: str, *, allow_multiple_in_progress: bool = False) -> Outcome:
    item_id = _arg_id(item_id)
    return _item_mutation(target, item_id, "remove", {}, f"removed {item_id}", allow_multiple_in_progress)


def parse_snapshot(data: bytes, source: str) -> list[Item]:
    """Items of an import: a JSON array of items or an object with ``items`` (export's shape)."""
    try:
        snapshot = loads(data)
    except JSONDecodeError as exc:
        if hasattr(exc, "code"):  # a limit every reader applies (JSON_DEPTH, JSON_NUMBER)
            raise UsageError(
                f"{source} is refused: {exc}",
                fix="keep values within 128 levels of nesting, and write integers beyond 2^53-1 as strings",
            ) from None
        raise UsageError(f"{source} is not valid JSON: {exc}") from None
    if isinstance(snapshot, dict) and isinstance(snapshot.get("items"), list):
        raw_items = snapshot["items"]
    elif isinstance(snapshot, list):
        raw_items = snapshot
    else:
        raise UsageError(f"{source}: expected an array of items or an object with an 'items' array")
    try:
        return model.normalize_items(raw_items)
    except model.ItemError as exc:
        raise UsageError(f"{source}: {exc.message}") from None


def import_plan(
    target: Target, items: list[Item], *, source: str, replace: bool = False, allow_multiple_in_progress: bool = False
) -> Outcome:
    def change(state: PlanState) -> Change:
        if replace:
            return Change([{"op": "replace", "items": items}], [f"replaced plan from {source}"])
        return Change(
            [{"op": "upsert", "item": item} for item in items], [f"imported {len(items)} item(s) from {source}"]
        )

    return mutate(target, change, allow_multiple_in_progress=allow_multiple_in_progress)


# --- one item ----------------------------------------------------------------------------------


def show_item(target: Target, item_id: str, state: PlanState) -> dict[str, Any]:
    """``show ID``: the item (with dep_state), its dependents, and the history of the events
    that touched it (a full read of the file: the one view that needs the whole history)."""
    item = state.get(item_id)
    if item is None:
        raise unknown_id(item_id, state.ids())
    rows = model.derive(state.items())
    row = next(r for r in rows if r["id"] == item_id)
    status_of = {r["id"]: r["status"] for r in rows}
    dependents = [
        {"id": r["id"], "type": edge["type"], "status": r["status"]}
        for r in rows
        for edge in r.get("deps") or ()
        if edge["id"] == item_id
    ]
    return {"item": row, "dependents": dependents, "history": _history(target, item_id), "status_of": status_of}


def _describe(record: Record, item_id: str) -> str | None:
    """What an event did to ``item_id`` in a few words, None when it did not touch it."""
    op = record.get("op")
    if op in ("upsert", "upsert_item"):
        item = record.get("item")
        if isinstance(item, dict) and item.get("id") == item_id:
            return f"upsert: {item.get('step')!s} ({item.get('status', 'pending')})"
        return None
    if op in ("replace", "replace_all"):
        items = record.get("items")
        if isinstance(items, list) and any(isinstance(i, dict) and i.get("id") == item_id for i in items):
            return "replace: the plan was replaced (this item kept or set)"
        return None
    if record.get("id") != item_id:
        return None
    describe = _ON_ONE_ITEM.get(op) if isinstance(op, str) else None
    return describe(record) if describe is not None else str(op)


def _describe_deps(record: Record) -> str:
    raw_deps = record.get("deps")
    deps = raw_deps if isinstance(raw_deps, list) else []
    shown = model.format_deps([e for e in deps if isinstance(e, dict) and "id" in e and "type" in e])
    return f"set-deps -> {shown or '(none)'}"


def _describe_comment(record: Record) -> str:
    comment = record.get("comment")
    author = comment.get("author", "?") if isinstance(comment, dict) else "?"
    return f"add-comment by {author}"


# What an event of an op on one item (by ``id``) did to it, in a few words.
_ON_ONE_ITEM: dict[str, Callable[[Record], str]] = {
    "set_status": lambda record: f"set-status -> {record.get('status')}",
    "set_deps": _describe_deps,
    "set_notes": lambda _record: "set-notes",
    "add_comment": _describe_comment,
    "remove": lambda _record: "remove",
}


def _history(target: Target, item_id: str) -> list[dict[str, object]]:
    if not target.path.exists():
        return []
    with _write_errors(target, "read"):
        data = store.read_bytes(target.path)
    history = []
    for kind, _line, record, _raw in store.iter_plan_lines(data):
        if kind != store.RECORD or not isinstance(record, dict) or record.get("lane") != "event":
            continue
        what = _describe(record, item_id)
        if what is not None:
            mutation = record.get("mutation")
            actor = mutation.get("actor") if isinstance(mutation, dict) else None
            history.append({"seq": record.get("seq"), "ts": record.get("ts"), "actor": actor, "what": what})
    return history


# --- doctor ------------------------------------------------------------------------------------


class DoctorReport(Value):
    """What ``git st doctor`` found and did."""

    __slots__ = ("checkpoints", "diagnostics", "exists", "messages", "records", "watermark")

    def __init__(
        self,
        diagnostics: list[Diagnostic],
        messages: list[str],
        exists: bool,
        records: int = 0,
        watermark: int = 0,
        checkpoints: int = 0,
    ):
        self.diagnostics = diagnostics
        self.messages = messages
        self.exists = exists
        self.records = records
        self.watermark = watermark
        self.checkpoints = checkpoints

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)


def _set_aside_report(target: Target) -> list[Diagnostic]:
    from gitst.core.diagnostics import WARNING, Diagnostic  # lazy: doctor only; not in add's pinned imports

    found = []
    directory = target.path.parent
    if directory.is_dir():
        for torn in sorted(directory.glob(store.torn_glob(target.path))):
            shown = os.path.join(os.path.dirname(target.shown), torn.name)
            found.append(
                Diagnostic(
                    shown,
                    None,
                    "ST_TORN_SET_ASIDE",
                    f"a torn write ({torn.lstat().st_size} bytes) was set aside from {target.shown}; "
                    "inspect it and delete it when done",
                    WARNING,
                )
            )
    return found


def doctor(target: Target, *, repair_seq: bool = False, allow_multiple_in_progress: bool = False) -> DoctorReport:
    """Full check of the plan; with ``repair_seq`` seal it with a canonical checkpoint. The file
    is read block by block (memory holds one block and the plan's state, never the file)."""
    from gitst.core.diagnostics import by_position  # lazy: doctor only; not in add's pinned imports

    plan = target.path
    files.check(target)
    if not plan.exists():
        return DoctorReport([], [f"no plan at {target.shown} (nothing to check)"], exists=False)
    messages: list[str] = []
    if repair_seq:
        sidecar.require_ignored(target)
        with store.plan_lock(target), _write_errors(target):
            check, torn, missing_newline = _scan_plan(plan, target.shown)
            if torn is not None:
                torn_path = store.set_aside_torn_tail(plan, torn)
                messages.append(f"set aside a torn last line of {target.shown} as {torn_path.name}")
            needs_seal = any(d.is_error and d.code != "ST_TORN_TAIL" for d in check.diagnostics)
            if needs_seal:
                envelope = mutation_envelope(allow_multiple_in_progress)
                events, moved = _untangle(plan, target, check.state, check.watermark, envelope)
                state = check.state
                for event in events:
                    state.apply_event(event)
                watermark = check.watermark + len(events)
                record = store.build_checkpoint(
                    state.items(), watermark, repair={"op": "doctor_repair_seq"}, mutation=envelope
                )
                after = store.Tail(path=plan, exists=True, missing_newline=missing_newline)
                store.append_records(plan, [*events, record], after)
                messages.extend(moved)
                messages.append(f"repaired seq contract via checkpoint seq {watermark}")
            elif torn is None:
                messages.append("repair skipped: seq contract already valid")
    with _write_errors(target, "read"):
        check, _, _ = _scan_plan(plan, target.shown)
    diagnostics = by_position(check.diagnostics + _set_aside_report(target))
    return DoctorReport(
        diagnostics,
        messages,
        exists=True,
        records=check.records,
        watermark=check.watermark,
        checkpoints=check.checkpoints,
    )


def _untangle(
    plan: Path, target: Target, state: PlanState, watermark: int, envelope: dict[str, object]
) -> tuple[list[Record], list[str]]:
    """The events that bring back what a text or union merge of two branches' plans lost
    (both branches' `git st add` gave one id to two items; the later upsert hid the other):
    the plan taken apart and merged as the merge driver does (:func:`gitst.plan.merge.untangle`,
    colliding auto ids renumbered), then one upsert per item that differs from the full replay
    (a remove per item the merge would not have), and the messages naming each moved id.
    None of them when the plan is not such a merge, nor when its branches contradict each other
    (then one message says so: the replay's later write wins, every event stays in the file)."""
    from gitst.plan.merge import MergeConflict, published_plans, untangle  # lazy: doctor --repair-seq only

    data = store.read_bytes(plan)
    top = target.top
    relative = os.path.relpath(plan, top) if top is not None else None
    try:
        published = published_plans(relative, cwd=top)
        found = untangle(data, interval=store.checkpoint_interval(), published=published)
    except MergeConflict as exc:  # both branches' events stay in the file; the replay's later write wins
        return [], [f"sealed as replayed (the later write wins; every event stays in the file): {exc.message}"]
    if found is None:
        return [], []
    target_items = {item["id"]: item for item in found.items}
    now = {item["id"]: item for item in state.items()}
    fresh = [item for item_id, item in target_items.items() if item_id not in now]
    changed = [item for item_id, item in target_items.items() if item_id in now and now[item_id] != item]
    events: list[Record] = []
    seq = watermark
    for item in [*fresh, *changed]:
        seq += 1
        events.append(store.build_event("upsert", seq, {"item": item}, mutation=envelope))
    for item_id in now:
        if item_id not in target_items:
            seq += 1
            events.append(store.build_event("remove", seq, {"id": item_id}, mutation=envelope))
    return events, [r.repaired_line() for r in found.renumbered]


def _scan_plan(plan: Path, shown: str) -> tuple[PlanCheck, TornTail | None, bool]:
    """The full check of the plan file, its torn last line (if any) and whether its last
    record lacks its newline."""
    from gitst.plan.doctor import scan_file  # lazy: not in add's pinned imports

    handle = store.open_plan(plan)
    if handle is None:
        raise FileNotFoundError(plan)
    with handle:
        size = os.fstat(handle.fileno()).st_size
        check = scan_file(handle, size, shown)
        torn, missing_newline = store.last_line_state(handle, size)
    return check, torn, missing_newline
