"""`git st` plan commands: a drop-in for the original st_plan.py. Parse, call the core, render.

Every mutation prints its message line(s) then ``update_plan: {"plan":[...]}`` (compact
JSON); ``--no-update-plan`` or ``ST_UPDATE_PLAN=0`` leaves that line out, ``-q`` prints
nothing. Rejected input prints ``error: <message>`` on stderr and exits 2 with nothing
written. The original's ``--flag`` forms all work, unambiguous prefixes of them too
(``--stat doing``: argparse's rule); positional forms are extras (``git st add "Fix it"``,
``git st set-status st-001 done``).
"""

from __future__ import annotations

import sys

import click

from gitst.cli.output import say
from gitst.cli.output import write as _write
from gitst.core.errors import UsageError
from gitst.plan import engine, model, render

FORMATS = render.FORMATS


class PlanCommand(click.Command):
    """A plan command that, like the original's argparse, takes an unambiguous prefix of a
    long option (``--stat`` for ``--status``, ``--allow`` for ``--allow-multiple-in-progress``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, expand_prefixes(self.get_params(ctx), args))


def expand_prefixes(params, args: list[str]) -> list[str]:
    """``args`` with each unambiguous prefix of a long option written out in full."""
    names: list[str] = []
    takes_value: set[str] = set()
    for param in params:
        if isinstance(param, click.Option):
            for name in (*param.opts, *param.secondary_opts):
                if name.startswith("--"):
                    names.append(name)
                    if not param.is_flag and not param.count:
                        takes_value.add(name)
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
            if name not in names:
                matches = [full for full in names if full.startswith(name)]
                if len(matches) > 1:
                    raise UsageError(f"ambiguous option {name}: could be {', '.join(matches)}")
                if matches:
                    name = matches[0]
                    word = name + eq + value
            value_next = name in takes_value and not eq
        out.append(word)
    return out


# --- output --------------------------------------------------------------------------------


def _update_plan_json(items: list[dict]) -> str:
    from gitst.core.jsonio import dumps

    return dumps(model.to_update_plan(items))


def _report(outcome: engine.Outcome, quiet: bool = False, update_plan: bool | None = None) -> int:
    """A write's report: its message lines, then ``update_plan: {...}`` (the original's
    default, for agents) unless turned off by the flag or ``ST_UPDATE_PLAN=0``; nothing
    with ``-q``."""
    if quiet:
        return 0
    for message in outcome.messages:
        say(message)
    if update_plan is None:
        from gitst.settings import bool_setting

        update_plan = bool_setting("update_plan")
    if update_plan:
        _write("update_plan: " + _update_plan_json(outcome.state.items()))  # JSON for the agent: exact
    return 0


def _read(target: engine.Target):
    tail = engine.read(target)
    found = tail.diagnostics(target.shown)
    if found:
        from gitst.cli.output import colour_report

        for diagnostic in found:
            _write(colour_report(diagnostic.to_text()), err=True)  # to_text escapes control characters
    return tail


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


def _write_options(func):
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


def _pick(option, positional, flag: str, *, required: bool = True):
    """The --flag value or the positional one (both may be given only if they agree)."""
    if option is not None and positional is not None and option != positional:
        raise UsageError(f"{flag} {option!r} and the positional value {positional!r} disagree; give one")
    value = option if option is not None else positional
    if value is None and required:
        raise UsageError(f"missing {flag}")
    return value


_CONTEXT = {"help_option_names": ["-h", "--help"]}


def _command(name: str | None = None, **kwargs):
    """``click.command`` for a plan command: -h, and long-option prefixes (PlanCommand)."""
    return click.command(name, cls=PlanCommand, context_settings=_CONTEXT, **kwargs)


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
                _write_options,
                click.option("--id", "item_id", default=None, help="Item id."),
                click.option(f"--{name}", name, default=None, help=help_text),
            )
        ):
            func = decorator(func)
        return func

    return decorate


# --- mutations ---------------------------------------------------------------------------


@_command()
@_file_option
@click.option("--replace", is_flag=True, help="Clear the plan (appends a `replace` with no items).")
@_accepted_multi_option
@_write_options
def init(file, replace, allow_multiple_in_progress, quiet, update_plan):
    """Start a plan file; make git ignore its lock sidecar.

    Appends the `init` record to a new (or empty) plan. In a git work tree it also adds
    `/<plan>.lock` and `/<plan>.torn-*` to the .gitignore next to the plan (and untracks
    a tracked sidecar), and says so.
    """
    return _report(engine.init(engine.Target.of(file), replace=replace), quiet, update_plan)


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
    "--status", default=None, help="pending (default), in_progress, completed, blocked, deferred, canceled; aliases ok."
)
@click.option("--deps", default=None, help='Dependencies: "a,b:relates-to" (id or id:type; type defaults to blocks).')
@click.option("--notes", default=None, help="Notes, kept exactly as given.")
def add(step_arg, file, allow_multiple_in_progress, quiet, update_plan, step, item_id, status, deps, notes):
    """Add an item (or update the item with --id: fields not given are kept)."""
    step = _pick(step, step_arg, "--step")
    return _report(
        engine.add(
            engine.Target.of(file),
            step=step,
            item_id=item_id,
            status=status,
            deps=deps,
            notes=notes,
            allow_multiple_in_progress=allow_multiple_in_progress,
        ),
        quiet,
        update_plan,
    )


@_command("set-status")
@_id_and_value("status", "New status (aliases such as done, doing, open accepted).")
def set_status(id_arg, status_arg, file, allow_multiple_in_progress, quiet, update_plan, item_id, status):
    """Change an item's status."""
    return _report(
        engine.set_status(
            engine.Target.of(file),
            _pick(item_id, id_arg, "--id"),
            _pick(status, status_arg, "--status"),
            allow_multiple_in_progress=allow_multiple_in_progress,
        ),
        quiet,
        update_plan,
    )


