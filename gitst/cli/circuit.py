"""`git st circuit status|check|record|reset|run` — a circuit breaker per external service in
state/circuit/<service>.json (logic in gitst.circuits.breaker; docs/store.md)."""

from __future__ import annotations

import click

from gitst.circuits import breaker
from gitst.cli._parallel import format_option, report_corrupt, session_option, state_root, table, who
from gitst.cli.output import emit_json, sanitize, write
from gitst.core.errors import UsageError
from gitst.settings import parse_seconds
from gitst.statedir.records import CorruptRecord


@click.group("circuit")
def circuit() -> None:
    """Circuit breakers for external services (state/circuit/<service>.json).

    closed: calls pass; after `st.circuit.threshold` consecutive failures (default 5) the
    circuit opens. open: calls are short-circuited (exit 3) for `st.circuit.cooldown`
    seconds (default 60). half-open: exactly one trial call goes through; its success
    closes the circuit, its failure opens it again. `st.circuit.<service>.threshold` (and
    .cooldown, .trialTimeout) override one service.
    """


def _when(seconds: float | None) -> str:
    return "-" if seconds is None else breaker.in_seconds(seconds)


@circuit.command("status")
@click.argument("service", required=False)
@format_option
def status(service: str | None, fmt: str) -> int:
    """Show every service's breaker, or SERVICE's (a service never used is closed)."""
    root = state_root()
    if service is not None:
        views = [breaker.view(service, root)]  # one record: a corrupt one is an error (exit 1)
        problems: list[CorruptRecord] = []
    else:
        views, problems = breaker.status(root)
    if fmt == "json":
        emit_json({"circuits": [v.to_dict() for v in views]})
    elif views:
        write(table([_status_row(v) for v in views], ["SERVICE", "STATE", "FAILURES", "RETRY", "TRIAL", "LAST ERROR"]))
    else:
        write("no circuits")
    return report_corrupt(problems)


def _status_row(view: breaker.View) -> list[str]:
    data = view.to_dict()
    trial = data["trial"]
    return [
        sanitize(view.service),
        data["state"],
        f"{data['failures']}/{data['threshold']}",
        _when(data["retry_in"]) if data["state"] != "closed" else "-",
        sanitize(f"{trial['session']} (pid {trial['pid']})") if trial else "-",
        sanitize(data["last_error"] or "-"),
    ]


@circuit.command("check")
@click.argument("service")
@session_option
@format_option
def check(service: str, session: str | None, fmt: str) -> int:
    """Exit 0 when a call to SERVICE may go through, 3 when the circuit is open.

    Closed: exit 0. Open: exit 3 with the seconds until it half-opens. Half-open: the first
    session to ask takes the one trial call (exit 0; report it with `git st circuit record
    success|failure SERVICE`), everybody else gets exit 3 until it is reported or expires.
    """
    got = breaker.check(service, who(session), root=state_root())
    if fmt == "json":
        emit_json(got.to_dict())
    elif not got.allowed:
        write(f"{sanitize(service)}: {breaker.describe_refusal(got)}")
    elif got.trial is not None:
        write(
            f"{sanitize(service)}: half-open: this session holds the one trial call; report it with "
            f"`git st circuit record success|failure {sanitize(service)}`"
        )
    else:
        write(f"{sanitize(service)}: closed ({got.record.get('failures', 0)} consecutive failures): calls go through")
    return 0 if got.allowed else 3


@circuit.command("record")
@click.argument("outcome", type=click.Choice(["success", "failure"]))
@click.argument("service")
@click.option("--error", "error", metavar="TEXT", help="What the failure said (kept as last_error).")
@session_option
@format_option
def record_(outcome: breaker.Outcome, service: str, error: str | None, session: str | None, fmt: str) -> int:
    """Report the outcome of one call to SERVICE (a failure may open the circuit; the
    session's trial call settles a half-open one)."""
    done = breaker.record(service, outcome, who(session), root=state_root(), error=error)
    if fmt == "json":
        emit_json({"service": service, "before": done.before, "after": done.after, "record": done.record})
    else:
        write(_change(done))
    return 0


@circuit.command("reset")
@click.argument("service")
@format_option
def reset(service: str, fmt: str) -> int:
    """Close SERVICE's circuit by hand (the service is known to be back); totals are kept."""
    before, stored = breaker.reset(service, root=state_root())
    if fmt == "json":
        emit_json({"service": service, "before": before, "record": stored})
    else:
        write(f"{sanitize(service)}: {before.replace('_', '-')} -> closed (reset)")
    return 0


@circuit.command("run", context_settings={"ignore_unknown_options": True})
@click.argument("service")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--timeout", "timeout", metavar="SECONDS", help="Stop the command after this long (counts as a failure).")
@session_option
def run(service: str, command: tuple[str, ...], timeout: str | None, session: str | None) -> int:
    """Run COMMAND through SERVICE's circuit breaker: `git st circuit run codex -- codex exec …`.

    Open: COMMAND is not run (exit 3, with the seconds until half-open). Half-open: exactly
    one caller runs it as the trial; the others get exit 3. Otherwise it runs with your
    stdin, stdout and stderr, in a process group of its own; exit 0 is a success, anything
    else a failure. --timeout (and, for the trial call, st.circuit.trialTimeout) ends the
    whole group, SIGTERM then SIGKILL after 2s, says so on stderr and exits 124. Exits with
    COMMAND's own exit code.
    """
    argv = list(command[1:] if command[:1] == ("--",) else command)
    if not argv:
        raise UsageError("no command to run", fix=f"git st circuit run {service} -- COMMAND [ARGS...]")
    limit = None if timeout is None else parse_seconds(timeout, "--timeout", allow_zero=False)
    done = breaker.run(service, argv, who(session), root=state_root(), timeout=limit)
    if done.timed_out:
        write(
            f"gitst: {sanitize(argv[0])} {done.error}: it was stopped with its whole process group (exit 124)", err=True
        )
    if done.recorded.opened or done.recorded.closed or done.admission.trial is not None:
        write("gitst: " + _change(done.recorded), err=True)
    return done.exit_code


def _change(done: breaker.Recorded) -> str:
    name = sanitize(done.service)
    stored = done.record
    if done.opened:
        why = "its trial call failed" if done.settled_trial else f"{stored['failures']} consecutive failures"
        return f"circuit {name} opened: {why}; half-open at {stored['half_open_at']}"
    if done.closed:
        return f"circuit {name} closed: {'its trial call' if done.settled_trial else 'a call'} succeeded"
    state = done.after.replace("_", "-")
    if done.after == breaker.CLOSED:
        return f"circuit {name} closed ({stored['failures']} consecutive failures)"
    return f"circuit {name} {state} ({stored['failures']} consecutive failures)"
