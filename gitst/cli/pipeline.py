"""`git st pipeline …`: read and write state/pipeline/<N>.json (logic in gitst.pipeline.state)."""

from __future__ import annotations

from typing import Any

import click

from gitst.cli.output import emit_json, say
from gitst.core.errors import ProblemsFound, UsageError
from gitst.core.jsonio import JSONDecodeError, dumps, loads
from gitst.pipeline import state as store

_FORMAT = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
_INTERNAL = click.option("--internal", is_flag=True, help="Add the internal fields verdict and branch.")


@click.group("pipeline")
def pipeline() -> None:
    """Read and write state/pipeline/<N>.json."""


@pipeline.command("show")
@click.argument("issue")
@_FORMAT
@_INTERNAL
def show(issue: str, fmt: str, internal: bool) -> int:
    """Show the normalized pipeline state of ISSUE.

    The seed's coercion table: current_phase defaults to "unknown", an empty active_agent
    is null, issue_type defaults to "feature", pr_number is parseInt'ed (NaN → null),
    last_updated falls back to lastActivity. Counts are numbers and booleans booleans.
    """
    loaded = store.load(issue)
    if loaded is None:
        raise ProblemsFound(
            f"no pipeline state for issue {store.parse_issue(issue)} "
            f"({store.display_path(store.pipeline_path(issue))} does not exist)"
        )
    view = store.public_view(loaded.issue, loaded.inner, loaded.wrapper, internal=internal)
    if fmt == "json":
        emit_json(view)
    else:
        say(render_view(view, store.display_path(loaded.path)))
    return 0


@pipeline.command("list")
@_FORMAT
@_INTERNAL
def list_(fmt: str, internal: bool) -> int:
    """List every issue's normalized pipeline state (a table, or a JSON array).

    Files that cannot be read are reported on stderr (exit 1); the others are listed.
    """
    views, problems = store.list_views(internal=internal)
    if fmt == "json":
        emit_json(views)
    else:
        say(render_table(views, internal), nl=bool(views))
    for problem in problems:
        say(problem.to_text(), err=True)
    return 1 if problems else 0


@pipeline.command("get")
@click.argument("issue")
@click.argument("field")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: the value as JSON (strings quoted).",
)
@click.option("--json", "as_json", is_flag=True, hidden=True, help="Old spelling of --format json.")
def get(issue: str, field: str, fmt: str, as_json: bool) -> int:
    """Print FIELD of ISSUE as stored (exit 1 when the file or field is missing).

    Strings print as they are; objects and arrays as JSON. lastActivity and heartbeat_pid
    are the wrapper's own fields; every other FIELD is inside the issue object.
    """
    store.validate_field_name(field)
    found, value = store.get_field(issue, field)
    if not found:
        say(
            f"error: issue {store.parse_issue(issue)} has no {field} "
            f"({store.display_path(store.pipeline_path(issue))})",
            err=True,
        )
        return 1
    if fmt == "json" or as_json:
        emit_json(value)
    elif isinstance(value, str):
        say(value)  # text from a file: control characters escaped (--format json gives it exactly)
    else:
        click.echo(dumps(value))
    return 0


@pipeline.command("set", context_settings={"ignore_unknown_options": True})
@click.argument("issue")
@click.argument("field")
@click.argument("value")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="VALUE is JSON (needed for sub_issues, steps, tokens; numbers and booleans are still stored as strings).",
)
@click.option(
    "--new-field",
    is_flag=True,
    help="FIELD is a field of your own, though it looks like a mistyped seed field (stored under extra).",
)
def set_(issue: str, field: str, value: str, as_json: bool, new_field: bool) -> int:
    """Store FIELD=VALUE in state/pipeline/<ISSUE>.json (the seed's string form).

    Locked and atomic; the nested wrapper and unknown fields are kept, last_updated and
    lastActivity are refreshed, a missing file is created. Known fields are checked:
    pr_number a positive integer, counts whole numbers, review_passed/qa_passed true or
    false, heartbeat_pid a pid (stored as a number, like the seed). A VALUE that starts
    with '-' is taken as it is (or put `--` before it). A FIELD that looks like a mistyped
    seed field (`status`, `pr_numbr`) is refused with the field it may mean; --new-field
    stores it anyway.
    """
    given: Any = value
    if as_json:
        try:
            given = loads(value)
        except JSONDecodeError as exc:
            raise UsageError(f"--json: VALUE is not JSON: {exc}") from None
    store.set_field(issue, field, given, from_json=as_json, new_field=new_field)
    return 0


@pipeline.command("unset")
@click.argument("issue")
@click.argument("field")
def unset(issue: str, field: str) -> int:
    """Remove FIELD from ISSUE's pipeline state (exit 1 when it was not there)."""
    if not store.unset_field(issue, field):
        say(f"error: issue {store.parse_issue(issue)} has no {field}", err=True)
        return 1
    return 0


# --- rendering --------------------------------------------------------------------------


def _text(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)):
        return str(value)
    return dumps(value)


def render_view(view: dict[str, Any], where: str) -> str:
    lines = [f"issue {view['issue']}  ({where})"]
    width = max(len(key) for key in view)
    for key, value in view.items():
        if key == "issue" or (key == "extra" and not value):
            continue
        lines.append(f"  {key:<{width}}  {_text(value)}")
    return "\n".join(lines)


def render_table(views: list[dict[str, Any]], internal: bool) -> str:
    columns = ["issue", "current_phase", "active_agent", "issue_type", "pr_number", "last_updated"]
    if internal:
        columns.append("verdict")
    headers = {
        "issue": "ISSUE",
        "current_phase": "PHASE",
        "active_agent": "AGENT",
        "issue_type": "TYPE",
        "pr_number": "PR",
        "last_updated": "LAST UPDATED",
        "verdict": "VERDICT",
    }
    if not views:
        return ""
    rows = [[headers[c] for c in columns]] + [[_text(v[c]) for c in columns] for v in views]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()  # a cell per column
        for row in rows
    )
