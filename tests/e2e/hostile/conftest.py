"""What every hostile case asserts besides its own refusal: nothing written outside the
repository. A sentinel directory of files and the test's own HOME are byte for byte as they
were when the test began (tests/support.py, make_sentinel and snapshot)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support import make_sentinel, snapshot


@pytest.fixture
def nothing_written_outside(tmp_path_factory):
    sentinel = make_sentinel(tmp_path_factory.mktemp("sentinel"))  # not in tmp_path: some tests list it
    home = Path(os.environ["HOME"])
    before = (snapshot(sentinel), snapshot(home))
    yield sentinel
    assert (snapshot(sentinel), snapshot(home)) == before, "a hostile case wrote outside the repository"
