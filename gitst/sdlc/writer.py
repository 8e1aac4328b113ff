"""Writing seed 003's ``state.json`` the way its rules demand (``git st sdlc``).

Every write (:func:`_write`) is one read-modify-write under a flock:

1. read the current file (none yet: only :func:`init` may create it);
2. apply the change, with the time of this write ``stamp``: later than the old
   ``updated_at`` by at least a millisecond, so rule 2 (refreshed on every write) holds even
   for two writes in one millisecond or a clock that went back;
3. move every ``blocked`` issue whose ``blocked_by`` are all ``done`` to ``ready`` (rule 5);
4. set ``updated_at`` to ``stamp``;
5. check the result with the validator's own rules, the transition rules against the old
   version included (:func:`gitst.sdlc.check.check` with ``against``) — no second copy —
   plus the writer's one-step rule: one write moves an issue's status one edge of the graph
   and the phase to the next one (``SDLC_STATUS_STEP``, ``SDLC_PHASE_SKIP``; the validator
   allows several steps because the versions it compares may be several writes apart);
6. any error: nothing is written (:class:`Refused`, exit 2, naming each rule); otherwise the
   file is replaced atomically (temp file, fsync, rename, fsync of the directory) before the
   command returns — the write-ahead record of rule 1: run the command *before* the action.

The flock sidecar lives in the worktree's git dir (``.git/gitst/sdlc-<hash>.lock``), never
next to the committed file: nothing to ignore, nothing to commit. Outside a git work tree it
is ``<file>.lock``. The file is read, by :func:`read` and by every write, the one way every
reader opens a file a clone controls (:mod:`gitst.core.safepaths`): a symbolic link on the
way to it (inside the work tree) is refused, so are a FIFO, a device or a socket at its
place (exit 2); a cloned repository is untrusted input.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import os
import re
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gitst.core import timestamps
from gitst.core.diagnostics import Diagnostic
from gitst.core.errors import ProblemsFound, UsageError
from gitst.core.filelocks import locked
from gitst.core.jsonio import JSONDecodeError, atomic_write_bytes, encode_checked, loads, write_error
from gitst.core.safepaths import check as check_safe
from gitst.core.safepaths import makedirs, read_bytes
from gitst.core.values import field, value_class
from gitst.git.repo import repo_info, work_tree_of
from gitst.sdlc.check import PHASES, STATUS_EDGES, check, reachable
from gitst.settings import lock_timeout, optional_str_setting

__all__ = [
    "TOTALS",
    "Refused",
    "Written",
    "add_issue",
    "init",
    "read",
    "record_invocation",
    "resolve_path",
    "set_artifact",
    "set_bootstrap",
    "set_phase",
    "set_phase_status",
    "set_total",
    "update_issue",
]

STEP = "SDLC_STATUS_STEP"
SKIP = "SDLC_PHASE_SKIP"
BACKWARDS = "SDLC_PHASE_BACKWARDS"  # check's own code: the writer reports the move alone
TOTALS = (
    "duration_s",
    "agent_spawns",
    "review_iterations.agent",
    "review_iterations.human",
    "issues_created",
    "prs_created",
    "prs_merged",
)
ARTIFACTS = ("scoping_doc", "pert")
_DATED = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}-")
_PR = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+#([0-9]+)$")


# --- where the file is ----------------------------------------------------------------------


def resolve_path(file: str | os.PathLike[str] | None = None, cwd: str | os.PathLike[str] | None = None) -> Path:
    """``--file`` (relative to the current directory), else ``ST_SDLC_STATE`` / ``git config
    st.sdlcState`` (relative to the top of the current worktree), else ``state.json`` at that
    top (outside a git work tree: in the current directory)."""
    here = Path(os.path.abspath(cwd or os.getcwd()))
    if file:
        return here / Path(file).expanduser()
    info = repo_info(here)
    base = info.toplevel if info is not None and info.toplevel is not None else here
    configured = optional_str_setting("sdlc_state", here)
    return base / Path(configured).expanduser() if configured else base / "state.json"


def _shown(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def _existing_dir(path: Path) -> Path:
    current = path.parent
    while not current.is_dir() and current.parent != current:
        current = current.parent
    return current


def _sidecar(path: Path) -> Path:
    """The flock sidecar of ``path``: in the git dir of the work tree around it, else beside it."""
    info = repo_info(_existing_dir(path))
    if info is None or info.toplevel is None:
        return path.with_name(path.name + ".lock")
    digest = hashlib.sha256(os.fsencode(os.path.realpath(path))).hexdigest()[:16]
    return info.git_dir / "gitst" / f"sdlc-{digest}.lock"


def _check_path(path: Path, shown: str) -> Path | None:
    """Refuse (exit 2) a symbolic link from the work tree's top down to ``path`` (the file
    itself included), or a FIFO, device or socket at ``path``; the work tree's top. A cloned
    repository is untrusted input."""
    top = work_tree_of(path)  # from there down every component is checked (None outside one)
    with contextlib.suppress(IsADirectoryError):  # reported when it is read: error[READ], exit 1
        check_safe(path, top, shown=shown)
    return top


def _read_bytes(path: Path, shown: str, top: Path | None) -> bytes | None:
    """The bytes of the state file, opened the one way every reader opens a file a clone
    controls (:func:`gitst.core.safepaths.read_bytes`: no link followed, no FIFO waited on,
    no device read); None when it does not exist. Unreadable: exit 1 (``READ``)."""
    try:
        return read_bytes(path, top, shown=shown)
    except OSError as exc:
        raise ProblemsFound(f"{shown}: error[READ]: cannot read it: {exc.strerror or exc}") from None


# --- time -----------------------------------------------------------------------------------


def _iso_ms(ms: int) -> str:
    moment = datetime.fromtimestamp(ms // 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _ms(value: Any) -> int | None:
    when = timestamps.moment(value)
    return None if when is None else round(when.timestamp() * 1000)


def _stamp_ms(state: dict[str, Any]) -> int:
    """Now in milliseconds, but at least one later than the file's ``updated_at``."""
    now = int(time.time() * 1000)
    previous = _ms(state.get("updated_at"))
    return max(now, previous + 1) if previous is not None else now


