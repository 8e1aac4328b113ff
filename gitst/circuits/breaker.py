"""Circuit breakers (seed 001 ``circuit/``): one record per external service.

``state/circuit/<service>.json``, schema ``state-circuit``. A service's breaker is

- ``closed``: calls pass. Each failure adds to ``failures`` (consecutive failures), a success
  sets it back to 0; reaching the threshold opens the circuit;
- ``open``: calls are short-circuited until ``half_open_at`` (``opened_at`` + the cooldown).
  Failures reported meanwhile (calls that were already running) are counted but do not
  push the cooldown back;
- ``half_open``: the cooldown has passed. The next caller takes the **one trial call**
  (:func:`admit` stores it as ``trial`` with a token, its holder's pid and an expiry); every
  other caller is short-circuited while it is out. The trial's success closes the circuit,
  its failure opens it for another cooldown. A trial whose holder died (pid gone on this
  host) or that outlived the trial timeout is handed to the next caller. Any success
  reported while half-open closes the circuit (the service answered); a failure of another
  caller while the trial is out is only counted (the trial decides).

Every read-decide-write runs under the record's flock sidecar ``<service>.json.lock``
(:func:`gitst.statedir.records.locked`) and replaces the record atomically, so of any number
of processes racing for the trial exactly one gets it. The flock is never held while a
command runs: :func:`run` takes its admission, runs the command, then reports the outcome.

Thresholds (``st.circuit.threshold``, default 5 failures), the cooldown
(``st.circuit.cooldown``, 60 s) and the trial timeout (``st.circuit.trialTimeout``, 300 s)
come from :mod:`gitst.settings`; ``st.circuit.<service>.<key>`` overrides one service.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, Literal

from gitst import settings
from gitst.circuits.groups import (
    end_group,
    foreground,
    own_group,
    signal_number,
    terminal_signals_interrupt,
)
from gitst.core import timestamps
from gitst.core.errors import ConflictError, EnvironmentProblem
from gitst.core.values import value_class
from gitst.sessions.identity import Identity, group_members, pid_alive, process_start
from gitst.sessions.identity import host as this_host
from gitst.statedir import records
from gitst.statedir.paths import ensure_state_dir, refuse_symlinks, validate_identifier

__all__ = [
    "CLOSED",
    "DIRECTORY",
    "HALF_OPEN",
    "OPEN",
    "SCHEMA",
    "Admission",
    "CircuitState",
    "Outcome",
    "Policy",
    "Recorded",
    "RunResult",
    "ShortCircuited",
    "View",
    "admit",
    "cancel_trial",
    "check",
    "describe_refusal",
    "in_seconds",
    "policy_for",
    "record",
    "reset",
    "run",
    "status",
    "validate_service",
    "view",
]

SCHEMA = "state-circuit"
DIRECTORY = "circuit"
RECORD_VERSION = 1
MAX_ERROR = 2000

CircuitState = Literal["closed", "open", "half_open"]
Outcome = Literal["success", "failure"]
CLOSED: Final = "closed"
OPEN: Final = "open"
HALF_OPEN: Final = "half_open"


# --- names, paths, settings ---------------------------------------------------------------


def validate_service(name: str) -> str:
    """A service name: the identifier rule (it names ``circuit/<service>.json``)."""
    return validate_identifier(name, "service name")


@value_class(frozen=True)
class Policy:
    """When a service's circuit opens and for how long."""

    threshold: int  # consecutive failures that open it
    cooldown: float  # seconds open before the trial call
    trial_timeout: float  # seconds a trial may stay unreported before another caller takes it


def policy_for(service: str, cwd: str | os.PathLike[str] | None = None) -> Policy:
    """The service's policy: ``ST_CIRCUIT_*``, ``st.circuit.<service>.*``, ``st.circuit.*``, defaults."""
    return Policy(
        threshold=settings.int_setting("circuit_threshold", cwd, scope=service),
        cooldown=settings.float_setting("circuit_cooldown", cwd, scope=service),
        trial_timeout=settings.float_setting("circuit_trial_timeout", cwd, scope=service),
    )


def _files(service: str, root: Path) -> records.RecordFiles:
    return records.record_files(root, DIRECTORY, validate_service(service))


def _prepare(service: str, root: Path) -> records.RecordFiles:
    """Validate and check every path first, then create the dirs (nothing written on a refusal)."""
    files = _files(service, root)
    ensure_state_dir(root)
    files.record.parent.mkdir(parents=True, exist_ok=True)
    refuse_symlinks(files.sidecar, root)
    return files


