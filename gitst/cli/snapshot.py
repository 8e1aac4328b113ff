"""`git st snapshot save|load|list` — one chat's context for the next, in
state/session-snapshots/<session_id>.json (logic in gitst.snapshots.store; docs/store.md)."""

from __future__ import annotations

from typing import Any

import click

from gitst.cli._input import read_source
from gitst.cli._parallel import format_option, report_corrupt, state_root, table
from gitst.cli.output import emit_json, sanitize, write
from gitst.core import timestamps
from gitst.core.jsonio import dumps, load_object
from gitst.snapshots import store


@click.group("snapshot")
def snapshot() -> None:
    """Save this session's context for the next chat; load the latest of another session.

    A snapshot holds a summary, completed work, decisions, gotchas and next steps, plus the
    git state (branch, HEAD, dirty files) and the pipeline status gitst reads when it is
    saved. The file is keyed by the session id (--session, ST_SESSION_ID,
    CLAUDE_SESSION_ID, CODEX_THREAD_ID), `anonymous` when there is none.
    """


@snapshot.command("save")
@click.option("--from", "source", metavar="FILE", help="A JSON document with the content ('-' = stdin).")
@click.option("--summary", metavar="TEXT", help="Where the work stands.")
@click.option("--completed", multiple=True, metavar="TEXT", help="Completed work (repeatable).")
@click.option("--decision", multiple=True, metavar="TEXT", help="A decision and its reason (repeatable).")
@click.option("--gotcha", multiple=True, metavar="TEXT", help="A trap for the next session (repeatable).")
@click.option("--next", "next_steps", multiple=True, metavar="TEXT", help="A next step (repeatable).")
@click.option("--issue", "issues", multiple=True, metavar="N", help="Only these issues' pipeline status (repeatable).")
@click.option("--session", "session", metavar="ID", help="Save as this session (default: the declared session id).")
@format_option
def save(
    source: str | None,
    summary: str | None,
    completed: tuple[str, ...],
    decision: tuple[str, ...],
    gotcha: tuple[str, ...],
    next_steps: tuple[str, ...],
    issues: tuple[str, ...],
    session: str | None,
    fmt: str,
) -> int:
    """Save this session's snapshot (replacing its previous one).

    Content comes from a JSON document (--from FILE or '-': summary, completed, decisions,
    gotchas, next_steps and any other field, kept as given) and from the options, whose
    items are appended to the document's lists. gitst fills in session_id, saved_at, the
    git state and the pipeline status itself.
    """
    document = load_object(read_source(source), "--from " + source) if source else None
    key = store.session_key(session)
    items = {"completed": completed, "decisions": decision, "gotchas": gotcha, "next_steps": next_steps}
    path, record = store.save(
        document,
        session=key,
        root=state_root(),
        summary=summary,
        items={name: list(values) for name, values in items.items()},
        issues=list(issues) or None,
    )
    if fmt == "json":
        emit_json({"session_id": key, "path": str(path), "snapshot": record})
    else:
        write(f"saved the snapshot of session {sanitize(key)} in {path} ({_git_line(record.get('git'))})")
    return 0


@snapshot.command("load")
@click.option(
    "--session", "session", metavar="ID", help="Load this session's snapshot (default: the latest of another)."
)
@format_option
def load(session: str | None, fmt: str) -> int:
    """Print the most recent snapshot saved by another session (exit 1 when there is none).

    With --session ID, that session's snapshot. The git state of where you load it is shown
    next to the one saved, so you see what moved since.
    """
    loaded = store.load(state_root(), current=store.session_key(None), session=session)
    if fmt == "json":
        emit_json(loaded.to_dict())
    else:
        write(render(loaded))
    report_corrupt(loaded.problems)  # unreadable snapshots passed over: said on stderr; one was loaded
    return 0


@snapshot.command("list")
@format_option
def list_(fmt: str) -> int:
    """List the saved snapshots, oldest save first."""
    rows, problems = store.list_snapshots(state_root())
    if fmt == "json":
        emit_json({"snapshots": [{"session_id": r.session, "path": str(r.path), "snapshot": r.record} for r in rows]})
    elif rows:
        body = [
            [
                sanitize(r.session),
                sanitize(str(r.record.get("saved_at"))),
                str(r.record.get("saves", "-")),
                _git_line(r.record.get("git")),
                sanitize(_first_line(r.record.get("summary"))),
            ]
            for r in rows
        ]
        write(table(body, ["SESSION", "SAVED", "SAVES", "GIT", "SUMMARY"]))
    else:
        write("no session snapshots")
    return report_corrupt(problems)


