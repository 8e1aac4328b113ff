"""Fuzz family over remote claim records (issue 21, "Must show"): 2,200 generated records —
sizes, depths, types, encodings, token values (2^53, 2^63, 2^64-1, negative, floats, strings),
bytes that are not UTF-8, huge strings — written to bare remotes with git plumbing, then read by
the real CLI: `sessions --remote` (JSON and text) and `status --format json` over every record,
`claim` and `heartbeat` over a sample of every kind. 0 tracebacks, 0 hangs past the deadline,
0 bricked sessions: after each forged record the session's own claim on another issue is still
renewed, and a claim taken from a forged record is renewed and released like any other.

Seeded (ST_FUZZ_SEED picks another run); records go in batches of 1,000 per remote (the most
`sessions --remote` reads)."""

from __future__ import annotations

import json
import os
import random

import pytest

from tests.e2e.hostile.forge import FAR, PAST, forge, forge_many, raw, record
from tests.e2e.remote.conftest import clone, make_bare
from tests.support import git, session_env, st

SEED = int(os.environ.get("ST_FUZZ_SEED", "21"))
RECORDS = 2200
BATCH = 1000
SAMPLE = 14  # records that also go through claim + heartbeat (each kind at least once)
ME = "me"
ENV = session_env(ME, ST_HOST="here", ST_REMOTE_TIMEOUT="30")
TOKENS = [2**53 - 2, 2**53 - 1, 2**53, 2**63, 2**64 - 1, 2**64, 10**30, -1, 0, 1, 1.5, 1e308, -0.0, "7", True, None]
FIELDS = [
    "issue",
    "session",
    "host",
    "actor",
    "pid",
    "pid_start",
    "liveness",
    "token",
    "claimed_at",
    "renewed_at",
    "expires_at",
    "ttl",
    "branch",
    "description",
    "nonce",
    "previous",
    "version",
]
TIMESTAMPS = [
    FAR,
    PAST,
    "0001-01-01T00:00:00+23:59",
    "9999-12-31T23:59:59.999999999-23:59",
    "2026-02-30T00:00:00Z",
    "2026-01-01T00:00:60Z",
    "yesterday",
    "",
    "2026-01-01T00:00:00.000Z\n",
]


