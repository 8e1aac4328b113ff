"""The integer limit every JSON reader applies: its cheap pre-check never lets a long
number through (it is a filter in front of the exact check, so it may only say "maybe")."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitst.core import jsonio

DIGIT_RUN = re.compile(rb"[0-9]{16}")


@given(st.binary(max_size=200) | st.text(alphabet='0123456789abcdef" ,:.-eE[]{}', max_size=200).map(str.encode))
def test_the_pre_check_finds_every_run_of_sixteen_digits(data: bytes) -> None:
    found = jsonio._SIXTEEN_DIGITS in data.translate(jsonio._DIGITS_AS_ZEROS)
    assert found == bool(DIGIT_RUN.search(data))


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        (b'{"n": 9007199254740991}', False),  # 2^53-1: the largest safe integer
        (b'{"n": 9007199254740992}', True),
        (b'{"n": -90071992547409920}', True),
        (b'{"sha": "7b99f32ae8a43e6642f5d1a724c7093952a06ddc", "n": 1.0000000000000002}', False),
        (b'{"s": "12345678901234567890"}', False),  # digits in a string are text, not a number
    ],
)
def test_integers_beyond_the_interop_limit_are_refused(text: bytes, refused: bool) -> None:
    if refused:
        with pytest.raises(jsonio.JSONLimitError):
            jsonio.loads(text)
    else:
        jsonio.loads(text)