# --- rendering ----------------------------------------------------------------------------


def _first_line(text: object) -> str:
    if not isinstance(text, str) or not text.strip():
        return "-"
    line = text.strip().splitlines()[0]
    return line if len(line) <= 60 else line[:57] + "..."


def _git_line(state: object) -> str:
    if not isinstance(state, dict):
        return "no git work tree"
    branch = state.get("branch") or "detached HEAD"
    head = (state.get("head") or "no commit")[:12]
    return sanitize(f"branch {branch}, HEAD {head}, {state.get('dirty', 0)} dirty file(s)")


def _item(value: object) -> str:
    return sanitize(value if isinstance(value, str) else dumps(value))


def render(loaded: store.Loaded) -> str:
    record = loaded.record
    lines = _heading(loaded)
    lines += _content(record)
    lines += _git_section(record.get("git"), loaded.git_now)
    lines += _pipeline_section(record.get("pipeline") or [])
    extra = {k: v for k, v in record.items() if k not in _SHOWN}
    if extra:
        lines += ["", "Other fields", *(f"  {sanitize(k)}: {_item(v)}" for k, v in extra.items())]
    return "\n".join(lines)


def _heading(loaded: store.Loaded) -> list[str]:
    """Whose snapshot, when it was saved (and how long ago), by whom, where it is."""
    record = loaded.record
    saved: Any = record.get("saved_at")
    ago = timestamps.human_delta(timestamps.parse(saved) - timestamps.now()) if timestamps.moment(saved) else "?"
    who = f"by {sanitize(str(record.get('actor', '?')))} on {sanitize(str(record.get('host', '?')))}"
    return [
        f"session snapshot of {sanitize(loaded.session)}, saved {sanitize(str(saved))} ({ago}) {who}",
        f"  ({loaded.path})",
    ]


def _content(record: dict[str, Any]) -> list[str]:
    """The summary, then the lists: completed work, decisions, gotchas, next steps."""
    lines: list[str] = []
    if record.get("summary"):
        lines += ["", "Summary", *("  " + line for line in _item(record["summary"]).splitlines())]
    for name, title in (
        ("completed", "Completed work"),
        ("decisions", "Decisions"),
        ("gotchas", "Gotchas"),
        ("next_steps", "Next steps"),
    ):
        values = record.get(name) or []
        if values:
            lines += ["", title, *(f"  - {_item(value)}" for value in values)]
    return lines


def _git_section(saved: Any, now: dict[str, Any] | None) -> list[str]:
    """The git state at the save and now, and whether HEAD moved in between."""
    lines = ["", "Git", f"  at save: {_git_line(saved)}", f"  now:     {_git_line(now)}"]
    saved_git, now_git = saved or {}, now or {}
    if saved_git.get("head") and now_git.get("head") and saved_git["head"] != now_git["head"]:
        lines.append(f"  HEAD moved since the save: {saved_git['head'][:12]} -> {now_git['head'][:12]}")
    return lines


def _pipeline_section(pipeline: list[dict[str, Any]]) -> list[str]:
    """Each issue's pipeline status at the save: phase, agent, PR, verdict."""
    if not pipeline:
        return []
    lines = ["", "Pipeline status at save"]
    for entry in pipeline:
        if "error" in entry:
            lines.append(f"  #{entry['issue']}: {_item(entry['error'])}")
            continue
        detail = [f"phase {entry.get('current_phase')}"]
        if entry.get("active_agent"):
            detail.append(f"agent {entry['active_agent']}")
        if entry.get("pr_number") is not None:
            detail.append(f"PR #{entry['pr_number']}")
        if entry.get("verdict"):
            detail.append(f"verdict {entry['verdict']}")
        lines.append(f"  #{entry['issue']}: " + sanitize(", ".join(detail)))
    return lines


_SHOWN = {
    "version",
    "session_id",
    "saved_at",
    "created_at",
    "saves",
    "actor",
    "host",
    "summary",
    "completed",
    "decisions",
    "gotchas",
    "next_steps",
    "git",
    "pipeline",
}
