"""``gitst.sessions.remote_survey.Survey.again`` (what a `next` that lost a claim race reads,
docs/agent-loop.md): every claim and fence counter on a real bare remote read again in one
fetch, the same as a first look would read them — with only the records whose commits moved
read and checked again (the others are the first look's, their state judged again), so a
lost race on a remote with many claims does not parse them all a second time."""

from __future__ import annotations

from gitst.sessions import remote_claims, remote_survey
from tests.unit.sessions.test_remote_owner import _who, clone  # noqa: F401 - its bare remote and clone, shared


def _shown(seen: remote_survey.Survey) -> list[tuple[str, str, str, str | None]]:
    return [(v.issue, v.commit, v.state, (v.record or {}).get("session")) for v in seen.views]


def test_read_again_sees_what_moved_and_reads_only_that(clone, monkeypatch):  # noqa: F811 - the fixture
    for issue, session in (("1", "s-1"), ("2", "s-2"), ("3", "s-3")):
        remote_claims.acquire(issue, _who(session), remote="origin", ttl=600, cwd=clone)
    first = remote_survey.survey("origin", clone)
    assert [v.issue for v in first.views] == ["1", "2", "3"]
    # since the look: 4 claimed, 2 released, 3 renewed (a new commit), 1 untouched
    remote_claims.acquire("4", _who("s-4"), remote="origin", ttl=600, cwd=clone)
    remote_claims.release("2", _who("s-2"), remote="origin", cwd=clone)
    remote_claims.acquire("3", _who("s-3"), remote="origin", ttl=900, cwd=clone)

    read: list[str] = []
    views = remote_survey.claim_views

    def counted(remote, local, cwd, also=None):
        read.extend(name.rsplit("/", 1)[1] for name in local)
        return views(remote, local, cwd, also)

    monkeypatch.setattr(remote_survey, "claim_views", counted)
    again = first.again()
    assert [v.issue for v in again.views] == ["1", "3", "4"]
    assert sorted(read) == ["3", "4"]  # 1's record is the first look's; 2 is gone
    assert _shown(again) == _shown(remote_survey.survey("origin", clone))  # as a fresh look sees it
    assert again.snapshot("3").claim is not None and again.snapshot("3").claim.record["ttl"] == 900
    fresh = remote_survey.survey("origin", clone).snapshot("4")
    assert again.snapshot("4") == fresh  # the claim and its bucket's counter as they are now
