"""`git st` plan commands: a drop-in for the original st_plan.py. The click declarations.

Every mutation prints its message line(s) then ``update_plan: {"plan":[...]}`` (compact
JSON); ``--no-update-plan`` or ``ST_UPDATE_PLAN=0`` leaves that line out, ``-q`` prints
nothing. Rejected input prints ``error: <message>`` on stderr and exits 2 with nothing
written. The original's ``--flag`` forms all work, unambiguous prefixes of them too
(``--stat doing``: argparse's rule); positional forms are extras (``git st add "Fix it"``,
``git st set-status st-001 done``).

The bodies are :mod:`gitst.cli.plan_fast`'s, which also runs the plain command lines without
importing click at all; these declarations give the help texts, the errors, option prefixes
and completion.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from gitst.cli import plan_fast
from gitst.cli._types import F
from gitst.cli.plan_fast import DOCTOR_FORMATS, FORMATS
from gitst.core.errors import GitstError, UsageError
from gitst.plan.model import STATUS_ALIASES, STATUSES
from gitst.plan.store import Target, read_tail


class PlanCommand(click.Command):
    """A plan command that, like the original's argparse, takes an unambiguous prefix of a
    long option (``--stat`` for ``--status``, ``--allow`` for ``--allow-multiple-in-progress``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, expand_prefixes(self.get_params(ctx), args))


def expand_prefixes(params: list[click.Parameter], args: list[str]) -> list[str]:
    """``args`` with each unambiguous prefix of a long option written out in full."""
    names, takes_value = _long_options(params)
    out: list[str] = []
    value_next = False
    for index, arg in enumerate(args):
        if value_next:
            out.append(arg)
            value_next = False
            continue
        if arg == "--":
            out.extend(args[index:])
            break
        word = arg
        if arg.startswith("--") and len(arg) > 2:
            name, eq, value = arg.partition("=")
            name = _expand(name, names)
            word = name + eq + value
            value_next = name in takes_value and not eq
        out.append(word)
    return out


def _long_options(params: list[click.Parameter]) -> tuple[list[str], set[str]]:
    """The long option names of ``params``, and those of them that take a value."""
    names: list[str] = []
    takes_value: set[str] = set()
    for param in params:
        if not isinstance(param, click.Option):
            continue
        for name in (*param.opts, *param.secondary_opts):
            if name.startswith("--"):
                names.append(name)
                if not param.is_flag and not param.count:
                    takes_value.add(name)
    return names, takes_value


def _expand(name: str, names: list[str]) -> str:
    """The one option ``name`` is a prefix of (``name`` itself when it is one, or none matches)."""
    if name in names:
        return name
    matches = [full for full in names if full.startswith(name)]
    if len(matches) > 1:
        raise UsageError(f"ambiguous option {name}: could be {', '.join(matches)}")
    return matches[0] if matches else name


# --- completion of ids and statuses --------------------------------------------------------


def _complete_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """The plan's item ids (the plan of ``--file`` when given before): `set-status <TAB>`."""
    try:
        ids = read_tail(Target.of(ctx.params.get("file")).path).state.ids()
    except (GitstError, OSError, ValueError):
        return []  # no plan here, or one that cannot be read: nothing to offer
    return [item_id for item_id in ids if item_id.startswith(incomplete)]


