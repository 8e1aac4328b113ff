"""The aide reducer's behaviour beyond single rejections, and `git st aide replay`."""

from __future__ import annotations

import json

from tests.support import FIXTURES, jsonl, st


def test_replay_cli_prints_the_tree_and_lists_rejected_lines(tmp_path):
    stream = tmp_path / "party.aide.jsonl"
    stream.write_bytes(
        (FIXTURES / "seeds" / "002" / "full-examples.aide.jsonl").read_bytes()
        + jsonl({"t": "entity.update", "ref": "ghost", "p": {}})
    )
    result = st("aide", "replay", str(stream), cwd=tmp_path)
    assert result.returncode == 0, result
    out = result.stdout
    assert "aide-wire: 20 lines, 19 applied, 1 rejected" in out
    assert "└── page (page)" in out
    assert "    ├── guests (table)" in out and "    │   ├── guest_linda" in out
    assert "guest_linda -[bringing]-> food_potato_salad" in out
    assert 'style: {"primary_color":"#2d3748","font_family":"Inter"}' in out
    assert "escalate L4 (query, line 19): do we have enough vegetarian options?" in out
    assert f"{stream}:20: error[AIDE_UNKNOWN_REF]: ref 'ghost' does not exist" in out


def test_replay_cli_json_shape(tmp_path):
    stream = tmp_path / "log.aide.events.jsonl"
    stream.write_bytes((FIXTURES / "seeds" / "002" / "seed.aide.events.jsonl").read_bytes())
    result = st("aide", "replay", str(stream), "--format", "json", cwd=tmp_path)
    assert result.returncode == 0, result
    data = json.loads(result.stdout)
    assert data["kind"] == "aide-envelope" and data["records"] == 3 and data["applied"] == 3
    assert set(data) == {
        "kind",
        "records",
        "applied",
        "entities",
        "removed",
        "relationships",
        "constraints",
        "style",
        "meta",
        "signals",
        "rejected",
        "warnings",
    }
    [page] = data["entities"]
    assert page["children"][0]["children"][0]["id"] == "guest_linda"
    assert page["children"][0]["children"][0]["props"] == {"name": "Aunt Linda", "rsvp": "yes"}
    assert data["rejected"] == []


def test_replay_cli_missing_file_is_a_usage_error(tmp_path):
    result = st("aide", "replay", "nope.aide.jsonl", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("error: cannot read nope.aide.jsonl") and "Traceback" not in result.stderr
