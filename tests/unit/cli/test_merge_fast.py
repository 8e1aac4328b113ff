"""`git st merge-driver`'s click-free path (:mod:`gitst.cli.merge_fast`): its grammar is the click
declaration's, whatever command line it accepts click reads the same way, and what the driver
imports and the git processes it starts are pinned (docs/performance.md, "Start-up"). Also the
missing-driver warning of every writing command: its config read is the command's own listing,
and a clone that has the driver runs no `git check-attr` for it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from gitst.cli import hooks as hooks_cli
from gitst.cli import merge_fast
from tests.support import REPO_ROOT, env_without_coverage, git, logged_git, logging_git, run, st_quick

PLAN = ".step/st-plan.jsonl"


def test_the_grammar_is_the_click_declaration():
    command = hooks_cli.merge_driver
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    assert tuple(p.name for p in arguments) == merge_fast.GRAMMAR[0]
    options = {}
    for param in command.params:
        if isinstance(param, click.Option):  # each a repeatable option with one text value
            assert param.multiple and not param.is_flag and param.nargs == 1, param.name
            assert not isinstance(param.type, click.Choice), param.name
            options.update(dict.fromkeys(param.opts, (param.name, "multi")))
            assert not param.secondary_opts, param.name
    assert options == merge_fast.GRAMMAR[1]
    # The versions are click.Path(dir_okay=False): a directory is click's error, nothing else is checked.
    paths = [p for p in arguments if isinstance(p.type, click.Path)]
    assert tuple(p.name for p in paths) == merge_fast._VERSIONS
    assert all(not p.type.dir_okay and not p.type.exists and not p.type.allow_dash for p in paths)


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> list[str]:
    top = tmp_path_factory.mktemp("merge-fast")
    (top / "file").write_text("")
    (top / "dir").mkdir()
    return [str(top / "file"), str(top / "dir"), str(top / "missing")]


TOKENS = ["--published", "main", "--published=origin/main", "--published=", "-h", "--help", "--", "-", "--bogus", "-p"]
TOKENS += ["", "--pub", PLAN, "two words"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hs.data())
def test_a_command_line_the_fast_path_accepts_reads_as_click_reads_it(places, data):
    tokens = data.draw(hs.lists(hs.sampled_from(TOKENS + places), max_size=6))
    parsed = merge_fast.parse(["merge-driver", *tokens])
    if parsed is None:
        return  # click's to parse (help, errors, a directory, the rare forms)
    context = hooks_cli.merge_driver.make_context("merge-driver", list(tokens))  # click raises on what it refuses
    assert parsed == context.params, tokens


def test_help_completion_and_a_directory_are_left_to_click(places, monkeypatch):
    file, directory, missing = places
    assert merge_fast.parse(["merge-driver", file, file, missing, PLAN]) == {
        "published": (),
        "base": file,
        "ours": file,
        "theirs": missing,
        "path": PLAN,
    }
    assert merge_fast.parse(["merge-driver", "--help"]) is None
    assert merge_fast.parse(["merge-driver", file, file]) is None  # theirs missing: click's usage error
    assert merge_fast.parse(["merge-driver", file, directory, file]) is None  # click: "is a directory"
    assert merge_fast.parse(["merge-driver", file, file, file, PLAN, "extra"]) is None
    monkeypatch.setenv("_GIT_ST_COMPLETE", "bash_complete")
    assert merge_fast.parse(["merge-driver", file, file, file]) is None


def _logging_git(folder: Path, log: Path) -> dict[str, str]:
    """PATH with a `git` first on it that logs each process (tests.support.logging_git)."""
    return {"PATH": f"{logging_git(folder, log)}:{env_without_coverage()['PATH']}"}


def _ran(log: Path) -> list[str]:
    """Each logged git process as its words after any ``-C DIR`` / ``-c KEY=VALUE``."""
    return [" ".join(words) for words in logged_git(log)]


@pytest.fixture(scope="module")
def versions(tmp_path_factory) -> tuple[Path, Path, Path, Path]:
    """A repository with the driver and its attributes committed, and three versions of its
    plan as git writes them for the driver: base, ours (one comment more), theirs (another)."""
    repo = tmp_path_factory.mktemp("merge-fast-repo") / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    git("commit", "-q", "--allow-empty", "-m", "root", cwd=repo)
    st_quick("hooks", "install", "--hook", "pre-commit", cwd=repo)  # the driver + .gitattributes
    st_quick("init", cwd=repo)
    st_quick("add", "--id", "st-001", "--step", "first", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "plan", cwd=repo)
    plan = repo / PLAN
    base = plan.read_bytes()
    st_quick("add-comment", "st-001", "ours", "-q", cwd=repo)
    ours = plan.read_bytes()
    plan.write_bytes(base)
    st_quick("add-comment", "st-001", "theirs", "-q", cwd=repo)
    theirs = plan.read_bytes()
    plan.write_bytes(base)
    folder = repo.parent
    for name, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        (folder / name).write_bytes(data)
    return repo, folder / "base", folder / "ours", folder / "theirs"


PROBE = """
import json, sys
before = set(sys.modules)
from gitst.cli.main import main
code = main(sys.argv[1:])
new = set(sys.modules) - before
json.dump({"code": code, "modules": sorted(new)}, sys.stderr)
"""

# The merge: the plan's records, the reducer, the renumbering, the published plan through one
# `git cat-file --batch`, the atomic write of OURS. Never click, jsonschema, pygit2 or filelock.
GITST = {
    "gitst",
    "gitst.cli",
    "gitst.cli.main",
    "gitst.cli.merge_fast",
    "gitst.cli.output",  # its one line on stderr
    "gitst.cli.plan_fast",  # the plain command line's reader (plan_fast.parse_line)
    "gitst.core",
    "gitst.core.errors",
    "gitst.core.jsonio",
    "gitst.core.safepaths",
    "gitst.core.terminal",
    "gitst.core.values",
    "gitst.git",
    "gitst.git.config",  # st.sync.base / st.remote: one `git config --list`
    "gitst.git.objects",  # the published branch's plan
    "gitst.git.repo",
    "gitst.git.runner",
    "gitst.plan",
    "gitst.plan.append",
    "gitst.plan.files",
    "gitst.plan.location",
    "gitst.plan.merge",
    "gitst.plan.model",
    "gitst.plan.records",
    "gitst.plan.reducer",
    "gitst.plan.renumber",
    "gitst.plan.store",
    "gitst.plan.tail",
    "gitst.settings",
}
# Standard modules that would mean click or a heavy import crept back in (inspect and
# dataclasses come with orjson itself; gitst builds no dataclass on this path).
NEVER = {"asyncio", "logging", "threading", "typing", "socket", "argparse", "shlex", "click"}


def test_what_the_merge_driver_imports_and_runs_is_pinned(versions, tmp_path):
    repo, base, ours, theirs = versions
    work = tmp_path / "ours"
    shutil.copyfile(ours, work)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, "merge-driver", str(base), str(work), str(theirs), PLAN],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        env={**env_without_coverage(), "PYTHONPATH": str(REPO_ROOT)},
    )
    lines = proc.stderr.splitlines()
    assert lines[0] == f"gitst: merged {PLAN}: their new events appended after ours, re-sequenced, then a checkpoint"
    found = json.loads(lines[-1])
    assert found["code"] == 0, proc
    modules = set(found["modules"])
    third_party = {m.split(".")[0] for m in modules if not m.startswith("gitst")} - set(sys.stdlib_module_names)
    assert third_party == {"orjson"}
    assert modules & NEVER == set()
    assert {m for m in modules if m.startswith("gitst")} == GITST
    texts = [json.loads(line).get("comment", {}).get("text") for line in work.read_bytes().splitlines()]
    assert "ours" in texts and "theirs" in texts  # merged: both comments

    log = tmp_path / "git.log"
    shutil.copyfile(ours, work)
    env = _logging_git(tmp_path / "bin", log)
    result = run(["git-st", "merge-driver", str(base), str(work), str(theirs), PLAN], cwd=repo, env=env)
    assert result.returncode == 0, result
    # st.sync.base and st.remote from one listing; the published plan from one batch read
    assert _ran(log) == ["config --list -z", "cat-file --batch -z"]


def test_the_click_path_of_the_merge_driver_says_the_same(versions, tmp_path):
    """The body is one: the click command (here reached by a directory, which only click
    refuses, and by --help) and the fast path give the same result for the same merge."""
    repo, base, ours, theirs = versions
    refused = run(["git-st", "merge-driver", str(base), str(tmp_path), str(theirs), PLAN], cwd=repo)
    assert refused.returncode == 2 and "is a directory" in refused.stderr, refused
    assert "Usage: git st merge-driver" in run(["git-st", "merge-driver", "-h"], cwd=repo).stdout
    fast, slow = tmp_path / "fast", tmp_path / "slow"
    shutil.copyfile(ours, fast)
    shutil.copyfile(ours, slow)
    fast_run = run(["git-st", "merge-driver", str(base), str(fast), str(theirs), PLAN], cwd=repo)
    context = hooks_cli.merge_driver.make_context("merge-driver", [str(base), str(slow), str(theirs), PLAN])
    assert hooks_cli.merge_driver.invoke(context) == 0
    assert fast_run.returncode == 0, fast_run
    assert fast.read_bytes() == slow.read_bytes() != ours.read_bytes()


def test_the_missing_driver_check_reads_the_commands_own_config_listing(versions, tmp_path):
    """A writing command where .gitattributes asks for the driver: this clone has it, so no
    `git check-attr` runs, and its config is read once, by the listing the command uses too."""
    repo, _base, _ours, _theirs = versions
    log = tmp_path / "git.log"
    env = _logging_git(tmp_path / "bin", log)
    result = run(["git-st", "add", "--step", "counted", "-q"], cwd=repo, env=env)
    assert result.returncode == 0 and "driver" not in result.stderr, result
    ran = _ran(log)
    assert not any(line.startswith("check-attr") for line in ran), ran
    assert not any(line.startswith("config --get") for line in ran), ran
    listed = [words for words in logged_git(log, options=True) if words == ["config", "--list", "-z"]]
    assert len(listed) == 1, ran  # the warning's and the command's own reads in this directory
