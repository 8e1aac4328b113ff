"""The plan commands without click: what each does with its arguments, and a parser for them.

`git st show` or `git st add` in a fresh shell pays for every module it imports; click alone
costs more than reading and rendering a plan. So the plan commands' bodies live here, free of
click, and :func:`run` parses their plain forms itself (``--flag VALUE``, ``--flag=VALUE``,
flags, positionals, in any order). Anything else — ``--help``, an unknown or misspelt option, a
prefix of one (``--stat``), a value that looks like an option, shell completion — returns None and the click command in
:mod:`gitst.cli.plan` (the same bodies, the help texts) handles it, errors included. The grammar
below is checked against those click declarations by ``tests/unit/cli/test_plan_fast.py``, and
the modules each command imports are pinned there too (docs/performance.md, "Start-up").
"""

from __future__ import annotations

import os
import sys

from gitst.cli.output import colour_report, emit_json, painter, sanitize, say, terminal_width
from gitst.cli.output import write as _write
from gitst.core.errors import UsageError
from gitst.core.jsonio import atomic_write_bytes, dumps, dumps_pretty
from gitst.core.terminal import escape_json_controls
from gitst.plan import model
from gitst.plan.files import read_plan
from gitst.plan.model import to_update_plan
from gitst.plan.store import Tail, Target, shown_path
from gitst.settings import bool_setting

# What only some plan commands need stays inside them (each marked ``# lazy:``): the engine
# (not on the read path: show, ready, blocked, export), the renderer (not on the write path),
# the diagnostics' GitHub form and the input reader. The import sets are pinned
# (tests/unit/cli/test_plan_fast.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gitst.plan.engine import Outcome

__all__ = ["GRAMMAR", "parse", "parse_line", "run"]

FORMATS = ("markdown", "table", "json", "mermaid", "dot")  # render.FORMATS (the grammar test compares)
DOCTOR_FORMATS = ("text", "json", "github")

# An option: (its parameter name, its kind): "flag" (True when given, else False), "on" /
# "off" (a --x/--no-x pair: True / False, None when neither is given), "value", "multi"
# (repeatable: a tuple of the values) or the tuple of values it accepts.
_FILE: dict[str, tuple[str, object]] = {
    "--file": ("file", "value"),
    "--allow-multiple-in-progress": ("allow_multiple_in_progress", "flag"),
}
_WRITE: dict[str, tuple[str, object]] = {
    **_FILE,
    "-q": ("quiet", "flag"),
    "--quiet": ("quiet", "flag"),
    "--update-plan": ("update_plan", "on"),
    "--no-update-plan": ("update_plan", "off"),
}
_VIEW: dict[str, tuple[str, object]] = {**_FILE, "--format": ("fmt", FORMATS), "--status": ("statuses", "multi")}
_ON_ITEM: dict[str, tuple[str, object]] = {**_WRITE, "--id": ("item_id", "value")}

# command: (positional parameters in order, options)
GRAMMAR: dict[str, tuple[tuple[str, ...], dict[str, tuple[str, object]]]] = {
    "init": ((), {**_WRITE, "--replace": ("replace", "flag")}),
    "add": (
        ("step_arg",),
        {
            **_WRITE,
            "--step": ("step", "value"),
            "--id": ("item_id", "value"),
            "--status": ("status", "value"),
            "--deps": ("deps", "value"),
            "--notes": ("notes", "value"),
        },
    ),
    "set-status": (("id_arg", "status_arg"), {**_ON_ITEM, "--status": ("status", "value")}),
    "set-deps": (("id_arg", "deps_arg"), {**_ON_ITEM, "--deps": ("deps", "value")}),
    "set-notes": (("id_arg", "notes_arg"), {**_ON_ITEM, "--notes": ("notes", "value")}),
    "add-comment": (
        ("id_arg", "text_arg"),
        {**_ON_ITEM, "--text": ("text", "value"), "--author": ("author", "value")},
    ),
    "remove": (("id_arg",), _ON_ITEM),
    "import-plan": (
        ("input_arg",),
        {**_WRITE, "--input": ("input_path", "value"), "--replace": ("replace", "flag")},
    ),
    "show": (("item_id",), _VIEW),
    "ready": ((), _VIEW),
    "blocked": ((), _VIEW),
    "emit-update-plan": ((), _FILE),
    "export": ((), {**_FILE, "--output": ("output", "value")}),
    "doctor": (
        (),
        {**_FILE, "--repair-seq": ("repair_seq", "flag"), "--format": ("fmt", DOCTOR_FORMATS)},
    ),
}


