"""Kind ``sdlc-state``: an Agentic SDLC run's ``state.json`` (seed 003).

Shapes, enums, the ``run_id`` pattern and timestamp patterns are the schema
``sdlc-state``'s. Rules across fields, checked here:

- ``SDLC_RUN_ID``            the run_id's date is not a real date;
- ``TIMESTAMP``              a timestamp is not a real date and time;
- ``SDLC_BLOCKED_BY``        a ``blocked_by`` id names no issue of the map, or the issue itself;
- ``SDLC_BLOCKED_CYCLE``     issues block each other in a cycle;
- ``SDLC_BLOCKER_NOT_DONE``  an issue is past ``blocked`` although a blocker is not ``done``
                             (rule 5: blocked -> ready only when all blockers are done);
- ``SDLC_SHOULD_BE_READY``   (warning) an issue is ``blocked`` with every blocker done;
- ``SDLC_PR_MISMATCH``       ``pr`` (org/repo#N) and ``pr_number`` disagree, or one is null;
- ``SDLC_PHASE_ORDER``       phase metrics start out of the seed's phase order, or before
                             the previous phase ended, or before ``metrics.started_at``;
- ``SDLC_PHASE_TIMES``       a phase ends before it starts, or ``duration_s`` disagrees with
                             its start and end (more than 1 s), or is set while it has not ended;
- ``SDLC_PHASE_FUTURE``      metrics for a phase after the current ``phase``;
- ``SDLC_PHASE_OPEN``        a phase before the current one has no ``ended_at``;
- ``SDLC_UNKNOWN_ISSUE``     (warning) an agent invocation names an issue not in the map;
- ``SDLC_UPDATED_AT_STALE``  (warning) a timestamp in the file is later than ``updated_at``.

With an older version (``--against REV``; the pre-commit hook uses HEAD's):

- ``SDLC_PHASE_BACKWARDS``     ``phase`` moved back along BOOTSTRAP -> ... -> COMPLETED;
- ``SDLC_STATUS_TRANSITION``   an issue's status moved where the seed's graph (plus
                               implementing -> failed) cannot lead, in any number of steps;
- ``SDLC_UPDATED_AT_BACKWARDS`` ``updated_at`` went back;
- ``SDLC_UPDATED_AT_NOT_REFRESHED`` the content changed but ``updated_at`` did not (rule 2);
- ``SDLC_ISSUE_DROPPED``       (warning) an issue of the older version is gone;
- ``SDLC_RUN_CHANGED``         (warning) ``run_id`` differs: another run, transitions not checked;
- ``SDLC_AGAINST_UNREADABLE``  (warning) the older version is not a JSON object.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any, NamedTuple

from gitst.core import timestamps
from gitst.core.diagnostics import WARNING, Diagnostic
from gitst.core.jsonio import JSONDecodeError, loads
from gitst.schemas.report import DocumentReport, Parsed, load_document, pointer, short

SCHEMA = "sdlc-state"

PHASES = ("BOOTSTRAP", "DESIGN", "PLANNING", "TRACKING", "EXECUTING", "COMPLETED")

# Seed 003's issue status graph, plus implementing -> failed (issue 3).
STATUS_EDGES = {
    "blocked": ("ready",),
    "ready": ("implementing",),
    "implementing": ("reviewing", "failed"),
    "reviewing": ("awaiting_human", "implementing"),
    "awaiting_human": ("done",),
    "done": (),
    "failed": (),
}

_PR = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+#([0-9]+)")
_RUN_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})-")
DURATION_TOLERANCE_S = 1.0

Parts = tuple[str | int, ...]  # where a value sits: JSON pointer parts
Times = dict[Parts, datetime]  # every timestamp field that is a real date and time


def reachable(status: str) -> set[str]:
    """Statuses reachable from ``status`` in zero or more steps of :data:`STATUS_EDGES`."""
    seen = {status}
    stack = [status]
    while stack:
        for nxt in STATUS_EDGES.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check(data: bytes, path: str, *, against: bytes | None = None, parsed: Parsed | None = None) -> list[Diagnostic]:
    """Every problem of an SDLC ``state.json`` (``parsed``: ``data`` already parsed, not parsed
    again); with ``against`` (an older version), the transitions too."""
    state, problems = load_document(data, path, SCHEMA, parsed=parsed)
    if not isinstance(state, dict):
        return problems
    report = DocumentReport(data, path)
    flagged = {d.extra.get("pointer") for d in problems}
    _check_run_id(state, report)
    times = _check_timestamps(state, report, flagged)
    _check_issues(state, report)
    _check_phases(state, report, times)
    _check_invocations(state, report)
    if against is not None:
        _check_transition(state, against, report)
    return problems + report.items


def _check_run_id(state: dict[str, Any], report: DocumentReport) -> None:
    run_id = state.get("run_id")
    if isinstance(run_id, str):
        match = _RUN_DATE.match(run_id)
        if match and timestamps.moment(f"{match.group(1)}-{match.group(2)}-{match.group(3)}T00:00:00Z") is None:
            report.add(("run_id",), "SDLC_RUN_ID", f"run_id {run_id!r} starts with an impossible date")


def _timestamp_fields(state: dict[str, Any]) -> Iterator[tuple[Parts, Any]]:
    """(path parts, value) of every timestamp field the seed defines."""
    yield ("updated_at",), state.get("updated_at")
    metrics = _dict(state.get("metrics"))
    yield ("metrics", "started_at"), metrics.get("started_at")
    for phase, entry in _dict(metrics.get("phases")).items():
        for key in ("started_at", "ended_at"):
            yield ("metrics", "phases", phase, key), _dict(entry).get(key)
    invocations = metrics.get("agent_invocations")
    for index, invocation in enumerate(invocations if isinstance(invocations, list) else []):
        yield ("metrics", "agent_invocations", index, "started_at"), _dict(invocation).get("started_at")


def _check_timestamps(state: dict[str, Any], report: DocumentReport, flagged: set[Any]) -> Times:
    """Parse every timestamp field; report impossible dates; return {parts: datetime}."""
    parsed: Times = {}
    for parts, value in _timestamp_fields(state):
        if not isinstance(value, str):
            continue
        when = timestamps.moment(value)
        if when is not None:
            parsed[parts] = when
        elif pointer(parts) not in flagged:
            # The schema accepted its shape, but it is no real date: February 30, ...
            report.add(parts, "TIMESTAMP", f"{value!r} is not a real date and time")
    updated = parsed.get(("updated_at",))
    if updated is not None:
        later = [parts for parts, when in parsed.items() if when > updated]
        for parts in later:
            report.add(
                parts,
                "SDLC_UPDATED_AT_STALE",
                f"{'.'.join(map(str, parts))} is later than updated_at; updated_at must be refreshed on every write",
                severity=WARNING,
            )
    return parsed


def _check_issues(state: dict[str, Any], report: DocumentReport) -> None:
    issues = _dict(state.get("issues"))
    statuses = {key: _dict(issue).get("status") for key, issue in issues.items()}
    graph: dict[str, list[str]] = {}
    for key, raw_issue in issues.items():
        issue = _dict(raw_issue)
        blockers = issue.get("blocked_by")
        blockers = [b for b in blockers if isinstance(b, str)] if isinstance(blockers, list) else []
        graph[key] = _known_blockers(key, blockers, issues, report)
        _check_status(key, issue.get("status"), blockers, graph[key], statuses, report)
        _check_pr(key, issue, report)
    for cycle in _cycles(graph):
        report.add(
            ("issues", cycle[0], "blocked_by"),
            "SDLC_BLOCKED_CYCLE",
            "issues block each other in a cycle: " + " -> ".join([*cycle, cycle[0]]),
        )


def _known_blockers(key: str, blockers: list[str], issues: dict[str, Any], report: DocumentReport) -> list[str]:
    """The blockers of issue ``key`` that are other issues of the map (the rest reported)."""
    known = []
    for index, blocker in enumerate(blockers):
        where = ("issues", key, "blocked_by", index)
        if blocker == key:
            report.add(where, "SDLC_BLOCKED_BY", f"{key} is blocked by itself")
        elif blocker not in issues:
            report.add(where, "SDLC_BLOCKED_BY", f"{key} is blocked by {blocker}, which is not in the issues map")
        else:
            known.append(blocker)
    return known


def _check_status(
    key: str,
    status: Any,
    blockers: list[str],
    known: list[str],
    statuses: dict[str, Any],
    report: DocumentReport,
) -> None:
    """Rule 5: an issue leaves ``blocked`` only when all its blockers are done (and should)."""
    not_done = [b for b in known if statuses.get(b) != "done"]
    if isinstance(status, str) and status in STATUS_EDGES and status != "blocked" and not_done:
        report.add(
            ("issues", key, "status"),
            "SDLC_BLOCKER_NOT_DONE",
            f"{key} is {status} but its blocker(s) {', '.join(not_done)} are not done "
            "(an issue leaves blocked only when all its blockers are done)",
        )
    if status == "blocked" and not not_done and len(known) == len(blockers):
        report.add(
            ("issues", key, "status"),
            "SDLC_SHOULD_BE_READY",
            f"{key} is blocked but {'every blocker is done' if blockers else 'it has no blockers'}; it should be ready",
            severity=WARNING,
        )


def _check_pr(key: str, issue: dict[str, Any], report: DocumentReport) -> None:
    if "pr" not in issue and "pr_number" not in issue:
        return
    pr, number = issue.get("pr"), issue.get("pr_number")
    if (pr is not None and not isinstance(pr, str)) or (number is not None and not _is_int(number)):
        return  # the schema reports the type
    match = _PR.fullmatch(pr) if isinstance(pr, str) else None
    if isinstance(pr, str) and match is None:
        return  # the schema reports the shape
    if match is not None and number is not None and int(match.group(1)) != number:
        report.add(
            ("issues", key, "pr_number"),
            "SDLC_PR_MISMATCH",
            f"{key}: pr {pr} is PR #{match.group(1)} but pr_number is {number}",
        )
    elif (pr is None) != (number is None):
        report.add(
            ("issues", key, "pr" if pr is not None else "pr_number"),
            "SDLC_PR_MISMATCH",
            f"{key}: pr is {short(pr)} but pr_number is {short(number)}; set both or neither",
        )


def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """One representative cycle per strongly connected group (iterative DFS)."""
    color: dict[str, int] = {}
    cycles: list[list[str]] = []
    for start in graph:
        if color.get(start):
            continue
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(graph[start]))]
        trail = [start]
        color[start] = 1
        while stack:
            node, children = stack[-1]
            for child in children:
                if color.get(child, 0) == 0:
                    color[child] = 1
                    trail.append(child)
                    stack.append((child, iter(graph.get(child, ()))))
                    break
                if color.get(child) == 1:
                    cycles.append(trail[trail.index(child) :])
            else:
                color[node] = 2
                stack.pop()
                trail.pop()
    return cycles


class _Span(NamedTuple):
    """One phase's metrics: its name and when it started and ended (None: not a real time)."""

    name: str
    started: datetime | None
    ended: datetime | None


