"""`git st whoami` — the acting session and the rule that chose it (docs/parallel.md, "Who is
acting"). A module of its own: it reads no claim, so it loads none of the claim machinery."""

from __future__ import annotations

import click

from gitst.cli._parallel import format_option, session_option, who
from gitst.cli.output import emit_json, say
from gitst.core import timestamps
from gitst.sessions.identity import started_at


@click.command("whoami")
@session_option
@format_option
def whoami(session: str | None, fmt: str) -> int:
    """Show the acting session: id, the process whose life it is, host, actor, and the rule
    that chose them (docs/parallel.md, "Who is acting")."""
    me = who(session)
    start = started_at(me.pid_start)
    data = {
        "session": me.session,
        "source": me.source,
        "pid": me.pid,
        "process": me.process,
        "pid_start": me.pid_start,
        "started_at": timestamps.iso(start) if start is not None else None,
        "host": me.host,
        "actor": me.actor,
        "rule": me.rule,
        "liveness": me.liveness,
        "explanation": me.explanation(),
        "chain": [step.to_dict() for step in me.chain],
    }
    if fmt == "json":
        emit_json(data)
        return 0
    source = "made from the session pid: no ST_SESSION_ID, CLAUDE_SESSION_ID or CODEX_THREAD_ID is set"
    lines = [
        f"session   {me.session} ({source if me.source == 'pid' else 'from ' + me.source})",
        f"pid       {me.pid} ({me.process or '?'}), started {data['started_at'] or 'at an unknown time'}",
        f"host      {me.host}",
        f"actor     {me.actor}",
        f"rule      {me.rule}: {me.explanation()}",
        f"liveness  {me.liveness}",
    ]
    if me.chain:
        lines.append("chain     " + " <- ".join(f"{s.pid} {s.name} ({s.verdict})" for s in me.chain))
    for line in lines:
        say(line)
    warning = me.warning()
    if warning:
        click.echo(warning, err=True)
    return 0
