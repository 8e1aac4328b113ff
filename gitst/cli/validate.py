"""`git st validate`, `git st schema`, `git st aide`: parse options, call the core, render."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from gitst.aide.stream import Replay, replay
from gitst.cli.output import colour_report, emit_json, say
from gitst.core.errors import UsageError
from gitst.core.safepaths import read_bytes
from gitst.schemas import catalog as schemastore
from gitst.schemas.report import short
from gitst.validate import kinds as kind_registry
from gitst.validate.detect import KIND_NAMES, kind_for_path, sniff_kind
from gitst.validate.files import FileResult, validate_default, validate_paths, validate_staged

FORMATS = ("text", "json", "github")


def _summary(results: list[FileResult], strict: bool) -> dict[str, int]:
    checked = [r for r in results if r.skipped is None]
    return {
        "files": len(results),
        "checked": len(checked),
        "skipped": len(results) - len(checked),
        "failed": sum(1 for r in results if not r.ok(strict=strict)),
        "errors": sum(r.errors for r in results),
        "warnings": sum(r.warnings for r in results),
    }


def _status(result: FileResult, strict: bool) -> str:
    if result.skipped is not None:
        return "skip"
    if not result.ok(strict=strict):
        return "FAIL"
    return "warn" if result.warnings else "ok"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _render_text(results: list[FileResult], strict: bool, quiet: bool) -> None:
    width = max((len(r.kind or "-") for r in results), default=1)
    for result in results:
        if not quiet:
            say(f"{_status(result, strict):<4}  {result.kind or '-':<{width}}  {result.path}{_detail(result)}")
            sys.stdout.flush()
        for diagnostic in result.diagnostics:
            click.echo(
                colour_report(diagnostic.to_text()), err=True, color=True
            )  # to_text escapes, colour_report decided
    if not quiet:
        say(_summary_line(results, strict))


def _detail(result: FileResult) -> str:
    """Why a file was skipped, or how many errors and warnings it has."""
    if result.skipped:
        return f"  ({result.skipped})"
    if not result.diagnostics:
        return ""
    parts = []
    if result.errors:
        parts.append(_plural(result.errors, "error"))
    if result.warnings:
        parts.append(_plural(result.warnings, "warning"))
    return f"  ({', '.join(parts)})"


def _summary_line(results: list[FileResult], strict: bool) -> str:
    if not results:
        return "no files of a known kind to check"
    s = _summary(results, strict)
    return (
        f"{_plural(s['checked'], 'file')} checked"
        + (f", {s['skipped']} skipped" if s["skipped"] else "")
        + f": {s['checked'] - s['failed']} ok, {s['failed']} failed"
        + f" ({_plural(s['errors'], 'error')}, {_plural(s['warnings'], 'warning')})"
    )


@click.command("validate")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--kind", type=click.Choice(list(KIND_NAMES)), help="Check every file as this kind.")
@click.option("--staged", is_flag=True, help="Check the index blobs (what a commit records), not the working tree.")
@click.option("--against", metavar="REV", help="Compare with each file's version at REV (transition rules).")
@click.option("--strict", is_flag=True, help="Warnings fail too.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("-q", "--quiet", is_flag=True, help="Print only the problems (text format).")
def validate(
    paths: tuple[str, ...],
    kind: str | None,
    staged: bool,
    against: str | None,
    strict: bool,
    fmt: str,
    quiet: bool,
) -> int:
    """Validate state files of every known kind.

    PATHS are files or directories (recursed). Without PATHS: every tracked file that maps
    to a kind, plus the state dir. A file's kind comes from --kind, the `st-kind` git
    attribute (`-st-kind` turns checking off), the built-in path patterns, then its content.
    Problems print as `path:line[:col]: error[CODE]: message` on stderr. Exit 0 clean,
    1 problems found (warnings only with --strict), 2 bad usage.
    """
    cwd = os.getcwd()
    if staged:
        results = validate_staged(cwd, list(paths) or None, kind=kind, against=against)
        mode = "staged"
    elif paths:
        results = validate_paths(list(paths), cwd, kind=kind, against=against)
        mode = "paths"
    else:
        if kind:
            raise UsageError("--kind needs PATHS", fix="name the files: git st validate --kind KIND FILE...")
        results = validate_default(cwd, against=against)
        mode = "default"
    failed = any(not r.ok(strict=strict) for r in results)
    if fmt == "json":
        emit_json(
            {
                "ok": not failed,
                "strict": strict,
                "mode": mode,
                "against": against,
                "files": [r.to_dict(strict=strict) for r in results],
                "summary": _summary(results, strict),
            }
        )
    elif fmt == "github":
        for result in results:
            for diagnostic in result.diagnostics:
                say(diagnostic.to_github())
        s = _summary(results, strict)
        say(f"{_plural(s['checked'], 'file')} checked: {s['failed']} failed")
    else:
        _render_text(results, strict, quiet)
    return 1 if failed else 0


# ------------------------------------------------------------------------------ schema
def _schema_for(name: str) -> str:
    """A kind's schema name, or ``name`` itself when it names a schema."""
    if name in kind_registry.REGISTRY:
        return kind_registry.REGISTRY[name].schema
    if name in schemastore.names():
        return name
    raise UsageError(
        f"{name!r} is neither a kind nor a schema", fix="`git st schema list` shows the kinds and the schemas"
    )