def _check_phases(state: dict[str, Any], report: DocumentReport, times: Times) -> None:
    phases = _dict(_dict(state.get("metrics")).get("phases"))
    current = state.get("phase")
    run_started = times.get(("metrics", "started_at"))
    previous: _Span | None = None
    for name in PHASES:
        if name not in phases:
            continue
        entry = _dict(phases[name])
        span = _Span(
            name,
            times.get(("metrics", "phases", name, "started_at")),
            times.get(("metrics", "phases", name, "ended_at")),
        )
        _check_phase_place(span, entry, current, report)
        _check_phase_order(span, previous, run_started, report)
        _check_phase_times(span, entry, report)
        previous = span


def _check_phase_place(span: _Span, entry: dict[str, Any], current: Any, report: DocumentReport) -> None:
    """A phase's metrics against the current ``phase``: none after it, all ended before it."""
    if current not in PHASES:
        return
    index, current_index = PHASES.index(span.name), PHASES.index(current)
    where = ("metrics", "phases", span.name)
    if index > current_index:
        report.add(where, "SDLC_PHASE_FUTURE", f"metrics for {span.name}, a phase after the current phase {current}")
    if index < current_index and entry.get("ended_at") is None and "started_at" in entry:
        report.add(
            where, "SDLC_PHASE_OPEN", f"{span.name} comes before the current phase {current} but has no ended_at"
        )


