"""Claims through a remote reached by smart HTTP (issue 21.3's "Must show"): the real
`git http-backend` behind a server on 127.0.0.1 (tests/e2e/remote/http_remote.py), real clones,
real processes; the server answers, stalls on a push, or is slow. Nothing mocked."""

from __future__ import annotations

import json

import pytest

from tests.e2e.remote.conftest import clone
from tests.e2e.remote.test_remote_claims import contend, local_claim, remote_record
from tests.e2e.remote.test_remote_deadline import processes_in
from tests.support import git, session_env, st

DEADLINE = "3"  # the behaviour under test: a push that never answers is stopped after 3 s


def _env(session: str, host: str, **extra: str) -> dict:
    return session_env(session, ST_HOST=host, **extra)


def test_claim_heartbeat_release_and_sessions_work_over_smart_http(smart_http, bare, tmp_path):
    """`claim --remote` on clone A wins, clone B gets exit 3 naming A; heartbeat, release and
    `sessions --remote --format json` go through the HTTP remote."""
    url = smart_http.url()
    a, b = clone(url, tmp_path / "a"), clone(url, tmp_path / "b")
    # B has local history the remote lacks: its fetches send enough `have` lines for git to
    # gzip the request body (Content-Encoding: gzip, which the backend decodes)
    head, tree = git("rev-parse", "HEAD", cwd=b), git("rev-parse", "HEAD^{tree}", cwd=b)
    for n in range(40):
        head = git("commit-tree", tree, "-p", head, "-m", f"local {n}", cwd=b)
    git("update-ref", "refs/heads/local", head, cwd=b)
    won = st("claim", "7", "--remote", cwd=a, env=_env("A", "laptop-a"))
    assert won.returncode == 0, won
    assert remote_record(bare, "7")["session"] == "A"  # the backend wrote the bare repository
    lost = st("claim", "7", "--remote", cwd=b, env=_env("B", "laptop-b"))
    assert lost.returncode == 3, lost
    assert "by session A on host laptop-a" in lost.stderr, lost
    assert local_claim(b, "7") is None

    listed = st("sessions", "--remote", "--format", "json", cwd=b, env=_env("B", "laptop-b"))
    assert listed.returncode == 0, listed
    data = json.loads(listed.stdout)
    assert data["remote"] == "origin"
    assert [(c["issue"], c["session"], c["host"], c["state"]) for c in data["claims"]] == [
        ("7", "A", "laptop-a", "live")
    ], data

    beat = st("heartbeat", cwd=a, env=_env("A", "laptop-a"))
    assert beat.returncode == 0 and "renewed issue 7 on origin" in beat.stdout, beat
    released = st("release", "7", cwd=a, env=_env("A", "laptop-a"))
    assert released.returncode == 0 and "released issue 7 on origin" in released.stdout, released
    assert remote_record(bare, "7") is None
    again = st("claim", "7", "--remote", "--format", "json", cwd=b, env=_env("B", "laptop-b"))
    assert again.returncode == 0, again
    assert json.loads(again.stdout)["remote"]["record"]["token"] == 2  # the fence went up over HTTP
    assert ("POST", "/remote.git/git-receive-pack") in smart_http.requests
    assert ("/remote.git/git-upload-pack", "gzip") in smart_http.encoded, smart_http.encoded


