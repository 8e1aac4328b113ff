"""The one output style: JSON compact in pipes and indented on a terminal, control characters
never reach a terminal from human output."""

from __future__ import annotations

import json

from gitst.cli import output


def test_sanitize_escapes_control_characters_but_keeps_tabs_newlines_and_text():
    assert output.sanitize("st-001\x1b[31mred\x07\r\x9b\x00") == "st-001\\x1b[31mred\\x07\\x0d\\x9b\\x00"
    assert output.sanitize("fix: tab\there\nnext line · ünïcode ✓") == "fix: tab\there\nnext line · ünïcode ✓"


def test_json_is_one_line_in_a_pipe_and_indented_on_a_terminal(capsys, monkeypatch):
    value = {"b": 1, "a": ["\x1b", "é"]}
    output.emit_json(value)
    piped = capsys.readouterr().out
    assert piped == '{"b":1,"a":["\\u001b","é"]}\n' and json.loads(piped) == value
    monkeypatch.setattr(output, "is_terminal", lambda stream=None: True)
    output.emit_json(value)
    shown = capsys.readouterr().out
    assert shown.count("\n") > 1 and json.loads(shown) == value
