"""`git st pr …`: which pull request closes an issue (the cascade lives in gitst.pipeline.cascade)."""

from __future__ import annotations

import sys

import click

from gitst.cli.output import emit_json, say
from gitst.core.errors import ProblemsFound
from gitst.pipeline import cascade
from gitst.pipeline.state import display_path, get_field, set_field


@click.group("pr")
def pr() -> None:
    """Resolve which PR closes an issue."""


@pr.command("resolve")
@click.argument("issue")
@click.option("--pr", "pr_arg", metavar="N", help="The answer, if you already know it (step 1).")
@click.option(
    "--branch",
    metavar="BRANCH",
    help="The issue's branch (default: the worktree registry's, else the st.worktree.branch template).",
)
@click.option("--offline", is_flag=True, help="Do not call gh; only local evidence.")
@click.option(
    "--repo", "gh_repo", metavar="OWNER/REPO", help="Ask gh about this repository instead of the current one."
)
@click.option("--explain", is_flag=True, help="Print every step and why it answered or not (stderr).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--write", is_flag=True, help="Store the answer as pr_number in state/pipeline/<ISSUE>.json.")
def resolve(
    issue: str,
    pr_arg: str | None,
    branch: str | None,
    offline: bool,
    gh_repo: str | None,
    explain: bool,
    fmt: str,
    write: bool,
) -> int:
    """Print the number of the PR that closes ISSUE.

    Steps, first answer wins: --pr, ST_PR_NUMBER (unless ST_PR_ISSUE names another
    issue), the pipeline state's pr_number, open PRs through gh (closing references,
    closing keywords in the body, the issue's branch as head), fetched refs/pull/*/head
    at the tip of the issue's branch. Several candidates at one step is an error that
    lists them. Exit 0 with the number alone on stdout, 1 when none or ambiguous.
    """
    resolution = cascade.resolve(issue, pr=pr_arg, branch=branch, offline=offline, gh_repo=gh_repo)
    if explain:
        say(render_explain(resolution), err=True)
    number = resolution.pr_number
    if number is not None and write:
        _write(resolution, explain)
    if fmt == "json":
        emit_json(resolution.to_dict())
    elif number is not None:
        click.echo(str(number))
    if number is None:
        sys.stdout.flush()
        message, fix = cascade.failure_message(resolution, explained=explain)
        raise ProblemsFound(message, fix=fix)
    return 0


def _write(resolution: cascade.Resolution, explain: bool) -> None:
    number = str(resolution.pr_number)
    found, stored = get_field(resolution.issue, "pr_number")
    if found and stored == number:
        if explain:
            say(f"--write: pr_number is already {number!r}", err=True)
        return
    written = set_field(resolution.issue, "pr_number", number)
    if explain:
        say(f"--write: pr_number={number!r} stored in {display_path(written.path)}", err=True)


_MARKS = {
    "answer": "ANSWER",
    "ambiguous": "AMBIGUOUS",
    "no-answer": "no answer",
    "skipped": "skipped",
    "not-run": "not run",
}


def render_explain(resolution: cascade.Resolution) -> str:
    width = max(len(label) for _, label in cascade.STEPS)
    lines = [f"resolving the PR that closes issue {resolution.issue}:"]
    for index, step in enumerate(resolution.steps, 1):
        mark = _MARKS[step.status]
        if step.status == "answer":
            mark += f" #{step.candidates[0].number}"
        lines.append(f"  {index}. {step.label:<{width}}  {mark:<10}  {step.reason}")
        if step.status == "ambiguous":
            lines += [f"       {'':<{width}}  {'':<10}    {c.describe()}" for c in step.candidates]
    return "\n".join(lines)
