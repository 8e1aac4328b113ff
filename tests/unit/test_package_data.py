"""The schemas and the hook-shim template are real package data (no symlinks), read with
importlib.resources; the top-level schemas/ and hooks/ are generated from them."""

from __future__ import annotations

import subprocess
import sys

from gitst.hooks.install import HOOK_NAMES, SHIMS, shim_bytes
from gitst.schemas import catalog
from tests.support import REPO_ROOT


def test_no_symlink_anywhere_in_the_package():
    assert [p for p in (REPO_ROOT / "gitst").rglob("*") if p.is_symlink()] == []


def test_the_top_level_copies_agree_with_the_package():
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / ".ci" / "sync-package-data"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + "\nfix: run .ci/sync-package-data"


def test_every_schema_is_read_from_the_package():
    names = catalog.names()
    assert len(names) == len(list((REPO_ROOT / "gitst" / "schemas").glob("*.schema.json"))) > 0
    for name in names:
        assert catalog.schema_text(name) == (REPO_ROOT / "gitst" / "schemas" / f"{name}.schema.json").read_bytes()


def test_one_template_gives_every_shim_its_name_and_behaviour():
    assert tuple(SHIMS) == HOOK_NAMES
    for name, (blocking, stdin_data, own_add) in SHIMS.items():
        text = shim_bytes(name).decode()
        assert "@" not in text.replace("$@", "").replace('"$@"', "")  # every placeholder filled in
        assert f"hook={name}\n" in text
        assert f"blocking={'yes' if blocking else 'no'}\n" in text
        assert f"stdin_data={'yes' if stdin_data else 'no'}\n" in text
        assert f"skip_own_add={'yes' if own_add else 'no'}\n" in text
