"""Property tests (hypothesis): item normalization, and "tail read == full replay"."""

from __future__ import annotations

import os
import string
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st_

from gitst.core.errors import UsageError
from gitst.plan import engine, model, store
from gitst.plan.doctor import check_plan_bytes
from gitst.plan.reducer import replay
from gitst.schemas.catalog import validator
from tests.reference_schema import reference_validator

ids = st_.text(string.ascii_letters + string.digits + "-_.", min_size=1, max_size=8)
padded_ids = st_.tuples(st_.sampled_from(["", " ", "\t"]), ids, st_.sampled_from(["", " "])).map("".join)
dep_types = st_.one_of(
    st_.none(),
    st_.just(""),
    st_.just("  "),
    st_.from_regex(r"[a-z0-9]{1,5}(-[a-z0-9]{1,4}){0,2}", fullmatch=True),
    st_.from_regex(r"[A-Z][a-z]{1,4}", fullmatch=True),  # upper case: lower-cased on input
)
edges = st_.one_of(
    padded_ids,
    st_.builds(
        lambda i, t, extra: {"id": i, **({} if t is None else {"type": t}), **extra},
        padded_ids,
        dep_types,
        st_.dictionaries(st_.sampled_from(["note", "weight"]), st_.integers(), max_size=1),
    ),
)
statuses = st_.sampled_from([*model.STATUSES, *model.STATUS_ALIASES, "Done", " In Progress ", "CANCELLED"])
json_values = st_.recursive(
    st_.none() | st_.booleans() | st_.integers(-(10**6), 10**6) | st_.text(max_size=10),
    lambda inner: st_.lists(inner, max_size=3) | st_.dictionaries(st_.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
unknown_keys = st_.text(string.ascii_lowercase + "-_", min_size=1, max_size=10).filter(
    lambda k: k not in model.CORE_FIELDS and k not in model.DERIVED_FIELDS
)
comments = st_.builds(
    lambda ts, author, text: {"ts": ts, "author": author, "text": text},
    st_.just("2026-02-09T20:02:00Z"),
    ids,
    st_.text(min_size=1, max_size=20).filter(str.strip),
)
raw_items = st_.builds(
    lambda item_id, step, status, deps, notes, comment_list, extra, derived: {
        **extra,
        "id": item_id,
        "step": step,
        "deps": deps,
        "notes": notes,
        "comments": comment_list,
        **({} if status is None else {"status": status}),
        **derived,
    },
    padded_ids,
    st_.text(min_size=1, max_size=30).filter(str.strip),
    st_.one_of(st_.none(), statuses),
    st_.lists(edges, max_size=6),
    st_.text(max_size=40),
    st_.lists(comments, max_size=3),
    st_.dictionaries(unknown_keys, json_values, max_size=4),
    st_.sampled_from([{}, {"dep_state": "ready", "waiting_on": []}]),
)


@settings(max_examples=300, deadline=None)
@given(raw_items)
def test_normalize_item_properties(raw):
    item = model.normalize_item(raw)
    # the stored shape is exactly what the schema describes, for both validators
    assert validator("st-item").is_valid(item), validator("st-item").errors(item)
    assert reference_validator("st-item").is_valid(item)
    # idempotent
    assert model.normalize_item(item) == item
    # core fields first, in order; unknown fields kept as given; derived fields dropped
    assert list(item)[:6] == list(model.CORE_FIELDS)
    extras = {k: v for k, v in raw.items() if k not in model.CORE_FIELDS and k not in model.DERIVED_FIELDS}
    assert {k: item[k] for k in list(item)[6:]} == extras
    assert "dep_state" not in item and "waiting_on" not in item
    # notes exactly as given; id and step trimmed; status canonical
    assert item["notes"] == raw["notes"]
    assert item["id"] == raw["id"].strip() and item["step"] == raw["step"].strip()
    assert item["status"] in model.STATUSES
    # deps: kebab-case types (blocks by default), unique by (id, type), first occurrence order kept
    keys = [(e["id"], e["type"]) for e in item["deps"]]
    assert len(keys) == len(set(keys))
    expected = []
    for edge in raw["deps"]:
        edge_id = (edge if isinstance(edge, str) else edge["id"]).strip()
        edge_type = "blocks" if isinstance(edge, str) else ((edge.get("type") or "").strip().lower() or "blocks")
        if (edge_id, edge_type) not in expected:
            expected.append((edge_id, edge_type))
    assert keys == expected
    assert all(model.DEP_TYPE_RE.match(t) for _, t in keys)


token_ids = st_.text(string.ascii_letters + string.digits + "-_.", min_size=1, max_size=6)
token_types = st_.one_of(st_.just(""), st_.from_regex(r"[a-z0-9]{1,4}(-[a-z0-9]{1,3}){0,1}", fullmatch=True))


@settings(max_examples=150, deadline=None)
@given(st_.lists(st_.tuples(token_ids, token_types), min_size=1, max_size=6), st_.sampled_from([",", ", ", " , "]))
def test_parse_deps_arg_dedups_defaults_and_round_trips(pairs, sep):
    text = sep.join(f"{i}:{t}" if t else i for i, t in pairs)
    deps = model.parse_deps_arg(text)
    expected = list(dict.fromkeys((i, t or "blocks") for i, t in pairs))
    assert [(e["id"], e["type"]) for e in deps] == expected
    assert model.parse_deps_arg(model.format_deps(deps)) == deps  # what set-deps prints parses back


@settings(max_examples=100, deadline=None)
@given(st_.text(max_size=30))
def test_parse_deps_arg_accepts_or_rejects_cleanly(text):
    try:
        deps = model.parse_deps_arg(text)
    except UsageError as exc:
        assert exc.exit_code == 2 and exc.message
        return
    assert all(e["id"] == e["id"].strip() and e["id"] and model.DEP_TYPE_RE.match(e["type"]) for e in deps)


# --- tail read == full replay ------------------------------------------------------------------

OPS = st_.lists(
    st_.one_of(
        st_.tuples(st_.just("add"), st_.sampled_from(["A", "Bé", "C"])),
        st_.tuples(st_.just("status"), st_.integers(0, 9), statuses),
        st_.tuples(st_.just("notes"), st_.integers(0, 9), st_.text(max_size=8)),
        st_.tuples(st_.just("deps"), st_.integers(0, 9), st_.integers(0, 9)),
        st_.tuples(st_.just("comment"), st_.integers(0, 9), st_.text(min_size=1, max_size=8).filter(str.strip)),
        st_.tuples(st_.just("remove"), st_.integers(0, 9)),
        st_.tuples(st_.just("replace"), st_.integers(0, 3)),
    ),
    min_size=1,
    max_size=30,
)


def _apply(target, op, state_ids):
    kind = op[0]
    pick = (lambda n: state_ids[n % len(state_ids)]) if state_ids else None
    try:
        if kind == "add":
            engine.add(target, step=op[1])
        elif kind == "replace":
            engine.import_plan(
                target,
                [model.normalize_item({"id": f"r{n}", "step": "R", "deps": []}) for n in range(op[1])],
                source="gen",
                replace=True,
            )
        elif not state_ids:
            return
        elif kind == "status":
            engine.set_status(target, pick(op[1]), op[2], allow_multiple_in_progress=True)
        elif kind == "notes":
            engine.set_notes(target, pick(op[1]), op[2])
        elif kind == "deps":
            engine.set_deps(target, pick(op[1]), pick(op[2]))
        elif kind == "comment":
            engine.add_comment(target, pick(op[1]), op[2], author="prop")
        elif kind == "remove":
            engine.remove(target, pick(op[1]))
    except UsageError:
        pass  # rejected by the rules: nothing written, which the property below also covers


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS, st_.integers(1, 6))
def test_tail_read_equals_full_replay(ops, interval):
    old = os.environ.get("ST_CHECKPOINT_INTERVAL")
    os.environ["ST_CHECKPOINT_INTERVAL"] = str(interval)
    try:
        with tempfile.TemporaryDirectory() as tmp:  # outside git: no sidecar rule needed
            path = Path(tmp) / "plan.jsonl"
            target = engine.Target.at(path, str(path))
            engine.init(target)
            for op in ops:
                before = path.read_bytes()
                _apply(target, op, store.read_tail(path).state.ids())
                assert path.read_bytes().startswith(before)
            data = path.read_bytes()
            everything = store.parse_plan_bytes(data).only_records()
            tail = store.read_tail(path)
            assert tail.problems == []
            assert tail.state.items() == replay(everything).items() == replay(everything, events_only=True).items()
            assert tail.watermark == store.watermark(everything)
            assert tail.trailing_events == store.trailing_events(everything) < interval
            assert check_plan_bytes(data, "plan.jsonl") == []
    finally:
        if old is None:
            os.environ.pop("ST_CHECKPOINT_INTERVAL", None)
        else:
            os.environ["ST_CHECKPOINT_INTERVAL"] = old
