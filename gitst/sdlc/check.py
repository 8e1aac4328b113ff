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
from typing import Any

from gitst.core import timestamps
from gitst.core.diagnostics import WARNING, Diagnostic
from gitst.schemas.report import DocumentReport, load_document, pointer, short

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


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check(data: bytes, path: str, *, against: bytes | None = None) -> list[Diagnostic]:
    state, problems = load_document(data, path, SCHEMA)
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


def _check_run_id(state: dict, report: DocumentReport) -> None:
    run_id = state.get("run_id")
    if isinstance(run_id, str):
        match = _RUN_DATE.match(run_id)
        if match and timestamps.moment(f"{match.group(1)}-{match.group(2)}-{match.group(3)}T00:00:00Z") is None:
            report.add(("run_id",), "SDLC_RUN_ID", f"run_id {run_id!r} starts with an impossible date")


def _timestamp_fields(state: dict):
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


def _check_timestamps(state: dict, report: DocumentReport, flagged: set) -> dict:
    """Parse every timestamp field; report impossible dates; return {parts: datetime}."""
    parsed = {}
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


def _check_issues(state: dict, report: DocumentReport) -> None:
    issues = _dict(state.get("issues"))
    statuses = {key: _dict(issue).get("status") for key, issue in issues.items()}
    graph: dict[str, list[str]] = {}
    for key, raw_issue in issues.items():
        issue = _dict(raw_issue)
        blockers = issue.get("blocked_by")
        blockers = [b for b in blockers if isinstance(b, str)] if isinstance(blockers, list) else []
        graph[key] = []
        for index, blocker in enumerate(blockers):
            where = ("issues", key, "blocked_by", index)
            if blocker == key:
                report.add(where, "SDLC_BLOCKED_BY", f"{key} is blocked by itself")
            elif blocker not in issues:
                report.add(where, "SDLC_BLOCKED_BY", f"{key} is blocked by {blocker}, which is not in the issues map")
            else:
                graph[key].append(blocker)
        status = issue.get("status")
        not_done = [b for b in graph[key] if statuses.get(b) != "done"]
        if isinstance(status, str) and status in STATUS_EDGES and status != "blocked" and not_done:
            report.add(
                ("issues", key, "status"),
                "SDLC_BLOCKER_NOT_DONE",
                f"{key} is {status} but its blocker(s) {', '.join(not_done)} are not done "
                "(an issue leaves blocked only when all its blockers are done)",
            )
        if status == "blocked" and not not_done and len(graph[key]) == len(blockers):
            report.add(
                ("issues", key, "status"),
                "SDLC_SHOULD_BE_READY",
                f"{key} is blocked but {'every blocker is done' if blockers else 'it has no blockers'}; "
                "it should be ready",
                severity=WARNING,
            )
        _check_pr(key, issue, report)
    for cycle in _cycles(graph):
        report.add(
            ("issues", cycle[0], "blocked_by"),
            "SDLC_BLOCKED_CYCLE",
            "issues block each other in a cycle: " + " -> ".join([*cycle, cycle[0]]),
        )


def _check_pr(key: str, issue: dict, report: DocumentReport) -> None:
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
    cycles = []
    for start in graph:
        if color.get(start):
            continue
        stack = [(start, iter(graph[start]))]
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


def _check_phases(state: dict, report: DocumentReport, times: dict) -> None:
    metrics = _dict(state.get("metrics"))
    phases = _dict(metrics.get("phases"))
    current = state.get("phase")
    current_index = PHASES.index(current) if current in PHASES else None
    previous = None  # (name, started, ended)
    run_started = times.get(("metrics", "started_at"))
    for name in PHASES:
        if name not in phases:
            continue
        entry = _dict(phases[name])
        index = PHASES.index(name)
        started = times.get(("metrics", "phases", name, "started_at"))
        ended = times.get(("metrics", "phases", name, "ended_at"))
        where = ("metrics", "phases", name)
        if current_index is not None and index > current_index:
            report.add(where, "SDLC_PHASE_FUTURE", f"metrics for {name}, a phase after the current phase {current}")
        if (
            current_index is not None
            and index < current_index
            and entry.get("ended_at", None) is None
            and "started_at" in entry
        ):
            report.add(where, "SDLC_PHASE_OPEN", f"{name} comes before the current phase {current} but has no ended_at")
        if started is not None and run_started is not None and started < run_started:
            report.add((*where, "started_at"), "SDLC_PHASE_ORDER", f"{name} starts before metrics.started_at")
        if started is not None and previous is not None:
            prev_name, prev_started, prev_ended = previous
            if prev_started is not None and started < prev_started:
                report.add(
                    (*where, "started_at"), "SDLC_PHASE_ORDER", f"{name} starts before {prev_name}, which comes first"
                )
            elif prev_ended is not None and started < prev_ended:
                report.add((*where, "started_at"), "SDLC_PHASE_ORDER", f"{name} starts before {prev_name} ended")
        if started is not None and ended is not None and ended < started:
            report.add((*where, "ended_at"), "SDLC_PHASE_TIMES", f"{name} ends before it starts")
        duration = entry.get("duration_s")
        if isinstance(duration, (int, float)) and not isinstance(duration, bool):
            if entry.get("ended_at", None) is None and "ended_at" in entry:
                report.add((*where, "duration_s"), "SDLC_PHASE_TIMES", f"{name} has a duration_s but no ended_at")
            elif started is not None and ended is not None and ended >= started:
                actual = (ended - started).total_seconds()
                if abs(actual - duration) > DURATION_TOLERANCE_S:
                    report.add(
                        (*where, "duration_s"),
                        "SDLC_PHASE_TIMES",
                        f"{name} duration_s is {duration:g} but it ran {actual:g} s (ended_at - started_at)",
                    )
        previous = (name, started, ended)


def _check_invocations(state: dict, report: DocumentReport) -> None:
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


def _check_transition(state: dict, against: bytes, report: DocumentReport) -> None:
    from gitst.core.jsonio import JSONDecodeError, loads

    try:
        old = loads(against)
    except JSONDecodeError:
        old = None
    if not isinstance(old, dict):
        report.add(
            (),
            "SDLC_AGAINST_UNREADABLE",
            "the older version is not a JSON object; transitions not checked",
            severity=WARNING,
        )
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
    old_issues, new_issues = _dict(old.get("issues")), _dict(state.get("issues"))
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
    old_time, new_time = timestamps.moment(old.get("updated_at")), timestamps.moment(state.get("updated_at"))
    if old_time is not None and new_time is not None:
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


def _without_updated_at(state: dict) -> dict:
    return {k: v for k, v in state.items() if k != "updated_at"}
