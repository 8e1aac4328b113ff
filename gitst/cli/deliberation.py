"""`git st deliberation add|list|show` — one record per agent invocation in
state/deliberations/ (logic in gitst.deliberations.store; docs/store.md)."""

from __future__ import annotations

from typing import Any

import click

from gitst.cli._input import read_source
from gitst.cli._parallel import format_option, report_corrupt, session_option, state_root, table
from gitst.cli.output import emit_json, sanitize, write
from gitst.core.errors import UsageError
from gitst.core.jsonio import dumps, load_object
from gitst.deliberations import store
from gitst.sessions.identity import session_id
from gitst.statedir.paths import validate_session

_NUMBER = click.IntRange(min=1)


@click.group("deliberation")
def deliberation() -> None:
    """Record and read agent invocations (state/deliberations/<id>.json).

    One JSON record per agent invocation: role, timestamp, status, the agent's response,
    model, endpoint, the pr/issue/phase it ran against, the command that triggered it,
    duration_ms and a tokens block. Records are written once and never rewritten.
    """


@deliberation.command("add")
@click.option("--from", "source", metavar="FILE", help="A JSON document holding the record ('-' = stdin).")
@click.option("--role", metavar="ROLE", help="The agent's role (judge, builder, reviewer, ...).")
@click.option("--status", metavar="STATUS", help="How the invocation ended (completed, failed, timeout, ...).")
@click.option("--response", metavar="TEXT", help="The agent's response.")
@click.option("--response-file", metavar="FILE", help="Read the response text from FILE ('-' = stdin).")
@click.option("--model", metavar="MODEL")
@click.option("--endpoint", metavar="ENDPOINT", help="The endpoint or service that answered.")
@click.option("--pr", type=_NUMBER, metavar="N")
@click.option("--issue", type=_NUMBER, metavar="N")
@click.option("--phase", metavar="PHASE")
@click.option("--iteration", type=_NUMBER, metavar="N", help="Which iteration of the phase.")
@click.option("--command", "command_text", metavar="TEXT", help="The command that triggered the invocation.")
@click.option("--duration-ms", type=click.FloatRange(min=0), metavar="MS")
@click.option("--tokens-in", type=click.IntRange(min=0), metavar="N", help="Input tokens.")
@click.option("--tokens-out", type=click.IntRange(min=0), metavar="N", help="Output tokens.")
@click.option("--timestamp", metavar="TS", help="When it started (ISO 8601; default now).")
@session_option
@format_option
def add(
    source: str | None,
    role: str | None,
    status: str | None,
    response: str | None,
    response_file: str | None,
    model: str | None,
    endpoint: str | None,
    pr: int | None,
    issue: int | None,
    phase: str | None,
    iteration: int | None,
    command_text: str | None,
    duration_ms: float | None,
    tokens_in: int | None,
    tokens_out: int | None,
    timestamp: str | None,
    session: str | None,
    fmt: str,
) -> int:
    """Record one agent invocation; prints its id.

    The fields come from a JSON document (--from FILE or '-'; unknown fields are kept) and
    from the options, which win over the document. role and status are required;
    timestamp defaults to now and session to the acting session.
    """
    if source == "-" and response_file == "-":
        raise UsageError("--from - and --response-file - both want stdin; give one of them a file")
    if response is not None and response_file is not None:
        raise UsageError("give --response or --response-file, not both")
    document = load_object(read_source(source), "--from " + source) if source else None
    if response_file is not None:
        response = read_source(response_file).decode("utf-8", "replace")
    fields: dict[str, Any] = {
        "role": role,
        "status": status,
        "response": response,
        "model": model,
        "endpoint": endpoint,
        "pr": pr,
        "issue": issue,
        "phase": phase,
        "iteration": iteration,
        "command": command_text,
        "duration_ms": duration_ms,
        "timestamp": timestamp,
    }
    tokens = (tokens_in, tokens_out)
    record = store.build(document, fields, session=validate_session(session_id(session)), tokens=tokens)
    ident, path = store.add(record, state_root())
    if fmt == "json":
        emit_json({"id": ident, "path": str(path), "record": record})
    else:
        write(ident)
    return 0


@deliberation.command("list")
@click.option("--issue", type=_NUMBER, metavar="N")
@click.option("--pr", type=_NUMBER, metavar="N")
@click.option("--role", metavar="ROLE")
@click.option("--phase", metavar="PHASE")
@click.option("--status", metavar="STATUS")
@click.option("--session", "session_filter", metavar="ID", help="Only this session's records.")
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="Only the N most recent.")
@format_option
def list_(
    issue: int | None,
    pr: int | None,
    role: str | None,
    phase: str | None,
    status: str | None,
    session_filter: str | None,
    limit: int | None,
    fmt: str,
) -> int:
    """List deliberations, oldest first, filtered by issue, pr, role, phase, status, session.

    Text filters ignore case. Records that cannot be read are reported on stderr (exit 1);
    the others are listed.
    """
    filters = store.Filters(issue=issue, pr=pr, role=role, phase=phase, status=status, session=session_filter)
    rows, problems = store.select(state_root(), filters, limit=limit)
    if fmt == "json":
        emit_json({"deliberations": [row.to_dict() for row in rows]})
    elif rows:
        write(
            table(
                [
                    [
                        row.ident,
                        _cell(row.record.get("timestamp")),
                        _cell(row.record.get("role")),
                        _cell(row.record.get("status")),
                        _cell(row.record.get("issue")),
                        _cell(row.record.get("pr")),
                        _cell(row.record.get("phase")),
                        _cell(row.record.get("model")),
                        _duration(row.record.get("duration_ms")),
                    ]
                    for row in rows
                ],
                ["ID", "TIMESTAMP", "ROLE", "STATUS", "ISSUE", "PR", "PHASE", "MODEL", "DURATION"],
            )
        )
    else:
        write("no deliberations")
    return report_corrupt(problems)


@deliberation.command("show")
@click.argument("ident", metavar="ID")
@format_option
def show(ident: str, fmt: str) -> int:
    """Show deliberation ID in full (exit 1 when there is none)."""
    path, record = store.read(ident, state_root())
    if fmt == "json":
        emit_json({"id": ident, "path": str(path), "record": record})
        return 0
    lines = [f"deliberation {ident}  ({path})"]
    fields = [key for key in record if key != "response"]
    width = max((len(key) for key in fields), default=0)
    for key in fields:
        value = record[key]
        lines.append(f"  {key:<{width}}  {sanitize(value if isinstance(value, str) else dumps(value))}")
    response = record.get("response")
    if response is not None:
        lines.append("response:")
        lines.append(sanitize(response if isinstance(response, str) else dumps(response)))
    write("\n".join(lines))
    return 0


def _cell(value: object) -> str:
    return "-" if value is None else sanitize(str(value))


def _duration(value: object) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    return f"{value / 1000:.1f}s"
