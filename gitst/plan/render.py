"""Text views of a plan: markdown (grouped by state), table, JSON, and the dependency graph
as Mermaid or Graphviz dot. Pure functions.

The text views take two optional arguments from the CLI: ``paint(text, role)`` colours a
status or dep_state word (the CLI passes a function that does nothing in a pipe), and
``width`` cuts a line that would not fit the terminal (None: never cut, as in a pipe). The
output in a pipe is byte for byte the original st's.
"""

from __future__ import annotations

from collections.abc import Callable

from gitst.plan import model

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Row = dict[str, Any]  # an item with its derived read fields (gitst.plan.model.derive)

__all__ = ["FORMATS", "dot", "item_view", "markdown_list", "markdown_plan", "mermaid", "render", "table"]

FORMATS = ("markdown", "table", "json", "mermaid", "dot")

Paint = Callable[[str, str], str]

_MARKERS = {
    "pending": "[ ]",
    "in_progress": "[~]",
    "completed": "[x]",
    "blocked": "[!]",
    "deferred": "[-]",
    "canceled": "[ ]",
}

_SECTIONS = (
    ("In Progress", lambda r: r["status"] == "in_progress"),
    ("Ready", lambda r: r["status"] == "pending" and r["dep_state"] == model.READY),
    ("Waiting on Dependencies", lambda r: r["status"] == "pending" and r["dep_state"] == model.WAITING),
    ("Blocked", lambda r: r["status"] == "blocked"),
    ("Deferred", lambda r: r["status"] == "deferred"),
    ("Canceled", lambda r: r["status"] == "canceled"),
    ("Completed", lambda r: r["status"] == "completed"),
)


def _plain(text: str, role: str) -> str:
    return text


def _details(row: Row, *, with_status: bool, paint: Paint = _plain) -> tuple[str, int]:
    """`` (dep_state: …; …)`` painted, and its length as printed (without colour codes)."""
    parts: list[tuple[str, str, str]] = []  # (label, value, role)
    if row["dep_state"] != model.NOT_APPLICABLE or not with_status:
        parts.append(("dep_state", row["dep_state"], row["dep_state"]))
    if row.get("deps"):
        parts.append(("deps", model.format_deps(row["deps"]), ""))
    if row.get("waiting_on"):
        parts.append(("waiting", ", ".join(row["waiting_on"]), ""))
    if with_status and row["status"] not in ("pending", "completed"):
        parts.append(("status", row["status"], row["status"]))
    if not parts:
        return "", 0
    plain = " (" + "; ".join(f"{label}: {value}" for label, value, _ in parts) + ")"
    painted = " (" + "; ".join(f"{label}: {paint(value, role)}" for label, value, role in parts) + ")"
    return painted, len(plain)


def _fit(text: str, room: int | None) -> str:
    """``text`` cut to ``room`` characters with an ellipsis (unchanged when it fits or room is None)."""
    if room is None or len(text) <= room:
        return text
    return text[: max(room - 1, 1)] + "…"


def markdown_plan(rows: list[Row], *, paint: Paint = _plain, width: int | None = None) -> str:
    """``show``: items grouped In Progress / Ready / Waiting / Blocked / Deferred / Canceled / Completed."""
    if not rows:
        return "- [ ] (empty plan)"
    lines: list[str] = []
    for title, keep in _SECTIONS:
        section = [row for row in rows if keep(row)]
        if not section:
            continue
        if lines:
            lines.append("")
        lines.append(paint(f"### {title}", "heading"))
        for row in section:
            status = row["status"]
            head = f"- {_MARKERS[status]} {row['id']} "
            details, details_len = _details(row, with_status=True, paint=paint)
            room = None if width is None else max(width - len(head) - details_len, 12)
            step = _fit(row["step"], None if room is None else room - (4 if status == "canceled" else 0))
            if status == "canceled":
                step = f"~~{step}~~"
            lines.append(f"- {paint(_MARKERS[status], status)} {paint(row['id'], status)} {step}{details}")
    return "\n".join(lines)