@click.group("schema")
def schema() -> None:
    """List or print the JSON Schemas (for editors and other tools)."""


@schema.command("list")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def schema_list(fmt: str) -> int:
    """List the kinds (with their schema and path patterns) and every shipped schema."""
    kinds = [
        {"kind": kind.name, "schema": kind.schema, "patterns": kind_registry.patterns_of(kind.name)}
        for kind in kind_registry.REGISTRY.values()
    ]
    schemas: list[dict[str, Any]] = []
    for name in schemastore.names():
        loaded = schemastore.load(name)
        schemas.append({"name": name, "id": loaded.get("$id"), "title": loaded.get("title")})
    if fmt == "json":
        emit_json({"kinds": kinds, "schemas": schemas})
        return 0
    say("Kinds (git st validate --kind KIND; .gitattributes: PATH st-kind=KIND):")
    width = max(len(k["kind"]) for k in kinds)
    swidth = max(len(k["schema"]) for k in kinds)
    for k in kinds:
        say(f"  {k['kind']:<{width}}  {k['schema']:<{swidth}}  {', '.join(k['patterns'])}")
    say("\nSchemas (git st schema show NAME):")
    width = max((len(s["name"]) for s in schemas), default=1)
    for s in schemas:
        say(f"  {s['name']:<{width}}  {s['title'] or ''}")
    return 0


@schema.command("show")
@click.argument("name")
def schema_show(name: str) -> int:
    """Print the schema of a kind (or the schema NAME) as JSON."""
    click.echo(schemastore.schema_text(_schema_for(name)).decode("utf-8"), nl=False)
    return 0


# ------------------------------------------------------------------------------ aide
@click.group("aide")
def aide() -> None:
    """Work with aide entity-graph streams (seed 002)."""


