"""`git st` plan commands: a drop-in for the original st_plan.py. The click declarations.

Every mutation prints its message line(s) then ``update_plan: {"plan":[...]}`` (compact
JSON); rejected input prints ``error: <message>`` on stderr and exits 2 with nothing
written. The original's ``--flag`` forms all work; positional forms are extras
(``git st add "Fix it"``, ``git st set-status st-001 done``).

The bodies are :mod:`gitst.cli.plan_fast`'s, which also runs the plain command lines without
importing click at all; these declarations give the help texts, the errors and completion.
"""

from __future__ import annotations

import click

from gitst.cli import plan_fast
from gitst.cli.plan_fast import DOCTOR_FORMATS, FORMATS

# --- shared options ----------------------------------------------------------------------


def _file_option(func):
    return click.option(
        "--file",
        "file",
        default=None,
        metavar="PATH",
        help="Plan file (default .step/st-plan.jsonl, relative to the current directory).",
    )(func)


def _multi_option(func):
    return click.option(
        "--allow-multiple-in-progress",
        is_flag=True,
        help="Allow more than one in_progress item (recorded in the mutation envelope).",
    )(func)


def _accepted_multi_option(func):
    """Reads (and init) accept the flag like the original did, and ignore it."""
    return click.option("--allow-multiple-in-progress", is_flag=True, hidden=True)(func)


def _format_option(func):
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default="markdown",
        show_default=True,
        help="Output format.",
    )(func)


_CONTEXT = {"help_option_names": ["-h", "--help"]}


def _id_and_value(name: str, help_text: str):
    """``[ID] [VALUE]`` positionals plus ``--id``/``--NAME``, ``--file`` and the policy flag
    (the shape of set-status, set-deps, set-notes, add-comment)."""

    def decorate(func):
        for decorator in reversed(
            (
                click.argument("id_arg", metavar="[ID]", required=False),
                click.argument(f"{name}_arg", metavar=f"[{name.upper()}]", required=False),
                _file_option,
                _multi_option,
                click.option("--id", "item_id", default=None, help="Item id."),
                click.option(f"--{name}", name, default=None, help=help_text),
            )
        ):
            func = decorator(func)
        return func

    return decorate


# --- mutations ---------------------------------------------------------------------------


@click.command(context_settings=_CONTEXT)
@_file_option
@click.option("--replace", is_flag=True, help="Clear the plan (appends a `replace` with no items).")
@_accepted_multi_option
def init(**params):
    """Start a plan file; make git ignore its lock sidecar.

    Appends the `init` record to a new (or empty) plan. In a git work tree it also adds
    `/<plan>.lock` and `/<plan>.torn-*` to the .gitignore next to the plan (and untracks
    a tracked sidecar), and says so.
    """
    return plan_fast.init(**params)


@click.command(context_settings=_CONTEXT)
@click.argument("step_arg", metavar="[STEP]", required=False)
@_file_option
@_multi_option
@click.option("--step", default=None, help="What the step does (required; or give STEP).")
@click.option("--id", "item_id", default=None, help="Item id (default: the next st-NNN). An existing id is updated.")
@click.option(
    "--status", default=None, help="pending (default), in_progress, completed, blocked, deferred, canceled; aliases ok."
)
@click.option("--deps", default=None, help='Dependencies: "a,b:relates-to" (id or id:type; type defaults to blocks).')
@click.option("--notes", default=None, help="Notes, kept exactly as given.")
def add(**params):
    """Add an item (or update the item with --id: fields not given are kept)."""
    return plan_fast.add(**params)


@click.command("set-status", context_settings=_CONTEXT)
@_id_and_value("status", "New status (aliases such as done, doing, open accepted).")
def set_status(**params):
    """Change an item's status."""
    return plan_fast.set_status(**params)


@click.command("set-deps", context_settings=_CONTEXT)
@_id_and_value("deps", 'Dependencies: "a,b:relates-to"; "" clears them.')
def set_deps(**params):
    """Replace an item's dependencies."""
    return plan_fast.set_deps(**params)


@click.command("set-notes", context_settings=_CONTEXT)
@_id_and_value("notes", 'Notes, kept exactly as given ("" clears them).')
def set_notes(**params):
    """Replace an item's notes."""
    return plan_fast.set_notes(**params)


@click.command("add-comment", context_settings=_CONTEXT)
@_id_and_value("text", "The comment.")
@click.option("--author", default=None, help="Author (default ST_COMMENT_AUTHOR, ST_ACTOR, USER).")
def add_comment(**params):
    """Append a comment to an item."""
    return plan_fast.add_comment(**params)


@click.command(context_settings=_CONTEXT)
@click.argument("id_arg", metavar="[ID]", required=False)
@_file_option
@_multi_option
@click.option("--id", "item_id", default=None, help="Item id.")
def remove(**params):
    """Remove an item (refused while other items depend on it)."""
    return plan_fast.remove(**params)


@click.command("import-plan", context_settings=_CONTEXT)
@click.argument("input_arg", metavar="[INPUT]", required=False)
@_file_option
@_multi_option
@click.option(
    "--input", "input_path", default=None, help="JSON file: an array of items or {\"items\": [...]} ('-' = stdin)."
)
@click.option("--replace", is_flag=True, help="Replace the whole plan instead of upserting the items.")
def import_plan(**params):
    """Import items from a JSON file (export's output works)."""
    return plan_fast.import_plan(**params)


# --- reads -----------------------------------------------------------------------------------


def _view(name: str, doc: str):
    """A read command printing the plan (or part of it) in the chosen format."""

    @click.command(name, context_settings=_CONTEXT, help=doc)
    @_file_option
    @_format_option
    @_accepted_multi_option
    def command(**params):
        return getattr(plan_fast, name)(**params)

    return command


show = _view("show", 'Show the plan (json: {"items": [...]} with dep_state and waiting_on).')
ready = _view("ready", "List pending items whose dependencies are all completed.")
blocked = _view("blocked", "List blocked items and pending items waiting on dependencies.")


@click.command("emit-update-plan", context_settings=_CONTEXT)
@_file_option
@_accepted_multi_option
def emit_update_plan(**params):
    """Print the plan as bare update_plan JSON: {"plan": [{"step", "status"}, ...]}."""
    return plan_fast.emit_update_plan(**params)


@click.command(context_settings=_CONTEXT)
@_file_option
@click.option("--output", default=None, metavar="PATH", help="Write to this file (atomically) instead of stdout.")
@_accepted_multi_option
def export(**params):
    """Export the items as {"items": [...]} (the input shape of import-plan)."""
    return plan_fast.export(**params)


@click.command(context_settings=_CONTEXT)
@_file_option
@click.option(
    "--repair-seq",
    is_flag=True,
    help="Seal seq/replay problems: append a canonical checkpoint at the watermark (append only).",
)
@click.option("--format", "fmt", type=click.Choice(DOCTOR_FORMATS), default="text", show_default=True)
@_multi_option
def doctor(**params):
    """Check every rule of the plan file, each finding with its line. Exit 1 when broken."""
    return plan_fast.doctor(**params)
