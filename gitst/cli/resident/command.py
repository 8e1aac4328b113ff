"""`git st resident` — the resident process of this installation: is one running, stop it
(docs/resident.md). ``ST_RESIDENT=1`` starts it on first use; nothing here starts one."""

from __future__ import annotations

import time

import click

from gitst.cli._parallel import format_option
from gitst.cli.output import emit_json, say
from gitst.cli.resident import client, wire
from gitst.core.errors import ENVIRONMENT


@click.group("resident")
def resident() -> None:
    """The resident process `git-st` hands commands to when ST_RESIDENT=1 (docs/resident.md)."""


@resident.command("status")
@format_option
def status(fmt: str) -> int:
    """Show whether a resident process runs for this installation. Exit 1 when none does."""
    where = wire.places(create=False)
    answer = client.query(b"status")
    data = {"running": answer is not None, "socket": where.socket if where else None, **(answer or {})}
    if fmt == "json":
        emit_json(data)
    elif answer is None:
        say("no resident process runs for this installation" + ("" if where else " (no usable socket directory)"))
    else:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(answer["started"])))  # type: ignore[arg-type]
        served, running = answer["served"], answer["commands_running"]
        say(f"pid       {answer['pid']}, started {since}, {served} commands served, {running} running")
        say(f"socket    {answer['socket']}")
        say(f"log       {answer['log']}")
        say(
            f"code      {answer['package']}"
            + (" (changed since: it stops at the next command)" if answer["code_changed"] else "")
        )
        say(f"idle exit after {answer['idle_seconds']:g} s without a command")
    return 0 if answer is not None else 1


@resident.command("start")
@click.option(
    "--wait", type=click.FloatRange(min=0), default=60.0, show_default=True, help="Seconds to wait for it to listen."
)
def start(wait: float) -> int:
    """Start the resident process (when none runs) and wait until it listens: before many
    agents start at once, so that none of their first commands waits for it. Exit 4 when it
    did not listen in time (ST_RESIDENT need not be set)."""
    if client.start(wait):
        say("the resident process listens")
        return 0
    where = wire.places(create=False)
    say(
        "error: no resident process listens"
        + (f" (its log: {where.log})" if where else " (no usable socket directory, docs/resident.md)"),
        err=True,
    )
    return ENVIRONMENT


@resident.command("stop")
@format_option
def stop(fmt: str) -> int:
    """Stop the resident process: it takes no more commands and exits when its running ones end."""
    answer = client.query(b"stop")
    if fmt == "json":
        emit_json({"stopped": answer is not None, "pid": (answer or {}).get("pid")})
    else:
        say(
            f"stopped the resident process {answer['pid']}"
            if answer
            else "no resident process runs for this installation"
        )
    return 0