def parse(args: list[str]) -> tuple[str, dict[str, object]] | None:
    """``(command, parameters)`` for the plain forms of a plan command line, else None (click
    will parse it, with its help and its errors)."""
    if not args or args[0] not in GRAMMAR:
        return None
    command = args[0]
    positional_names, options = GRAMMAR[command]
    params = parse_line(args[1:], positional_names, options, _defaults(command, positional_names, options))
    return None if params is None else (command, params)


def parse_line(
    rest: list[str],
    positional_names: tuple[str, ...],
    options: dict[str, tuple[str, object]],
    params: dict[str, object],
) -> dict[str, object] | None:
    """A command's arguments ``rest`` read into ``params`` (its defaults) by the grammar above
    (``positional_names``, ``options``); None when click must parse them (help, errors, the
    rare forms, shell completion). :mod:`gitst.cli.merge_fast` reads the merge driver's with it."""
    if any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ):
        return None  # shell completion is click's
    positionals: list[str] = []
    index = 0
    while index < len(rest):
        arg = rest[index]
        index += 1
        if not arg.startswith("-") or arg == "-":
            positionals.append(arg)
            continue
        taken = _take_option(arg, rest, index, options, params)
        if taken is None:
            return None
        index = taken
    if len(positionals) > len(positional_names):
        return None
    params.update(zip(positional_names, positionals, strict=False))
    return params


def _defaults(
    command: str, positional_names: tuple[str, ...], options: dict[str, tuple[str, object]]
) -> dict[str, object]:
    """Every parameter of ``command`` at the value it has when its option is not given."""
    params: dict[str, object] = dict.fromkeys(positional_names)
    for dest, kind in options.values():
        params[dest] = False if kind == "flag" else () if kind == "multi" else None
    if command in ("show", "ready", "blocked"):
        params["fmt"] = "markdown"
    elif command == "doctor":
        params["fmt"] = "text"
    return params


def _take_option(
    arg: str, rest: list[str], index: int, options: dict[str, tuple[str, object]], params: dict[str, object]
) -> int | None:
    """Read option ``arg`` into ``params`` (its value from ``rest[index]`` unless written
    ``--flag=VALUE``): the index of the next argument, or None when click must decide."""
    name, equals, value = arg.partition("=")
    option = options.get(name)
    if option is None:
        return None  # --help, --, an unknown option or a short one: click decides
    dest, kind = option
    if kind in ("flag", "on", "off"):
        if equals:
            return None
        params[dest] = kind != "off"
        return index
    if not equals:
        if index >= len(rest):
            return None  # a missing value: click's error
        value = rest[index]
        index += 1
        if value.startswith("-") and value != "-":
            return None  # click's rules for a value that looks like an option
    if isinstance(kind, tuple) and value not in kind:
        return None  # click names the choices
    current = params[dest]
    params[dest] = (*current, value) if kind == "multi" and isinstance(current, tuple) else value
    return index


def run(args: list[str]) -> int | None:
    """Run a plan command without click; None when the command line is not a plain one."""
    parsed = parse(args)
    if parsed is None:
        return None
    command, params = parsed
    body = getattr(sys.modules[__name__], command.replace("-", "_"))
    result: int = body(**params)
    return result


# --- output --------------------------------------------------------------------------------


def _update_plan_json(items: list[dict[str, Any]]) -> str:
    """The ``{"plan": [...]}`` JSON of the update_plan line: exact, with DEL and C1 controls
    as ``\\u`` escapes (a step holding them would otherwise reach the terminal raw)."""
    return escape_json_controls(dumps(to_update_plan(items)))


def _report(outcome: Outcome, quiet: bool = False, update_plan: bool | None = None) -> int:
    """A write's report: its message lines, then ``update_plan: {...}`` (the original's
    default, for agents) unless turned off by the flag or ``ST_UPDATE_PLAN=0``; nothing
    with ``-q``."""
    if quiet:
        return 0
    for message in outcome.messages:
        say(message)
    if update_plan is None:
        update_plan = bool_setting("update_plan")
    if update_plan:
        _write("update_plan: " + _update_plan_json(outcome.state.items()))  # JSON for the agent: exact
    return 0