@_command("set-deps")
@_id_and_value("deps", 'Dependencies: "a,b:relates-to"; "" clears them.')
def set_deps(id_arg, deps_arg, file, allow_multiple_in_progress, quiet, update_plan, item_id, deps):
    """Replace an item's dependencies."""
    value = _pick(deps, deps_arg, "--deps", required=False)
    return _report(
        engine.set_deps(
            engine.Target.of(file),
            _pick(item_id, id_arg, "--id"),
            value or "",
            allow_multiple_in_progress=allow_multiple_in_progress,
        ),
        quiet,
        update_plan,
    )


@_command("set-notes")
@_id_and_value("notes", 'Notes, kept exactly as given ("" clears them).')
def set_notes(id_arg, notes_arg, file, allow_multiple_in_progress, quiet, update_plan, item_id, notes):
    """Replace an item's notes."""
    return _report(
        engine.set_notes(
            engine.Target.of(file),
            _pick(item_id, id_arg, "--id"),
            _pick(notes, notes_arg, "--notes"),
            allow_multiple_in_progress=allow_multiple_in_progress,
        ),
        quiet,
        update_plan,
    )


@_command("add-comment")
@_id_and_value("text", "The comment.")
@click.option("--author", default=None, help='Author (default or "": ST_COMMENT_AUTHOR, ST_ACTOR, USER).')
def add_comment(id_arg, text_arg, file, allow_multiple_in_progress, quiet, update_plan, item_id, text, author):
    """Append a comment to an item."""
    return _report(
        engine.add_comment(
            engine.Target.of(file),
            _pick(item_id, id_arg, "--id"),
            _pick(text, text_arg, "--text"),
            author=author,
            allow_multiple_in_progress=allow_multiple_in_progress,
        ),
        quiet,
        update_plan,
    )


