"""A remote's claim records are untrusted input (issue 21.4-21.6): forged with git plumbing into
a bare remote, then read by the real CLI in a real clone. A forged value never reaches a local
record (the session lives on), a record is read only within size, depth and integer limits,
and refs that are no claim (junk names, bytes that are not UTF-8, too many) never crash a view."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.e2e.hostile.forge import PAST, forge, forge_many, raw, record
from tests.e2e.remote.conftest import clone, make_bare
from tests.support import git, session_env, st

ME = session_env("me", ST_HOST="here")


@pytest.fixture
def bare(tmp_path):
    return make_bare(tmp_path)


def assert_clean(result, code: int) -> None:
    assert result.returncode == code, result
    assert "Traceback" not in result.stderr + result.stdout, result


def session_still_works(work, issue: str = "8") -> None:
    """The session is not bricked: a legit claim, heartbeat and release on another issue."""
    for args in (["claim", issue, "--remote"], ["heartbeat"], ["release", issue]):
        result = st(*args, cwd=work, env=ME)
        assert_clean(result, 0)


def nothing_claimed_here(work, issue: str) -> None:
    lock = work / "state" / "locks" / f"issue-{issue}.json"
    assert not lock.exists() or not json.loads(lock.read_text()).get("owner"), lock.read_text()


@pytest.mark.parametrize("token", [2**53 - 1, 2**53, 2**63, 2**64 - 1, -1, 0])
def test_a_forged_fence_token_is_refused_before_anything_is_written(token, bare, tmp_path):
    """A fence of 2^53 made `claim 7` write an active-chats record its own reader refuses
    (every later command exit 1); 2^64-1 was a traceback. Now: exit 1 naming the ref, nothing
    written, and the session goes on."""
    forge(bare, "refs/st/fence/7", b'{"issue":"7","token":%d}' % token)
    work = clone(bare.as_uri(), tmp_path / "work")
    result = st("claim", "7", "--remote", cwd=work, env=ME)
    assert_clean(result, 1)
    if token == 2**53 - 1:  # a valid token, the last one: no next one to hand out
        assert "refs/st/fence/7 on the remote holds token 9007199254740991, the last one" in result.stderr, result
    else:
        assert "refs/st/fence/7 on origin is not a gitst claim record" in result.stderr, result
        assert "git push origin :refs/st/fence/7" in result.stderr, result
    assert git("for-each-ref", "refs/st/claims/", cwd=bare) == ""
    nothing_claimed_here(work, "7")
    session_still_works(work)


def test_the_highest_token_that_still_fits_is_taken_and_read_back(bare, tmp_path):
    """A fence of 2^53 - 2: the next token is 2^53 - 1, the last every reader keeps exact; the
    claim is made and every later command reads it back."""
    forge(bare, "refs/st/fence/7", {"issue": "7", "token": 2**53 - 2})
    work = clone(bare.as_uri(), tmp_path / "work")
    assert_clean(st("claim", "7", "--remote", cwd=work, env=ME), 0)
    assert json.loads(git("show", "refs/st/claims/7:claim.json", cwd=bare))["token"] == 2**53 - 1
    assert_clean(st("heartbeat", cwd=work, env=ME), 0)
    assert_clean(st("release", "7", cwd=work, env=ME), 0)


def deep(levels: int) -> object:
    value: object = "x"
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("levels", [20, 300])
def test_a_deeply_nested_record_is_refused_naming_the_ref(levels, bare, tmp_path):
    """Fields nested 255+ levels were `TypeError: Recursion limit reached` in claim and
    heartbeat. A stale claim (takeover path) and our own claim overwritten (renewal path)."""
    forge(bare, "refs/st/claims/7", record("7", expires_at=PAST, description=deep(levels)))
    work = clone(bare.as_uri(), tmp_path / "work")
    result = st("claim", "7", "--remote", cwd=work, env=ME)
    assert_clean(result, 1)
    assert "refs/st/claims/7 on origin is not a gitst claim record" in result.stderr, result
    assert "nests deeper than 8 levels" in result.stderr, result
    nothing_claimed_here(work, "7")
    # our own claim, overwritten on the remote with a deep one of our session
    assert_clean(st("claim", "9", "--remote", cwd=work, env=ME), 0)
    mine = json.loads(git("show", "refs/st/claims/9:claim.json", cwd=bare))
    forge(bare, "refs/st/claims/9", {**mine, "description": deep(levels)})
    beat = st("heartbeat", cwd=work, env=ME)
    assert_clean(beat, 1)
    assert "refs/st/claims/9 on origin is not a gitst claim record" in beat.stderr, beat
    listed = st("sessions", "--remote", "--format", "json", cwd=work, env=ME)
    assert_clean(listed, 1)
    views = {c["issue"]: c for c in json.loads(listed.stdout)["claims"]}
    assert views["7"]["state"] == "corrupt" and views["9"]["state"] == "corrupt", views


def test_a_huge_record_is_never_read(bare, tmp_path):
    """A claim.json of 300 MB cost 25-35 s and ~943 MB on every call. Its size is asked first
    (`cat-file --batch-check`): anything above 1 MiB is refused naming the ref, unread."""
    content = b'{"issue":"7","pad":"' + b"x" * 3 * 2**20 + b'"}'
    forge(bare, "refs/st/claims/7", content)
    work = clone(bare.as_uri(), tmp_path / "work")
    result = st("claim", "7", "--remote", cwd=work, env=ME)
    assert_clean(result, 1)
    assert f"its claim.json is {len(content)} bytes, more than 1048576 (not read)" in result.stderr, result
    listed = st("sessions", "--remote", "--format", "json", cwd=work, env=ME)
    assert_clean(listed, 1)
    (view,) = json.loads(listed.stdout)["claims"]
    assert view["state"] == "corrupt" and "more than 1048576 (not read)" in view["errors"][0], view
    session_still_works(work)


def _junk_refs(bare, count: int) -> None:
    commit = forge(bare, "refs/st/claims/ok", record("ok"))
    names = [f"refs/st/claims/junk+{i}" for i in range(count // 2)]
    names += [f"refs/st/claims/deep/{i}/x" for i in range(count - count // 2)]
    lines = "".join(f"create {name} {commit}\n" for name in names)
    subprocess.run(["git", "update-ref", "--stdin"], cwd=bare, input=lines.encode(), check=True)


def test_junk_refs_are_skipped_unread_and_reported_once(bare, tmp_path):
    """3,000 refs under refs/st/claims/ whose names are no issue id (junk+N, deep/N/x) were each
    read and listed as corrupt (10k: 6-10 s, exit 1). Now: skipped without reading their
    blobs, one warning, exit 0 with the one real claim."""
    _junk_refs(bare, 3000)
    work = clone(bare.as_uri(), tmp_path / "work")
    for fmt in ("json", "text"):
        result = st("sessions", "--remote", "--format", fmt, cwd=work, env=ME)
        assert_clean(result, 0)
        warnings = [line for line in result.stderr.splitlines() if "warning" in line]
        assert len(warnings) == 1, result.stderr
        assert "skipped 3000 ref(s) under refs/st/claims/ on origin" in warnings[0], warnings
        if fmt == "json":
            assert [c["issue"] for c in json.loads(result.stdout)["claims"]] == ["ok"], result.stdout


def test_at_most_a_thousand_claims_are_read(bare, tmp_path):
    count = 1003
    forge_many(bare, {f"refs/st/claims/i{n:04d}": raw(record(f"i{n:04d}")) for n in range(count)})
    work = clone(bare.as_uri(), tmp_path / "work")
    result = st("sessions", "--remote", "--format", "json", cwd=work, env=ME)
    assert_clean(result, 0)
    claims = json.loads(result.stdout)["claims"]
    assert len(claims) == 1000 and claims[-1]["issue"] == "i0999", len(claims)
    assert "origin holds 1003 claim refs; only the first 1000 (i0000 to i0999) were read" in result.stderr, result


def test_a_ref_name_that_is_not_utf8_is_skipped_with_its_bytes_escaped(bare, tmp_path):
    """refs/st/claims/<0xff 0xfe> crashed `sessions --remote --format json` and `status
    --format json` (str is not valid UTF-8: surrogates not allowed)."""
    forge(bare, b"refs/st/claims/\xff\xfe", record("x"))
    forge(bare, "refs/st/claims/5", record("5"))
    work = clone(bare.as_uri(), tmp_path / "work")
    git("config", "st.remote", "origin", cwd=work)
    listed = st("sessions", "--remote", "--format", "json", cwd=work, env=ME)
    assert_clean(listed, 0)
    assert [c["issue"] for c in json.loads(listed.stdout)["claims"]] == ["5"]
    assert "refs/st/claims/\\xff\\xfe" in listed.stderr, listed
    status = st("status", "--format", "json", cwd=work, env=ME)
    assert_clean(status, 0)
    assert [c["issue"] for c in json.loads(status.stdout)["remote"]["claims"]] == ["5"], status.stdout
    session_still_works(work)


def test_a_description_with_newlines_is_read_back_and_shown_escaped(bare, tmp_path):
    """`claim --desc` with a newline or ESC (or an ST_ACTOR, ST_HOST with one) was pushed, then
    refused by the same reader (control characters): every later heartbeat exit 1. Free text
    is read back as written; people see it escaped, JSON exact."""
    work = clone(bare.as_uri(), tmp_path / "work")
    text = "two\nlines \x1b[31mred"
    me = {**ME, "ST_ACTOR": "ann\x1b]0;x\x07", "ST_HOST": "box\tone"}
    assert_clean(st("claim", "7", "--remote", "--desc", text, cwd=work, env=me), 0)
    assert_clean(st("heartbeat", cwd=work, env=me), 0)
    assert json.loads(git("show", "refs/st/claims/7:claim.json", cwd=bare))["description"] == text
    listed = st("sessions", "--remote", cwd=work, env=me)
    assert_clean(listed, 0)
    assert "\x1b" not in listed.stdout and "\x07" not in listed.stdout, listed
    exact = st("sessions", "--remote", "--format", "json", cwd=work, env=me)
    assert json.loads(exact.stdout)["claims"][0]["actor"] == me["ST_ACTOR"], exact
    assert_clean(st("release", "7", cwd=work, env=me), 0)


def test_one_forged_claim_never_stops_the_renewal_of_the_sessions_others(bare, tmp_path):
    """The session holds 9 and 11 on the remote; 9's record is overwritten with garbage. The
    heartbeat names 9 (exit 1) and still renews 11: whichever order the claims are in, one bad
    record must not leave the others to lapse."""
    work = clone(bare.as_uri(), tmp_path / "work")
    for issue in ("9", "11"):
        assert_clean(st("claim", issue, "--remote", cwd=work, env=ME), 0)
    mine = json.loads(git("show", "refs/st/claims/9:claim.json", cwd=bare))
    forge(bare, "refs/st/claims/9", {**mine, "description": deep(20)})
    before = git("rev-parse", "refs/st/claims/11", cwd=bare)
    beat = st("heartbeat", "--format", "json", cwd=work, env=ME)
    assert_clean(beat, 1)
    report = json.loads(beat.stdout)
    assert any("refs/st/claims/9 on origin is not a gitst claim record" in text for text in report["bad_remote"])
    assert "11 on origin" in report["remote_renewed"], report
    assert git("rev-parse", "refs/st/claims/11", cwd=bare) != before  # renewed: a new claim commit


@pytest.mark.parametrize(
    ("held", "why"),
    [
        ({"number": True, "url": "u"}, "field 'pr' has no PR number"),
        ({"number": 0}, "field 'pr' has no PR number"),
        ({"number": -5}, "field 'pr' has no PR number"),
        ({"url": "https://x/pull/1"}, "field 'pr' has no PR number"),
        ({"number": 7, "url": "https://x/pull/7\x1b[2J"}, "field 'pr' holds a url"),
        ({"number": 7, "url": ["no", "text"]}, "field 'pr' holds a url"),
        ("PR #7", "field 'pr' is of the wrong type"),
    ],
)
def test_a_forged_pr_hold_is_refused_naming_the_ref(held, why, bare, tmp_path):
    """A claim held by an open PR (`pr`: docs/remote.md) names its number in every message:
    a forged one is refused as a whole record (exit 1, the ref named), never shown."""
    forge(bare, "refs/st/claims/7", record("7", pr=held))
    work = clone(bare.as_uri(), tmp_path / "work")
    result = st("claim", "7", "--remote", cwd=work, env=ME)
    assert_clean(result, 1)
    assert "refs/st/claims/7 on origin is not a gitst claim record" in result.stderr, result
    assert why in result.stderr, result
    assert "\x1b" not in result.stderr
    nothing_claimed_here(work, "7")
    session_still_works(work)


def test_a_live_pr_hold_is_never_taken_and_an_expired_one_is(bare, tmp_path):
    """A claim an open PR holds has no owner process (`pid`): live until its `expires_at`
    whoever asks — its own session too — and taken over like any stale claim after it."""
    held = {k: v for k, v in record("7", "me", pr={"number": 12, "url": "https://x/pull/12"}).items() if k != "pid"}
    forge(bare, "refs/st/claims/7", held)
    work = clone(bare.as_uri(), tmp_path / "work")
    refused = st("claim", "7", "--remote", cwd=work, env=ME)
    assert_clean(refused, 3)
    assert "held on origin by its open PR #12" in refused.stderr and "git st land" in refused.stderr, refused
    git("config", "st.remote", "origin", cwd=work)
    assert_clean(st("gc", cwd=work, env=ME), 0)
    assert git("for-each-ref", "--format=%(refname)", "refs/st/claims/", cwd=bare) == "refs/st/claims/7"  # live: kept
    forge(bare, "refs/st/claims/7", {**held, "expires_at": PAST})
    assert_clean(st("gc", cwd=work, env=ME), 0)
    assert git("for-each-ref", "refs/st/claims/", cwd=bare) == ""  # expired: gc deletes it like any stale claim
    forge(bare, "refs/st/claims/7", {**held, "expires_at": PAST})
    taken = st("claim", "7", "--remote", cwd=work, env=ME)
    assert_clean(taken, 0)
    now = json.loads(git("show", "refs/st/claims/7:claim.json", cwd=bare))
    assert "pr" not in now and now["token"] == 2 and now["previous"]["token"] == 1, now
