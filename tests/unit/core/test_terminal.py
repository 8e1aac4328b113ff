"""gitst.core.terminal.sanitize: every control and every invisible format character escaped."""

from __future__ import annotations

import sys
import unicodedata

from gitst.core.terminal import sanitize


def test_every_format_character_python_knows_is_escaped():
    missed = [
        f"U+{code:04X}"
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in ("Cc", "Cf", "Zl", "Zp")
        and chr(code) not in "\t\n"
        and sanitize(chr(code)) == chr(code)
    ]
    assert missed == []


def test_escapes_are_visible_and_text_is_kept():
    assert sanitize("a\u202eb") == "a\\u202eb"
    assert sanitize("\x1b[31m") == "\\x1b[31m"
    assert sanitize("\U000e0041") == "\\U000e0041"
    assert sanitize("é 日本 🙂\tx\n") == "é 日本 🙂\tx\n"
