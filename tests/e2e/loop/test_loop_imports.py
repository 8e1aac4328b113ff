"""What one `git st next` and one `git st land` import on their success path, pinned
(docs/performance.md, "Start-up of the loop's commands"): each process of the 12-agent swarm
pays its imports in CPU the other agents wait for. The records they read and write are checked
by the schemas compiled to Python (jsonschema-rs, and the email, decimal and string modules it
brings, only for a record that fails), and nothing binds a socket with worktree ports off."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.e2e.loop.conftest import item, session_env, write_plan
from tests.e2e.remote.conftest import clone
from tests.support import REPO_ROOT, env_without_coverage, git

PROBE = """
import json, sys
before = set(sys.modules)
from gitst.cli.main import main
code = main(sys.argv[1:])
new = set(sys.modules) - before
json.dump({"code": code, "modules": sorted(new)}, open(sys.argv[0] + ".json", "w"))
sys.exit(code)
"""

# Standard and third-party modules neither command needs when all goes well.
NEVER = {
    "jsonschema_rs",  # the records' verdicts: gitst.schemas.compiled
    "email",  # jsonschema-rs's
    "decimal",  # jsonschema-rs's
    "socket",  # the worktree ports' probe (st.worktree.ports off here)
    "gitst.hooks.install",  # the hooks and the merge driver run in their own processes
    "gitst.cli.hooks",
    "asyncio",
    "logging",
    "argparse",
    "pygit2",
    "filelock",
}
# Standard modules only the rare branches of the loop use (round 35): `subprocess` for a setup
# script, a land check or gh; `shutil` for a copy or a discarded worktree; `tempfile` (with
# `shutil`, `bz2`, `lzma`) no more: `jsonio.temp_beside` makes the temp file of every write.
RARE = {"subprocess", "shutil", "tempfile", "bz2", "lzma"}
# Measured when this pin landed (next: 153 modules, land: 162; were 175 and 185), and in round
# 35 without the rare branches' modules (next 143, land 152): a little room for a new helper
# module, none for a new package.
MOST = {"next": 150, "land": 160}


def _probe(args: list[str], cwd, env: dict, tmp_path, name: str) -> tuple[dict, set[str]]:
    script = tmp_path / f"probe-{name}.py"
    script.write_text(PROBE)
    proc = subprocess.run(
        [sys.executable, str(script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**env_without_coverage(env), "PYTHONPATH": str(REPO_ROOT)},
    )
    assert proc.returncode == 0, proc
    found = json.loads((tmp_path / f"probe-{name}.py.json").read_text())
    return json.loads(proc.stdout), set(found["modules"])


def test_what_next_and_land_import_is_pinned(bare, tmp_path):
    seed = clone(str(bare), tmp_path / "landing")
    write_plan(seed, [item(1), item(2)])
    git("push", "-q", "origin", "main", cwd=seed)
    work = clone(str(bare), tmp_path / "work")
    for key, value in (("st.remote", "origin"), ("st.worktree.ports", "off")):
        git("config", key, value, cwd=work)
    env = session_env("agent-imports", os.getpid())
    answer, taken = _probe(["next", "--format", "json"], work, env, tmp_path, "next")
    assert answer["id"] == "st-001", answer
    path = answer["path"]
    (tmp_path / answer["path"] / "done.txt").write_text("done\n")
    git("add", "done.txt", cwd=path)
    git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "the work", cwd=path)
    report, landed = _probe(["land", "--format", "json"], path, env, tmp_path, "land")
    assert report["id"] == "st-001" and not report["already_landed"], report
    print({"next": len(taken), "land": len(landed)})
    for name, modules in (("next", taken), ("land", landed)):
        tops = {module.split(".")[0] for module in modules} | {module.rsplit(".", 1)[0] for module in modules}
        assert tops & NEVER == set(), (name, sorted(tops & NEVER))
        assert modules & RARE == set(), (name, sorted(modules & RARE))
        assert "gitst.schemas.compiled" in modules, name  # its records were checked, in Python
        assert len(modules) <= MOST[name], (name, len(modules))


def test_a_claim_imports_none_of_the_rare_branches_modules(repo, tmp_path):
    """`claim` writes its lock and session records: through `jsonio.temp_beside`, never
    `tempfile` (which brought `shutil`, `bz2` and `lzma` into every command that writes)."""
    git("config", "st.worktree.ports", "off", cwd=repo)
    write_plan(repo, [item(1), item(2)])
    env = session_env("agent-claims", os.getpid())
    _answer, modules = _probe(["claim", "st-002", "--format", "json"], repo, env, tmp_path, "claim")
    assert modules & RARE == set(), sorted(modules & RARE)
    assert (repo / "state" / "locks" / "issue-st-002.json").is_file()  # its records were written
