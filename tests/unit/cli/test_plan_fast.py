"""The plan commands' click-free path (``gitst.cli.plan_fast``): its grammar is the click
declarations' own, whatever command line it accepts click reads the same way, and what
`git st show` and `git st add` import is pinned (docs/performance.md, "Start-up")."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from gitst.cli import plan as plan_cli
from gitst.cli import plan_fast
from gitst.cli.main import COMMANDS
from tests.support import REPO_ROOT, env_without_coverage, st_quick


def _click_command(name: str) -> click.Command:
    command = getattr(plan_cli, COMMANDS[name][1])
    assert isinstance(command, click.Command)
    return command


def test_the_grammar_is_the_click_declarations():
    plan_commands = {name for name, entry in COMMANDS.items() if entry[0] == "gitst.cli.plan"}
    assert set(plan_fast.GRAMMAR) == plan_commands
    for name, (positionals, options) in plan_fast.GRAMMAR.items():
        command = _click_command(name)
        declared_positionals = tuple(p.name for p in command.params if isinstance(p, click.Argument))
        declared_options = {}
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.nargs == 1, (name, param.name)
                if param.is_flag and param.secondary_opts:  # --x/--no-x: True, False, None when absent
                    assert param.default is None, (name, param.name)
                    declared_options.update(dict.fromkeys(param.opts, (param.name, "on")))
                    declared_options.update(dict.fromkeys(param.secondary_opts, (param.name, "off")))
                    continue
                if param.is_flag:
                    kind: object = "flag"
                elif param.multiple:
                    assert not isinstance(param.type, click.Choice), (name, param.name)
                    kind = "multi"
                elif isinstance(param.type, click.Choice):
                    kind = tuple(param.type.choices)
                else:
                    kind = "value"
                declared_options.update(dict.fromkeys(param.opts, (param.name, kind)))
        assert positionals == declared_positionals, name
        assert options == declared_options, name


TOKENS = [
    "--file",
    "p.jsonl",
    "--file=x.jsonl",
    "--allow-multiple-in-progress",
    "--replace",
    "--repair-seq",
    "--format",
    "json",
    "table",
    "github",
    "--format=text",
    "--format=bogus",
    "--step",
    "--id",
    "--status",
    "--deps",
    "--notes",
    "--text",
    "--author",
    "--input",
    "--output",
    "st-001",
    "done",
    "a,b:relates-to",
    "",
    "-",
    "--",
    "-h",
    "--help",
    "--bogus",
    "-x",
    "--replace=1",
    "--notes=",
    "two words",
    "-q",
    "--quiet",
    "--update-plan",
    "--no-update-plan",
    "--update-plan=1",
    "--stat",
    "--status=done,open",
    "mermaid",
    "--format=dot",
]


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hs.sampled_from(sorted(plan_fast.GRAMMAR)), hs.lists(hs.sampled_from(TOKENS), max_size=6))
def test_a_command_line_the_fast_path_accepts_reads_as_click_reads_it(name, tokens):
    parsed = plan_fast.parse([name, *tokens])
    if parsed is None:
        return  # click's to parse (help, errors, the rare forms)
    assert parsed[0] == name
    command = _click_command(name)
    context = command.make_context(name, list(tokens))  # click raises on what it refuses
    assert parsed[1] == context.params, tokens


def test_shell_completion_and_help_are_left_to_click(monkeypatch):
    assert plan_fast.parse(["show", "--help"]) is None
    assert plan_fast.parse(["add", "x", "-h"]) is None
    assert plan_fast.parse(["show"]) == (
        "show",
        {"item_id": None, "file": None, "allow_multiple_in_progress": False, "fmt": "markdown", "statuses": ()},
    )
    assert plan_fast.parse(["show", "--stat", "done"]) is None  # a prefix: click's PlanCommand expands it
    monkeypatch.setenv("_GIT_ST_COMPLETE", "bash_complete")
    assert plan_fast.parse(["show"]) is None


PROBE = """
import json, sys
before = set(sys.modules)
from gitst.cli.main import main
code = main(sys.argv[1:])
new = set(sys.modules) - before
json.dump({"code": code, "modules": sorted(new)}, sys.stderr)
"""

# Exactly the third-party packages each command may import: orjson (the JSON every command
# reads and writes). Never click (the fast path parses these command lines itself), filelock
# (asyncio, logging and hashlib come with it: gitst takes the flock itself), jsonschema,
# jsonschema_rs or pygit2 (no read or write of a plan needs them).
THIRD_PARTY = {"orjson"}
# Standard modules that would mean a heavy import crept back in.
NEVER = {"asyncio", "subprocess", "logging", "threading", "typing", "socket", "tempfile", "argparse", "shlex"}
GITST = {
    "show": {
        "gitst",
        "gitst.cli",
        "gitst.cli.main",
        "gitst.cli.output",
        "gitst.cli.plan_fast",
        "gitst.core",
        "gitst.core.errors",
        "gitst.core.jsonio",
        "gitst.core.safepaths",  # the plan's path is checked component by component (docs/security.md)
        "gitst.core.terminal",  # human output is sanitized (control characters escaped)
        "gitst.core.values",
        "gitst.git",  # plan discovery: work_tree_top (no git process at the top of a work tree)
        "gitst.git.repo",
        "gitst.git.runner",
        "gitst.plan",
        "gitst.plan.append",  # the plan file's write path (gitst.plan.store imports its three parts)
        "gitst.plan.files",  # the check every plan command runs before it opens a plan file
        "gitst.plan.location",  # the plan's path, sidecar, shown names and work tree, resolved once
        "gitst.plan.model",
        "gitst.plan.records",  # the plan file's records, line by line
        "gitst.plan.reducer",
        "gitst.plan.render",
        "gitst.plan.store",
        "gitst.plan.tail",  # the O(tail) read
        "gitst.settings",  # NO_COLOR / CLICOLOR_FORCE (environment only)
    },
}
GITST["add"] = GITST["show"] - {"gitst.plan.render"} | {
    "gitst.core.filelocks",
    "gitst.git.attributes",
    "gitst.git.config",
    "gitst.plan.driver",  # the missing-merge-driver warning of every writing command (a file read, no git)
    "gitst.plan.engine",
    "gitst.plan.rules",
    "gitst.plan.sidecar",
    "gitst.sessions",
    "gitst.sessions.identity",
}
# doctor on a small plan: the st-record schema compiled to Python, never jsonschema-rs (its
# import and build would cost the check more than the records do; catalog.verdicts).
GITST["doctor"] = GITST["show"] - {"gitst.plan.render"} | {
    "gitst.core.diagnostics",
    "gitst.plan.doctor",
    "gitst.plan.engine",
    "gitst.plan.rules",
    "gitst.plan.sidecar",
    "gitst.schemas",
    "gitst.schemas.catalog",
    "gitst.schemas.compiled",
    "gitst.schemas.partial",  # the one-field conditions the compiled schema answers with one lookup
}
# No gitst module on these paths builds a dataclass (each costs a fresh process ~1-4 ms; the
# ones orjson itself needs are its own): core.diagnostics is imported only to report a problem.


@pytest.mark.parametrize("args", [["show"], ["add", "--step", "Write the docs"], ["doctor"]])
def test_what_show_add_and_doctor_import_is_pinned(repo, args):
    st_quick("init", cwd=repo)
    st_quick("add", "--step", "first", cwd=repo)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        env={**env_without_coverage(), "PYTHONPATH": str(REPO_ROOT)},
    )
    found = json.loads(proc.stderr)
    assert found["code"] == 0, proc
    modules = set(found["modules"])
    third_party = {m.split(".")[0] for m in modules if not m.startswith("gitst")} - set(sys.stdlib_module_names)
    assert third_party == THIRD_PARTY
    assert modules & NEVER == set()
    assert {m for m in modules if m.startswith("gitst")} == GITST[args[0]]