@pytest.mark.parametrize("stall", ["receive-pack", "receive-pack-after"])
def test_a_push_the_server_never_answers_is_exit_4_and_leaves_no_half_claim(stall, smart_http, bare, tmp_path):
    """The server reads the push and never answers (before or after the backend applied it):
    `claim 7 --remote` exits 4 within the deadline naming the remote, no git process is left,
    nothing is claimed here; once the server answers again the remote holds no claim or a
    complete one of the claimant, and another session's claim is exit 0 or exit 3 naming it."""
    url = smart_http.url()
    a, b = clone(url, tmp_path / "a"), clone(url, tmp_path / "b")
    smart_http.stall = stall
    stopped = st("claim", "7", "--remote", cwd=a, env=_env("A", "laptop-a", ST_REMOTE_TIMEOUT=DEADLINE), timeout=120)
    assert stopped.returncode == 4, stopped
    assert "Traceback" not in stopped.stderr, stopped
    assert f"the remote origin ({url}) did not answer within {DEADLINE}s" in stopped.stderr, stopped
    assert "`git push` was stopped" in stopped.stderr, stopped
    assert smart_http.wait_held(1)  # it was the push that hung, not something before it
    assert processes_in(tmp_path) == []
    assert local_claim(a, "7") is None

    smart_http.release()
    landed = remote_record(bare, "7")
    if stall == "receive-pack":
        assert landed is None
    elif landed is not None:  # the push landed (as it does unless git was killed mid-send):
        assert landed["session"] == "A" and landed["token"] == 1, landed  # a complete record of A
        assert remote_record(bare, "7", "fence")["token"] == 1  # with its fence
    listed = st("sessions", "--remote", "--format", "json", cwd=b, env=_env("B", "laptop-b"))
    assert listed.returncode == 0, listed
    claims = json.loads(listed.stdout)["claims"]
    assert [(c["issue"], c["session"]) for c in claims] == ([] if landed is None else [("7", "A")]), claims

    other = st("claim", "7", "--remote", cwd=b, env=_env("B", "laptop-b"))
    if landed is None:
        assert other.returncode == 0, other
        assert remote_record(bare, "7")["session"] == "B"
    else:
        assert other.returncode == 3, other
        assert "by session A on host laptop-a" in other.stderr, other
        assert local_claim(b, "7") is None
        # the claimant settles it: its claim again is a renewal, and now it holds it here too
        settled = st("claim", "7", "--remote", cwd=a, env=_env("A", "laptop-a"))
        assert settled.returncode == 0, settled
        assert local_claim(a, "7")["owner"]["session"] == "A"
        assert remote_record(bare, "7")["session"] == "A"
    assert "Traceback" not in other.stderr, other


def test_a_claim_whose_push_landed_unanswered_is_released_by_the_claimants_next_command(smart_http, bare, tmp_path):
    """The push of a new claim reached the remote but its answer never came back: the claimant
    holds nothing here, so the claim there must not outlive it. `claim` remembers it as a
    pending release; the claimant's `release 7` deletes it (before: "not held by this session",
    exit 0, and the remote kept the claim for its whole TTL, refusing everyone else)."""
    url = smart_http.url()
    a, b = clone(url, tmp_path / "a"), clone(url, tmp_path / "b")
    smart_http.stall = "receive-pack-after"
    # a deadline long enough for the push to land on a loaded box (the backend applies it,
    # then the server holds the answer): what is under test is what follows, not the deadline
    stopped = st("claim", "7", "--remote", cwd=a, env=_env("A", "laptop-a", ST_REMOTE_TIMEOUT="20"), timeout=120)
    assert stopped.returncode == 4, stopped
    assert "released by the next command that reaches origin" in stopped.stderr, stopped
    assert smart_http.wait_held(1)
    smart_http.release()
    assert remote_record(bare, "7")["session"] == "A"  # it landed: only its answer was lost
    shown = st("status", "--format", "json", cwd=a, env=_env("A", "laptop-a"))
    assert [r["issue"] for r in json.loads(shown.stdout)["pending_releases"]] == ["7"], shown
    released = st("release", "7", cwd=a, env=_env("A", "laptop-a"))
    assert released.returncode == 0, released
    assert "released issue 7 on origin" in released.stdout + released.stderr, released
    assert remote_record(bare, "7") is None
    assert remote_record(bare, "7", "fence")["token"] == 1  # the fence stays: the next owner gets 2
    got = st("claim", "7", "--remote", "--format", "json", cwd=b, env=_env("B", "laptop-b"))
    assert got.returncode == 0, got
    assert json.loads(got.stdout)["remote"]["record"]["token"] == 2