# --- the write ------------------------------------------------------------------------------


class Refused(UsageError):
    """The change would break a rule: nothing written (exit 2). ``diagnostics`` names each."""

    def __init__(self, shown: str, diagnostics: list[Diagnostic]):
        self.diagnostics = diagnostics
        count = len(diagnostics)
        super().__init__(  # each diagnostic carries its own fix
            f"nothing written to {shown}: the change breaks {count} rule{'s' if count != 1 else ''} of seed 003"
        )

    def render(self) -> str:
        lines = [d.to_text() for d in self.diagnostics]
        return "\n".join([*lines, super().render()])


@value_class
class Written:
    path: Path
    state: dict[str, Any]
    changed: bool
    messages: list[str] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "changed": self.changed,
            "messages": self.messages,
            "warnings": [d.to_dict() for d in self.warnings],
            "state": self.state,
        }


@value_class
class _Edit:
    """What one change did, for the messages and the one-step rule."""

    stamp: int  # milliseconds
    messages: list[str] = field(default_factory=list)
    moves: list[tuple[str, str, str]] = field(default_factory=list)  # (issue, before, after)
    phase_move: tuple[str, str] | None = None

    @property
    def iso(self) -> str:
        return _iso_ms(self.stamp)


Change = Callable[[dict[str, Any], _Edit], None]


