"""`git st sdlc …` — write seed 003's state.json through its rules (logic in
gitst.sdlc.writer; docs/sdlc.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from gitst.cli._parallel import format_option, table
from gitst.cli._types import F
from gitst.cli.output import emit_json, sanitize, write
from gitst.core.errors import UsageError
from gitst.sdlc import writer


def _file_option(func: F) -> F:
    return click.option(
        "--file",
        "file",
        metavar="PATH",
        help="The state.json (default: ST_SDLC_STATE, git config st.sdlcState, else state.json at the worktree's top).",
    )(func)


@click.group("sdlc")
def sdlc() -> None:
    """Write an Agentic SDLC run's state.json (seed 003) through its rules.

    Run each command BEFORE the action it records (write-ahead): it returns once the new
    state is on disk. Every write refreshes updated_at, moves blocked issues whose blockers
    are all done to ready, and is checked with `git st validate`'s own rules, transitions
    included; a write that breaks one is refused (exit 2) and nothing is written.
    """


def _path(file: str | None) -> Path:
    return writer.resolve_path(file)


def _report(done: writer.Written, fmt: str) -> int:
    if fmt == "json":
        emit_json(done.to_dict())
        return 0
    for message in done.messages:
        write(sanitize(message))
    for warning in done.warnings:
        write(warning.to_text(), err=True)
    return 0


@sdlc.command("init")
@click.argument("run_id")
@click.option("--prd-url", metavar="URL", help="The PRD's URL.")
@_file_option
@format_option
def init(run_id: str, prd_url: str | None, file: str | None, fmt: str) -> int:
    """Start a run in a new state.json: phase BOOTSTRAP, in_progress.

    RUN_ID is YYYY-MM-DD-{feature-slug}; a bare slug gets today's date (UTC).
    """
    return _report(writer.init(_path(file), run_id, prd_url=prd_url), fmt)


@sdlc.command("show")
@_file_option
@format_option
def show(file: str | None, fmt: str) -> int:
    """Show the run: phase, issues (and which are ready), metrics. JSON: the file itself."""
    path = _path(file)
    state = writer.read(path)
    if fmt == "json":
        emit_json(state)
        return 0
    write(render(state, path))
    return 0


@sdlc.command("phase")
@click.argument("phase", metavar="PHASE|next")
@click.option("--status", metavar="STATUS", help="The new phase_status (default in_progress; COMPLETED: completed).")
@_file_option
@format_option
def phase(phase: str, status: str | None, file: str | None, fmt: str) -> int:
    """Move to the next phase (BOOTSTRAP → DESIGN → PLANNING → TRACKING → EXECUTING → COMPLETED).

    Ends the current phase's metrics and starts the new one's; phases are never skipped and
    never go back. The current phase with --status only sets the status.
    """
    return _report(writer.set_phase(_path(file), phase, status=status), fmt)


@sdlc.command("phase-status")
@click.argument("status", metavar="in_progress|awaiting_approval|awaiting_human|completed")
@click.option("--phase", "phase", metavar="PHASE", help="Refuse unless this is the current phase.")
@_file_option
@format_option
def phase_status(status: str, phase: str | None, file: str | None, fmt: str) -> int:
    """Set the current phase's phase_status."""
    return _report(writer.set_phase_status(_path(file), status, phase=phase), fmt)


@sdlc.group("issue")
def issue() -> None:
    """Add and update the run's issues."""