@contextlib.contextmanager
def _locked(service: str, root: Path) -> Iterator[tuple[records.RecordFiles, dict[str, Any]]]:
    """The record (a never-seen service's: closed) for one read-decide-write, under its flock."""
    files = _prepare(service, root)
    with records.locked(files.sidecar):
        yield files, records.load(files.record, SCHEMA) or _fresh(service)


def _fresh(service: str) -> dict[str, Any]:
    """The record of a service never seen: closed, nothing counted."""
    return {
        "version": RECORD_VERSION,
        "service": service,
        "state": CLOSED,
        "failures": 0,
        "opened_at": None,
        "half_open_at": None,
        "trial": None,
        "totals": {"successes": 0, "failures": 0, "opened": 0, "trials": 0},
    }


# --- judging a record ---------------------------------------------------------------------


def _at(record: dict[str, Any], key: str) -> float | None:
    value = record.get(key)
    return timestamps.parse(value) if isinstance(value, str) else None


def _trial_live(trial: dict[str, Any] | None, now: float) -> bool:
    """The trial is still out: not expired, and its holder alive (when on this host)."""
    if not trial:
        return False
    if now >= timestamps.parse(trial["expires_at"]):
        return False
    return trial.get("host") != this_host() or pid_alive(trial.get("pid", 0), trial.get("pid_start"))


def effective_state(record: dict[str, Any], now: float) -> CircuitState:
    """The state as callers see it: an open circuit whose cooldown passed is half-open."""
    state: CircuitState = record["state"]
    if state == OPEN:
        half_open_at = _at(record, "half_open_at")
        if half_open_at is None or now >= half_open_at:
            return HALF_OPEN
    return state


def _live_trial(record: dict[str, Any], now: float) -> dict[str, Any] | None:
    trial = record.get("trial") if record.get("state") == HALF_OPEN else None
    return trial if trial and _trial_live(trial, now) else None


@value_class
class View:
    """A service's breaker as ``git st circuit status`` shows it."""

    service: str
    path: Path
    record: dict[str, Any] | None  # None: never used (closed)
    policy: Policy
    now: float

    @property
    def state(self) -> CircuitState:
        return effective_state(self.record, self.now) if self.record else CLOSED

    @property
    def trial(self) -> dict[str, Any] | None:
        """The trial call that is out, if any."""
        return _live_trial(self.record, self.now) if self.record else None

    @property
    def retry_in(self) -> float | None:
        """Seconds until a call may go through: the rest of the cooldown, or of the trial."""
        if self.record is None:
            return None
        if self.state == OPEN:
            half_open_at = _at(self.record, "half_open_at")
            return max(0.0, (half_open_at or self.now) - self.now)
        trial = self.trial
        if trial is not None:
            return max(0.0, timestamps.parse(trial["expires_at"]) - self.now)
        return None

    def to_dict(self) -> dict[str, Any]:
        record = self.record or _fresh(self.service)
        return {
            "service": self.service,
            "state": self.state,
            "stored_state": record["state"],
            "failures": record["failures"],
            "threshold": self.policy.threshold,
            "cooldown": self.policy.cooldown,
            "opened_at": record.get("opened_at"),
            "half_open_at": record.get("half_open_at"),
            "retry_in": _round(self.retry_in),
            "trial": self.trial,
            "last_success_at": record.get("last_success_at"),
            "last_failure_at": record.get("last_failure_at"),
            "last_error": record.get("last_error"),
            "totals": record.get("totals"),
            "path": str(self.path),
        }


def _round(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 3)


def view(service: str, root: Path, *, policy: Policy | None = None) -> View:
    """The breaker of ``service`` (read without the flock: records are replaced whole)."""
    files = _files(service, root)
    return View(
        service, files.record, records.load(files.record, SCHEMA), policy or policy_for(service), timestamps.now()
    )


def status(root: Path) -> tuple[list[View], list[records.CorruptRecord]]:
    """Every service's breaker under ``state/circuit/``, by name, and the unreadable records."""
    views, problems = [], []
    now = timestamps.now()
    for name, path, stored, problem in records.scan(root, DIRECTORY, SCHEMA, validate_service):
        if problem is not None:
            problems.append(problem)
        elif stored is not None:
            views.append(View(name, path, stored, policy_for(name), now))
    return views, problems


# --- admitting a call -----------------------------------------------------------------------