def _parse(data: bytes, shown: str) -> dict[str, Any]:
    try:
        state = loads(data)
    except JSONDecodeError as exc:
        raise ProblemsFound(
            f"{shown}:{exc.lineno}:{exc.colno}: error[JSON]: not valid JSON: {exc.msg}",
            fix=f"repair it by hand (`git st validate {shown}` shows every problem), or restore it from git",
        ) from None
    if not isinstance(state, dict):
        raise ProblemsFound(f"{shown}: error[SCHEMA]: the SDLC state must be a JSON object")
    return state


def read(path: Path) -> dict[str, Any]:
    """The SDLC state at ``path`` (exit 1 when there is none or it is not a JSON object)."""
    path = Path(os.path.abspath(path))
    shown = _shown(path)
    data = _read_bytes(path, shown, work_tree_of(path))
    if data is None:
        raise ProblemsFound(f"no SDLC state at {shown}", fix="start a run with `git st sdlc init RUN_ID`")
    return _parse(data, shown)


def _writer_rules(edit: _Edit, shown: str) -> list[Diagnostic]:
    """One write, one step: a status along one edge, the phase to the next one."""
    problems = []
    for key, before, after in edit.moves:
        if before in STATUS_EDGES and after in reachable(before) and after not in (before, *STATUS_EDGES[before]):
            steps = " or ".join(STATUS_EDGES[before]) or "nothing (it is final)"
            problems.append(
                Diagnostic(
                    shown,
                    None,
                    STEP,
                    f"{key}: one write moves a status one step; from {before} the next is {steps}, not {after}",
                    fix=f"write each step before its action: `git st sdlc issue set {key} --status "
                    f"{STATUS_EDGES[before][0] if STATUS_EDGES[before] else before}` first",
                )
            )
    if edit.phase_move is not None:
        before, after = edit.phase_move
        if before in PHASES and after in PHASES and PHASES.index(after) > PHASES.index(before) + 1:
            following = PHASES[PHASES.index(before) + 1]
            problems.append(
                Diagnostic(
                    shown,
                    None,
                    SKIP,
                    f"phase {before} is followed by {following}, not {after}; phases are not skipped",
                    fix=f"git st sdlc phase {following}",
                )
            )
        elif before in PHASES and after in PHASES and PHASES.index(after) < PHASES.index(before):
            problems.append(
                Diagnostic(
                    shown,
                    None,
                    BACKWARDS,
                    f"phase moved back from {before} to {after}; phases only move forward ({' -> '.join(PHASES)})",
                    fix=f"record more work in {before} (`git st sdlc phase-status in_progress`), or start another "
                    "run with `git st sdlc init RUN_ID --file PATH`",
                )
            )
    return problems


def _write(path: Path, change: Change, *, create: bool = False) -> Written:
    path = Path(os.path.abspath(path))
    shown = _shown(path)
    top = _check_path(path, shown)
    if create:
        try:
            makedirs(path.parent, top, shown=os.path.dirname(shown) or ".")
        except OSError as exc:
            raise write_error(path.parent, exc, verb="create") from None
    with locked(_sidecar(path), lock_timeout()):
        old = _read_bytes(path, shown, top)
        current = _current(old, shown, create=create)
        state = copy.deepcopy(current)
        edit = _Edit(_stamp_ms(current))
        change(state, edit)
        # an issue this write moves to blocked keeps it (and the rules judge that move)
        edit.messages.extend(_promote(state, keep={key for key, _, after in edit.moves if after == "blocked"}))
        if state == current:
            return Written(path, current, False, edit.messages or ["nothing to change"])
        state["updated_at"] = edit.iso
        data = encode_checked(state, shown)  # what no reader would read back is never written
        warnings = _judged(data, old, edit, shown)
        atomic_write_bytes(path, data)
    return Written(path, state, True, edit.messages, warnings)