def _check_phase_order(
    span: _Span, previous: _Span | None, run_started: datetime | None, report: DocumentReport
) -> None:
    """A phase starts after the run started, and after the phase before it started and ended."""
    if span.started is None:
        return
    where = ("metrics", "phases", span.name, "started_at")
    if run_started is not None and span.started < run_started:
        report.add(where, "SDLC_PHASE_ORDER", f"{span.name} starts before metrics.started_at")
    if previous is None:
        return
    if previous.started is not None and span.started < previous.started:
        report.add(where, "SDLC_PHASE_ORDER", f"{span.name} starts before {previous.name}, which comes first")
    elif previous.ended is not None and span.started < previous.ended:
        report.add(where, "SDLC_PHASE_ORDER", f"{span.name} starts before {previous.name} ended")


def _check_phase_times(span: _Span, entry: dict[str, Any], report: DocumentReport) -> None:
    """A phase ends after it starts, and its ``duration_s`` is what its times say."""
    where = ("metrics", "phases", span.name)
    started, ended = span.started, span.ended
    if started is not None and ended is not None and ended < started:
        report.add((*where, "ended_at"), "SDLC_PHASE_TIMES", f"{span.name} ends before it starts")
    duration = entry.get("duration_s")
    if not isinstance(duration, (int, float)) or isinstance(duration, bool):
        return
    if entry.get("ended_at") is None and "ended_at" in entry:
        report.add((*where, "duration_s"), "SDLC_PHASE_TIMES", f"{span.name} has a duration_s but no ended_at")
    elif started is not None and ended is not None and ended >= started:
        actual = (ended - started).total_seconds()
        if abs(actual - duration) > DURATION_TOLERANCE_S:
            report.add(
                (*where, "duration_s"),
                "SDLC_PHASE_TIMES",
                f"{span.name} duration_s is {duration:g} but it ran {actual:g} s (ended_at - started_at)",
            )


