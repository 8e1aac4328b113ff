"""The plan commands without click: what each does with its arguments, and a parser for them.

`git st show` or `git st add` in a fresh shell pays for every module it imports; click alone
costs more than reading and rendering a plan. So the plan commands' bodies live here, free of
click, and :func:`run` parses their plain forms itself (``--flag VALUE``, ``--flag=VALUE``,
flags, positionals, in any order). Anything else — ``--help``, an unknown or misspelt option, a
value that looks like an option, shell completion — returns None and the click command in
:mod:`gitst.cli.plan` (the same bodies, the help texts) handles it, errors included. The grammar
below is checked against those click declarations by ``tests/unit/cli/test_plan_fast.py``, and
the modules each command imports are pinned there too (docs/performance.md, "Start-up").
"""

from __future__ import annotations

import os
import sys

from gitst.cli.output import write as _write
from gitst.core.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitst.plan.engine import Outcome
    from gitst.plan.store import Tail, Target

__all__ = ["GRAMMAR", "parse", "run"]

FORMATS = ("markdown", "table", "json")
DOCTOR_FORMATS = ("text", "json", "github")

# An option: (its parameter name, "flag" | "value" | the values it accepts).
_FILE: dict[str, tuple[str, object]] = {
    "--file": ("file", "value"),
    "--allow-multiple-in-progress": ("allow_multiple_in_progress", "flag"),
}
_VIEW: dict[str, tuple[str, object]] = {**_FILE, "--format": ("fmt", FORMATS)}

# command: (positional parameters in order, options)
GRAMMAR: dict[str, tuple[tuple[str, ...], dict[str, tuple[str, object]]]] = {
    "init": ((), {**_FILE, "--replace": ("replace", "flag")}),
    "add": (
        ("step_arg",),
        {
            **_FILE,
            "--step": ("step", "value"),
            "--id": ("item_id", "value"),
            "--status": ("status", "value"),
            "--deps": ("deps", "value"),
            "--notes": ("notes", "value"),
        },
    ),
    "set-status": (("id_arg", "status_arg"), {**_FILE, "--id": ("item_id", "value"), "--status": ("status", "value")}),
    "set-deps": (("id_arg", "deps_arg"), {**_FILE, "--id": ("item_id", "value"), "--deps": ("deps", "value")}),
    "set-notes": (("id_arg", "notes_arg"), {**_FILE, "--id": ("item_id", "value"), "--notes": ("notes", "value")}),
    "add-comment": (
        ("id_arg", "text_arg"),
        {**_FILE, "--id": ("item_id", "value"), "--text": ("text", "value"), "--author": ("author", "value")},
    ),
    "remove": (("id_arg",), {**_FILE, "--id": ("item_id", "value")}),
    "import-plan": (
        ("input_arg",),
        {**_FILE, "--input": ("input_path", "value"), "--replace": ("replace", "flag")},
    ),
    "show": ((), _VIEW),
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
    if any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ):
        return None  # shell completion is click's
    command = args[0]
    positional_names, options = GRAMMAR[command]
    params: dict[str, object] = dict.fromkeys(positional_names)
    for dest, kind in options.values():
        params[dest] = False if kind == "flag" else None
    if command in ("show", "ready", "blocked"):
        params["fmt"] = "markdown"
    elif command == "doctor":
        params["fmt"] = "text"
    positionals: list[str] = []
    rest = args[1:]
    index = 0
    while index < len(rest):
        arg = rest[index]
        index += 1
        if not arg.startswith("-") or arg == "-":
            positionals.append(arg)
            continue
        name, equals, value = arg.partition("=")
        option = options.get(name)
        if option is None:
            return None  # --help, --, an unknown option or a short one: click decides
        dest, kind = option
        if kind == "flag":
            if equals:
                return None
            params[dest] = True
            continue
        if not equals:
            if index >= len(rest):
                return None  # a missing value: click's error
            value = rest[index]
            index += 1
            if value.startswith("-") and value != "-":
                return None  # click's rules for a value that looks like an option
        if isinstance(kind, tuple) and value not in kind:
            return None  # click names the choices
        params[dest] = value
    if len(positionals) > len(positional_names):
        return None
    params.update(zip(positional_names, positionals, strict=False))
    return command, params


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


def _update_plan_json(items: list[dict]) -> str:
    from gitst.core.jsonio import dumps
    from gitst.plan.model import to_update_plan

    return dumps(to_update_plan(items))


def _report(outcome: Outcome) -> int:
    for message in outcome.messages:
        _write(message)
    _write("update_plan: " + _update_plan_json(outcome.state.items()))
    return 0


def _target(file: str | None) -> Target:
    from gitst.plan.store import Target

    return Target.of(file)