def _current(old: bytes | None, shown: str, *, create: bool) -> dict[str, Any]:
    """The state before this write: none only for :func:`init`, which needs there be none."""
    if old is None and not create:
        raise ProblemsFound(f"no SDLC state at {shown}", fix="start a run with `git st sdlc init RUN_ID`")
    if old is not None and create:
        raise UsageError(
            f"{shown} already exists: one file holds one run",
            fix="pass --file for another run's state, or continue this one with `git st sdlc …`",
        )
    return {} if old is None else _parse(old, shown)


def _judged(data: bytes, old: bytes | None, edit: _Edit, shown: str) -> list[Diagnostic]:
    """The new state's warnings; its errors (the validator's, transitions from ``old``
    included, and the writer's one-step rules) refuse the write."""
    found = check(data, shown, against=old)
    rules = _writer_rules(edit, shown)
    # A phase moved back breaks the rules that follow from it too (metrics of phases now
    # "in the future"): the one error to report is the move itself.
    backwards = [d for d in rules if d.code == BACKWARDS]
    errors = backwards or [d.replace(line=None, col=None) for d in found if d.is_error] + rules
    if errors:
        raise Refused(shown, errors)
    return [d.replace(line=None, col=None) for d in found if not d.is_error]


def _promote(state: dict[str, Any], keep: set[str]) -> list[str]:
    """Rule 5: a ``blocked`` issue whose ``blocked_by`` issues are all ``done`` is ``ready``
    (but the issues in ``keep``)."""
    issues = state.get("issues")
    if not isinstance(issues, dict):
        return []
    messages = []
    for key, issue in issues.items():
        if key in keep or not isinstance(issue, dict) or issue.get("status") != "blocked":
            continue
        blockers = issue.get("blocked_by") or []
        if not isinstance(blockers, list):
            continue
        known = [issues.get(b) for b in blockers]
        if all(isinstance(b, dict) and b.get("status") == "done" for b in known):
            issue["status"] = "ready"
            why = "every blocker is done" if blockers else "it has no blockers"
            messages.append(f"{key}: blocked -> ready ({why})")
    return messages


# --- helpers on the document ----------------------------------------------------------------


def _object(holder: dict[str, Any], key: str) -> dict[str, Any]:
    value = holder.get(key)
    if not isinstance(value, dict):
        value = {}
        holder[key] = value
    return value


def _totals(state: dict[str, Any]) -> dict[str, Any]:
    return _object(_object(state, "metrics"), "totals")


def _bump(state: dict[str, Any], name: str, by: float = 1) -> None:
    totals = _totals(state)
    holder, _, leaf = name.rpartition(".")
    target = _object(totals, holder) if holder else totals
    current = target.get(leaf)
    target[leaf] = (current if isinstance(current, (int, float)) and not isinstance(current, bool) else 0) + by


def _issue(state: dict[str, Any], key: str) -> dict[str, Any]:
    issues = state.get("issues")
    issue = issues.get(key) if isinstance(issues, dict) else None
    if not isinstance(issue, dict):
        raise UsageError(f"no issue {key} in the SDLC state", fix=f"add it with `git st sdlc issue add {key} …`")
    return issue


def _set_pr(state: dict[str, Any], issue: dict[str, Any], pr: str | None) -> None:
    """``pr`` (``org/repo#N``) and ``pr_number`` together; None clears both."""
    had = issue.get("pr")
    if pr is None:
        issue["pr"], issue["pr_number"] = None, None
        return
    match = _PR.match(pr)
    issue["pr"] = pr
    issue["pr_number"] = int(match.group(1)) if match else None  # a bad shape: the schema says SDLC_PR
    if had is None:
        _bump(state, "prs_created")


def _seconds(ms: int) -> float:
    value = ms / 1000
    return int(value) if value == int(value) else round(value, 3)


# --- the commands ---------------------------------------------------------------------------