def markdown_list(rows: list[Row], *, paint: Paint = _plain, width: int | None = None) -> str:
    """``ready`` / ``blocked``: one line per item."""
    if not rows:
        return "- (none)"
    lines = []
    for row in rows:
        details, details_len = _details(row, with_status=False, paint=paint)
        room = None if width is None else max(width - len(row["id"]) - 3 - details_len, 12)
        lines.append(f"- {paint(row['id'], row['status'])} {_fit(row['step'], room)}{details}")
    return "\n".join(lines)


def table(rows: list[Row], *, paint: Paint = _plain, width: int | None = None) -> str:
    """The original's columns (ID 10, STATUS 12, DEP_STATE 18, WAITING_ON 20, DEPS 20, then
    STEP); a column whose longest cell is wider grows to fit it, so the columns stay aligned
    (the original's shift right after such a cell). When every cell fits, the bytes are the
    original's."""
    cells = [
        (row, ", ".join(row.get("waiting_on") or []) or "-", model.format_deps(row.get("deps") or []) or "-")
        for row in rows
    ]
    wide_id = max([10, *(len(row["id"]) for row, _w, _d in cells)])
    wide_waiting = max([20, *(len(waiting) for _r, waiting, _d in cells)])
    wide_deps = max([20, *(len(deps) for _r, _w, deps in cells)])
    header = (
        f"{'ID':<{wide_id}} {'STATUS':<12} {'DEP_STATE':<18} {'WAITING_ON':<{wide_waiting}} {'DEPS':<{wide_deps}} STEP"
    )
    lines = [header, "-" * len(header)]
    prefix = len(header) - len("STEP")
    room = None if width is None else max(width - prefix, 12)
    for row, waiting, deps in cells:
        status = paint(f"{row['status']:<12}", row["status"])
        dep_state = paint(f"{row['dep_state']:<18}", row["dep_state"])
        lines.append(
            f"{row['id']:<{wide_id}} {status} {dep_state} {waiting:<{wide_waiting}} {deps:<{wide_deps}} "
            f"{_fit(row['step'], room)}"
        )
    return "\n".join(lines)


def json_items(rows: list[Row]) -> dict[str, list[Row]]:
    return {"items": rows}


# --- the dependency graph -----------------------------------------------------------------

# (fill, stroke, text) per status; dep_state shows as the border: dashed while waiting.
_GRAPH_COLOURS = {
    "pending": ("#ffffff", "#57606a", "#1f2328"),
    "in_progress": ("#fff8c5", "#9a6700", "#1f2328"),
    "completed": ("#dafbe1", "#1a7f37", "#1f2328"),
    "blocked": ("#ffebe9", "#cf222e", "#1f2328"),
    "deferred": ("#f6f8fa", "#8c959f", "#57606a"),
    "canceled": ("#f6f8fa", "#8c959f", "#8c959f"),
}


def _graph_label(row: Row, limit: int = 48) -> str:
    step = row["step"] if len(row["step"]) <= limit else row["step"][: limit - 1] + "…"
    return f"{row['id']}: {step}"


def _graph_edges(rows: list[Row]) -> list[tuple[str, str, str]]:
    """(dependency, dependent, type) for every edge whose ends are both in ``rows``."""
    present = {row["id"] for row in rows}
    return [
        (edge["id"], row["id"], edge.get("type", model.DEFAULT_DEP_TYPE))
        for row in rows
        for edge in row.get("deps") or ()
        if edge["id"] in present
    ]


def mermaid(rows: list[Row]) -> str:
    """A Mermaid flowchart (GitHub and GitLab render it in markdown): an arrow from each
    dependency to its dependent; fill by status, a dashed border while waiting on deps."""
    ids = {row["id"]: f"n{index}" for index, row in enumerate(rows)}
    lines = ["flowchart TD"]
    for row in rows:
        label = _graph_label(row).replace('"', "#quot;")
        lines.append(f'  {ids[row["id"]]}["{label}"]:::{row["status"]}')
    for source, target, kind in _graph_edges(rows):
        arrow = "-->" if kind == model.DEFAULT_DEP_TYPE else f"-. {kind} .->"
        lines.append(f"  {ids[source]} {arrow} {ids[target]}")
    for status, (fill, stroke, text) in _GRAPH_COLOURS.items():
        lines.append(f"  classDef {status} fill:{fill},stroke:{stroke},color:{text}")
    waiting = [ids[row["id"]] for row in rows if row["dep_state"] == model.WAITING]
    if waiting:
        lines.append("  classDef waiting stroke-dasharray:5 3")
        lines.append(f"  class {','.join(waiting)} waiting")
    return "\n".join(lines)