def _read(file: str | None) -> Tail:
    from gitst.plan.store import read_tail

    target = _target(file)
    tail = read_tail(target.path)
    for diagnostic in tail.diagnostics(target.shown):
        _write(diagnostic.to_text(), err=True)
    return tail


def _pick(option, positional, flag: str, *, required: bool = True):
    """The --flag value or the positional one (both may be given only if they agree)."""
    if option is not None and positional is not None and option != positional:
        raise UsageError(f"{flag} {option!r} and the positional value {positional!r} disagree; give one")
    value = option if option is not None else positional
    if value is None and required:
        raise UsageError(f"missing {flag}")
    return value


# --- mutations -------------------------------------------------------------------------------


def init(*, file, replace, allow_multiple_in_progress) -> int:
    from gitst.plan import engine

    return _report(engine.init(_target(file), replace=replace))


def add(*, step_arg, file, allow_multiple_in_progress, step, item_id, status, deps, notes) -> int:
    from gitst.plan import engine

    return _report(
        engine.add(
            _target(file),
            step=_pick(step, step_arg, "--step"),
            item_id=item_id,
            status=status,
            deps=deps,
            notes=notes,
            allow_multiple_in_progress=allow_multiple_in_progress,
        )
    )


def _on_item(
    command: str,
    *,
    file,
    item_id,
    id_arg,
    allow_multiple_in_progress,
    value: tuple | None = None,
    required: bool = True,
    **extra,
) -> int:
    """A mutation of one item: ``engine.<command>(target, id[, value], ...)``; ``value`` is
    ``(--flag value, positional value, "--flag")``, picked after the id (its error first)."""
    from gitst.plan import engine

    args: list = [_target(file), _pick(item_id, id_arg, "--id")]
    if value is not None:
        picked = _pick(*value, required=required)
        args.append(picked if required else picked or "")
    return _report(getattr(engine, command)(*args, allow_multiple_in_progress=allow_multiple_in_progress, **extra))


def set_status(*, status, status_arg, **params) -> int:
    return _on_item("set_status", value=(status, status_arg, "--status"), **params)


def set_deps(*, deps, deps_arg, **params) -> int:
    return _on_item("set_deps", value=(deps, deps_arg, "--deps"), required=False, **params)  # "" clears them


def set_notes(*, notes, notes_arg, **params) -> int:
    return _on_item("set_notes", value=(notes, notes_arg, "--notes"), **params)


def add_comment(*, text, text_arg, author, **params) -> int:
    return _on_item("add_comment", value=(text, text_arg, "--text"), author=author, **params)


def remove(**params) -> int:
    return _on_item("remove", **params)


def import_plan(*, input_arg, file, allow_multiple_in_progress, input_path, replace) -> int:
    from gitst.plan import engine

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
            _target(file),
            items,
            source=source,
            replace=replace,
            allow_multiple_in_progress=allow_multiple_in_progress,
        )
    )


# --- reads -------------------------------------------------------------------------------------


def _view(select: str, grouped: bool, file, fmt) -> int:
    from gitst.plan import model, render

    tail = _read(file)
    _write(render.render(getattr(model, select)(tail.state.items()), fmt, grouped=grouped))
    return 0


def show(*, file, fmt, allow_multiple_in_progress) -> int:
    return _view("derive", True, file, fmt)


def ready(*, file, fmt, allow_multiple_in_progress) -> int:
    return _view("ready_items", False, file, fmt)


def blocked(*, file, fmt, allow_multiple_in_progress) -> int:
    return _view("blocked_items", False, file, fmt)


def emit_update_plan(*, file, allow_multiple_in_progress) -> int:
    tail = _read(file)
    _write(_update_plan_json(tail.state.items()))
    return 0


def export(*, file, output, allow_multiple_in_progress) -> int:
    from gitst.core.jsonio import atomic_write_bytes, dumps_pretty

    tail = _read(file)
    data = dumps_pretty({"items": tail.state.items()})
    if output:
        atomic_write_bytes(output, data)
        _write(f"wrote {output}")
    else:
        _write(data.decode("utf-8").rstrip("\n"))
    return 0


def doctor(*, file, repair_seq, fmt, allow_multiple_in_progress) -> int:
    from gitst.plan import engine

    target = _target(file)
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
            _write(message)
        if fmt == "github":
            from gitst.core.diagnostics import render_github

            if report.diagnostics:
                _write(render_github(report.diagnostics))
        else:
            for diagnostic in report.diagnostics:
                _write(diagnostic.to_text(), err=True)
        if report.exists:
            if report.ok:
                suffix = f", {warnings} warning(s)" if warnings else ""
                _write(
                    f"seq contract ok: {target.shown} ({report.records} records, watermark {report.watermark}, "
                    f"{report.checkpoints} checkpoints{suffix})"
                )
            else:
                _write(f"plan invalid: {target.shown}: {errors} error(s), {warnings} warning(s)")
    return 0 if report.ok else 1