def _check_invocations(state: dict[str, Any], report: DocumentReport) -> None:
    issues = _dict(state.get("issues"))
    invocations = _dict(state.get("metrics")).get("agent_invocations")
    if not isinstance(invocations, list):
        return
    for index, invocation in enumerate(invocations):
        issue = _dict(invocation).get("issue")
        if isinstance(issue, str) and issues and issue not in issues:
            report.add(
                ("metrics", "agent_invocations", index, "issue"),
                "SDLC_UNKNOWN_ISSUE",
                f"agent invocation names {issue}, which is not in the issues map",
                severity=WARNING,
            )


def _check_transition(state: dict[str, Any], against: bytes, report: DocumentReport) -> None:
    old = _older(against, report)
    if old is None:
        return
    if old.get("run_id") != state.get("run_id"):
        report.add(
            ("run_id",),
            "SDLC_RUN_CHANGED",
            f"run_id changed from {old.get('run_id')!r}: another run, transitions not checked",
            severity=WARNING,
        )
        return
    old_phase, new_phase = old.get("phase"), state.get("phase")
    if old_phase in PHASES and new_phase in PHASES and PHASES.index(new_phase) < PHASES.index(old_phase):
        report.add(
            ("phase",),
            "SDLC_PHASE_BACKWARDS",
            f"phase moved back from {old_phase} to {new_phase}; phases only move forward ({' -> '.join(PHASES)})",
        )
    _check_status_moves(_dict(old.get("issues")), _dict(state.get("issues")), report)
    _check_updated_at_moves(old, state, report)


def _older(against: bytes, report: DocumentReport) -> dict[str, Any] | None:
    """The older version's object (None, and a warning, when it is not a JSON object)."""
    try:
        old = loads(against)
    except JSONDecodeError:
        old = None
    if isinstance(old, dict):
        return old
    report.add(
        (),
        "SDLC_AGAINST_UNREADABLE",
        "the older version is not a JSON object; transitions not checked",
        severity=WARNING,
    )
    return None


def _check_status_moves(old_issues: dict[str, Any], new_issues: dict[str, Any], report: DocumentReport) -> None:
    """Each issue of the older version is still there, its status moved along the graph."""
    for key, old_issue in old_issues.items():
        if key not in new_issues:
            report.add(("issues",), "SDLC_ISSUE_DROPPED", f"issue {key} of the older version is gone", severity=WARNING)
            continue
        before, after = _dict(old_issue).get("status"), _dict(new_issues[key]).get("status")
        if (
            isinstance(before, str)
            and isinstance(after, str)
            and before in STATUS_EDGES
            and after in STATUS_EDGES
            and after not in reachable(before)
        ):
            report.add(
                ("issues", key, "status"),
                "SDLC_STATUS_TRANSITION",
                f"{key}: status cannot go from {before} to {after} "
                "(blocked -> ready -> implementing -> reviewing -> awaiting_human -> done, "
                "reviewing -> implementing, implementing -> failed)",
            )


def _check_updated_at_moves(old: dict[str, Any], state: dict[str, Any], report: DocumentReport) -> None:
    """``updated_at`` never goes back, and moves whenever the content changes (rule 2)."""
    old_time, new_time = timestamps.moment(old.get("updated_at")), timestamps.moment(state.get("updated_at"))
    if old_time is None or new_time is None:
        return
    if new_time < old_time:
        report.add(
            ("updated_at",),
            "SDLC_UPDATED_AT_BACKWARDS",
            f"updated_at went back from {old.get('updated_at')} to {state.get('updated_at')}",
        )
    elif new_time == old_time and _without_updated_at(old) != _without_updated_at(state):
        report.add(
            ("updated_at",),
            "SDLC_UPDATED_AT_NOT_REFRESHED",
            "the state changed but updated_at did not; it must be refreshed on every write",
            fix="set updated_at to the time of this write",
        )


def _without_updated_at(state: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in state.items() if k != "updated_at"}