@value_class
class Admission:
    """Whether a call may go through now."""

    service: str
    allowed: bool
    state: CircuitState  # as the caller found it
    record: dict[str, Any]
    trial: dict[str, Any] | None = None  # the trial call this caller holds (allowed while half-open)
    holder: dict[str, Any] | None = None  # another caller's trial that kept this one out
    retry_in: float | None = None  # when refused: seconds until it is worth asking again
    taken: bool = False  # this admission took the trial now (not an earlier one of the session)

    def to_dict(self) -> dict[str, Any]:
        return {
            "service": self.service,
            "allowed": self.allowed,
            "state": self.state,
            "trial": self.trial,
            "holder": self.holder,
            "retry_in": _round(self.retry_in),
            "half_open_at": self.record.get("half_open_at"),
            "failures": self.record.get("failures", 0),
        }


class ShortCircuited(ConflictError):
    """A call refused because the circuit is open or its trial call is out (exit 3)."""

    def __init__(self, admission: Admission, doing: str = "not running the command"):
        self.admission = admission
        super().__init__(
            f"circuit {admission.service} is {describe_refusal(admission)}: {doing}",
            fix=f"retry later, or `git st circuit reset {admission.service}` once the service is known to be back",
        )


def in_seconds(seconds: float) -> str:
    """``in 41.8s`` under a minute (a cooldown is often seconds), else ``in 4m 59s``."""
    return f"in {seconds:.1f}s" if seconds < 60 else timestamps.human_delta(seconds)


def describe_refusal(admission: Admission) -> str:
    """``open (5 consecutive failures); half-open in 42s (at …)`` / ``half-open, its trial call is out …``."""
    when = in_seconds(admission.retry_in or 0.0)
    if admission.holder is not None:
        holder = admission.holder
        return (
            f"half-open and its one trial call is out (session {holder.get('session')}, pid {holder.get('pid')} "
            f"on {holder.get('host')}; it expires {when})"
        )
    return (
        f"open ({admission.record.get('failures', 0)} consecutive failures); "
        f"half-open {when} (at {admission.record.get('half_open_at')})"
    )


def admit(
    service: str,
    who: Identity,
    *,
    root: Path,
    policy: Policy | None = None,
    pid: int | None = None,
    pid_start: int | None = None,
    reuse_session_trial: bool = False,
) -> Admission:
    """Decide, under the record's flock, whether a call may go through now.

    Closed: yes. Open within the cooldown: no (``retry_in`` = the rest of it). Half-open: the
    caller takes the trial when none is out (``pid``/``pid_start`` name the process whose
    life keeps it; default the session's), else no. ``reuse_session_trial``: a trial the same
    session already holds is the caller's (``circuit check`` run twice in one session).
    """
    policy = policy or policy_for(service)
    with _locked(service, root) as (files, current):
        now = timestamps.now()
        state = effective_state(current, now)
        if state == CLOSED:
            return Admission(service, True, state, current)
        if state == OPEN:
            half_open_at = _at(current, "half_open_at") or now
            return Admission(service, False, state, current, retry_in=max(0.0, half_open_at - now))
        trial = _live_trial(current, now)
        if trial is not None:
            if reuse_session_trial and trial.get("session") == who.session:
                return Admission(service, True, state, current, trial=trial)
            left = timestamps.parse(trial["expires_at"]) - now
            return Admission(service, False, state, current, holder=trial, retry_in=max(0.0, left))
        _end_abandoned_command(current.get("trial") if current.get("state") == HALF_OPEN else None)
        holder_pid = who.pid if pid is None else pid
        trial = {
            "token": secrets.token_hex(8),
            "session": who.session,
            "pid": holder_pid,
            "host": who.host,
            "started_at": timestamps.iso(now),
            "expires_at": timestamps.iso(now + policy.trial_timeout),
        }
        start = (who.pid_start if pid is None else pid_start) if holder_pid else None
        if start is not None:
            trial["pid_start"] = start
        updated = dict(current)
        updated.update({"state": HALF_OPEN, "trial": trial, "updated_at": timestamps.iso(now)})
        _count(updated, "trials")
        records.save(files.record, updated, SCHEMA)
        return Admission(service, True, state, updated, trial=trial, taken=True)


def check(service: str, who: Identity, *, root: Path, policy: Policy | None = None) -> Admission:
    """``git st circuit check``: :func:`admit` for the session (a trial taken here is the
    session's until it reports the outcome with :func:`record`)."""
    return admit(service, who, root=root, policy=policy, reuse_session_trial=True)


# --- reporting outcomes ---------------------------------------------------------------------