def _value(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randrange(10 if depth < 4 else 6)
    if kind == 0:
        return rng.choice(TOKENS)
    if kind == 1:
        return rng.choice(TIMESTAMPS)
    if kind == 2:
        return "".join(
            chr(
                rng.choice(
                    [
                        rng.randrange(32, 127),
                        rng.randrange(0, 32),
                        0x202E,
                        0x7F,
                        0x85,
                        0xFEFF,
                        rng.randrange(0x80, 0x10FFFF),
                    ]
                )
            )
            for _ in range(rng.randrange(0, 40))
        )
    if kind == 3:
        return rng.uniform(-1e300, 1e300)
    if kind == 4:
        return rng.choice([None, True, False, "", 0])
    if kind == 5:
        return rng.randrange(-(2**70), 2**70)
    if kind in (6, 7):
        return [_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    return {f"k{i}": _value(rng, depth + 1) for i in range(rng.randrange(0, 4))}


def _nested(levels: int) -> bytes:
    """JSON text nested ``levels`` deep (objects and arrays in turn), written as text: no
    encoder goes 5,000 levels deep."""
    opening = b"".join(b"[" if index % 2 else b'{"d":' for index in range(levels))
    closing = b"".join(b"]" if index % 2 else b"}" for index in reversed(range(levels)))
    return opening + b'"x"' + closing


def generate(rng: random.Random, issue: str) -> tuple[str, bytes]:
    """``(kind, claim.json bytes)`` of one hostile record for ``issue``."""
    kind = rng.choice(["token", "depth", "types", "encoding", "size", "shape", "time", "mine", "valid"])
    base = record(issue, expires_at=rng.choice([FAR, PAST]))
    if kind == "token":
        base["token"] = rng.choice(TOKENS)
    elif kind == "depth":
        base[rng.choice([*FIELDS, "extra"])] = "@DEEP@"
        levels = rng.choice([3, 6, 7, 8, 9, 20, 127, 128, 129, 254, 255, 256, 300, 1023, 1025, 5000])
        return kind, raw(base).replace(b'"@DEEP@"', _nested(levels))
    elif kind == "types":
        for field in rng.sample(FIELDS, rng.randrange(1, 5)):
            base[field] = _value(rng)
    elif kind == "mine":  # our own session's claim as a forger rewrote it: the renewal path
        base.update(session=ME, host="here", token=rng.choice([*TOKENS[:3], 1, 2]))
        for field in rng.sample(["claimed_at", "branch", "description", "previous", "pid", "ttl"], 2):
            base[field] = _value(rng)
    elif kind == "time":
        base["expires_at"] = rng.choice([*TIMESTAMPS, _value(rng)])
    elif kind == "size":
        huge = rng.random() < 0.05  # a few around and over the 1 MiB limit: they cost the fetch
        length = rng.choice([2**20 - 300, 2**20 + 1, 3 * 2**20] if huge else [1000, 10_000, 100_000])
        base[rng.choice(["description", "extra", "actor"])] = "y" * length
    elif kind == "encoding":
        text = bytearray(raw(base))
        where = rng.randrange(1, len(text) - 1)
        bad = rng.choice(
            [
                b"\xff",
                b"\xc0\xaf",
                b"\xed\xa0\x80",
                b"\\ud800",
                b"\\udfff\\ud800",
                b"\x00",
                b"\x1b[2J",
                b"\xef\xbb\xbf",
                b"\xfe\xff",
            ]
        )
        if rng.random() < 0.5:
            text[where:where] = bad
        else:  # inside a string value, where a parser cannot stop early
            text = text.replace(b'"mallory"', b'"mal' + bad + b'lory"')
        return kind, bytes(text)
    elif kind == "shape":
        return kind, rng.choice(
            [
                b"",
                b"null",
                b"[]",
                b'"claim"',
                b"7",
                b"{",
                b'{"issue":"' + issue.encode() + b'"',
                b"[" * 2000,
                b"{}" * 3,
                raw([base]),
                raw(base) + b"garbage",
                raw(base) * 2,
                b"\xef\xbb\xbf" + raw(base),
                raw(base).replace(b"{", b"{ " * 1, 1) + b" " * 5000,
            ]
        )
    return kind, raw(base)


def _no_traceback(result) -> None:
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result


def _views(result) -> list[dict]:
    _no_traceback(result)
    assert result.returncode in (0, 1), result
    return json.loads(result.stdout)["claims"] if result.stdout.strip().startswith("{") else []


@pytest.mark.slow  # starts first (tests/conftest.py)
def test_remote_claim_records_fuzz(tmp_path):
    rng = random.Random(SEED)
    generated = [(f"f{n:04d}", *generate(rng, f"f{n:04d}")) for n in range(RECORDS)]
    kinds = {kind for _, kind, _ in generated}
    assert len(kinds) == 9, kinds

    # Every record through the readers, a thousand per remote.
    for start in range(0, RECORDS, BATCH):
        batch = generated[start : start + BATCH]
        (tmp_path / f"batch{start}").mkdir()
        bare = make_bare(tmp_path / f"batch{start}")
        forge_many(bare, {f"refs/st/claims/{issue}": content for issue, _, content in batch})
        work = clone(bare.as_uri(), tmp_path / f"batch{start}" / "work")
        git("config", "st.remote", "origin", cwd=work)
        listed = st("sessions", "--remote", "--format", "json", cwd=work, env=ENV)
        views = _views(listed)
        assert sorted(v["issue"] for v in views) == sorted(issue for issue, _, _ in batch), listed.stderr
        for view in views:
            assert view["state"] in ("live", "stale", "dead", "corrupt"), view
            assert view["state"] != "corrupt" or view["errors"], view
        text = st("sessions", "--remote", cwd=work, env=ENV)
        _no_traceback(text)
        assert text.returncode in (0, 1) and "\x1b" not in text.stdout, text
        status = st("status", "--format", "json", cwd=work, env=ENV)
        _no_traceback(status)
        assert status.returncode == 0, status
        assert len(json.loads(status.stdout)["remote"]["claims"]) == len(batch)

    # A sample of every kind through claim and heartbeat, as the claim and as the fence.
    sample = []
    for kind in sorted(kinds):
        sample += [g for g in generated if g[1] == kind][:1]
    sample += rng.sample(generated, SAMPLE - len(sample)) if len(sample) < SAMPLE else []
    (tmp_path / "flows").mkdir()
    bare = make_bare(tmp_path / "flows")
    work = clone(bare.as_uri(), tmp_path / "flows" / "work")
    assert st("claim", "legit", "--remote", cwd=work, env=ENV).returncode == 0
    outcomes: dict[int, int] = {}
    for number, (issue, kind, content) in enumerate(sample):
        namespace = "fence" if number % 3 == 2 else "claims"
        forge(bare, f"refs/st/{namespace}/{issue}", content)
        claim = st("claim", issue, "--remote", cwd=work, env=ENV)
        _no_traceback(claim)
        assert claim.returncode in (0, 1, 3), (kind, content[:300], claim)
        outcomes[claim.returncode] = outcomes.get(claim.returncode, 0) + 1
        beat = st("heartbeat", cwd=work, env=ENV)
        _no_traceback(beat)
        assert beat.returncode == 0 and "issue legit on origin" in beat.stdout, (kind, content[:300], beat)
        if claim.returncode == 0:  # taken over or renewed from a forged record: ours like any other
            assert f"issue {issue} on origin" in beat.stdout, (kind, content[:300], beat)
            released = st("release", issue, cwd=work, env=ENV)
            assert released.returncode == 0, (kind, content[:300], released)
    assert st("release", "legit", cwd=work, env=ENV).returncode == 0
    assert outcomes.get(1, 0) > 0, outcomes  # the forged ones were refused, not all taken
    print(f"fuzz seed {SEED}: {RECORDS} records read; sample claims by exit code {outcomes}")


@pytest.mark.parametrize("token", [2**53, 2**63, 2**64 - 1, -5, 1.5, "9"])
def test_a_forged_claim_token_in_a_stale_claim_never_reaches_a_local_record(token, tmp_path):
    """The takeover path: a stale claim whose token is forged (the fence is absent). The claim
    is refused naming the ref; the session record stays readable."""
    bare = make_bare(tmp_path)
    forge(bare, "refs/st/claims/7", raw(record("7", expires_at=PAST, token=token)))
    work = clone(bare.as_uri(), tmp_path / "work")
    result = st("claim", "7", "--remote", cwd=work, env=ENV)
    _no_traceback(result)
    assert result.returncode == 1 and "refs/st/claims/7 on origin" in result.stderr, result
    for args in (["claim", "8", "--remote"], ["heartbeat"], ["release", "8"]):
        assert st(*args, cwd=work, env=ENV).returncode == 0
