"""What `next` and `claim` import: never the standard modules only their rare branches use
(`subprocess` for a setup script, a land check or gh; `shutil` for a copy or a deleted
worktree; `tempfile`, with `shutil`, `bz2` and `lzma`, for a temp file that
`jsonio.temp_beside` makes itself). Each costs every fresh-shell command its import
(docs/performance.md, "Round 35: where a `git-st` process's CPU goes")."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.e2e.loop.conftest import item, session_env, write_plan
from tests.support import REPO_ROOT, env_without_coverage, git

PROBE = """
import json, sys
before = set(sys.modules)
from gitst.cli.main import main
code = main(sys.argv[1:])
json.dump({"code": code, "modules": sorted(set(sys.modules) - before)}, sys.stderr)
"""
NEVER = {"subprocess", "shutil", "tempfile", "bz2", "lzma"}


@pytest.mark.parametrize("args", [["next", "--format", "json"], ["claim", "st-002"]])
def test_next_and_claim_import_none_of_the_rare_branches_modules(repo, args):
    git("config", "st.worktree.ports", "off", cwd=repo)
    write_plan(repo, [item(1), item(2)])
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        env={**env_without_coverage(), **session_env("agent-a", os.getpid()), "PYTHONPATH": str(REPO_ROOT)},
    )
    found = json.loads(proc.stderr[proc.stderr.index('{"code"') :])
    assert found["code"] == 0, proc
    assert set(found["modules"]) & NEVER == set(), proc.stdout
    assert (repo / "state" / "locks").is_dir()  # it wrote its records (through jsonio.temp_beside)