@value_class
class Recorded:
    """What reporting an outcome did."""

    service: str
    before: CircuitState
    after: CircuitState
    record: dict[str, Any]
    settled_trial: bool = False  # the outcome settled the half-open trial

    @property
    def opened(self) -> bool:
        return self.after == OPEN and (self.before != OPEN or self.settled_trial)

    @property
    def closed(self) -> bool:
        return self.after == CLOSED and self.before != CLOSED


def _count(record: dict[str, Any], name: str) -> None:
    totals = dict(record.get("totals") or {})
    totals[name] = int(totals.get(name, 0)) + 1
    record["totals"] = totals


def _open(record: dict[str, Any], now: float, policy: Policy) -> None:
    record.update(
        {
            "state": OPEN,
            "opened_at": timestamps.iso(now),
            "half_open_at": timestamps.iso(now + policy.cooldown),
            "cooldown": policy.cooldown,
            "trial": None,
        }
    )
    _count(record, "opened")


def _close(record: dict[str, Any]) -> None:
    record.update({"state": CLOSED, "failures": 0, "opened_at": None, "half_open_at": None, "trial": None})


def record(
    service: str,
    outcome: Outcome,
    who: Identity,
    *,
    root: Path,
    policy: Policy | None = None,
    token: str | None = None,
    error: str | None = None,
) -> Recorded:
    """Report one call's outcome (see the module docstring for each state's rule).

    The trial is settled by its ``token`` (``circuit run``) or, without one, by the session
    that holds it (``circuit check`` then ``circuit record``).
    """
    policy = policy or policy_for(service)
    with _locked(service, root) as (files, current):
        now = timestamps.now()
        before = effective_state(current, now)
        updated = dict(current)
        trial = current.get("trial") if current.get("state") == HALF_OPEN else None
        mine = trial is not None and (trial.get("token") == token if token else trial.get("session") == who.session)
        live = _live_trial(current, now) is not None
        stamp = timestamps.iso(now)
        settled = False
        if outcome == "success":
            _count(updated, "successes")
            updated["last_success_at"] = stamp
            if before == CLOSED:
                updated["failures"] = 0
            elif before == HALF_OPEN:
                settled = trial is not None
                _close(updated)
        else:
            _count(updated, "failures")
            updated["last_failure_at"] = stamp
            updated["last_error"] = None if error is None else error[:MAX_ERROR]
            updated["failures"] = int(current.get("failures", 0)) + 1
            if before == CLOSED and updated["failures"] >= policy.threshold:
                _open(updated, now, policy)
            elif before == HALF_OPEN and (mine or not live):
                settled = trial is not None
                _open(updated, now, policy)
        updated["updated_at"] = stamp
        records.save(files.record, updated, SCHEMA)
        return Recorded(service, before, effective_state(updated, now), updated, settled)


def cancel_trial(service: str, token: str, *, root: Path) -> bool:
    """Give back a trial that never ran (the command could not start, or the caller was
    interrupted): the circuit is half-open again for the next caller. False when the trial
    was no longer ours."""
    with _locked(service, root) as (files, current):
        trial = current.get("trial")
        if current.get("state") != HALF_OPEN or not trial or trial.get("token") != token:
            return False
        updated = dict(current)
        updated.update({"state": OPEN, "trial": None, "updated_at": timestamps.iso(timestamps.now())})
        records.save(files.record, updated, SCHEMA)
        return True


def reset(service: str, *, root: Path) -> tuple[CircuitState, dict[str, Any]]:
    """Close the circuit by hand (the service is known to be back): ``(state before, record)``.
    The totals are kept."""
    with _locked(service, root) as (files, current):
        now = timestamps.now()
        before = effective_state(current, now)
        updated = dict(current)
        _close(updated)
        updated["updated_at"] = timestamps.iso(now)
        records.save(files.record, updated, SCHEMA)
        return before, updated


# --- wrapping a command ---------------------------------------------------------------------


@value_class
class RunResult:
    exit_code: int  # the command's (128 + N when killed by signal N; 124 on --timeout)
    admission: Admission
    recorded: Recorded
    error: str | None  # why it counted as a failure
    timed_out: bool = False  # ended by --timeout (or the trial's lease): exit 124


def _exit_text(code: int) -> str:
    if code < 0:
        return f"killed by signal {-code}"
    return f"exit {code}"