def _dot_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def dot(rows: list[Row]) -> str:
    """A Graphviz digraph (``dot -Tsvg``): the same graph and colours as :func:`mermaid`."""
    lines = [
        "digraph plan {",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica"];',
    ]
    for row in rows:
        fill, stroke, text = _GRAPH_COLOURS[row["status"]]
        style = '"rounded,filled,dashed"' if row["dep_state"] == model.WAITING else '"rounded,filled"'
        tooltip = f"{row['status']}; {row['dep_state']}"
        lines.append(
            f"  {_dot_string(row['id'])} [label={_dot_string(_graph_label(row))}, fillcolor={_dot_string(fill)}, "
            f"color={_dot_string(stroke)}, fontcolor={_dot_string(text)}, style={style}, "
            f"tooltip={_dot_string(tooltip)}];"
        )
    for source, target, kind in _graph_edges(rows):
        extra = "" if kind == model.DEFAULT_DEP_TYPE else f" [style=dashed, label={_dot_string(kind)}]"
        lines.append(f"  {_dot_string(source)} -> {_dot_string(target)}{extra};")
    lines.append("}")
    return "\n".join(lines)


# --- one item -----------------------------------------------------------------------------


def item_view(view: dict[str, Any], *, paint: Paint = _plain) -> str:
    """``show ID``: the item, what it depends on and what depends on it, its history."""
    row = view["item"]
    fields = _item_fields(row, view["status_of"], view["dependents"], paint)
    width = max(len(name) for name, _ in fields)
    lines = [f"{paint(row['id'], 'id')}  {row['step']}"]
    lines += [f"{name + ':':<{width + 1}} {value}" for name, value in fields]
    lines.append("notes:" + ("" if row.get("notes") else " -"))
    if row.get("notes"):
        lines += [f"  {line}" for line in row["notes"].splitlines()]
    lines.append("comments:" + ("" if row.get("comments") else " -"))
    for comment in row.get("comments") or ():
        lines.append(f"  {comment['ts']}  {comment['author']}: {comment['text']}")
    lines.append("history:" + ("" if view["history"] else " -"))
    for event in view["history"]:
        who = event.get("actor") or "?"
        lines.append(f"  {event.get('ts') or '?'}  seq {event['seq']}  {who}  {event['what']}")
    return "\n".join(lines)


def _item_fields(row: Row, status_of: dict[str, str], dependents: list[Row], paint: Paint) -> list[tuple[str, str]]:
    """(name, value) of the one-line fields of ``show ID``: states, deps, dependents."""
    fields = [
        ("status", paint(row["status"], row["status"])),
        ("dep_state", paint(row["dep_state"], row["dep_state"])),
    ]
    if row.get("waiting_on"):
        fields.append(("waiting on", ", ".join(row["waiting_on"])))
    deps = [
        _edge_text(
            edge["id"], edge["type"], paint(status_of.get(edge["id"], "missing"), status_of.get(edge["id"], "blocked"))
        )
        for edge in row.get("deps") or ()
    ]
    fields.append(("deps", ", ".join(deps) or "-"))
    dependents_text = [
        _edge_text(entry["id"], entry["type"], paint(entry["status"], entry["status"])) for entry in dependents
    ]
    fields.append(("dependents", ", ".join(dependents_text) or "-"))
    return fields


def _edge_text(item_id: str, dep_type: str, status: str) -> str:
    """``id[:type] (status)``, the type shown when it is not the default."""
    return f"{item_id}" + (f":{dep_type}" if dep_type != model.DEFAULT_DEP_TYPE else "") + f" ({status})"


def render(rows: list[Row], fmt: str, *, grouped: bool, paint: Paint = _plain, width: int | None = None) -> str:
    """``rows`` as text in format ``fmt`` (json is the caller's: one JSON style for all)."""
    if fmt == "table":
        return table(rows, paint=paint, width=width)
    if fmt == "mermaid":
        return mermaid(rows)
    if fmt == "dot":
        return dot(rows)
    if grouped:
        return markdown_plan(rows, paint=paint, width=width)
    return markdown_list(rows, paint=paint, width=width)
