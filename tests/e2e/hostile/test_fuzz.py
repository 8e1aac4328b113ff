"""Fuzzing every reader and every CLI argument with hostile input: arbitrary bytes, JSON
nested up to orjson's own 1,024 levels, integers and floats far past 2^53, control
characters and bytes that are not UTF-8. The only outcomes allowed are a result or a
:class:`~gitst.core.errors.GitstError` (what the CLI prints as ``error:`` with its exit
code): never another exception, which the CLI would print as a traceback.

The example counts add up to more than 5,000 inputs per normal run (readers in-process, the
CLI through its entry point in a real repository).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitst.core.errors import GitstError
from gitst.core.jsonio import JSONDecodeError, loads
from tests.support import init_repo, main_in

pytestmark = pytest.mark.slow  # 1,000-1,500 examples each: they start first (tests/conftest.py)

COMMON = {
    "deadline": None,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
}

HUGE = [
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "9007199254740993",
    "1e300",
    "-1e308",
    "1e400",
    "0.0000000000000000000001",
    "123456789012345678901234567890",
]
PLAN_RECORD = (
    '{"v":3,"ts":"2026-01-01T00:00:00Z","seq":SEQ,"lane":"event","op":"upsert",'
    '"item":{"id":"st-001","step":"s","status":"pending","deps":[],"notes":"","comments":[],"x":VALUE}}'
)
CHECKPOINT = '{"v":3,"ts":"2026-01-01T00:00:00Z","seq":SEQ,"lane":"checkpoint","items":[VALUE]}'
LOCK = (
    '{"version":1,"resource":"r","token":SEQ,"owner":{"session":"s","pid":SEQ,"host":"h","actor":"a"},'
    '"acquired_at":"2026-01-01T00:00:00.000Z","renewed_at":"2026-01-01T00:00:00.000Z",'
    '"expires_at":"2026-01-01T00:00:00.000Z","ttl":SEQ,"x":VALUE}'
)
PIPELINE = '{"7":{"pr_number":SEQ,"current_phase":VALUE},"lastActivity":"2026-01-01T00:00:00.000Z"}'
AIDE = '{"t":"entity.create","id":"e1","p":{"v":VALUE,"n":SEQ}}'
SDLC = '{"run_id":"r","phase":"plan","issues":{"A-1":{"status":"todo","pr_number":SEQ,"x":VALUE}}}'
TEMPLATES = [PLAN_RECORD, CHECKPOINT, LOCK, PIPELINE, AIDE, SDLC]


def _deep(depth: int, kind: str) -> str:
    if kind == "array":
        return "[" * depth + "]" * depth
    if kind == "object":
        return '{"a":' * depth + "1" + "}" * depth
    return '[{"a":' * (depth // 2) + '"x"' + "}]" * (depth // 2)


values = st.one_of(
    st.sampled_from(HUGE),
    st.builds(_deep, st.integers(100, 1100), st.sampled_from(["array", "object", "mixed"])),
    st.text(max_size=20).map(json.dumps),
    st.sampled_from(['"\\u001b[2J"', '"\\ud800"', "null", "true", "[]", "{}", '"x"', "-1", "0"]),
)


@st.composite
def hostile_documents(draw) -> bytes:
    """A plan line, a state record, a stream line or a document with a hostile value in it;
    sometimes cut, repeated, CR-separated or with raw bytes spliced in."""
    text = draw(st.sampled_from(TEMPLATES))
    text = text.replace("SEQ", draw(st.sampled_from([*HUGE, "1", "2", "0"])), 1).replace("SEQ", "1")
    text = text.replace("VALUE", draw(values))
    data = text.encode("utf-8", "surrogatepass")
    how = draw(st.sampled_from(["whole", "lines", "cut", "cr", "bytes"]))
    if how == "lines":
        data = b"\n".join([data] * draw(st.integers(1, 3))) + b"\n"
    elif how == "cut":
        data = data[: draw(st.integers(0, len(data)))]
    elif how == "cr":
        data = b"\r".join([data] * 2) + b"\r"
    elif how == "bytes":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
    return data


inputs = st.one_of(hostile_documents(), st.binary(max_size=300))


def _no_traceback(call) -> None:
    """``call()`` returns, or raises what the CLI reports cleanly (a GitstError)."""
    with contextlib.suppress(GitstError):
        call()


@settings(max_examples=1500, **COMMON)
@given(data=inputs)
def test_the_json_reader_accepts_or_refuses_with_a_code(data):
    try:
        loads(data)
    except JSONDecodeError as exc:
        assert getattr(exc, "code", "JSON") in ("JSON", "JSON_DEPTH", "JSON_NUMBER")


@settings(max_examples=1500, **COMMON)
@given(data=inputs, older=inputs)
def test_every_plan_reader_and_every_kind_checker_survives(data, older):
    from gitst.plan import doctor, store
    from gitst.plan.check import check_append_only
    from gitst.plan.engine import parse_snapshot
    from gitst.validate.detect import KIND_NAMES, sniff_kind
    from gitst.validate.kinds import check

    list(store.iter_plan_lines(data))
    store.parse_plan_bytes(data)
    store.read_tail_bytes(data).diagnostics("p")
    doctor.scan(data, "p")
    check_append_only(data, older, "p")
    _no_traceback(lambda: parse_snapshot(data, "src"))
    _no_traceback(lambda: sniff_kind(data))
    for kind in KIND_NAMES:
        for diagnostic in check(kind, data, "f", against=older if kind in ("st-plan", "sdlc-state") else None):
            assert diagnostic.code == diagnostic.code.upper() and diagnostic.to_text()


@settings(max_examples=1000, **COMMON)
@given(base=inputs, theirs=inputs)
def test_the_merge_driver_and_the_state_readers_survive(base, theirs, tmp_path_factory):
    from gitst.pipeline.state import parse_wrapper
    from gitst.plan.merge import merge
    from gitst.statedir import records

    _no_traceback(lambda: merge(base, base, theirs, interval=3))
    _no_traceback(lambda: parse_wrapper(theirs, "7", Path("7.json")))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.json"
        path.write_bytes(theirs)
        for schema in ("state-lock", "state-active-chat", "state-active-worktree"):
            _no_traceback(lambda schema=schema: records.load(path, schema))


# --- the CLI: every command with hostile arguments and settings ---------------------------

COMMANDS = [
    ["add"],
    ["add", "--id"],
    ["set-status"],
    ["set-deps", "st-001"],
    ["set-notes", "st-001"],
    ["add-comment", "st-001"],
    ["remove"],
    ["show", "--file"],
    ["doctor", "--file"],
    ["export", "--file"],
    ["lock", "acquire"],
    ["lock", "acquire", "x", "--ttl"],
    ["lock", "acquire", "x", "--wait"],
    ["lock", "release"],
    ["claim"],
    ["claim", "7", "--ttl"],
    ["check-issue"],
    ["release"],
    ["heartbeat", "--ttl"],
    ["pipeline", "set", "7", "current_phase"],
    ["pipeline", "set", "7"],
    ["pipeline", "show"],
    ["pipeline", "get", "7"],
    ["pr", "resolve", "--offline"],
    ["pr", "resolve", "42", "--offline", "--pr"],
    ["validate", "--kind"],
    ["schema", "show"],
    ["worktree", "list", "--format"],
]
SETTINGS = ["ST_LOCK_TTL", "ST_LOCK_TIMEOUT", "ST_CHECKPOINT_INTERVAL", "ST_SESSION_PID", "ST_GH_TIMEOUT", "ST_ACTOR"]


def _safe_text(text: str) -> bool:
    """Arguments that cannot name a path outside the repository the fuzzing runs in."""
    return not text.startswith(("/", "~", "-")) and ".." not in text and "\0" not in text


arguments = st.one_of(
    st.sampled_from(HUGE),
    st.text(min_size=1, max_size=12).filter(_safe_text),
    st.binary(min_size=1, max_size=6).map(os.fsdecode).filter(_safe_text),
    st.sampled_from(["\x1b[2J", "st-001", "7", "#7", "0", "-0", "nan", "inf", "1e308", "\u202e", "a\nb"]),
)


@settings(max_examples=1000, **COMMON)
@given(
    command=st.sampled_from(COMMANDS),
    extra=st.lists(arguments, max_size=2),
    env=st.dictionaries(st.sampled_from(SETTINGS), arguments, max_size=2),
)
def test_every_command_answers_hostile_arguments_with_a_message_never_a_traceback(
    command, extra, env, tmp_path_factory
):
    settings_env = {
        name: value.encode("utf-8", "surrogateescape").decode("utf-8", "replace").replace("\0", "")
        for name, value in env.items()
    }
    code, err = main_in(_fuzz_repo(tmp_path_factory), [*command, *extra], {"ST_SESSION_ID": "fuzz", **settings_env})
    assert isinstance(code, int) and code in (0, 1, 2, 3, 4), (command, extra, env, code, err)
    if code:
        assert "rror" in err or "Usage" in err, (command, extra, err)


_REPO: list[Path] = []


def _fuzz_repo(factory) -> Path:
    """One real repository with a plan for the whole CLI fuzz (made once: git is slow)."""
    if not _REPO:
        from tests.support import mutate

        where = init_repo(factory.mktemp("fuzz") / "repo")
        mutate(where, "init")
        mutate(where, "add", "First")
        _REPO.append(where)
    return _REPO[0]