@pytest.mark.parametrize("stall", ["drop", "drop-after"])
def test_a_push_whose_connection_drops_is_exit_4_at_once_and_leaves_no_half_claim(stall, smart_http, bare, tmp_path):
    """The connection breaks mid-push, before the backend read the push ("drop": it never
    lands) or after the backend applied it ("drop-after": it landed, its answer is lost).
    `claim 7 --remote` exits 4 at once (the deadline is 600 s: it is not what stopped it),
    naming the remote, no git left, nothing claimed here. A claim that landed is a complete one
    (claim and counter moved together) and is remembered as a pending release: the claimant's
    next command that reaches the remote (`status`) deletes it, and a claim that never landed
    is forgotten silently. Then no claim is left on the remote and another session takes the
    issue with the next token."""
    url = smart_http.url()
    a, b = clone(url, tmp_path / "a"), clone(url, tmp_path / "b")
    smart_http.stall = stall
    env_a = _env("A", "laptop-a", ST_REMOTE_TIMEOUT="600")
    failed = st("claim", "7", "--remote", cwd=a, env=env_a, timeout=300)
    assert failed.returncode == 4, failed
    assert "Traceback" not in failed.stderr, failed
    assert f"the remote origin ({url})" in failed.stderr and "did not answer within" not in failed.stderr, failed
    assert "released by the next command that reaches origin" in failed.stderr, failed
    assert smart_http.dropped == 1
    assert processes_in(tmp_path) == []
    assert local_claim(a, "7") is None

    smart_http.stall = None
    landed = remote_record(bare, "7")
    if stall == "drop":
        assert landed is None and remote_record(bare, "7", "fence") is None  # nothing of it there
    else:
        assert landed is not None and landed["session"] == "A" and landed["token"] == 1, landed
        assert remote_record(bare, "7", "fence")["token"] == 1  # the claim and its counter, whole
    git("config", "st.remote", "origin", cwd=a)
    shown = st("status", "--format", "json", cwd=a, env=env_a)
    assert shown.returncode == 0, shown
    assert json.loads(shown.stdout)["pending_releases"] == [], shown
    assert remote_record(bare, "7") is None  # no claim nobody holds
    got = st("claim", "7", "--remote", "--format", "json", cwd=b, env=_env("B", "laptop-b"))
    assert got.returncode == 0, got
    assert json.loads(got.stdout)["remote"]["record"]["token"] == (1 if stall == "drop" else 2)


def test_four_sessions_on_two_clones_race_over_a_slow_link_and_exactly_one_wins(smart_http, bare, tmp_path):
    """200 ms per request: four processes (two per clone, each its own session) claim issue 5
    at once; exactly one wins, the other three exit 3 naming it and hold nothing (no
    half-claim: no local lock of a loser, the counter moved once, with the winner's claim)."""
    url = smart_http.url()
    clones = [clone(url, tmp_path / f"clone{i}") for i in range(2)]
    smart_http.delay = 0.2
    results = contend([clones[0], clones[1], clones[0], clones[1]], "5")  # sessions s0..s3, hosts host0..host3
    winners = [r for r in results if r[0] == 0]
    assert len(winners) == 1, results
    winner = winners[0][3]
    record = remote_record(bare, "5")
    assert record is not None and record["session"] == winner and record["token"] == 1, record
    for code, _, err, session in results:
        if session != winner:
            assert code == 3, (session, code, err)
            assert f"by session {winner} on host host{winner[1:]}" in err, err
    assert git("for-each-ref", "--format=%(refname)", "refs/st/claims/", cwd=bare) == "refs/st/claims/5"
    assert remote_record(bare, "5", "fence")["token"] == 1
    held = {path.name: (local_claim(path, "5") or {}).get("owner", {}).get("session") for path in clones}
    assert sorted(session for session in held.values() if session) == [winner], held
