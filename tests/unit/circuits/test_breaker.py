"""The breaker's state machine, decision by decision (gitst.circuits.breaker; docs/store.md):
what each outcome does in each state, and who settles a half-open trial."""

from __future__ import annotations

import os
import time

import pytest

from gitst.circuits import breaker
from gitst.core import timestamps
from gitst.sessions.identity import Identity, process_start
from tests.support import assert_valid, dead_pid

POLICY = breaker.Policy(threshold=2, cooldown=0.3, trial_timeout=30)
# For the tests that look at an open circuit: it stays open however slow the machine is.
LONG = breaker.Policy(threshold=2, cooldown=600, trial_timeout=30)


def me(session: str = "a", pid: int | None = None) -> Identity:
    pid = os.getpid() if pid is None else pid
    return Identity(session=session, pid=pid, host="testhost", actor="t", pid_start=process_start(pid))


@pytest.fixture(autouse=True)
def _host(monkeypatch):
    monkeypatch.setenv("ST_HOST", "testhost")


def _fail(root, who=None, policy=POLICY, **kwargs):
    return breaker.record("svc", "failure", who or me(), root=root, policy=policy, **kwargs)


def _open(root, policy=POLICY):
    _fail(root, policy=policy)
    done = _fail(root, policy=policy)
    assert done.opened and done.after == "open"
    return done.record


def test_a_circuit_never_seen_is_closed_and_admits_without_writing(tmp_path):
    got = breaker.admit("svc", me(), root=tmp_path, policy=POLICY)
    assert got.allowed and got.state == "closed" and got.trial is None
    assert not (tmp_path / "circuit" / "svc.json").exists()


def test_failures_while_open_are_counted_but_do_not_push_the_cooldown_back(tmp_path):
    opened = _open(tmp_path, LONG)
    again = _fail(tmp_path, policy=LONG)
    assert again.after == "open" and not again.opened
    assert again.record["half_open_at"] == opened["half_open_at"]
    assert again.record["failures"] == 3 and again.record["totals"]["opened"] == 1
    refused = breaker.admit("svc", me(), root=tmp_path, policy=LONG)
    assert not refused.allowed and 0 < refused.retry_in <= LONG.cooldown


def test_a_success_within_the_cooldown_is_counted_only(tmp_path):
    _open(tmp_path, LONG)
    done = breaker.record("svc", "success", me(), root=tmp_path, policy=LONG)
    assert done.after == "open" and done.record["totals"]["successes"] == 1


def _half_open(tmp_path, who=None):
    _open(tmp_path)
    time.sleep(POLICY.cooldown + 0.05)
    got = breaker.admit("svc", who or me("holder"), root=tmp_path, policy=POLICY)
    assert got.allowed and got.taken and got.trial is not None
    assert_valid(got.record, "state-circuit")
    return got


def test_only_one_trial_and_its_failure_reopens_for_another_cooldown(tmp_path):
    got = _half_open(tmp_path)
    other = breaker.admit("svc", me("other"), root=tmp_path, policy=POLICY)
    assert not other.allowed and other.holder["token"] == got.trial["token"]
    bystander = _fail(tmp_path, me("other"))  # a call that was already running: counted only
    assert bystander.after == "half_open" and not bystander.settled_trial
    reopened = _fail(tmp_path, me("other"), token=got.trial["token"])
    assert reopened.settled_trial and reopened.opened and reopened.after == "open"
    assert timestamps.parse(reopened.record["half_open_at"]) > timestamps.parse(got.record["half_open_at"])


def test_any_success_while_half_open_closes_the_circuit(tmp_path):
    _half_open(tmp_path)
    done = breaker.record("svc", "success", me("other"), root=tmp_path, policy=POLICY)
    assert done.closed and done.record["failures"] == 0 and done.record["trial"] is None


def test_the_session_of_a_check_trial_settles_it_without_a_token(tmp_path):
    _half_open(tmp_path)
    mine = breaker.check("svc", me("holder"), root=tmp_path, policy=POLICY)
    assert mine.allowed and not mine.taken  # the session already holds it
    done = _fail(tmp_path, me("holder"))
    assert done.settled_trial and done.after == "open"


def test_a_trial_whose_holder_is_dead_goes_to_the_next_caller(tmp_path):
    got = _half_open(tmp_path, me("ghost", pid=dead_pid()))
    taken = breaker.admit("svc", me("next"), root=tmp_path, policy=POLICY)
    assert taken.allowed and taken.taken and taken.trial["token"] != got.trial["token"]


def test_a_trial_given_back_is_open_to_the_next_caller_at_once(tmp_path):
    got = _half_open(tmp_path)
    assert breaker.cancel_trial("svc", got.trial["token"], root=tmp_path)
    assert not breaker.cancel_trial("svc", got.trial["token"], root=tmp_path)  # no longer ours
    assert breaker.admit("svc", me("next"), root=tmp_path, policy=POLICY).taken


def test_reset_closes_and_keeps_the_totals(tmp_path):
    _open(tmp_path, LONG)
    before, record = breaker.reset("svc", root=tmp_path)
    assert before == "open" and record["state"] == "closed" and record["totals"]["failures"] == 2
