"""`git st circuit`: a breaker per service that opens after the threshold, short-circuits while
open, lets exactly one trial call through when half-open and closes after its success — shown
with real `git-st` processes racing for it, a killed trial holder, and the settings."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gitst.core import timestamps
from tests.support import assert_valid, git, read_json, session_env, st

WORKERS = 8
THRESHOLD = 3
COOLDOWN = 4.0  # long enough that, on a loaded machine, the first wave has ended before it does
TRIAL_SECONDS = 1.5  # how long a call takes once the service is back: the trial is out that long

CALL = """\
import os, sys, time
mode_file, log = sys.argv[1], sys.argv[2]
start = time.time()
mode = open(mode_file).read().strip()
if mode == "ok":
    time.sleep(float(sys.argv[3]))
end = time.time()
with open(log, "a") as handle:  # one write of one line: lines of racing calls never interleave
    handle.write(f"{os.getpid()} {start} {end} {mode}\\n")
sys.exit(0 if mode == "ok" else 1)
"""


def _record(repo: Path, service: str) -> dict:
    return read_json(repo / "state" / "circuit" / f"{service}.json")


def _calls(log: Path) -> list[tuple[float, float, str]]:
    if not log.exists():
        return []
    rows = []
    for line in log.read_text().splitlines():
        _, start, end, mode = line.split()
        rows.append((float(start), float(end), mode))
    return sorted(rows)


def _worker(argv, cwd, env, stop_on: int, deadline: float, out: list) -> None:
    """Call `circuit run` until it exits ``stop_on`` (or the deadline passes); keep every result."""
    while time.monotonic() < deadline:
        began = time.time()
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False)
        out.append((began, time.time(), proc.returncode, proc.stderr))
        if proc.returncode == stop_on:
            return
        time.sleep(0.05)


def _race(argv, cwd, stop_on: int, seconds: float) -> list[list]:
    results: list[list] = [[] for _ in range(WORKERS)]
    deadline = time.monotonic() + seconds
    threads = []
    for index in range(WORKERS):
        env = dict(os.environ, **session_env(f"agent-{index}"))
        threads.append(threading.Thread(target=_worker, args=(argv, cwd, env, stop_on, deadline, results[index])))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_eight_processes_open_the_breaker_then_exactly_one_trial_closes_it(repo, tmp_path):
    git("config", "st.circuit.threshold", str(THRESHOLD), cwd=repo)
    git("config", "st.circuit.cooldown", str(COOLDOWN), cwd=repo)
    mode, log, script = tmp_path / "mode", tmp_path / "calls.log", tmp_path / "call.py"
    script.write_text(CALL)
    mode.write_text("fail")
    argv = ["git-st", "circuit", "run", "flaky", "--", sys.executable, str(script), str(mode), str(log)]
    argv.append(str(TRIAL_SECONDS))

    # 1. the service fails: every worker calls until the breaker short-circuits it (exit 3)
    failing = _race(argv, repo, stop_on=3, seconds=90)
    opened = _record(repo, "flaky")
    assert opened["state"] == "open", opened
    calls = _calls(log)
    assert all(m == "fail" for _, _, m in calls)
    assert opened["failures"] == len(calls) >= THRESHOLD
    # Every opening after the first is a failed half-open trial (a worker slower than the
    # cooldown), never a closed circuit counting on; the calls admitted while closed are at
    # most the threshold plus what the 7 other workers had already started when the
    # threshold-th failure was recorded (the breaker cannot recall a running call).
    trials = opened["totals"]["trials"]
    assert opened["totals"]["opened"] == 1 + trials, opened
    assert THRESHOLD <= len(calls) - trials <= THRESHOLD + WORKERS - 1, (calls, trials)
    for results in failing:
        assert results and results[-1][2] == 3, results
        refusal = results[-1][3]  # open (with the seconds until half-open), or another worker's trial is out
        assert ("circuit flaky is open" in refusal and "half-open in" in refusal) or "trial call is out" in refusal
        assert [rc for _, _, rc, _ in results[:-1]] == [1] * (len(results) - 1)  # the command's own exit code
    assert any("circuit flaky is open" in results[-1][3] for results in failing)
    assert_valid(opened, "state-circuit")

    # 2. the service is back while the circuit is open: calls keep being refused until the
    #    cooldown ends, then exactly one runs (the trial) and closes it; then all go through
    mode.write_text("ok")
    half_open_at = timestamps.parse(opened["half_open_at"])
    recovering = _race(argv, repo, stop_on=0, seconds=90)
    closed = _record(repo, "flaky")
    assert closed["state"] == "closed" and closed["failures"] == 0, closed
    assert closed["totals"]["trials"] == trials + 1 and closed["totals"]["opened"] == 1 + trials, closed
    ok_calls = [(start, end) for start, end, m in _calls(log) if m == "ok"]
    trial_start, trial_end = ok_calls[0]
    assert trial_start >= half_open_at  # nothing ran while open
    others = ok_calls[1:]
    assert all(start >= trial_end for start, _ in others), (ok_calls, trial_end)  # the trial ran alone
    assert len(ok_calls) == WORKERS  # every worker got through once it closed
    for results in recovering:
        assert results[-1][2] == 0, results
    refused_during_trial = [
        stderr
        for results in recovering
        for _, _, rc, stderr in results
        if rc == 3 and "its one trial call is out" in stderr
    ]
    assert refused_during_trial, "no worker asked while the trial was out: the race did not happen"
    assert_valid(closed, "state-circuit")


def _open_circuit(repo, service: str, cooldown: float) -> dict:
    git("config", f"st.circuit.{service}.threshold", "1", cwd=repo)
    git("config", f"st.circuit.{service}.cooldown", str(cooldown), cwd=repo)
    assert st("circuit", "record", "failure", service, "--error", "503", cwd=repo).returncode == 0
    return _record(repo, service)


def test_eight_simultaneous_checks_of_a_half_open_circuit_grant_exactly_one_trial(repo):
    _open_circuit(repo, "codex", 0.3)
    time.sleep(0.4)
    procs = [
        subprocess.Popen(
            ["git-st", "circuit", "check", "codex", "--format", "json"],
            cwd=repo,
            env=dict(os.environ, **session_env(f"s{index}")),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in range(WORKERS)
    ]
    outcomes = []
    for index, proc in enumerate(procs):
        out, err = proc.communicate(timeout=60)
        outcomes.append((index, proc.returncode, json.loads(out), err))
    winners = [o for o in outcomes if o[1] == 0]
    assert len(winners) == 1, outcomes
    [(winner, _, granted, _)] = winners
    assert granted["allowed"] is True and granted["trial"]["session"] == f"s{winner}"
    for _, code, refused, _ in outcomes:
        if code == 3:
            assert refused["allowed"] is False and refused["holder"]["session"] == f"s{winner}"
            assert 0 < refused["retry_in"] <= 300
    # the same session asking again still holds it; its success closes the circuit
    again = st("circuit", "check", "codex", cwd=repo, env=session_env(f"s{winner}"))
    assert again.returncode == 0 and "holds the one trial call" in again.stdout
    done = st("circuit", "record", "success", "codex", cwd=repo, env=session_env(f"s{winner}"))
    assert done.returncode == 0 and "closed" in done.stdout
    assert _record(repo, "codex")["state"] == "closed"


def test_check_says_how_long_until_half_open_and_the_threshold_counts_consecutive_failures(repo):
    git("config", "st.circuit.threshold", "3", cwd=repo)
    git("config", "st.circuit.cooldown", "120", cwd=repo)
    for _ in range(2):
        assert st("circuit", "record", "failure", "gemini", cwd=repo).returncode == 0
    assert st("circuit", "record", "success", "gemini", cwd=repo).returncode == 0  # resets the count
    for _ in range(2):
        assert st("circuit", "record", "failure", "gemini", cwd=repo).returncode == 0
    still = st("circuit", "check", "gemini", cwd=repo)
    assert still.returncode == 0 and "closed (2 consecutive failures)" in still.stdout
    opened = st("circuit", "record", "failure", "gemini", "--error", "exit 1: 502", cwd=repo)
    assert "circuit gemini opened: 3 consecutive failures" in opened.stdout
    refused = st("circuit", "check", "gemini", "--format", "json", cwd=repo)
    assert refused.returncode == 3
    verdict = json.loads(refused.stdout)
    assert verdict["allowed"] is False and verdict["state"] == "open"
    assert 115 < verdict["retry_in"] <= 120
    text = st("circuit", "check", "gemini", cwd=repo)
    assert text.returncode == 3 and "half-open in 1m 5" in text.stdout  # 1m 59s … 1m 55s
    status = json.loads(st("circuit", "status", "--format", "json", cwd=repo).stdout)
    [view] = status["circuits"]
    assert view["service"] == "gemini" and view["state"] == "open" and view["threshold"] == 3
    assert view["last_error"] == "exit 1: 502" and view["totals"]["failures"] == 5
    reset = st("circuit", "reset", "gemini", cwd=repo)
    assert reset.returncode == 0 and "open -> closed" in reset.stdout
    assert st("circuit", "check", "gemini", cwd=repo).returncode == 0
    assert _record(repo, "gemini")["totals"]["failures"] == 5  # reset keeps the totals


def test_a_killed_trial_holder_frees_the_trial_at_once(repo, tmp_path):
    _open_circuit(repo, "ollama", 0.3)
    time.sleep(0.4)
    started = tmp_path / "started"
    holder = subprocess.Popen(
        ["git-st", "circuit", "run", "ollama", "--", "sh", "-c", f"touch {started}; sleep 30"],
        cwd=repo,
        env=dict(os.environ, **session_env("holder")),
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists()
        busy = st("circuit", "check", "ollama", cwd=repo, env=session_env("other"))
        assert busy.returncode == 3 and "its one trial call is out (session holder" in busy.stdout
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
    taken = st("circuit", "check", "ollama", cwd=repo, env=session_env("other"))
    assert taken.returncode == 0 and "holds the one trial call" in taken.stdout
    assert _record(repo, "ollama")["trial"]["session"] == "other"


def test_run_timeout_and_a_command_that_cannot_start(repo):
    git("config", "st.circuit.threshold", "2", cwd=repo)
    slow = st("circuit", "run", "svc", "--timeout", "0.5", "--", "sleep", "20", cwd=repo, timeout=60)
    assert slow.returncode == 124, slow
    assert _record(repo, "svc")["last_error"] == "timed out after 0.5s"
    missing = st("circuit", "run", "svc", "--", "no-such-command-gitst", cwd=repo)
    assert missing.returncode == 4 and "cannot run no-such-command-gitst" in missing.stderr
    assert _record(repo, "svc")["failures"] == 1  # not the service's fault: nothing counted
    # half-open: a command that cannot start gives the trial back to the next caller
    _open_circuit(repo, "svc2", 0.2)
    time.sleep(0.3)
    assert st("circuit", "run", "svc2", "--", "no-such-command-gitst", cwd=repo).returncode == 4
    assert _record(repo, "svc2")["trial"] is None
    assert st("circuit", "run", "svc2", "--", "true", cwd=repo).returncode == 0
    assert _record(repo, "svc2")["state"] == "closed"


def test_run_passes_the_command_through_and_returns_its_exit_code(repo):
    result = st("circuit", "run", "echoer", "--", "sh", "-c", "echo out; echo err >&2; exit 7", cwd=repo)
    assert result.returncode == 7
    assert result.stdout == "out\n" and "err" in result.stderr.splitlines()  # (and gitst's own note)
    assert _record(repo, "echoer")["last_error"] == "exit 7"
    usage = st("circuit", "run", "echoer", cwd=repo)
    assert usage.returncode == 2


def test_settings_environment_beats_the_services_key_beats_the_global_key(repo):
    git("config", "st.circuit.threshold", "4", cwd=repo)
    git("config", "st.circuit.codex.threshold", "2", cwd=repo)
    assert (
        json.loads(st("circuit", "status", "codex", "--format", "json", cwd=repo).stdout)["circuits"][0]["threshold"]
        == 2
    )
    assert (
        json.loads(st("circuit", "status", "gemini", "--format", "json", cwd=repo).stdout)["circuits"][0]["threshold"]
        == 4
    )
    env = {"ST_CIRCUIT_THRESHOLD": "9"}
    assert (
        json.loads(st("circuit", "status", "codex", "--format", "json", cwd=repo, env=env).stdout)["circuits"][0][
            "threshold"
        ]
        == 9
    )
    git("config", "st.circuit.codex.cooldown", "soon", cwd=repo)
    bad = st("circuit", "check", "codex", cwd=repo)
    assert bad.returncode == 2 and "git config st.circuit.codex.cooldown must be a number of seconds" in bad.stderr


@pytest.mark.parametrize("bad", ["../x", "a/b", "a..b", "x" * 65])
def test_a_bad_service_name_is_refused_and_nothing_is_written(repo, bad):
    for args in (["check", bad], ["record", "failure", bad], ["run", bad, "--", "true"], ["reset", bad]):
        result = st("circuit", *args, cwd=repo)
        assert result.returncode == 2 and "invalid service name" in result.stderr, result
    assert not (repo / "state").exists()


def test_a_corrupt_record_is_reported_with_its_code_and_the_others_listed(repo):
    assert st("circuit", "record", "failure", "good", cwd=repo).returncode == 0
    (repo / "state" / "circuit" / "broken.json").write_text('{"service": "broken", "state": "tripped", "failures": 0}')
    listed = st("circuit", "status", cwd=repo)
    assert listed.returncode == 1 and "good" in listed.stdout
    assert "broken.json: error[SCHEMA]" in listed.stderr
    validated = st("validate", cwd=repo)
    assert validated.returncode == 1 and "state/circuit/broken.json" in validated.stderr


# --- the command's whole process tree ------------------------------------------------------

# Two background children that outlive their shell unless their process group is ended; their
# pids go to a file (their output to /dev/null, so no pipe of the test waits on them).
TREE = (
    'sleep 300 >/dev/null 2>&1 & echo $! >> "$1"; sleep 300 >/dev/null 2>&1 & echo $! >> "$1"; touch "$1.ready"; wait'
)


def _running(pid: int) -> bool:
    """``pid`` is a process that has not ended (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def _children(pids_file: Path) -> list[int]:
    return [int(line) for line in pids_file.read_text().split()] if pids_file.exists() else []


def _wait_for(condition, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _kill_all(pids) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_run_timeout_ends_the_commands_whole_process_group_and_says_so(repo, tmp_path):
    pids = tmp_path / "pids"
    try:
        # (5 s: time enough for the shell to start both children on a loaded machine)
        result = st("circuit", "run", "svc", "--timeout", "5", "--", "sh", "-c", TREE, "sh", str(pids), cwd=repo)
        assert result.returncode == 124, result
        assert "sh timed out after 5s: it was stopped with its whole process group (exit 124)" in result.stderr
        assert len(_children(pids)) == 2
        assert [pid for pid in _children(pids) if _running(pid)] == []  # ended, not left behind
        assert _record(repo, "svc")["last_error"] == "timed out after 5s"
    finally:
        _kill_all(_children(pids))


def test_a_killed_trial_holders_command_is_ended_before_the_next_trial(repo, tmp_path):
    """SIGKILL the `circuit run` holding the trial: its command's group outlives it, but the
    next caller ends that group before it runs the new trial - never two trials in flight."""
    _open_circuit(repo, "flaky", 0.3)
    time.sleep(0.4)
    pids = tmp_path / "pids"
    holder = subprocess.Popen(
        ["git-st", "circuit", "run", "flaky", "--", "sh", "-c", TREE, "sh", str(pids)],
        cwd=repo,
        env=dict(os.environ, **session_env("holder")),
    )
    try:
        assert _wait_for(lambda: Path(f"{pids}.ready").exists())
        # (gitst records the command's group in the trial just after starting it)
        _wait_for(lambda: (_record(repo, "flaky").get("trial") or {}).get("pgid") is not None, 30)
        holder.kill()  # this process only: its command's group keeps running
        holder.wait(timeout=60)
        assert all(_running(pid) for pid in _children(pids))
        after = st("circuit", "run", "flaky", "--", "true", cwd=repo, env=session_env("next"))
        assert after.returncode == 0, after
        assert [pid for pid in _children(pids) if _running(pid)] == []
        assert _record(repo, "flaky")["state"] == "closed"
    finally:
        holder.kill()
        holder.wait(timeout=60)
        _kill_all(_children(pids))
