"""Hypothesis strategies shared by the schema differential test and the validate fuzzing:
JSON values with the strings and keys the formats care about, and mutations of valid
seed records (drop, replace, add, descend), so generated inputs sit close to the edge of
validity instead of being rejected at the first byte."""

from __future__ import annotations

import json
import random

from hypothesis import strategies as st

from tests.support import FIXTURES

SEEDS = FIXTURES / "seeds"

INTERESTING_STRINGS = [
    "",
    "root",
    "guests",
    "guest_linda",
    "food",
    "page",
    "Guest-Linda",
    "x" * 64,
    "x" * 65,
    "y" * 100,
    "y" * 101,
    "entity.create",
    "entity.move",
    "rel.set",
    "batch.start",
    "batch.end",
    "voice",
    "many_to_one",
    "one_to_one",
    "exclude_pair",
    "max_children",
    "web",
    "signal",
    "tv",
    "2026-05-22T14:30:00Z",
    "2026-02-30T14:30:00Z",
    "2026-05-22T14:30:00+00:00",
    "2026-05-22T14:30:00Z\n",
    "2026-05-22 14:30:00",
    "2026-04-10T12:48:21.988Z",
    "evt_20260522_007",
    "evt_20260523_007",
    "evt_20260522_7",
    "42",
    "042",
    "42\n",
    "\u0664\u0662",
    "ENG-101",
    "ENG-102",
    "ENG-999",
    "eng-1",
    "acme/checkout-api#31",
    "acme/x#",
    "2026-03-02-checkout-v2",
    "2026-02-30-x",
    "BOOTSTRAP",
    "EXECUTING",
    "COMPLETED",
    "blocked",
    "ready",
    "implementing",
    "reviewing",
    "awaiting_human",
    "done",
    "failed",
    "in_progress",
    "true",
    "false",
    "We did great! \U0001f389",
    "\U0001f600",
    "a\nb",
    "\u2028",
    "\\",
    '"',
]

KEYS = [
    "t",
    "id",
    "parent",
    "display",
    "p",
    "props",
    "ref",
    "from",
    "to",
    "type",
    "children",
    "position",
    "cardinality",
    "rule",
    "entities",
    "rel_type",
    "value",
    "strict",
    "message",
    "text",
    "tier",
    "reason",
    "extract",
    "note",
    "sequence",
    "timestamp",
    "actor",
    "source",
    "message_id",
    "payload",
    "run_id",
    "phase",
    "phase_status",
    "issues",
    "status",
    "blocked_by",
    "pr",
    "pr_number",
    "updated_at",
    "metrics",
    "phases",
    "started_at",
    "ended_at",
    "duration_s",
    "repo",
    "title",
    "42",
    "43",
    "lastActivity",
    "heartbeat_pid",
    "sub_issues",
    "steps",
    "tokens",
    "issue",
    "pid",
    "session_id",
    "v",
    "ts",
    "seq",
    "lane",
    "op",
    "items",
    "deps",
    "\u0664\u0662",
    "42\n",
    "ENG-101",
    "eng-1",
    "DESIGN",
    "LAUNCH",
]


def _seeded(build) -> st.SearchStrategy:
    """Hypothesis picks a seed; a plain ``random.Random`` builds the value (fast)."""
    return st.integers(min_value=0, max_value=2**64 - 1).map(lambda seed: build(random.Random(seed)))


def random_json(rng: random.Random, depth: int = 0):
    """A random JSON value, biased towards the strings and keys the formats care about."""
    roll = rng.random()
    if depth < 3 and roll < 0.15:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if depth < 3 and roll < 0.3:
        return {
            (rng.choice(KEYS) if rng.random() < 0.8 else _random_text(rng)): random_json(rng, depth + 1)
            for _ in range(rng.randint(0, 4))
        }
    kind = rng.randint(0, 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice([0, 1, -1, 7, 42, 100, 101, 2**31, 2**63 - 1, -(2**63), rng.randint(-1000, 1000)])
    if kind == 3:
        return rng.choice([0.0, 0.5, -1.5, 1e300, 42.0, rng.uniform(-1e6, 1e6)])
    if kind == 4:
        return _random_text(rng)
    return rng.choice(INTERESTING_STRINGS)


def _random_text(rng: random.Random) -> str:
    alphabet = "abz_-.:/#019 \n\t\"'{}[]\u00e9\u0664\u2028\U0001f389"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))


