"""`git st` plan commands: a drop-in for the original st_plan.py. Parse, call the core, render.

Every mutation prints its message line(s) then ``update_plan: {"plan":[...]}`` (compact
JSON); rejected input prints ``error: <message>`` on stderr and exits 2 with nothing
written. The original's ``--flag`` forms all work; positional forms are extras
(``git st add "Fix it"``, ``git st set-status st-001 done``).
"""

from __future__ import annotations

import sys

import click

from gitst.cli.output import say
from gitst.cli.output import write as _write
from gitst.core.errors import UsageError
from gitst.plan import engine, model, render

FORMATS = ("markdown", "table", "json")


# --- output --------------------------------------------------------------------------------


def _update_plan_json(items: list[dict]) -> str:
    from gitst.core.jsonio import dumps

    return dumps(model.to_update_plan(items))


def _report(outcome: engine.Outcome) -> int:
    for message in outcome.messages:
        say(message)
    _write("update_plan: " + _update_plan_json(outcome.state.items()))  # JSON for the agent: exact
    return 0


def _read(target: engine.Target):
    tail = engine.read(target)
    for diagnostic in tail.diagnostics(target.shown):
        say(diagnostic.to_text(), err=True)
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
def init(file, replace, allow_multiple_in_progress):
    """Start a plan file; make git ignore its lock sidecar.

    Appends the `init` record to a new (or empty) plan. In a git work tree it also adds
    `/<plan>.lock` and `/<plan>.torn-*` to the .gitignore next to the plan (and untracks
    a tracked sidecar), and says so.
    """
    return _report(engine.init(engine.Target.of(file), replace=replace))


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
def add(step_arg, file, allow_multiple_in_progress, step, item_id, status, deps, notes):
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
        )
    )


@click.command("set-status", context_settings=_CONTEXT)
@_id_and_value("status", "New status (aliases such as done, doing, open accepted).")
def set_status(id_arg, status_arg, file, allow_multiple_in_progress, item_id, status):
    """Change an item's status."""
    return _report(
        engine.set_status(
            engine.Target.of(file),
            _pick(item_id, id_arg, "--id"),
            _pick(status, status_arg, "--status"),
            allow_multiple_in_progress=allow_multiple_in_progress,
        )
    )


@click.command("set-deps", context_settings=_CONTEXT)
@_id_and_value("deps", 'Dependencies: "a,b:relates-to"; "" clears them.')
def set_deps(id_arg, deps_arg, file, allow_multiple_in_progress, item_id, deps):
    """Replace an item's dependencies."""
    value = _pick(deps, deps_arg, "--deps", required=False)
    return _report(
        engine.set_deps(
            engine.Target.of(file),
            _pick(item_id, id_arg, "--id"),
            value or "",
            allow_multiple_in_progress=allow_multiple_in_progress,
        )
    )


@click.command("set-notes", context_settings=_CONTEXT)
@_id_and_value("notes", 'Notes, kept exactly as given ("" clears them).')
def set_notes(id_arg, notes_arg, file, allow_multiple_in_progress, item_id, notes):
    """Replace an item's notes."""
    return _report(
        engine.set_notes(
            engine.Target.of(file),
            _pick(item_id, id_arg, "--id"),
            _pick(notes, notes_arg, "--notes"),
            allow_multiple_in_progress=allow_multiple_in_progress,
        )
    )


@click.command("add-comment", context_settings=_CONTEXT)
@_id_and_value("text", "The comment.")
@click.option("--author", default=None, help="Author (default ST_COMMENT_AUTHOR, ST_ACTOR, USER).")
def add_comment(id_arg, text_arg, file, allow_multiple_in_progress, item_id, text, author):
    """Append a comment to an item."""
    return _report(
        engine.add_comment(
            engine.Target.of(file),
            _pick(item_id, id_arg, "--id"),
            _pick(text, text_arg, "--text"),
            author=author,
            allow_multiple_in_progress=allow_multiple_in_progress,
        )
    )


@click.command(context_settings=_CONTEXT)
@click.argument("id_arg", metavar="[ID]", required=False)
@_file_option
@_multi_option
@click.option("--id", "item_id", default=None, help="Item id.")
def remove(id_arg, file, allow_multiple_in_progress, item_id):
    """Remove an item (refused while other items depend on it)."""
    return _report(
        engine.remove(
            engine.Target.of(file),
            _pick(item_id, id_arg, "--id"),
            allow_multiple_in_progress=allow_multiple_in_progress,
        )
    )


@click.command("import-plan", context_settings=_CONTEXT)
@click.argument("input_arg", metavar="[INPUT]", required=False)
@_file_option
@_multi_option
@click.option(
    "--input", "input_path", default=None, help="JSON file: an array of items or {\"items\": [...]} ('-' = stdin)."
)
@click.option("--replace", is_flag=True, help="Replace the whole plan instead of upserting the items.")
def import_plan(input_arg, file, allow_multiple_in_progress, input_path, replace):
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
        )
    )


# --- reads -----------------------------------------------------------------------------------


def _view(name: str, select, *, grouped: bool, doc: str):
    """A read command printing ``select(items)`` in the chosen format."""

    @click.command(name, context_settings=_CONTEXT, help=doc)
    @_file_option
    @_format_option
    @_accepted_multi_option
    def command(file, fmt, allow_multiple_in_progress):
        tail = _read(engine.Target.of(file))
        shown = render.render(select(tail.state.items()), fmt, grouped=grouped)
        if fmt == "json":
            _write(shown)
        else:
            say(shown)  # steps and notes come from the file: control characters escaped
        return 0

    return command


show = _view(
    "show", model.derive, grouped=True, doc='Show the plan (json: {"items": [...]} with dep_state and waiting_on).'
)
ready = _view("ready", model.ready_items, grouped=False, doc="List pending items whose dependencies are all completed.")
blocked = _view(
    "blocked", model.blocked_items, grouped=False, doc="List blocked items and pending items waiting on dependencies."
)


@click.command("emit-update-plan", context_settings=_CONTEXT)
@_file_option
@_accepted_multi_option
def emit_update_plan(file, allow_multiple_in_progress):
    """Print the plan as bare update_plan JSON: {"plan": [{"step", "status"}, ...]}."""
    tail = _read(engine.Target.of(file))
    _write(_update_plan_json(tail.state.items()))
    return 0


@click.command(context_settings=_CONTEXT)
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


@click.command(context_settings=_CONTEXT)
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
        from gitst.core.jsonio import dumps_pretty

        _write(
            dumps_pretty(
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
            .decode("utf-8")
            .rstrip("\n")
        )
    else:
        for message in report.messages:
            say(message)
        if fmt == "github":
            from gitst.core.diagnostics import render_github

            if report.diagnostics:
                say(render_github(report.diagnostics))
        else:
            for diagnostic in report.diagnostics:
                say(diagnostic.to_text(), err=True)
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
