"""The remote engine over every transport teams use (issue 25): file://, `git daemon` and smart
HTTP (`git http-backend`), through the `remote_kind` fixture (tests/e2e/remote/conftest.py).
Real clones, real processes racing, real servers; nothing mocked. Small N here; the big N (64-way
races, 5,000 claims, 1,000 live claims) is benchmarks/bench_remote_scale.py."""

from __future__ import annotations

import json

from gitst.core import timestamps
from tests.e2e.remote.conftest import clone, count_pushes, forge_claims, pushes
from tests.e2e.remote.test_remote_claims import contend, remote_record
from tests.support import git, session_env, st

# Fence counters: refs/st/fence@0..7 (gitst.sessions.remote_claims.FENCE_BUCKETS).
BUCKETS = 8


def st_refs(bare) -> list[str]:
    return git("for-each-ref", "--format=%(refname)", "refs/st/", cwd=bare).split()


def test_claims_race_renew_release_and_fence_the_same_over_every_transport(remote_kind, tmp_path):
    """Four processes on two clones race for an issue, twice: exactly one wins each round
    (token 1, its bucket's counter at 1); the winner's heartbeat renews it; its release deletes
    the claim ref and nothing else is left for it; the next owner gets token 2 (atomic push and
    --force-with-lease behave the same on all three transports)."""
    url, bare = remote_kind.url, remote_kind.bare
    clones = [clone(url, tmp_path / f"clone{i}") for i in range(2)]
    contenders = [clones[0], clones[1], clones[0], clones[1]]
    for issue in ("40", "41"):
        results = contend(contenders, issue)
        assert sorted(code for code, *_ in results) == [0, 3, 3, 3], results
        winner = next(session for code, _, _, session in results if code == 0)
        assert remote_record(bare, issue)["session"] == winner and remote_record(bare, issue)["token"] == 1
        for code, _, err, session in results:  # a loser names the winner (here: its lock; there: its claim)
            assert code == 0 or f"by session {winner}" in err, (session, err)
    home = contenders[int(winner[1:])]
    env = session_env(winner, ST_HOST=f"host{winner[1:]}")
    beat = st("heartbeat", "41", cwd=home, env=env)
    assert beat.returncode == 0 and "issue 41 on origin" in beat.stdout, beat
    released = st("release", "41", cwd=home, env=env)
    assert released.returncode == 0 and "released issue 41 on origin" in released.stdout, released
    assert remote_record(bare, "41") is None
    assert all("41" not in ref.rsplit("/", 1)[-1] for ref in st_refs(bare)), st_refs(bare)  # compacted at once
    other = clones[1] if home == clones[0] else clones[0]
    again = st("claim", "41", "--remote", "--format", "json", cwd=other, env=session_env("later", ST_HOST="h9"))
    assert again.returncode == 0, again
    assert json.loads(again.stdout)["remote"]["record"]["token"] == 2
    assert remote_record(bare, "41", "fence")["token"] >= 2  # the counter moved with it


def test_heartbeats_of_all_sessions_of_a_clone_are_one_push(remote_kind, tmp_path):
    """Three sessions of one clone hold a claim each (TTL 1,200 s: no lease runs out on a
    loaded box). Once A's is due (less than half the lease asked left: `heartbeat --ttl 3000`),
    A's heartbeat renews all three in one
    push; B's and C's heartbeats right after push nothing (their claims are fresh) and still
    report them renewed."""
    url, bare = remote_kind.url, remote_kind.bare
    work = clone(url, tmp_path / "work")
    git("config", "st.remote", "origin", cwd=work)
    sessions = {"A": "50", "B": "51", "C": "52"}
    for session, issue in sessions.items():
        got = st("claim", issue, "--ttl", "1200", cwd=work, env=session_env(session))
        assert got.returncode == 0, got
    before = {issue: remote_record(bare, issue) for issue in sessions.values()}
    log = count_pushes(bare)
    beat = st("heartbeat", "--ttl", "3000", cwd=work, env=session_env("A"))
    assert beat.returncode == 0 and "renewed issue 50 on origin" in beat.stdout, beat
    assert pushes(log) == 1, log.read_text()
    after = {issue: remote_record(bare, issue) for issue in sessions.values()}
    for session, issue in sessions.items():
        assert after[issue]["session"] == session and after[issue]["token"] == before[issue]["token"]
        assert timestamps.parse(after[issue]["expires_at"]) > timestamps.parse(before[issue]["expires_at"]), issue
    for session, issue in (("B", "51"), ("C", "52")):
        quiet = st("heartbeat", cwd=work, env=session_env(session))
        assert quiet.returncode == 0 and f"renewed issue {issue} on origin" in quiet.stdout, quiet
    assert pushes(log) == 1, log.read_text()  # fresh: read from this clone's copy, no push
    if remote_kind.http is not None:
        assert sum(1 for method, path in remote_kind.requests() if path.endswith("git-receive-pack")) == 4


