"""The aide reducer's behaviour beyond single rejections, and `git st aide replay`."""

from __future__ import annotations

from gitst.aide.stream import replay
from tests.support import FIXTURES, jsonl, st


def _create(entity_id, parent="root", **props):
    return {"t": "entity.create", "id": entity_id, "parent": parent, "p": props}


def test_many_to_one_replaces_the_sources_existing_link():
    result = replay(
        jsonl(
            _create("guest_a"),
            _create("table_1"),
            _create("table_2"),
            {"t": "rel.set", "from": "guest_a", "to": "table_1", "type": "seated_at", "cardinality": "many_to_one"},
            {"t": "rel.set", "from": "guest_a", "to": "table_2", "type": "seated_at"},
        ),
        "x.aide.jsonl",
    )
    assert result.diagnostics == []
    assert list(result.state.links) == [("guest_a", "seated_at", "table_2")]


def test_one_to_one_replaces_links_on_both_ends():
    result = replay(
        jsonl(
            _create("a"),
            _create("b"),
            _create("c"),
            {"t": "rel.set", "from": "a", "to": "b", "type": "partner", "cardinality": "one_to_one"},
            {"t": "rel.set", "from": "c", "to": "b", "type": "partner"},
        ),
        "x",
    )
    assert list(result.state.links) == [("c", "partner", "b")]


def test_a_rejected_batch_leaves_no_trace_and_the_stream_goes_on():
    path = FIXTURES / "bad" / "aide-wire" / "strict-batch-rollback.aide.jsonl"
    data = path.read_bytes() + jsonl({"t": "rel.set", "from": "guest_linda", "to": "table_1", "type": "seated_at"})
    result = replay(data, "x")
    assert [d.code for d in result.diagnostics] == ["AIDE_CONSTRAINT_VIOLATED"]
    assert list(result.state.links) == [("guest_linda", "seated_at", "table_1")]  # only the line after the batch


def test_a_rejected_line_changes_nothing():
    result = replay(
        jsonl(
            _create("guests"),
            {
                "t": "meta.constrain",
                "id": "max",
                "rule": "max_children",
                "parent": "guests",
                "value": 1,
                "strict": True,
            },
            _create("guest_a", "guests"),
            _create("guest_b", "guests"),
            _create("guest_c", "guests"),
        ),
        "x",
    )
    assert [(d.code, d.line) for d in result.diagnostics] == [
        ("AIDE_CONSTRAINT_VIOLATED", 4),
        ("AIDE_CONSTRAINT_VIOLATED", 5),
    ]
    assert result.state.entities["guests"].children == ["guest_a"]
    assert "guest_b" not in result.state.entities  # the id stays free


def test_remove_is_soft_and_recursive_and_move_keeps_the_subtree():
    result = replay(
        jsonl(
            _create("food"),
            _create("food_mains", "food"),
            _create("food_ribs", "food_mains"),
            _create("other"),
            {"t": "entity.move", "ref": "food_mains", "parent": "other", "position": 0},
            {"t": "entity.remove", "ref": "other"},
            _create("food_ribs", "food"),
        ),
        "x",
    )
    assert [(d.code, d.line) for d in result.diagnostics] == [("AIDE_ID_EXISTS", 7)]
    assert result.state.entities["food_ribs"].removed_line == 6
    assert result.state.entities["food_ribs"].props == {}  # data kept for undo


def test_reorder_and_positioned_move():
    result = replay(
        jsonl(
            _create("todos"),
            _create("todo_a", "todos"),
            _create("todo_b", "todos"),
            _create("todo_c", "todos"),
            {"t": "entity.reorder", "ref": "todos", "children": ["todo_c", "todo_a", "todo_b"]},
            _create("done"),
            {"t": "entity.move", "ref": "todo_a", "parent": "done"},
            {"t": "entity.move", "ref": "todo_a", "parent": "todos", "position": 1},
        ),
        "x",
    )
    assert result.diagnostics == []
    assert result.state.live_children(result.state.entities["todos"]) == ["todo_c", "todo_a", "todo_b"]


def test_deep_trees_replay_and_print_without_recursion_limits(tmp_path):
    records = [_create("n0")] + [_create(f"n{i}", f"n{i - 1}") for i in range(1, 3000)]
    stream = tmp_path / "deep.aide.jsonl"
    stream.write_bytes(jsonl(*records, {"t": "entity.move", "ref": "n0", "parent": "n2999"}))
    result = replay(stream.read_bytes(), "x")
    assert [d.code for d in result.diagnostics] == ["AIDE_MOVE_CYCLE"]
    text = st("aide", "replay", str(stream), cwd=tmp_path)
    assert text.returncode == 0, text
    assert text.stdout.count("└── n") == 3000
    as_json = st("aide", "replay", str(stream), "--format", "json", cwd=tmp_path)
    assert as_json.returncode == 0, as_json
    out = as_json.stdout.strip()
    assert out.count('"id":"n') == 3000 and out.count("[") == out.count("]") and out.endswith("}")
