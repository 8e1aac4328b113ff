"""An accepted identifier always names one entry inside its directory (the CLI refusals, exit 2
with nothing written, are tests/e2e/parallel/test_locks_safety.py)."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as hyp

from gitst.core.errors import UsageError
from gitst.statedir.paths import validate_identifier, validate_session


@settings(max_examples=300, deadline=None)
@given(hyp.text(min_size=0, max_size=80))
def test_accepted_identifiers_always_name_one_entry_inside_the_directory(value):
    base = Path("/state/locks")
    for check in (validate_identifier, validate_session):
        try:
            accepted = check(value)
        except UsageError:
            continue
        path = base / f"{accepted}.json"
        assert os.path.normpath(path).startswith(str(base) + "/")
        assert path.parent == base and "/" not in accepted and ".." not in accepted
        assert 1 <= len(accepted) <= 64