def init(path: Path, run_id: str, *, prd_url: str | None = None) -> Written:
    """Start a run: ``BOOTSTRAP`` / ``in_progress``, empty sections, metrics started now.

    A ``run_id`` without its date (``checkout-v2``) gets today's (UTC): ``YYYY-MM-DD-checkout-v2``.
    """

    def change(state: dict[str, Any], edit: _Edit) -> None:
        run = run_id if _DATED.match(run_id) else f"{edit.iso[:10]}-{run_id}"
        state["run_id"] = run
        if prd_url is not None:
            state["prd_url"] = prd_url
        state.update(
            {
                "phase": PHASES[0],
                "phase_status": "in_progress",
                "bootstrap": {"languages": {}, "docs_generated": {}},
                "artifacts": {"scoping_doc": None, "pert": None},
                "issues": {},
                "updated_at": edit.iso,
                "metrics": {
                    "started_at": edit.iso,
                    "phases": {PHASES[0]: {"started_at": edit.iso, "ended_at": None, "duration_s": None}},
                    "agent_invocations": [],
                    "totals": {
                        "duration_s": 0,
                        "agent_spawns": 0,
                        "review_iterations": {"agent": 0, "human": 0},
                        "issues_created": 0,
                        "prs_created": 0,
                        "prs_merged": 0,
                    },
                },
            }
        )
        edit.messages.append(f"started run {run} in phase {PHASES[0]} (in_progress)")

    return _write(path, change, create=True)


def set_phase(path: Path, target: str, *, status: str | None = None) -> Written:
    """Move to phase ``target`` (``next``: the following one). Moving on ends the current
    phase's metrics and starts the new one's; ``phase_status`` starts again (rule 3) at
    ``status``, default ``in_progress`` (``completed`` for COMPLETED). The same phase with a
    ``status`` only sets the status."""

    def change(state: dict[str, Any], edit: _Edit) -> None:
        before = state.get("phase")
        wanted = _wanted_phase(before, target)
        if wanted == before:
            if status is not None and state.get("phase_status") != status:
                edit.messages.append(f"phase {before}: {state.get('phase_status')} -> {status}")
                state["phase_status"] = status
            return
        state["phase"] = wanted
        edit.phase_move = (str(before), wanted)
        final = wanted == PHASES[-1]
        state["phase_status"] = status or ("completed" if final else "in_progress")
        if before in PHASES and wanted in PHASES and PHASES.index(wanted) > PHASES.index(before):
            _move_phase_metrics(state, edit, before, wanted)
        edit.messages.append(f"phase {before} -> {wanted} ({state['phase_status']})")

    return _write(path, change)


def _wanted_phase(before: Any, target: str) -> str:
    """The phase ``target`` names (``next``: the one after ``before``)."""
    if target != "next":
        return target
    if before not in PHASES:
        raise UsageError(f"the current phase {before!r} is not one of {', '.join(PHASES)}")
    if before == PHASES[-1]:
        raise UsageError(f"the run is {before}: there is no next phase")
    return PHASES[PHASES.index(before) + 1]


def _move_phase_metrics(state: dict[str, Any], edit: _Edit, before: str, wanted: str) -> None:
    """Moving forward: the phase left ends now, the new one starts now (COMPLETED ends at
    once, and the run's total duration is set)."""
    final = wanted == PHASES[-1]
    phases = _object(_object(state, "metrics"), "phases")
    ended = phases.get(before)
    if isinstance(ended, dict) and ended.get("ended_at") is None:
        ended["ended_at"] = edit.iso
        started = _ms(ended.get("started_at"))
        ended["duration_s"] = _seconds(edit.stamp - started) if started is not None else None
    phases[wanted] = {
        "started_at": edit.iso,
        "ended_at": edit.iso if final else None,
        "duration_s": 0 if final else None,
    }
    run_started = _ms(_object(state, "metrics").get("started_at"))
    if final and run_started is not None:
        _totals(state)["duration_s"] = _seconds(edit.stamp - run_started)