def _complete_statuses(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """The statuses, then their aliases: `set-status st-001 <TAB>`."""
    return [name for name in dict.fromkeys([*STATUSES, *STATUS_ALIASES]) if name.startswith(incomplete)]


# --- shared options ----------------------------------------------------------------------


def _file_option(func: F) -> F:
    return click.option(
        "--file",
        "file",
        default=None,
        metavar="PATH",
        help="Plan file (default .step/st-plan.jsonl, relative to the current directory).",
    )(func)


def _multi_option(func: F) -> F:
    return click.option(
        "--allow-multiple-in-progress",
        is_flag=True,
        help="Allow more than one in_progress item (recorded in the mutation envelope).",
    )(func)


def _write_options(func: F) -> F:
    """``-q/--quiet`` and ``--update-plan/--no-update-plan`` of every plan write."""
    func = click.option(
        "--update-plan/--no-update-plan",
        "update_plan",
        default=None,
        help="Print the `update_plan: {...}` line after the message (default: yes; ST_UPDATE_PLAN=0 turns it off).",
    )(func)
    return click.option("-q", "--quiet", is_flag=True, help="Print nothing on success (errors still go to stderr).")(
        func
    )


def _accepted_multi_option(func: F) -> F:
    """Reads (and init) accept the flag like the original did, and ignore it."""
    return click.option("--allow-multiple-in-progress", is_flag=True, hidden=True)(func)


def _format_option(func: F) -> F:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default="markdown",
        show_default=True,
        help="Output format.",
    )(func)


_CONTEXT = {"help_option_names": ["-h", "--help"]}


def _command(name: str | None = None, **kwargs: Any) -> Callable[[Callable[..., Any]], click.Command]:
    """``click.command`` for a plan command: -h, and long-option prefixes (PlanCommand)."""
    return click.command(name, cls=PlanCommand, context_settings=_CONTEXT, **kwargs)


def _id_and_value(name: str, help_text: str) -> Callable[[F], F]:
    """``[ID] [VALUE]`` positionals plus ``--id``/``--NAME``, ``--file`` and the policy flag
    (the shape of set-status, set-deps, set-notes, add-comment)."""

    def decorate(func: F) -> F:
        decorators: tuple[Callable[[Any], Any], ...] = (
            click.argument("id_arg", metavar="[ID]", required=False, shell_complete=_complete_ids),
            click.argument(
                f"{name}_arg",
                metavar=f"[{name.upper()}]",
                required=False,
                shell_complete=_complete_statuses if name == "status" else None,
            ),
            _file_option,
            _multi_option,
            _write_options,
            click.option("--id", "item_id", default=None, help="Item id.", shell_complete=_complete_ids),
            click.option(
                f"--{name}",
                name,
                default=None,
                help=help_text,
                shell_complete=_complete_statuses if name == "status" else None,
            ),
        )
        for decorator in reversed(decorators):
            func = decorator(func)
        return func

    return decorate


# --- mutations ---------------------------------------------------------------------------


@_command()
@_file_option
@click.option("--replace", is_flag=True, help="Clear the plan (appends a `replace` with no items).")
@_accepted_multi_option
@_write_options
def init(**params: Any) -> int:
    """Start a plan file; make git ignore its lock sidecar.

    Appends the `init` record to a new (or empty) plan. In a git work tree it also adds
    `/<plan>.lock` and `/<plan>.torn-*` to the .gitignore next to the plan (and untracks
    a tracked sidecar), and says so.
    """
    return plan_fast.init(**params)


@_command()
@click.argument("step_arg", metavar="[STEP]", required=False)
@_file_option
@_multi_option
@_write_options
@click.option("--step", default=None, help="What the step does (required; or give STEP).")
@click.option(
    "--id", "item_id", default=None, help='Item id (default or "": the next st-NNN). An existing id is updated.'
)
@click.option(
    "--status",
    default=None,
    help="pending (default), in_progress, completed, blocked, deferred, canceled; aliases ok.",
    shell_complete=_complete_statuses,
)
@click.option("--deps", default=None, help='Dependencies: "a,b:relates-to" (id or id:type; type defaults to blocks).')
@click.option("--notes", default=None, help="Notes, kept exactly as given.")
def add(**params: Any) -> int:
    """Add an item (or update the item with --id: fields not given are kept)."""
    return plan_fast.add(**params)


@_command("set-status")
@_id_and_value("status", "New status (aliases such as done, doing, open accepted).")
def set_status(**params: Any) -> int:
    """Change an item's status."""
    return plan_fast.set_status(**params)


@_command("set-deps")
@_id_and_value("deps", 'Dependencies: "a,b:relates-to"; "" clears them.')
def set_deps(**params: Any) -> int:
    """Replace an item's dependencies."""
    return plan_fast.set_deps(**params)


