"""Text views of a plan: markdown (grouped by state), table, JSON. Pure functions."""

from __future__ import annotations

from gitst.plan import model

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


def _details(row: dict, *, with_status: bool) -> str:
    parts = []
    if row["dep_state"] != model.NOT_APPLICABLE or not with_status:
        parts.append(f"dep_state: {row['dep_state']}")
    if row.get("deps"):
        parts.append(f"deps: {model.format_deps(row['deps'])}")
    if row.get("waiting_on"):
        parts.append(f"waiting: {', '.join(row['waiting_on'])}")
    if with_status and row["status"] not in ("pending", "completed"):
        parts.append(f"status: {row['status']}")
    return f" ({'; '.join(parts)})" if parts else ""


def markdown_plan(rows: list[dict]) -> str:
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
        lines.append(f"### {title}")
        for row in section:
            step = f"~~{row['step']}~~" if row["status"] == "canceled" else row["step"]
            lines.append(f"- {_MARKERS[row['status']]} {row['id']} {step}{_details(row, with_status=True)}")
    return "\n".join(lines)


def markdown_list(rows: list[dict]) -> str:
    """``ready`` / ``blocked``: one line per item."""
    if not rows:
        return "- (none)"
    return "\n".join(f"- {row['id']} {row['step']}{_details(row, with_status=False)}" for row in rows)


def table(rows: list[dict]) -> str:
    header = f"{'ID':<10} {'STATUS':<12} {'DEP_STATE':<18} {'WAITING_ON':<20} {'DEPS':<20} STEP"
    lines = [header, "-" * len(header)]
    for row in rows:
        waiting = ", ".join(row.get("waiting_on") or []) or "-"
        deps = model.format_deps(row.get("deps") or []) or "-"
        lines.append(
            f"{row['id']:<10} {row['status']:<12} {row['dep_state']:<18} {waiting:<20} {deps:<20} {row['step']}"
        )
    return "\n".join(lines)


def json_items(rows: list[dict]) -> str:
    from gitst.core.jsonio import dumps_pretty

    return dumps_pretty({"items": rows}).decode("utf-8").rstrip("\n")


def render(rows: list[dict], fmt: str, *, grouped: bool) -> str:
    if fmt == "json":
        return json_items(rows)
    if fmt == "table":
        return table(rows)
    return markdown_plan(rows) if grouped else markdown_list(rows)
