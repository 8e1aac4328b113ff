"""gitst.core.jsonio.encode_checked: the JSON writers apply the readers' limits."""

from __future__ import annotations

import pytest

from gitst.core.errors import UsageError
from gitst.core.jsonio import MAX_DEPTH, MAX_SAFE_INTEGER, atomic_write_json, encode_checked, loads


def nested(levels: int) -> object:
    value: object = 1
    for _ in range(levels):
        value = [value]
    return value


def test_what_is_written_can_be_read_back():
    for value in (nested(MAX_DEPTH), {"n": MAX_SAFE_INTEGER}, {"n": -MAX_SAFE_INTEGER}):
        assert loads(encode_checked(value, "x.json")) == value


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (nested(MAX_DEPTH + 1), "JSON_DEPTH"),
        (nested(300), "JSON_DEPTH"),  # beyond what orjson encodes
        ({"n": MAX_SAFE_INTEGER + 1}, "JSON_NUMBER"),
        ({"n": 2**64}, "JSON_NUMBER"),  # beyond what orjson encodes
    ],
)
def test_what_a_reader_refuses_is_never_written(tmp_path, value, code):
    target = tmp_path / "record.json"
    target.write_text("{}")
    with pytest.raises(UsageError, match=rf"error\[{code}\]") as refused:
        atomic_write_json(target, value)
    assert refused.value.exit_code == 2
    assert target.read_text() == "{}"
    assert [p.name for p in tmp_path.iterdir()] == ["record.json"]  # no temp file left