def _target(file: str | None) -> Target:
    return Target.of(file)


def _read(target: Target) -> Tail:
    tail = read_plan(target)  # a link or a FIFO a clone commits there is refused
    found = tail.diagnostics(target.shown)
    if found:
        for diagnostic in found:
            _write(colour_report(diagnostic.to_text()), err=True)  # to_text escapes control characters
    return tail


def _given(option: str | None, positional: str | None, flag: str) -> str | None:
    """The --flag value or the positional one (both may be given only if they agree)."""
    if option is not None and positional is not None and option != positional:
        raise UsageError(f"{flag} {option!r} and the positional value {positional!r} disagree; give one")
    return option if option is not None else positional


def _pick(option: str | None, positional: str | None, flag: str) -> str:
    """:func:`_given`, which must be there."""
    value = _given(option, positional, flag)
    if value is None:
        raise UsageError(f"missing {flag}")
    return value


# --- mutations -------------------------------------------------------------------------------


def init(
    *, file: str | None, replace: bool, allow_multiple_in_progress: bool, quiet: bool, update_plan: bool | None
) -> int:
    from gitst.plan import engine  # lazy: the engine is not on the read path (pinned import sets)

    return _report(engine.init(_target(file), replace=replace), quiet, update_plan)


def add(
    *,
    step_arg: str | None,
    file: str | None,
    allow_multiple_in_progress: bool,
    quiet: bool,
    update_plan: bool | None,
    step: str | None,
    item_id: str | None,
    status: str | None,
    deps: str | None,
    notes: str | None,
) -> int:
    from gitst.plan import engine  # lazy: the engine is not on the read path (pinned import sets)

    return _report(
        engine.add(
            _target(file),
            step=_pick(step, step_arg, "--step"),
            item_id=item_id,
            status=status,
            deps=deps,
            notes=notes,
            allow_multiple_in_progress=allow_multiple_in_progress,
        ),
        quiet,
        update_plan,
    )


def _on_item(
    command: str,
    *,
    file: str | None,
    item_id: str | None,
    id_arg: str | None,
    allow_multiple_in_progress: bool,
    quiet: bool,
    update_plan: bool | None,
    value: tuple[str | None, str | None, str] | None = None,
    required: bool = True,
    **extra: Any,
) -> int:
    """A mutation of one item: ``engine.<command>(target, id[, value], ...)``; ``value`` is
    ``(--flag value, positional value, "--flag")``, picked after the id (its error first)."""
    from gitst.plan import engine  # lazy: the engine is not on the read path (pinned import sets)

    args: list[Any] = [_target(file), _pick(item_id, id_arg, "--id")]
    if value is not None:
        args.append(_pick(*value) if required else _given(*value) or "")
    outcome = getattr(engine, command)(*args, allow_multiple_in_progress=allow_multiple_in_progress, **extra)
    return _report(outcome, quiet, update_plan)


def set_status(*, status: str | None, status_arg: str | None, **params: Any) -> int:
    return _on_item("set_status", value=(status, status_arg, "--status"), **params)


def set_deps(*, deps: str | None, deps_arg: str | None, **params: Any) -> int:
    return _on_item("set_deps", value=(deps, deps_arg, "--deps"), required=False, **params)  # "" clears them


def set_notes(*, notes: str | None, notes_arg: str | None, **params: Any) -> int:
    return _on_item("set_notes", value=(notes, notes_arg, "--notes"), **params)


def add_comment(*, text: str | None, text_arg: str | None, author: str | None, **params: Any) -> int:
    return _on_item("add_comment", value=(text, text_arg, "--text"), author=author, **params)


def remove(**params: Any) -> int:
    return _on_item("remove", **params)


