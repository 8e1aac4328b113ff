"""`git st setup|prime|import-update-plan|hook-agent` — gitst inside the agent's harness
(Claude Code, Codex). The work is in :mod:`gitst.harness`; this module parses and renders.
docs/harness.md."""

from __future__ import annotations

import os

import click

from gitst.cli._input import read_source
from gitst.cli._parallel import format_option, session_option
from gitst.cli.output import emit_json, say
from gitst.core.jsonio import load_object
from gitst.harness import context, mirror
from gitst.harness import setup as harness_setup
from gitst.harness.entry import run as run_hook
from gitst.sessions.identity import session_id


@click.command("setup")
@click.argument("harness", type=click.Choice(list(harness_setup.HARNESSES)))
@click.option("--local", is_flag=True, help="Claude Code: write .claude/settings.local.json (not committed).")
@click.option("--remove", is_flag=True, help="Take back exactly what setup added (the file's bytes restored).")
@format_option
def setup(harness: str, local: bool, remove: bool, fmt: str) -> int:
    """Write HARNESS's hook configuration for this work tree (claude: .claude/settings.json;
    codex: .codex/hooks.json and an AGENTS.md section), merged into what is there; every
    hook runs `git st hook-agent EVENT`. Prints what it wrote."""
    act = harness_setup.remove if remove else harness_setup.setup
    done = act(harness, local=local)
    if fmt == "json":
        emit_json({"harness": harness, "files": [w.to_dict() for w in done]})
        return 0
    for written in done:
        what = f" ({', '.join(written.events)})" if written.events else ""
        say(f"{written.action} {written.path}{what}")
        if written.content is not None and written.action in ("created", "updated") and written.path.suffix == ".json":
            say(written.content.decode("utf-8", "replace").rstrip("\n"))
    return 0


@click.command("prime")
@session_option
@format_option
def prime(session: str | None, fmt: str) -> int:
    """Print the context an agent's session starts with: who it is, its claims, the ready
    items, its predecessor's snapshot (what the SessionStart hook gives Claude Code and
    Codex; for harnesses without hooks). Within st.agent.contextBytes."""
    me = session_id(session)
    cwd = os.getcwd()
    if fmt == "json":
        click.echo(context.hook_output(me, cwd))
    else:
        say(context.prime(me, cwd))
    return 0


@click.command("import-update-plan")
@click.argument("source", default="-", metavar="[FILE|-]")
@session_option
@format_option
def import_update_plan(source: str, session: str | None, fmt: str) -> int:
    """Mirror an update_plan JSON ({"plan": [{"step", "status"}], "explanation"}) into the
    plan: one item per step, its id plan-<session>-<hash of the step> stable across updates."""
    document = load_object(read_source(source), "stdin" if source == "-" else source)
    done = mirror.import_update_plan(document, session=session_id(session))
    if fmt == "json":
        emit_json(done.to_dict())
    else:
        say(f"mirrored {len(done.written)} step(s) into the plan, {len(done.unchanged)} unchanged")
    return 0


@click.command("hook-agent", context_settings={"ignore_unknown_options": True})
@click.argument("event", required=False, metavar="[EVENT]")
def hook_agent(event: str | None) -> int:
    """Run one agent-harness hook: reads the harness's JSON payload on stdin (one object; an
    open stdin is fine). EVENT (default: the payload's hook_event_name): SessionStart,
    UserPromptSubmit, PostToolUse, PreToolUse, PreCompact, Stop, SessionEnd, WorktreeCreate,
    WorktreeRemove, TaskCreated, TaskCompleted (docs/harness.md). Fails open: exit 0 and one
    line on stderr when gitst breaks; exit 2 refuses a PreToolUse write to a path another
    live session reserved."""
    return run_hook([event] if event else [])