@_command()
@click.argument("id_arg", metavar="[ID]", required=False)
@_file_option
@_multi_option
@_write_options
@click.option("--id", "item_id", default=None, help="Item id.")
def remove(id_arg, file, allow_multiple_in_progress, quiet, update_plan, item_id):
    """Remove an item (refused while other items depend on it)."""
    return _report(
        engine.remove(
            engine.Target.of(file),
            _pick(item_id, id_arg, "--id"),
            allow_multiple_in_progress=allow_multiple_in_progress,
        ),
        quiet,
        update_plan,
    )


@_command("import-plan")
@click.argument("input_arg", metavar="[INPUT]", required=False)
@_file_option
@_multi_option
@_write_options
@click.option(
    "--input", "input_path", default=None, help="JSON file: an array of items or {\"items\": [...]} ('-' = stdin)."
)
@click.option("--replace", is_flag=True, help="Replace the whole plan instead of upserting the items.")
def import_plan(input_arg, file, allow_multiple_in_progress, quiet, update_plan, input_path, replace):
    """Import items from a JSON file (export's output works)."""
    source = _pick(input_path, input_arg, "--input")
    if source == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            with open(source, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            raise UsageError(f"cannot read {source}: {exc.strerror}") from None
    items = engine.parse_snapshot(data, source)
    return _report(
        engine.import_plan(
            engine.Target.of(file),
            items,
            source=source,
            replace=replace,
            allow_multiple_in_progress=allow_multiple_in_progress,
        ),
        quiet,
        update_plan,
    )


# --- reads -----------------------------------------------------------------------------------


def _status_filter(values: tuple[str, ...]) -> set[str] | None:
    """``--status a,b --status c``: the canonical statuses to keep (aliases accepted)."""
    wanted: set[str] = set()
    for value in values:
        for part in value.split(","):
            if part.strip():
                wanted.add(model.normalize_status(part))
    return wanted or None


def _status_option(func):
    return click.option(
        "--status",
        "statuses",
        multiple=True,
        metavar="STATUS[,STATUS…]",
        help="Only items with these statuses (aliases ok; repeat or comma-separate).",
    )(func)


def _print_rows(rows: list[dict], fmt: str, *, grouped: bool) -> None:
    if fmt == "json":
        from gitst.cli.output import emit_json

        emit_json(render.json_items(rows))
        return
    from gitst.cli.output import painter, terminal_width

    # Ids, steps and notes come from the file: control characters escaped before colour is added.
    rows = [_sanitized(row) for row in rows]
    _write(render.render(rows, fmt, grouped=grouped, paint=painter(), width=terminal_width()))


def _sanitized(value):
    """``value`` with every string in it made safe for a terminal (cli.output.sanitize)."""
    from gitst.cli.output import sanitize

    if isinstance(value, str):
        return sanitize(value)
    if isinstance(value, list):
        return [_sanitized(entry) for entry in value]
    if isinstance(value, dict):
        return {_sanitized(key): _sanitized(entry) for key, entry in value.items()}
    return value


def _view(name: str, select, *, doc: str):
    """``ready`` / ``blocked``: ``select(items)`` in the chosen format."""

    @_command(name, help=doc)
    @_file_option
    @_format_option
    @_status_option
    @_accepted_multi_option
    def command(file, fmt, statuses, allow_multiple_in_progress):
        wanted = _status_filter(statuses)
        tail = _read(engine.Target.of(file))
        rows = select(tail.state.items())
        if wanted is not None:
            rows = [row for row in rows if row["status"] in wanted]
        _print_rows(rows, fmt, grouped=False)
        return 0

    return command


@_command("show")
@click.argument("item_id", metavar="[ID]", required=False)
@_file_option
@_format_option
@_status_option
@_accepted_multi_option
def show(item_id, file, fmt, statuses, allow_multiple_in_progress):
    """Show the plan, or one item with ID (json: {"items": [...]} with dep_state and waiting_on).

    With ID: the item, its deps and their statuses, the items that depend on it, its notes,
    comments and the history of the events that changed it (time, seq, actor). mermaid and
    dot draw the dependency graph (an arrow from each dependency to its dependent), coloured
    by status, with a dashed border while an item waits on its dependencies.
    """
    wanted = _status_filter(statuses)
    target = engine.Target.of(file)
    tail = _read(target)
    if item_id is not None:
        if fmt not in ("markdown", "json"):
            raise UsageError(f"show ID prints markdown or json, not {fmt}")
        view = engine.show_item(target, item_id.strip(), tail.state)
        if fmt == "json":
            from gitst.cli.output import emit_json

            emit_json({key: value for key, value in view.items() if key != "status_of"})
        else:
            from gitst.cli.output import painter

            _write(render.item_view(_sanitized(view), paint=painter()))
        return 0
    rows = model.derive(tail.state.items())
    if wanted is not None:
        rows = [row for row in rows if row["status"] in wanted]
    _print_rows(rows, fmt, grouped=True)
    return 0


ready = _view("ready", model.ready_items, doc="List pending items whose dependencies are all completed.")
blocked = _view("blocked", model.blocked_items, doc="List blocked items and pending items waiting on dependencies.")


@_command("emit-update-plan")
@_file_option
@_accepted_multi_option
def emit_update_plan(file, allow_multiple_in_progress):
    """Print the plan as bare update_plan JSON: {"plan": [{"step", "status"}, ...]}."""
    tail = _read(engine.Target.of(file))
    _write(_update_plan_json(tail.state.items()))
    return 0


@_command()
@_file_option
@click.option("--output", default=None, metavar="PATH", help="Write to this file (atomically) instead of stdout.")
@_accepted_multi_option
def export(file, output, allow_multiple_in_progress):
    """Export the items as {"items": [...]} (the input shape of import-plan)."""
    from gitst.core.jsonio import atomic_write_bytes, dumps_pretty

    tail = _read(engine.Target.of(file))
    data = dumps_pretty({"items": tail.state.items()})
    if output:
        atomic_write_bytes(output, data, make_parents=False)  # a missing directory is an error
        say(f"wrote {output}")
    else:
        _write(data.decode("utf-8").rstrip("\n"))
    return 0


@_command()
@_file_option
@click.option(
    "--repair-seq",
    is_flag=True,
    help="Seal seq/replay problems: append a canonical checkpoint at the watermark (append only).",
)
@click.option("--format", "fmt", type=click.Choice(("text", "json", "github")), default="text", show_default=True)
@_multi_option
def doctor(file, repair_seq, fmt, allow_multiple_in_progress):
    """Check every rule of the plan file, each finding with its line. Exit 1 when broken."""
    target = engine.Target.of(file)
    report = engine.doctor(target, repair_seq=repair_seq, allow_multiple_in_progress=allow_multiple_in_progress)
    errors = sum(1 for d in report.diagnostics if d.is_error)
    warnings = len(report.diagnostics) - errors
    if fmt == "json":
        from gitst.cli.output import emit_json

        emit_json(
            {
                "path": target.shown,
                "exists": report.exists,
                "ok": report.ok,
                "records": report.records,
                "watermark": report.watermark,
                "checkpoints": report.checkpoints,
                "actions": report.messages,
                "diagnostics": [d.to_dict() for d in report.diagnostics],
            }
        )
    else:
        for message in report.messages:
            say(message)
        if fmt == "github":
            from gitst.core.diagnostics import render_github

            if report.diagnostics:
                say(render_github(report.diagnostics))
        else:
            from gitst.cli.output import colour_report

            for diagnostic in report.diagnostics:
                _write(colour_report(diagnostic.to_text()), err=True)
        if report.exists:
            if report.ok:
                suffix = f", {warnings} warning(s)" if warnings else ""
                say(
                    f"seq contract ok: {target.shown} ({report.records} records, watermark {report.watermark}, "
                    f"{report.checkpoints} checkpoints{suffix})"
                )
            else:
                say(f"plan invalid: {target.shown}: {errors} error(s), {warnings} warning(s)")
    return 0 if report.ok else 1