def import_plan(
    *,
    input_arg: str | None,
    file: str | None,
    allow_multiple_in_progress: bool,
    quiet: bool,
    update_plan: bool | None,
    input_path: str | None,
    replace: bool,
) -> int:
    from gitst.cli._input import read_source  # lazy: import-plan's own (pinned import sets)
    from gitst.plan import engine  # lazy: the engine is not on the read path (pinned import sets)

    given = _pick(input_path, input_arg, "--input")
    source = shown_path(given)  # shown as the original shows it: ./snap.json is snap.json
    items = engine.parse_snapshot(read_source(given), source)
    return _report(
        engine.import_plan(
            _target(file),
            items,
            source=source,
            replace=replace,
            allow_multiple_in_progress=allow_multiple_in_progress,
        ),
        quiet,
        update_plan,
    )


# --- reads -------------------------------------------------------------------------------------


def _print_rows(rows: list[dict[str, Any]], fmt: str, *, grouped: bool) -> None:
    from gitst.plan import render  # lazy: the renderer is not on the write path (pinned import sets)

    if fmt == "json":
        emit_json(render.json_items(rows))
        return
    # Ids, steps and notes come from the file: control characters escaped before colour is added.
    rows = [_sanitized(row) for row in rows]
    _write(render.render(rows, fmt, grouped=grouped, paint=painter(), width=terminal_width()))


def _sanitized(value: Any) -> Any:
    """``value`` with every string in it made safe for a terminal (cli.output.sanitize)."""
    if isinstance(value, str):
        return sanitize(value)
    if isinstance(value, list):
        return [_sanitized(entry) for entry in value]
    if isinstance(value, dict):
        return {_sanitized(key): _sanitized(entry) for key, entry in value.items()}
    return value


def _view(select: str, grouped: bool, file: str | None, fmt: str, statuses: tuple[str, ...]) -> int:
    model.status_filter(statuses)  # a bad status is refused before the plan is read
    tail = _read(_target(file))
    _print_rows(model.view_rows(tail.state.items(), select, statuses), fmt, grouped=grouped)
    return 0


def show(
    *, item_id: str | None, file: str | None, fmt: str, statuses: tuple[str, ...], allow_multiple_in_progress: bool
) -> int:
    if item_id is None:
        return _view("derive", True, file, fmt, statuses)
    from gitst.plan import engine  # lazy: only `show ID` needs the engine (pinned import sets)

    model.status_filter(statuses)  # its errors, as for the whole plan
    target = _target(file)
    tail = _read(target)
    if fmt not in ("markdown", "json"):
        raise UsageError(f"show ID prints markdown or json, not {fmt}")
    view = engine.show_item(target, item_id.strip(), tail.state)
    if fmt == "json":
        emit_json({key: value for key, value in view.items() if key != "status_of"})
    else:
        from gitst.plan import render  # lazy: the renderer is not on the write path (pinned import sets)

        _write(render.item_view(_sanitized(view), paint=painter()))
    return 0


def ready(*, file: str | None, fmt: str, statuses: tuple[str, ...], allow_multiple_in_progress: bool) -> int:
    return _view("ready", False, file, fmt, statuses)


def blocked(*, file: str | None, fmt: str, statuses: tuple[str, ...], allow_multiple_in_progress: bool) -> int:
    return _view("blocked", False, file, fmt, statuses)


def emit_update_plan(*, file: str | None, allow_multiple_in_progress: bool) -> int:
    tail = _read(_target(file))
    _write(_update_plan_json(tail.state.items()))
    return 0


def export(*, file: str | None, output: str | None, allow_multiple_in_progress: bool) -> int:
    tail = _read(_target(file))
    data = dumps_pretty({"items": tail.state.items()})
    if output:
        atomic_write_bytes(output, data, make_parents=True)  # as the original: missing directories are made
        say(f"wrote {shown_path(output)}")
    else:
        _write(data.decode("utf-8").rstrip("\n"))
    return 0


def doctor(*, file: str | None, repair_seq: bool, fmt: str, allow_multiple_in_progress: bool) -> int:
    from gitst.plan import engine  # lazy: the engine is not on the read path (pinned import sets)

    target = _target(file)
    report = engine.doctor(target, repair_seq=repair_seq, allow_multiple_in_progress=allow_multiple_in_progress)
    errors = sum(1 for d in report.diagnostics if d.is_error)
    warnings = len(report.diagnostics) - errors
    if fmt == "json":
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
            from gitst.core.diagnostics import render_github  # lazy: doctor --format github's own (pinned import sets)

            if report.diagnostics:
                say(render_github(report.diagnostics))
        else:
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
