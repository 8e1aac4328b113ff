"""parseInt / String() as JavaScript has them: fixed cases, and node itself as the oracle."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitst.pipeline.coerce import js_parse_int, js_string


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("42", 42),
        (" 42", 42),
        ("\t\n 42", 42),
        ("\u00a042", 42),
        ("\ufeff42", 42),
        ("\u300042", 42),
        ("+42", 42),
        ("-42", -42),
        ("42abc", 42),
        ("4 2", 4),
        ("4.9", 4),
        ("1e3", 1),
        ("0x2A", 42),
        ("0X2a", 42),
        ("-0x10", -16),
        ("0x", None),
        ("0xg", None),
        ("abc", None),
        ("", None),
        ("-", None),
        ("+-4", None),
        ("\x1c42", None),
        ("\x8542", None),
        ("\uff14\uff12", None),  # fullwidth digits are not ASCII digits
        (42, 42),
        (42.9, 42),
        (-0.5, 0),
        (1e21, 1),
        (True, None),
        (False, None),
        (None, None),
        ([43, 44], 43),
        ([], None),
        ({"a": 1}, None),
    ],
)
def test_parse_int_cases(value, expected):
    assert js_parse_int(value) == expected


def test_string_of_json_values():
    assert js_string(None) == "null"
    assert js_string(True) == "true"
    assert js_string([1, None, "a", [2, 3]]) == "1,,a,2,3"
    assert js_string({"x": 1}) == "[object Object]"
    assert js_string(1e21) == "1e+21"
    assert js_string(1e20) == "100000000000000000000"
    assert js_string(1.5e-7) == "1.5e-7"
    assert js_string(0.000001) == "0.000001"


NODE = shutil.which("node")

_js_space = st.sampled_from(["", " ", "\t", "\n", "\u00a0", "\ufeff", "\u2028", "\u3000", "\x1c", "\x85"])
_numberish = st.builds(
    lambda space, sign, prefix, digits, tail: space + sign + prefix + digits + tail,
    _js_space,
    st.sampled_from(["", "+", "-", "+-"]),
    st.sampled_from(["", "0x", "0X", "0"]),
    st.text(alphabet="0123456789abcdefABCDEF", max_size=6),
    st.text(max_size=4),
)
_json_values = st.one_of(
    _numberish,
    st.text(max_size=8),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: abs(f) < 2**53),
    st.booleans(),
    st.none(),
    st.lists(st.one_of(st.integers(min_value=-999, max_value=999), st.none(), st.text(max_size=3)), max_size=3),
)


@pytest.mark.skipif(NODE is None, reason="node is not installed")
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_json_values, min_size=40, max_size=40))
def test_agrees_with_node(values):
    """One node process per example checks 40 values: String(v) and parseInt(v), NaN as null."""
    script = (
        "const v = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "console.log(JSON.stringify(v.map(x => { const p = parseInt(x);"
        " return [String(x), Number.isNaN(p) ? null : p]; })));"
    )
    out = subprocess.run(
        [NODE, "-e", script], input=json.dumps(values), capture_output=True, text=True, check=True, timeout=30
    ).stdout
    for value, (string, parsed) in zip(values, json.loads(out), strict=True):
        assert js_string(value) == string, value
        ours = js_parse_int(value)
        if ours is not None and abs(ours) >= 2**53:
            assert parsed is not None and float(ours) == pytest.approx(parsed), value  # JS loses the digits
        else:
            assert ours == parsed, value