def run(
    service: str,
    argv: list[str],
    who: Identity,
    *,
    root: Path,
    policy: Policy | None = None,
    timeout: float | None = None,
) -> RunResult:
    """Run ``argv`` through the breaker: short-circuit (:class:`ShortCircuited`, exit 3) while
    open or while another caller's trial is out; otherwise run it (stdin, stdout and stderr
    are the caller's), count a non-zero exit, a signal or ``timeout`` as a failure, and report
    the outcome. The trial this process takes is its own: it ends with this process.

    The command runs in a process group of its own (the terminal's foreground group while it
    runs, when ``circuit run`` had the terminal). A timeout, an interruption (Ctrl-C, SIGTERM,
    SIGHUP) and the trial's expiry end the whole group: SIGTERM, then SIGKILL after
    :data:`~gitst.circuits.groups.TERMINATE_GRACE` seconds. A trial records the group (``pgid``), so when this
    process is killed outright the next caller ends the group before it takes a new trial."""
    policy = policy or policy_for(service)
    me = os.getpid()
    admission = admit(service, who, root=root, policy=policy, pid=me, pid_start=process_start(me))
    if not admission.allowed:
        raise ShortCircuited(admission)
    token = admission.trial["token"] if admission.trial else None
    limit = timeout
    if token is not None and (limit is None or limit > policy.trial_timeout):
        limit = policy.trial_timeout  # a trial's command never outlives the trial's lease
    with terminal_signals_interrupt():
        proc = _start(service, argv, token, root=root)
        code, error, timed_out = _supervise(proc, service, token, root=root, limit=limit, timeout=timeout)
    if code != 0 and error is None:
        error = _exit_text(code)
    recorded = record(
        service, "success" if code == 0 else "failure", who, root=root, policy=policy, token=token, error=error
    )
    return RunResult(code if code >= 0 else 128 - code, admission, recorded, error, timed_out)


def _start(service: str, argv: list[str], token: str | None, *, root: Path) -> subprocess.Popen[bytes]:
    """The command, started as the leader of a group of its own; a command that cannot be
    started gives the trial back (exit 4)."""
    try:
        return subprocess.Popen(argv, **own_group())  # noqa: S603 - the user's own command, as an argument list
    except OSError as exc:
        if token:
            cancel_trial(service, token, root=root)
        raise EnvironmentProblem(f"cannot run {argv[0]}: {exc.strerror or exc}") from None


def _supervise(
    proc: subprocess.Popen[bytes],
    service: str,
    token: str | None,
    *,
    root: Path,
    limit: float | None,
    timeout: float | None,
) -> tuple[int, str | None, bool]:
    """Wait for the command within ``limit`` (in the terminal's foreground while it runs):
    ``(exit code, why it failed, timed out)``. An interruption ends its group and gives the
    trial back: the outcome says nothing about the service."""
    error, timed_out = None, False
    try:
        with foreground(proc.pid):
            if token:
                _note_group(service, token, proc.pid, root=root)
            try:
                code = proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                end_group(proc.pid, leader=proc)
                code, timed_out = 124, True
                error = (
                    f"timed out after {limit:g}s"
                    if limit == timeout
                    else f"the trial call's lease ended after {limit:g}s (st.circuit.trialTimeout)"
                )
        if code == -signal_number("SIGINT"):
            raise KeyboardInterrupt  # Ctrl-C reached the command's group: an interruption
    except BaseException:  # interrupted: the outcome says nothing about the service
        end_group(proc.pid, leader=proc)
        if token:
            cancel_trial(service, token, root=root)
        raise
    return code, error, timed_out


def _note_group(service: str, token: str, pgid: int, *, root: Path) -> None:
    """Record the trial command's process group in the trial (``pgid``, its leader's start)."""
    with _locked(service, root) as (files, current):
        trial = current.get("trial")
        if current.get("state") != HALF_OPEN or not trial or trial.get("token") != token:
            return
        updated = dict(current)
        updated["trial"] = {**trial, "pgid": pgid}
        start = process_start(pgid)
        if start is not None:
            updated["trial"]["pgid_start"] = start
        records.save(files.record, updated, SCHEMA)


def _end_abandoned_command(trial: dict[str, Any] | None) -> None:
    """The command of a trial no longer live (its ``circuit run`` was killed, or the lease
    ended) whose process group still runs on this host: end it, so two trial calls are never
    in flight. The group is the recorded one: its leader, when still there, started when
    the trial recorded it (a pid reused since is left alone)."""
    if not trial:
        return
    pgid = trial.get("pgid")
    if not isinstance(pgid, int) or pgid <= 1 or trial.get("host") != this_host():
        return
    members = group_members(pgid)
    if not members:
        return
    if pgid in members and process_start(pgid) != trial.get("pgid_start"):
        return  # the pid names another process now
    end_group(pgid)