@_command("set-notes")
@_id_and_value("notes", 'Notes, kept exactly as given ("" clears them).')
def set_notes(**params: Any) -> int:
    """Replace an item's notes."""
    return plan_fast.set_notes(**params)


@_command("add-comment")
@_id_and_value("text", "The comment.")
@click.option("--author", default=None, help='Author (default or "": ST_COMMENT_AUTHOR, ST_ACTOR, USER).')
def add_comment(**params: Any) -> int:
    """Append a comment to an item."""
    return plan_fast.add_comment(**params)


@_command()
@click.argument("id_arg", metavar="[ID]", required=False, shell_complete=_complete_ids)
@_file_option
@_multi_option
@_write_options
@click.option("--id", "item_id", default=None, help="Item id.", shell_complete=_complete_ids)
def remove(**params: Any) -> int:
    """Remove an item (refused while other items depend on it)."""
    return plan_fast.remove(**params)


@_command("import-plan")
@click.argument("input_arg", metavar="[INPUT]", required=False)
@_file_option
@_multi_option
@_write_options
@click.option(
    "--input", "input_path", default=None, help="JSON file: an array of items or {\"items\": [...]} ('-' = stdin)."
)
@click.option("--replace", is_flag=True, help="Replace the whole plan instead of upserting the items.")
def import_plan(**params: Any) -> int:
    """Import items from a JSON file (export's output works)."""
    return plan_fast.import_plan(**params)


# --- reads -----------------------------------------------------------------------------------


def _status_option(func: F) -> F:
    return click.option(
        "--status",
        "statuses",
        multiple=True,
        metavar="STATUS[,STATUS…]",
        help="Only items with these statuses (aliases ok; repeat or comma-separate).",
    )(func)


def _view(name: str, doc: str) -> click.Command:
    """``ready`` / ``blocked``: part of the plan in the chosen format."""

    @_command(name, help=doc)
    @_file_option
    @_format_option
    @_status_option
    @_accepted_multi_option
    def command(**params: Any) -> int:
        result: int = getattr(plan_fast, name)(**params)
        return result

    return command


@_command("show")
@click.argument("item_id", metavar="[ID]", required=False, shell_complete=_complete_ids)
@_file_option
@_format_option
@_status_option
@_accepted_multi_option
def show(**params: Any) -> int:
    """Show the plan, or one item with ID (json: {"items": [...]} with dep_state and waiting_on).

    With ID: the item, its deps and their statuses, the items that depend on it, its notes,
    comments and the history of the events that changed it (time, seq, actor). mermaid and
    dot draw the dependency graph (an arrow from each dependency to its dependent), coloured
    by status, with a dashed border while an item waits on its dependencies.
    """
    return plan_fast.show(**params)


ready = _view("ready", "List pending items whose dependencies are all completed.")
blocked = _view("blocked", "List blocked items and pending items waiting on dependencies.")


@_command("emit-update-plan")
@_file_option
@_accepted_multi_option
def emit_update_plan(**params: Any) -> int:
    """Print the plan as bare update_plan JSON: {"plan": [{"step", "status"}, ...]}."""
    return plan_fast.emit_update_plan(**params)


@_command()
@_file_option
@click.option("--output", default=None, metavar="PATH", help="Write to this file (atomically) instead of stdout.")
@_accepted_multi_option
def export(**params: Any) -> int:
    """Export the items as {"items": [...]} (the input shape of import-plan)."""
    return plan_fast.export(**params)


@_command()
@_file_option
@click.option(
    "--repair-seq",
    is_flag=True,
    help="Seal seq/replay problems: append a canonical checkpoint at the watermark (append only).",
)
@click.option("--format", "fmt", type=click.Choice(DOCTOR_FORMATS), default="text", show_default=True)
@_multi_option
def doctor(**params: Any) -> int:
    """Check every rule of the plan file, each finding with its line. Exit 1 when broken."""
    return plan_fast.doctor(**params)