def set_phase_status(path: Path, status: str, *, phase: str | None = None) -> Written:
    """Set ``phase_status``, which is always the current phase's (rule 3): ``phase``, when
    given, must be the current one."""

    def change(state: dict[str, Any], edit: _Edit) -> None:
        current = state.get("phase")
        if phase is not None and phase != current:
            raise UsageError(f"the current phase is {current}, not {phase}: phase_status is always the current phase's")
        if state.get("phase_status") != status:
            edit.messages.append(f"phase {current}: {state.get('phase_status')} -> {status}")
            state["phase_status"] = status

    return _write(path, change)


def add_issue(
    path: Path, key: str, *, repo: str, title: str, blocked_by: list[str] | None = None, pr: str | None = None
) -> Written:
    """Add issue ``key``: ``blocked`` when it has blockers not done yet, else ``ready``."""

    def change(state: dict[str, Any], edit: _Edit) -> None:
        issues = _object(state, "issues")
        if key in issues:
            raise UsageError(f"issue {key} already exists", fix=f"change it with `git st sdlc issue set {key} …`")
        blockers = list(dict.fromkeys(blocked_by or []))
        issue: dict[str, Any] = {
            "repo": repo,
            "title": title,
            "status": "blocked" if blockers else "ready",
            "pr": None,
            "pr_number": None,
            "blocked_by": blockers,
            "review_iterations": 0,
            "human_iterations": 0,
        }
        issues[key] = issue
        if pr is not None:
            _set_pr(state, issue, pr)
        _bump(state, "issues_created")
        edit.messages.append(
            f"added {key} ({issue['status']}{', blocked by ' + ', '.join(blockers) if blockers else ''})"
        )

    return _write(path, change)


_UNSET: Any = object()


def update_issue(
    path: Path,
    key: str,
    *,
    status: str | None = None,
    pr: Any = _UNSET,
    title: str | None = None,
    repo: str | None = None,
    blocked_by: list[str] | None = None,
    review_iteration: bool = False,
    human_iteration: bool = False,
) -> Written:
    """Change issue ``key``: its status (one step of the graph), PR (``org/repo#N``; None
    clears it), title, repo, blockers; count an agent or human review cycle (the totals
    follow). An issue with a PR that becomes ``done`` counts as a merged PR."""

    def change(state: dict[str, Any], edit: _Edit) -> None:
        issue = _issue(state, key)
        _set_fields(issue, key, edit, title=title, repo=repo, blocked_by=blocked_by)
        if pr is not _UNSET and issue.get("pr") != pr:
            _set_pr(state, issue, pr)
            edit.messages.append(f"{key}: pr {pr or 'cleared'}")
        if review_iteration:
            _count_iteration(state, issue, key, edit, "review_iterations", "agent")
        if human_iteration:
            _count_iteration(state, issue, key, edit, "human_iterations", "human")
        before = issue.get("status")
        if status is not None and status != before:
            issue["status"] = status
            edit.moves.append((key, str(before), status))
            if status == "done" and issue.get("pr"):
                _bump(state, "prs_merged")
            edit.messages.append(f"{key}: {before} -> {status}")

    return _write(path, change)


def _set_fields(
    issue: dict[str, Any], key: str, edit: _Edit, *, title: str | None, repo: str | None, blocked_by: list[str] | None
) -> None:
    """An issue's title, repo and blockers, where given."""
    for name, value in (("title", title), ("repo", repo)):
        if value is not None and issue.get(name) != value:
            issue[name] = value
            edit.messages.append(f"{key}: {name} set")
    if blocked_by is not None:
        issue["blocked_by"] = list(dict.fromkeys(blocked_by))
        edit.messages.append(f"{key}: blocked by {', '.join(issue['blocked_by']) or 'nothing'}")


def _count_iteration(
    state: dict[str, Any], issue: dict[str, Any], key: str, edit: _Edit, field_name: str, who: str
) -> None:
    """One more review cycle of ``who`` (agent, human) on the issue, and in the totals."""
    issue[field_name] = int(issue.get(field_name) or 0) + 1
    _bump(state, f"review_iterations.{who}")
    edit.messages.append(f"{key}: {who} review iteration {issue[field_name]}")