def _ids(values: tuple[str, ...]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


@issue.command("add")
@click.argument("key", metavar="ID")
@click.option("--repo", required=True, metavar="REPO", help="The repo (from the manifest).")
@click.option("--title", required=True, metavar="TEXT")
@click.option("--blocked-by", "blocked_by", multiple=True, metavar="ID[,ID…]", help="Blocking issues (repeatable).")
@click.option("--pr", metavar="ORG/REPO#N")
@_file_option
@format_option
def issue_add(
    key: str, repo: str, title: str, blocked_by: tuple[str, ...], pr: str | None, file: str | None, fmt: str
) -> int:
    """Add issue ID (a Linear id, TEAM-123): blocked while a blocker is not done, else ready."""
    done = writer.add_issue(_path(file), key, repo=repo, title=title, blocked_by=_ids(blocked_by), pr=pr)
    return _report(done, fmt)


@issue.command("set")
@click.argument("key", metavar="ID")
@click.option(
    "--status",
    metavar="STATUS",
    help="One step along blocked → ready → implementing → reviewing → "
    "awaiting_human → done (reviewing → implementing; implementing → failed).",
)
@click.option("--pr", metavar="ORG/REPO#N", help="The PR (sets pr and pr_number).")
@click.option("--no-pr", is_flag=True, help="Clear pr and pr_number.")
@click.option("--title", metavar="TEXT")
@click.option("--repo", metavar="REPO")
@click.option("--blocked-by", "blocked_by", multiple=True, metavar="ID[,ID…]", help="Replace the blockers.")
@click.option("--no-blockers", is_flag=True, help="Clear the blockers.")
@click.option("--review-iteration", is_flag=True, help="Count one more agent review cycle.")
@click.option("--human-iteration", is_flag=True, help="Count one more human review cycle.")
@_file_option
@format_option
def issue_set(
    key: str,
    status: str | None,
    pr: str | None,
    no_pr: bool,
    title: str | None,
    repo: str | None,
    blocked_by: tuple[str, ...],
    no_blockers: bool,
    review_iteration: bool,
    human_iteration: bool,
    file: str | None,
    fmt: str,
) -> int:
    """Update issue ID (write it before the action: `--status implementing`, then implement)."""
    if pr is not None and no_pr:
        raise UsageError("give --pr or --no-pr, not both")
    if blocked_by and no_blockers:
        raise UsageError("give --blocked-by or --no-blockers, not both")
    extra: dict[str, str | None] = {}
    if pr is not None or no_pr:
        extra["pr"] = None if no_pr else pr
    blockers = [] if no_blockers else (_ids(blocked_by) if blocked_by else None)
    done = writer.update_issue(
        _path(file),
        key,
        status=status,
        title=title,
        repo=repo,
        blocked_by=blockers,
        review_iteration=review_iteration,
        human_iteration=human_iteration,
        **extra,
    )
    return _report(done, fmt)


@sdlc.command("invocation")
@click.argument("agent")
@click.option("--model", metavar="MODEL", help="sonnet, opus, …")
@click.option("--repo", metavar="REPO")
@click.option("--issue", "issue_id", metavar="ID")
@click.option("--started-at", metavar="TS", help="ISO 8601 (default: now minus --duration-s).")
@click.option("--duration-s", type=click.FloatRange(min=0), metavar="SECONDS")
@click.option("--tokens-in", type=click.IntRange(min=0), metavar="N")
@click.option("--tokens-out", type=click.IntRange(min=0), metavar="N")
@_file_option
@format_option
def invocation(
    agent: str,
    model: str | None,
    repo: str | None,
    issue_id: str | None,
    started_at: str | None,
    duration_s: float | None,
    tokens_in: int | None,
    tokens_out: int | None,
    file: str | None,
    fmt: str,
) -> int:
    """Record an agent invocation in metrics (and count it in totals.agent_spawns)."""
    done = writer.record_invocation(
        _path(file),
        agent,
        model=model,
        repo=repo,
        issue=issue_id,
        started_at=started_at,
        duration_s=duration_s,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
    )
    return _report(done, fmt)


@sdlc.command("total")
@click.argument("name", metavar="NAME")
@click.argument("value", type=float)
@click.option("--add", is_flag=True, help="Add VALUE instead of setting it.")
@_file_option
@format_option
def total(name: str, value: float, add: bool, file: str | None, fmt: str) -> int:
    """Set a metrics total: duration_s, agent_spawns, review_iterations.agent,
    review_iterations.human, issues_created, prs_created, prs_merged.

    The writer keeps most of them itself (spawns, issues and PRs created, review cycles,
    merged PRs, the run's duration at COMPLETED); this sets one by hand.
    """
    return _report(writer.set_total(_path(file), name, value, add=add), fmt)


@sdlc.command("artifact")
@click.argument("name", type=click.Choice(["scoping_doc", "pert"]))
@click.argument("url", required=False)
@click.option("--clear", is_flag=True, help="Set it to null.")
@_file_option
@format_option
def artifact(name: str, url: str | None, clear: bool, file: str | None, fmt: str) -> int:
    """Set an artifact's URL (the Scoping Document, the PERT)."""
    if (url is None) == (not clear):
        raise UsageError("give a URL or --clear")
    return _report(writer.set_artifact(_path(file), name, None if clear else url), fmt)


@sdlc.command("bootstrap")
@click.argument("repo")
@click.option("--language", metavar="go|typescript|python")
@click.option("--docs", metavar="ORG/REPO#N", help="The PR (or URL) that generated its docs.")
@_file_option
@format_option
def bootstrap(repo: str, language: str | None, docs: str | None, file: str | None, fmt: str) -> int:
    """Record a repo's language and the PR that generated its docs."""
    return _report(writer.set_bootstrap(_path(file), repo, language=language, docs=docs), fmt)


# --- rendering ----------------------------------------------------------------------------


def _text(value: object) -> str:
    return "-" if value is None else sanitize(str(value))


def render(state: dict[str, Any], path: Path) -> str:
    issues = state.get("issues") if isinstance(state.get("issues"), dict) else {}
    where = f"phase {_text(state.get('phase'))} ({_text(state.get('phase_status'))})"
    lines = [
        f"run {_text(state.get('run_id'))}  ({sanitize(str(path))})",
        f"{where}, updated {_text(state.get('updated_at'))}",
    ]
    if state.get("prd_url"):
        lines.append(f"PRD {_text(state['prd_url'])}")
    lines += _issue_lines(issues) if issues else ["no issues"]
    metrics = state.get("metrics") if isinstance(state.get("metrics"), dict) else {}
    if metrics:
        lines.append(_metrics_line(metrics))
    return "\n".join(lines)


def _issue_lines(issues: dict[str, Any]) -> list[str]:
    """The issues' table, then the ready ones."""
    rows = []
    for key, entry in issues.items():
        item = entry if isinstance(entry, dict) else {}
        blockers = item.get("blocked_by") or []
        rows.append(
            [
                sanitize(key),
                _text(item.get("status")),
                _text(item.get("repo")),
                _text(item.get("pr")),
                sanitize(",".join(map(str, blockers))) if blockers else "-",
                _text(item.get("title")),
            ]
        )
    ready = [sanitize(k) for k, v in issues.items() if isinstance(v, dict) and v.get("status") == "ready"]
    return [
        "",
        table(rows, ["ISSUE", "STATUS", "REPO", "PR", "BLOCKED BY", "TITLE"]),
        f"ready: {', '.join(ready) if ready else '-'}",
    ]


def _metrics_line(metrics: dict[str, Any]) -> str:
    invocations = metrics.get("agent_invocations") or []
    totals = metrics.get("totals") or {}
    flat = [f"{sanitize(k)} {_text(v)}" for k, v in totals.items() if not isinstance(v, dict)]
    return f"metrics: started {_text(metrics.get('started_at'))}, {len(invocations)} agent invocation(s)" + (
        ", totals " + ", ".join(flat) if flat else ""
    )