def mutate(rng: random.Random, value):
    """``value`` (not modified) with one random change somewhere inside it."""
    if isinstance(value, dict) and value:
        action = rng.choice(["replace", "delete", "add", "rename", "descend", "descend", "descend"])
        value = dict(value)
        key = rng.choice(sorted(value))
        if action == "delete":
            del value[key]
            return value
        if action == "add":
            value[rng.choice(KEYS)] = random_json(rng)
            return value
        if action == "rename":
            value[_tweak(rng, key)] = value.pop(key)
            return value
        if action == "descend":
            value[key] = mutate(rng, value[key])
            return value
    elif isinstance(value, list) and value:
        action = rng.choice(["replace", "delete", "append", "descend", "descend"])
        value = list(value)
        index = rng.randrange(len(value))
        if action == "delete":
            del value[index]
            return value
        if action == "append":
            value.append(rng.choice(value) if rng.random() < 0.5 else random_json(rng))
            return value
        if action == "descend":
            value[index] = mutate(rng, value[index])
            return value
    elif isinstance(value, str) and rng.random() < 0.5:
        return _tweak(rng, value)
    return random_json(rng)


def _tweak(rng: random.Random, text: str) -> str:
    return rng.choice([text + "\n", text.upper(), text[:-1], text + text, "\u0664" + text, text + "x", " " + text])


def mutated(examples: list, max_mutations: int = 3) -> st.SearchStrategy:
    """One of ``examples`` with up to ``max_mutations`` random changes."""

    def build(rng: random.Random):
        value = rng.choice(examples)
        for _ in range(rng.randint(0, max_mutations)):
            value = mutate(rng, value)
        return value

    return _seeded(build)


json_values = _seeded(random_json)


def seed_wire_records() -> list[dict]:
    return [json.loads(line) for line in (SEEDS / "002" / "wire-examples.jsonl").read_text().splitlines() if line]


def seed_stream_lines(name: str) -> list[bytes]:
    return [line for line in (SEEDS / "002" / name).read_bytes().split(b"\n") if line]


def dump(value) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


def edited_stream(base_lines: list[bytes], extra_records: list) -> st.SearchStrategy:
    """A JSONL stream: a valid base with a few lines mutated, dropped, moved or added."""

    def build(rng: random.Random) -> bytes:
        lines = list(base_lines)
        for _ in range(rng.randint(0, 6)):
            action = rng.choice(["mutate", "mutate", "drop", "move", "insert", "garbage", "blank"])
            index = rng.randrange(len(lines)) if lines else 0
            if action == "mutate" and lines:
                try:
                    record = json.loads(lines[index])
                except ValueError:
                    continue
                lines[index] = dump(mutate(rng, record))
            elif action == "drop" and lines:
                del lines[index]
            elif action == "move" and lines:
                lines.insert(rng.randrange(len(lines)), lines.pop(index))
            elif action == "insert":
                record = rng.choice(extra_records)
                lines.insert(index, dump(mutate(rng, record) if rng.random() < 0.5 else record))
            elif action == "garbage":
                lines.insert(
                    index,
                    rng.choice(
                        [b"{", b"[]", b"null", b'{"t":', b"\xff\xfe", bytes(rng.getrandbits(8) for _ in range(8))]
                    ),
                )
            else:
                lines.insert(index, b"   ")
        ending = rng.choice([b"\n", b"", b"\r\n"])
        return (b"\n".join(lines) + ending) if lines else ending

    return _seeded(build)


def walk(node, path=()):
    """(path, node) for every node of a JSON value."""
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from walk(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, (*path, index))


_NOT_SCHEMA = ("examples", "properties", "$defs", "x-gitst-code", "x-gitst-message")


def schema_patterns(schema: dict):
    """(path, regex) of every ``pattern`` and ``patternProperties`` key in a schema."""
    for path, node in walk(schema):
        if not isinstance(node, dict) or (path and path[-1] in _NOT_SCHEMA):
            continue
        if isinstance(node.get("pattern"), str):
            yield path, node["pattern"]
        if isinstance(node.get("patternProperties"), dict):
            for key in node["patternProperties"]:
                yield (*path, "patternProperties"), key