def record_invocation(
    path: Path,
    agent: str,
    *,
    model: str | None = None,
    repo: str | None = None,
    issue: str | None = None,
    started_at: str | None = None,
    duration_s: float | None = None,
    tokens_in: int | None = None,
    tokens_out: int | None = None,
) -> Written:
    """Append an agent invocation to ``metrics.agent_invocations`` and count the spawn.
    ``started_at`` defaults to now minus ``duration_s`` (it just finished) or now."""

    def change(state: dict[str, Any], edit: _Edit) -> None:
        start = started_at
        if start is None:
            start = _iso_ms(edit.stamp - round((duration_s or 0) * 1000))
        invocation: dict[str, Any] = {"agent": agent}
        if model is not None:
            invocation["model"] = model
        invocation.update({"repo": repo, "issue": issue, "started_at": start})
        if duration_s is not None:
            invocation["duration_s"] = duration_s
        if tokens_in is not None or tokens_out is not None:
            invocation["tokens"] = {k: v for k, v in (("input", tokens_in), ("output", tokens_out)) if v is not None}
        metrics = _object(state, "metrics")
        invocations = metrics.get("agent_invocations")
        if not isinstance(invocations, list):
            invocations = metrics["agent_invocations"] = []
        invocations.append(invocation)
        _bump(state, "agent_spawns")
        edit.messages.append(f"recorded invocation {len(invocations)}: {agent}" + (f" on {issue}" if issue else ""))

    return _write(path, change)


def set_total(path: Path, name: str, value: float, *, add: bool = False) -> Written:
    """Set (or with ``add``, increase) ``metrics.totals.<name>`` (:data:`TOTALS`)."""
    if name not in TOTALS:
        raise UsageError(f"unknown total {name!r}; one of: {', '.join(TOTALS)}")
    if name != "duration_s" and value != int(value):
        raise UsageError(f"{name} counts: give a whole number, not {value:g}")
    number = value if name == "duration_s" else int(value)

    def change(state: dict[str, Any], edit: _Edit) -> None:
        totals = _totals(state)
        holder, _, leaf = name.rpartition(".")
        target = _object(totals, holder) if holder else totals
        if add:
            _bump(state, name, number)
        else:
            target[leaf] = number
        edit.messages.append(f"totals.{name} = {target[leaf]}")

    return _write(path, change)


def set_artifact(path: Path, name: str, value: str | None) -> Written:
    """Set (None: clear) ``artifacts.scoping_doc`` or ``artifacts.pert``."""
    if name not in ARTIFACTS:
        raise UsageError(f"unknown artifact {name!r}; one of: {', '.join(ARTIFACTS)}")

    def change(state: dict[str, Any], edit: _Edit) -> None:
        artifacts = _object(state, "artifacts")
        if artifacts.get(name, _UNSET) != value:
            artifacts[name] = value
            edit.messages.append(f"artifacts.{name} {'cleared' if value is None else 'set'}")

    return _write(path, change)


def set_bootstrap(path: Path, repo: str, *, language: str | None = None, docs: str | None = None) -> Written:
    """Record a repo's language and/or the PR that generated its docs (``bootstrap``)."""
    if language is None and docs is None:
        raise UsageError("nothing to record", fix="give --language and/or --docs")

    def change(state: dict[str, Any], edit: _Edit) -> None:
        bootstrap = _object(state, "bootstrap")
        if language is not None:
            _object(bootstrap, "languages")[repo] = language
            edit.messages.append(f"bootstrap: {repo} is {language}")
        if docs is not None:
            _object(bootstrap, "docs_generated")[repo] = docs
            edit.messages.append(f"bootstrap: {repo} docs in {docs}")

    return _write(path, change)
