"""How much work `git st validate` does per file: each file's JSON is parsed once, however many
steps look at it (a wide pattern's content check, the opt-out hint, the kind's own check, the
content sniff of a file named explicitly)."""

from __future__ import annotations

from collections import Counter

import orjson
import pytest

from gitst.validate import files
from tests.support import FIXTURES, git

SDLC_GOOD = (FIXTURES / "seeds" / "003" / "state.json").read_bytes()
# Claimed by the wide `**/state.json` pattern, and lacking `phase`: confirmed by content, checked
# (a schema error) and given the opt-out hint: three steps that each read its JSON.
MAYBE_NOT_SDLC = b'{"run_id": "2026-01-01-x", "todos": []}\n'


@pytest.fixture
def parses(monkeypatch):
    """How often each text is parsed as JSON (every gitst reader parses with orjson.loads)."""
    counts: Counter[bytes] = Counter()
    real = orjson.loads

    def counting(data: bytes | str) -> object:
        raw = data.encode() if isinstance(data, str) else bytes(data)
        counts[raw.strip()] += 1
        return real(data)

    monkeypatch.setattr(orjson, "loads", counting)
    return counts


@pytest.mark.parametrize("content", [MAYBE_NOT_SDLC, SDLC_GOOD], ids=["maybe-not", "sdlc-run"])
def test_a_file_a_wide_pattern_claims_is_parsed_once(repo, parses, content):
    (repo / "app").mkdir()
    (repo / "app" / "state.json").write_bytes(content)
    [result] = files.validate_paths(["app/state.json"], repo)
    assert result.kind == "sdlc-state"
    assert parses[content.strip()] == 1


def test_a_staged_file_a_wide_pattern_claims_is_parsed_once(repo, parses):
    (repo / "app").mkdir()
    (repo / "app" / "state.json").write_bytes(MAYBE_NOT_SDLC)
    git("add", "app/state.json", cwd=repo)
    [result] = files.validate_staged(repo)
    assert result.kind == "sdlc-state"
    assert result.errors and "-st-kind" in (result.diagnostics[0].fix or "")
    assert parses[MAYBE_NOT_SDLC.strip()] == 1


def test_a_file_whose_kind_is_sniffed_is_parsed_once(repo, parses):
    (repo / "runs").mkdir()
    (repo / "runs" / "current.json").write_bytes(SDLC_GOOD)
    [result] = files.validate_paths(["runs/current.json"], repo)
    assert (result.kind, result.source) == ("sdlc-state", "content")
    assert parses[SDLC_GOOD.strip()] == 1
