"""Claims through the git remote (docs/remote.md): real
clones of one bare remote, reached by file:// and by `git daemon` on 127.0.0.1; real
processes racing; nothing mocked."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from gitst.sessions.remote_claims import counter_ref
from tests.e2e.remote.conftest import clone
from tests.support import git, resident_env, session_env, st

N = 8
ROUNDS = 20


def _env(session: str, host: str, **extra: str) -> dict:
    env = dict(os.environ)
    env.update(session_env(session, ST_HOST=host, **extra))
    return env


def contend(
    clones, issue: str, *args: str, prefix: str = "s", env: dict[str, str] | None = None
) -> list[tuple[int, str, str, str]]:
    """Every clone runs `git-st claim ISSUE --remote` at once, as its own session on its own
    host (with ``env`` added); (exit code, stdout, stderr, session) of each."""
    procs = []
    for i, path in enumerate(clones):
        session = f"{prefix}{i}"
        procs.append(
            (
                session,
                subprocess.Popen(
                    ["git-st", "claim", issue, "--remote", *args],
                    cwd=path,
                    env=_env(session, f"host{i}", **(env or {})),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                ),
            )
        )
    out = []
    for session, proc in procs:
        stdout, stderr = proc.communicate(timeout=120)
        out.append((proc.returncode, stdout, stderr, session))
    return out


def remote_record(bare, issue: str, kind: str = "claims") -> dict | None:
    """The record of ``issue``'s claim on ``bare`` (``kind="fence"``: its fence, the counter of
    its bucket ``refs/st/fence@K`` since issue 25; ``"legacy-fence"``: ``refs/st/fence/ISSUE``)."""
    ref = {"fence": counter_ref(issue), "legacy-fence": f"refs/st/fence/{issue}"}.get(kind, f"refs/st/{kind}/{issue}")
    if not git("for-each-ref", ref, cwd=bare):
        return None
    return json.loads(git("show", f"{ref}:claim.json", cwd=bare))


def local_claim(clone_dir, issue: str) -> dict | None:
    lock = clone_dir / "state" / "locks" / f"issue-{issue}.json"
    if not lock.exists():
        return None
    record = json.loads(lock.read_text())
    return record if record.get("owner") else None


def assert_one_winner(results, bare, clones, issue: str, token: int | None) -> str:
    """Exactly one winner, the remote's record is its, with ``token`` (None: whatever its
    bucket's counter held + 1, the issues of a bucket sharing one sequence), and the counter
    moved to it in the same push."""
    winners = [r for r in results if r[0] == 0]
    assert len(winners) == 1, results
    winner = winners[0][3]
    record = remote_record(bare, issue)
    assert record is not None and record["session"] == winner and record["token"] == (token or record["token"])
    assert remote_record(bare, issue, "fence")["token"] == record["token"]
    for code, _, stderr, session in results:
        if session == winner:
            continue
        assert code == 3, (session, code, stderr)
        host = f"host{winner[1:]}" if winner[1:].isdigit() else None
        assert f"by session {winner} on host" in stderr, stderr
        if host:
            assert f"on host {host}" in stderr
        index = int(session.lstrip("abcdefghijklmnopqrstuvwxyz"))
        assert local_claim(clones[index], issue) is None  # a loser keeps nothing here either
    return winner


@pytest.mark.slow(22)  # starts first (tests/conftest.py)
@pytest.mark.parametrize("transport", ["file", "daemon"])
def test_eight_clones_race_for_an_issue_exactly_one_wins_every_round(transport, bare, tmp_path, request):
    """Must show 1: N=8 processes, each in its own clone of one bare remote, claim the same
    issue through the remote, 20 rounds: one winner, seven exit 3 naming it. Every `claim` is
    handed to the resident process (ST_RESIDENT=1, docs/resident.md), the swarm's way to run
    gitst: 160 racing commands each a fork of it instead of an interpreter (the other races
    here run `git-st` itself)."""
    url = request.getfixturevalue("daemon").url() if transport == "daemon" else bare.as_uri()
    clones = [clone(url, tmp_path / f"clone{i}") for i in range(N)]
    started = time.monotonic()
    winners, tokens = [], set()
    with resident_env() as env:
        for round_ in range(ROUNDS):
            issue = str(100 + round_)
            results = contend(clones, issue, env=env)
            winners.append(assert_one_winner(results, bare, clones, issue, token=None))
            tokens.add((counter_ref(issue), remote_record(bare, issue)["token"]))
    assert len(tokens) == ROUNDS  # no token of a bucket was handed out twice
    elapsed = time.monotonic() - started
    claims = git("for-each-ref", "--format=%(refname)", "refs/st/claims/", cwd=bare).split()
    assert sorted(claims) == sorted(f"refs/st/claims/{100 + r}" for r in range(ROUNDS))
    print(f"{transport}: {ROUNDS} rounds x {N} processes in {elapsed:.1f}s; winners {winners}")


def test_an_expired_claim_is_taken_over_by_exactly_one_with_a_higher_token_a_live_one_never(bare, tmp_path):
    """Must show 2: a claim whose heartbeat stopped is taken over after its TTL by exactly one
    of 8 contenders, with a higher fencing token; while it is live, none gets it."""
    url = bare.as_uri()
    owner = clone(url, tmp_path / "owner")
    clones = [clone(url, tmp_path / f"clone{i}") for i in range(N)]
    ttl = "20"  # live through 8 contenders' fetches and pushes even on a machine at load 20
    first = st("claim", "7", "--remote", "--ttl", ttl, cwd=owner, env=session_env("old", ST_HOST="oldhost"))
    assert first.returncode == 0, first
    assert remote_record(bare, "7")["token"] == 1
    # Live: a heartbeat keeps it; 8 contenders all lose, naming the owner and its host.
    beat = st("heartbeat", cwd=owner, env=session_env("old", ST_HOST="oldhost"))
    assert beat.returncode == 0 and "renewed issue 7 on origin" in beat.stdout, beat
    results = contend(clones, "7", prefix="early")
    assert [r[0] for r in results] == [3] * N, results
    assert all("session old on host oldhost" in r[2] for r in results)
    assert remote_record(bare, "7")["session"] == "old"
    # The heartbeat stops; after the TTL exactly one contender takes it over, token 2.
    expires = remote_record(bare, "7")["expires_at"]
    from gitst.core import timestamps

    time.sleep(max(0.0, timestamps.parse(expires) - timestamps.now()) + 0.3)
    results = contend(clones, "7", prefix="late")
    winner = assert_one_winner(results, bare, clones, "7", token=2)
    record = remote_record(bare, "7")
    assert record["previous"]["session"] == "old" and record["previous"]["token"] == 1
    won = next(r for r in results if r[3] == winner)
    assert "taken over on origin from session old on host oldhost" in won[1], won
    # The old owner learns it on its next heartbeat, and its local lock is given up.
    lost = st("heartbeat", cwd=owner, env=session_env("old", ST_HOST="oldhost"))
    assert lost.returncode == 3, lost
    assert f"lost the claim on issue 7 on origin (now held by {winner} on host" in lost.stderr
    assert local_claim(owner, "7") is None


def test_a_release_deletes_the_ref_and_the_next_owner_still_gets_a_higher_token(bare, tmp_path):
    url = bare.as_uri()
    a, b = clone(url, tmp_path / "a"), clone(url, tmp_path / "b")
    assert st("claim", "9", "--remote", cwd=a, env=session_env("A")).returncode == 0
    released = st("release", "9", cwd=a, env=session_env("A"))
    assert released.returncode == 0 and "released issue 9 on origin" in released.stdout, released
    assert remote_record(bare, "9") is None  # the claim ref is gone …
    assert remote_record(bare, "9", "fence")["token"] == 1  # … its fencing token is not
    got = st("claim", "9", "--remote", "--format", "json", cwd=b, env=session_env("B"))
    assert got.returncode == 0, got
    assert json.loads(got.stdout)["remote"]["record"]["token"] == 2


def test_identical_records_never_make_the_same_commit(bare, tmp_path):
    """Two renewals in the same millisecond would be the same record but for the nonce: each
    push moves the ref to a new commit, never a no-op."""
    a = clone(bare.as_uri(), tmp_path / "a")
    env = session_env("A")
    commits = []
    for _ in range(3):
        done = st("claim", "5", "--remote", "--format", "json", cwd=a, env=env)
        assert done.returncode == 0, done
        commits.append(json.loads(done.stdout)["remote"]["commit"])
        assert git("rev-parse", "refs/st/claims/5", cwd=bare) == commits[-1]
    assert len(set(commits)) == 3
    nonces = {json.loads(git("show", f"{c}:claim.json", cwd=a))["nonce"] for c in commits}
    assert len(nonces) == 3


def test_remote_unreachable_exits_4_with_no_local_claim_and_no_stray_ref(bare, tmp_path, daemon):
    """Must show 3: the daemon is stopped: exit 4, no local claim, no ref on the remote."""
    work = clone(daemon.url(), tmp_path / "work")
    daemon.stop()
    result = st("claim", "7", "--remote", cwd=work, env=session_env("A"))
    assert result.returncode == 4, result
    assert "cannot reach the remote origin (git://127.0.0.1:" in result.stderr
    assert "Traceback" not in result.stderr
    assert local_claim(work, "7") is None
    assert not (work / "state" / "active-chats" / "A.json").exists()
    assert git("for-each-ref", "refs/st/", cwd=bare) == ""
    assert git("for-each-ref", "refs/st-remote/", cwd=work) == ""
    # The same with worktree add through st.remote.
    git("config", "st.remote", "origin", cwd=work)
    added = st("worktree", "add", "7", cwd=work, env=session_env("A"))
    assert added.returncode == 4, added
    assert local_claim(work, "7") is None
    assert not (work.parent / "work.worktrees").exists()
    assert git("for-each-ref", "refs/st/", cwd=bare) == ""


def test_offline_claims_here_and_the_next_heartbeat_publishes_it(bare, tmp_path):
    a = clone(bare.as_uri(), tmp_path / "a")
    git("config", "st.remote", "origin", cwd=a)
    gone = tmp_path / "elsewhere.git"
    bare.rename(gone)
    result = st("claim", "4", cwd=a, env=session_env("A"))
    assert result.returncode == 4 and local_claim(a, "4") is None, result
    offline = st("claim", "4", "--offline", cwd=a, env=session_env("A"))
    assert offline.returncode == 0 and "claimed here only (--offline)" in offline.stderr, offline
    assert local_claim(a, "4")["owner"]["session"] == "A"
    beat = st("heartbeat", cwd=a, env=session_env("A"))
    assert beat.returncode == 4 and "cannot reach the remote origin" in beat.stderr, beat
    gone.rename(bare)
    beat = st("heartbeat", cwd=a, env=session_env("A"))
    assert beat.returncode == 0 and "renewed issue 4 on origin" in beat.stdout, beat
    assert remote_record(bare, "4")["session"] == "A"


def test_st_remote_makes_every_claim_go_through_the_remote(bare, tmp_path):
    """With st.remote set, a plain claim and worktree add ask the remote: a remotely claimed
    issue is refused (exit 3) naming host and session; sessions --remote lists it."""
    a, b = clone(bare.as_uri(), tmp_path / "a"), clone(bare.as_uri(), tmp_path / "b")
    for path in (a, b):
        git("config", "st.remote", "origin", cwd=path)
    assert st("claim", "7", cwd=a, env=session_env("A", ST_HOST="laptop-a")).returncode == 0
    assert remote_record(bare, "7")["host"] == "laptop-a"
    refused = st("claim", "7", cwd=b, env=session_env("B", ST_HOST="laptop-b"))
    assert refused.returncode == 3 and "by session A on host laptop-a" in refused.stderr, refused
    added = st("worktree", "add", "7", cwd=b, env=session_env("B", ST_HOST="laptop-b"))
    assert added.returncode == 3 and "by session A on host laptop-a" in added.stderr, added
    assert local_claim(b, "7") is None
    ok = st("worktree", "add", "8", "--print-path", cwd=b, env=session_env("B", ST_HOST="laptop-b"))
    assert ok.returncode == 0, ok
    assert remote_record(bare, "8")["branch"] == "st/issue-8"
    listed = st("sessions", "--remote", "--format", "json", cwd=a, env=session_env("A"))
    assert listed.returncode == 0, listed
    data = json.loads(listed.stdout)
    assert data["remote"] == "origin"
    assert [(c["issue"], c["session"], c["host"], c["state"]) for c in data["claims"]] == [
        ("7", "A", "laptop-a", "live"),
        ("8", "B", "laptop-b", "live"),
    ]
    text = st("sessions", "--remote", cwd=a, env=session_env("A"))
    assert "laptop-b" in text.stdout and "A *" in text.stdout


def test_a_hostile_claim_ref_is_reported_not_trusted(bare, tmp_path):
    a = clone(bare.as_uri(), tmp_path / "a")
    blob = git("hash-object", "-w", "--stdin", cwd=bare, input="not json\x1b[31m")
    tree = git("mktree", cwd=bare, input=f"100644 blob {blob}\tclaim.json\n")
    commit = git("commit-tree", tree, "-m", "x", cwd=bare)
    git("update-ref", "refs/st/claims/6", commit, cwd=bare)
    result = st("claim", "6", "--remote", cwd=a, env=session_env("A"))
    assert result.returncode == 1, result
    assert "refs/st/claims/6 on origin is not a gitst claim record: not JSON" in result.stderr
    assert "git push origin :refs/st/claims/6" in result.stderr
    assert local_claim(a, "6") is None
    listed = st("sessions", "--remote", cwd=a, env=session_env("A"))
    assert listed.returncode == 1 and "corrupt" in listed.stdout and "\x1b" not in listed.stdout


def test_bad_remote_name_is_bad_usage(repo):
    result = st("claim", "7", "--remote", "nowhere", cwd=repo, env=session_env("A"))
    assert result.returncode == 2 and "no git remote named 'nowhere'" in result.stderr, result
    both = st("claim", "7", "--remote", "--offline", cwd=repo, env=session_env("A"))
    assert both.returncode == 2, both


def test_status_shows_the_remote_claims_of_every_machine(bare, tmp_path):
    a, b = clone(bare.as_uri(), tmp_path / "a"), clone(bare.as_uri(), tmp_path / "b")
    for path in (a, b):
        git("config", "st.remote", "origin", cwd=path)
    assert st("claim", "7", cwd=a, env=session_env("A", ST_HOST="laptop-a")).returncode == 0
    shown = st("status", "--format", "json", cwd=b, env=session_env("B", ST_HOST="laptop-b"))
    assert shown.returncode == 0, shown
    remote = json.loads(shown.stdout)["remote"]
    assert remote["name"] == "origin" and remote["error"] is None
    assert [(c["issue"], c["session"], c["host"]) for c in remote["claims"]] == [("7", "A", "laptop-a")]
    text = st("status", cwd=b, env=session_env("B", ST_HOST="laptop-b"))
    assert "claims on origin (st.remote)" in text.stdout and "laptop-a" in text.stdout, text
    bare.rename(tmp_path / "moved.git")
    offline = st("status", "--format", "json", cwd=b, env=session_env("B"))
    assert offline.returncode == 0 and "cannot reach the remote origin" in json.loads(offline.stdout)["remote"]["error"]


def test_a_claim_record_with_control_characters_is_refused_not_printed(bare, tmp_path):
    a = clone(bare.as_uri(), tmp_path / "a")
    record = {
        "issue": "6",
        "session": "evil\x1b[2J",
        "host": "h",
        "token": 1,
        "nonce": "x",
        "expires_at": "2999-01-01T00:00:00.000Z",
    }
    blob = git("hash-object", "-w", "--stdin", cwd=bare, input=json.dumps(record))
    tree = git("mktree", cwd=bare, input=f"100644 blob {blob}\tclaim.json\n")
    git("update-ref", "refs/st/claims/6", git("commit-tree", tree, "-m", "x", cwd=bare), cwd=bare)
    result = st("claim", "6", "--remote", cwd=a, env=session_env("A"))
    assert result.returncode == 1 and "field 'session' holds control characters" in result.stderr, result
    assert "\x1b" not in result.stderr