def test_a_claim_taken_over_fails_alone_in_the_batch(bare, tmp_path):
    """B's claim is taken over on the remote (a forged newer record); A's heartbeat batch
    renews A's and C's and leaves B's alone; B's own heartbeat then reports it lost (exit 3)."""
    work = clone(bare.as_uri(), tmp_path / "work")
    git("config", "st.remote", "origin", cwd=work)
    for session, issue in (("A", "60"), ("B", "61"), ("C", "62")):
        assert st("claim", issue, "--ttl", "1200", cwd=work, env=session_env(session)).returncode == 0
    forge_claims(bare, ["61"], session="thief", host="far")  # moves refs/st/claims/61 under B
    beat = st("heartbeat", "--ttl", "3000", cwd=work, env=session_env("A"))
    assert beat.returncode == 0, beat
    assert remote_record(bare, "61")["session"] == "thief"
    assert remote_record(bare, "62")["renewed_at"] > remote_record(bare, "62")["claimed_at"]
    lost = st("heartbeat", cwd=work, env=session_env("B"))
    assert lost.returncode == 3 and "lost the claim on issue 61 on origin (now held by thief" in lost.stderr, lost


def test_the_ref_set_stays_bounded_after_many_claims_and_releases(bare, tmp_path):
    """8 claims made and released through the CLI (5,000 through the library in
    benchmarks/bench_remote_scale.py: too slow for the suite) leave only the fence counters
    under refs/st/, and the tokens of one issue grow."""
    work = clone(bare.as_uri(), tmp_path / "work")
    git("config", "st.remote", "origin", cwd=work)
    env = session_env("A")
    for n in range(8):
        issue = str(n % 4)  # each issue claimed twice over the run
        assert st("claim", issue, "--ttl", "60", cwd=work, env=env).returncode == 0
        assert st("release", issue, cwd=work, env=env).returncode == 0
    left = st_refs(bare)
    assert len(left) <= BUCKETS and all(ref.startswith("refs/st/fence@") for ref in left), left
    got = st("claim", "3", "--format", "json", cwd=work, env=env)
    token = json.loads(got.stdout)["remote"]["record"]["token"]
    assert token > 2, token  # two owners of issue 3 before: its token never went back
    assert len(st_refs(bare)) <= 1 + BUCKETS


def test_old_per_issue_fence_refs_keep_their_tokens_and_are_compacted(bare, tmp_path):
    """A remote gitst used before: refs/st/fence/ISSUE with tokens up to 41. A new claim of such
    an issue gets 42 and deletes its old fence; `git st gc` folds the other old fences into the
    counters; every later owner gets a higher token than the old fence held."""
    work = clone(bare.as_uri(), tmp_path / "work")
    forge_claims(bare, ["7", "8", "9"])  # live claims of another session …
    for issue, token in (("7", 41), ("8", 17), ("9", 30)):  # … their old fences, as gitst wrote them
        git("update-ref", f"refs/st/fence/{issue}", git("rev-parse", f"refs/st/claims/{issue}", cwd=bare), cwd=bare)
        blob = git("hash-object", "-w", "--stdin", cwd=bare, input=json.dumps({"issue": issue, "token": token}))
        tree = git("mktree", cwd=bare, input=f"100644 blob {blob}\tclaim.json\n")
        git("update-ref", f"refs/st/fence/{issue}", git("commit-tree", tree, "-m", "old", cwd=bare), cwd=bare)
        git("update-ref", "-d", f"refs/st/claims/{issue}", cwd=bare)
    got = st("claim", "7", "--remote", "--format", "json", cwd=work, env=session_env("A"))
    assert got.returncode == 0, got
    assert json.loads(got.stdout)["remote"]["record"]["token"] == 42
    assert "refs/st/fence/7" not in st_refs(bare)
    git("config", "st.remote", "origin", cwd=work)
    gc = st("gc", cwd=work, env=session_env("A"))
    assert gc.returncode == 0, gc
    assert not [ref for ref in st_refs(bare) if ref.startswith("refs/st/fence/")], st_refs(bare)
    for issue, old in (("8", 17), ("9", 30)):
        took = st("claim", issue, "--remote", "--format", "json", cwd=work, env=session_env("A"))
        assert json.loads(took.stdout)["remote"]["record"]["token"] > old, took


def test_reads_are_one_fetch_whatever_the_number_of_claims(smart_http, bare, tmp_path):
    """300 live claims of other machines on the remote: `status`, `sessions --remote` and
    `check-issue` each make one fetch (one upload-pack request), no push and no per-claim round
    trip (1,000 claims and the times: benchmarks/bench_remote_scale.py)."""
    forge_claims(bare, [str(n) for n in range(1000, 1300)])
    work = clone(smart_http.url(), tmp_path / "work")
    git("config", "st.remote", "origin", cwd=work)
    env = session_env("A")
    for args in (("status", "--format", "json"), ("sessions", "--remote", "--format", "json"), ("check-issue", "1005")):
        start = len(smart_http.requests)
        done = st(*args, cwd=work, env=env)
        assert done.returncode in (0, 1), (args, done)
        made = smart_http.requests[start:]
        # one fetch: one capability request (GET info/refs), then its ls-refs and fetch POSTs,
        # as many for 300 claims as for 1
        assert [path for method, path in made if method == "GET"] == ["/remote.git/info/refs"], (args, made)
        assert len(made) <= 4, (args, made)
        assert not [path for _, path in made if "receive-pack" in path], (args, made)
    shown = json.loads(st("status", "--format", "json", cwd=work, env=env).stdout)
    assert len(shown["remote"]["claims"]) == 300