@aide.command("replay")
@click.argument("file", type=click.Path())
@click.option(
    "--kind",
    type=click.Choice(["aide-wire", "aide-envelope"]),
    help="Stream form (default: from the file name or content; else aide-wire).",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def aide_replay(file: str, kind: str | None, fmt: str) -> int:
    """Replay an aide stream and print the state it builds.

    Entities as a tree, relationships, constraints, style and meta. Lines the reducer
    rejects are listed, not fatal (exit 0 whenever the file could be read).
    """
    try:  # a regular file only: a FIFO or /dev/zero is refused, never waited on (exit 2)
        found = read_bytes(file)
    except OSError as exc:
        raise UsageError(f"cannot read {file}: {exc.strerror or exc}") from None
    if found is None:
        raise UsageError(f"cannot read {file}: No such file or directory")
    data = found
    if kind is None:
        guessed = kind_for_path(file) or sniff_kind(data)
        kind = guessed if guessed in ("aide-wire", "aide-envelope") else "aide-wire"
    result = replay(data, file, kind)
    if fmt == "json":
        emit_json(result.to_dict())
    else:
        say(_render_replay(result))
    return 0


def _compact(value: object, limit: int = 100) -> str:
    return short(value, limit)


def _render_replay(result: Replay) -> str:
    state = result.state.to_dict()
    lines = [
        f"{result.kind}: {result.records} lines, {result.state.applied} applied, {len(result.rejected)} rejected",
        "",
        "entities:",
        "root",
        *_entity_tree(state["entities"]),
    ]
    if state["removed"]:
        lines.append("removed: " + ", ".join(f"{r['id']} (line {r['removed_line']})" for r in state["removed"]))
    lines += ["", "relationships:", *_relationship_lines(state["relationships"] or [])]
    lines += ["", "constraints:", *_constraint_lines(state["constraints"])]
    lines += _style_and_meta(state)
    signals = state["signals"]
    for esc in signals["escalations"]:
        lines.append(f"escalate {esc['tier']} ({esc['reason']}, line {esc['line']}): {esc['extract']}")
    for voice in signals["voice"]:
        lines.append(f"voice (line {voice['line']}): {voice['text']}")
    if result.diagnostics:
        lines += ["", "rejected and warnings:"]
        lines += ["  " + d.to_text().replace("\n", "\n  ") for d in result.diagnostics]
    return "\n".join(lines)


def _entity_tree(entities: list[dict[str, Any]]) -> list[str]:
    """The entities under ``root``, drawn as a tree (├──, └──), children in order."""
    lines = []
    stack = [(node, "", i == len(entities) - 1) for i, node in reversed(list(enumerate(entities)))]
    while stack:
        node, prefix, last = stack.pop()
        label = node["id"] + (f" ({node['display']})" if node["display"] else "")
        if node["props"]:
            label += " " + _compact(node["props"])
        lines.append(prefix + ("└── " if last else "├── ") + label)
        child_prefix = prefix + ("    " if last else "│   ")
        children = node["children"]
        stack.extend((children[i], child_prefix, i == len(children) - 1) for i in range(len(children) - 1, -1, -1))
    return lines


def _relationship_lines(relationships: list[dict[str, Any]]) -> list[str]:
    lines = [
        f"  {rel['from']} -[{rel['type']}]-> {rel['to']}  ({rel['cardinality']}, line {rel['line']}"
        + ("" if rel["active"] else ", inactive: an end was removed")
        + ")"
        for rel in relationships
    ]
    return lines or ["  (none)"]


def _constraint_lines(constraints: list[dict[str, Any]]) -> list[str]:
    lines = []
    for c in constraints:
        details = {
            k: v for k, v in c.items() if k not in ("id", "rule", "kind", "strict", "enforced", "line", "satisfied")
        }
        status = "not enforced" if not c["enforced"] else ("satisfied" if c["satisfied"] else "NOT satisfied")
        lines.append(
            f"  {c['id']}  {c['kind']} {c['rule']}{' strict' if c['strict'] else ''}  {_compact(details)}  "
            f"{status} (line {c['line']})"
        )
    return lines or ["  (none)"]


def _style_and_meta(state: dict[str, Any]) -> list[str]:
    """The style, the meta (without its annotations), then each annotation."""
    meta = dict(state["meta"])
    annotations = meta.pop("annotations")
    lines = [
        "",
        "style: " + (_compact(state["style"], 200) if state["style"] else "(none)"),
        "meta: " + (_compact(meta, 200) if meta else "(none)"),
    ]
    lines += [
        f"  note (line {note['line']}): {_compact({k: v for k, v in note.items() if k != 'line'}, 160)}"
        for note in annotations
    ]
    return lines
