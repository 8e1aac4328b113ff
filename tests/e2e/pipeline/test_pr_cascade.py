"""`git st pr resolve`: every cascade step, their order, ambiguity and failing `gh`.

GitHub is the one thing faked: a small `gh` executable first on PATH that answers
`gh pr list --state open --json …` the way the real one does (only the requested fields,
`closingIssuesReferences` as objects with id/number/repository/url, closed PRs left out,
`--limit` honoured), or fails the way the real one fails. Git is real: a bare repository
is the remote, PR heads are pushed to its `refs/pull/<n>/head` and fetched with a refspec.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.support import NAME, FakeGh, git, init_repo, make_pr, st


@pytest.fixture
def gh(tmp_path, monkeypatch) -> FakeGh:
    fake = FakeGh(tmp_path)
    monkeypatch.setenv("FAKE_GH_WORLD", str(fake.world_path))
    monkeypatch.setenv("PATH", f"{fake.bindir}{os.pathsep}{os.environ['PATH']}")
    return fake


@pytest.fixture
def no_gh(monkeypatch, tmp_path):
    """PATH with the CLI and git but certainly no `gh`."""
    bindir = tmp_path / "only-git"
    bindir.mkdir()
    (bindir / "git").symlink_to(shutil.which("git"))
    for name in ("git-st",):
        (bindir / name).symlink_to(shutil.which(name))
    monkeypatch.setenv("PATH", str(bindir))
    assert shutil.which("gh", path=str(bindir)) is None


@pytest.fixture
def forge(tmp_path):
    """A bare remote with st/issue-42 and PR heads, and a clone that tracks the branch."""
    seed = init_repo(tmp_path / "seed")
    remote = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(remote), cwd=tmp_path)
    git("remote", "add", "origin", str(remote), cwd=seed)
    git("push", "-q", "origin", "main", cwd=seed)
    git("switch", "-q", "-c", "st/issue-42", cwd=seed)
    (seed / "fix.txt").write_text("the fix\n")
    git("add", "fix.txt", cwd=seed)
    git("commit", "-q", "-m", "fix 42", cwd=seed)
    tip = git("rev-parse", "HEAD", cwd=seed)
    git("push", "-q", "origin", "st/issue-42", "HEAD:refs/pull/7/head", cwd=seed)
    git("push", "-q", "origin", "main:refs/pull/3/head", cwd=seed)  # another PR, another commit
    work = tmp_path / "work"
    git("clone", "-q", str(remote), str(work), cwd=tmp_path)
    git("switch", "-q", "st/issue-42", cwd=work)
    return {"remote": remote, "work": work, "tip": tip}


def fetch_pulls(work: Path) -> None:
    git("config", "--add", "remote.origin.fetch", "+refs/pull/*/head:refs/remotes/origin/pr/*", cwd=work)
    git("fetch", "-q", "origin", cwd=work)


def resolve(work: Path, *args: str, env: dict | None = None):
    return st("pr", "resolve", *args, cwd=work, env=env)


def resolve_json(work: Path, *args: str, env: dict | None = None) -> dict:
    result = resolve(work, *args, "--format", "json", env=env)
    return {"rc": result.returncode, **json.loads(result.stdout)}


def set_pipeline_pr(work: Path, value: str) -> None:
    assert st("pipeline", "set", "42", "pr_number", value, cwd=work).returncode == 0


# --- the order of the steps ---------------------------------------------------------------


def test_each_step_answers_once_the_steps_before_it_are_absent(gh, forge):
    work = forge["work"]
    fetch_pulls(work)  # refs/pull/7/head is the tip of st/issue-42 → step 7 would say 7
    set_pipeline_pr(work, "3")
    prs = {
        4: make_pr(4, closes=[42], title="closes by reference"),
        5: make_pr(5, body="Implements the widget.\n\nFixes #42", title="closes by keyword"),
        6: make_pr(6, head="st/issue-42", oid=forge["tip"], title="has the issue's branch as head"),
    }
    gh.set(list(prs.values()))
    env = {"ST_PR_NUMBER": "2"}

    got = resolve_json(work, "42", "--pr", "1", env=env)
    assert (got["rc"], got["pr_number"], got["source"]) == (0, 1, "arg")
    assert [s["status"] for s in got["steps"]] == ["answer"] + ["not-run"] * 6
    assert gh.calls() == []  # later steps are not even run

    got = resolve_json(work, "42", env=env)
    assert (got["pr_number"], got["source"]) == (2, "env")

    got = resolve_json(work, "42")
    assert (got["pr_number"], got["source"]) == (3, "pipeline")

    assert st("pipeline", "unset", "42", "pr_number", cwd=work).returncode == 0
    got = resolve_json(work, "42")
    assert (got["pr_number"], got["source"]) == (4, "gh-closing-references")
    assert got["candidates"] == [
        {
            "number": 4,
            "title": "closes by reference",
            "head": "feature",
            "evidence": "PR #4 lists issue #42 in closingIssuesReferences",
        }
    ]

    prs[4]["state"] = "MERGED"
    gh.set(list(prs.values()))
    got = resolve_json(work, "42")
    assert (got["pr_number"], got["source"]) == (5, "gh-body-keywords")

    prs[5]["state"] = "CLOSED"
    gh.set(list(prs.values()))
    got = resolve_json(work, "42")
    assert (got["pr_number"], got["source"]) == (6, "gh-head-branch")

    prs[6]["state"] = "CLOSED"
    gh.set(list(prs.values()))
    got = resolve_json(work, "42")
    assert (got["pr_number"], got["source"]) == (7, "pull-refs")
    assert [s["status"] for s in got["steps"]] == [
        "skipped",
        "skipped",
        "no-answer",
        "no-answer",
        "no-answer",
        "no-answer",
        "answer",
    ]

    git("update-ref", "-d", "refs/remotes/origin/pr/7", cwd=work)
    got = resolve_json(work, "42")
    assert (got["rc"], got["pr_number"], got["source"], got["candidates"]) == (1, None, None, [])


def test_explain_prints_every_step_on_stderr_and_keeps_stdout_the_number(gh, forge):
    work = forge["work"]
    gh.set([make_pr(57, closes=[42])])
    result = resolve(work, "42", "--explain")
    assert result.returncode == 0, result
    assert result.stdout == "57\n"
    lines = result.stderr.splitlines()
    assert lines[0] == "resolving the PR that closes issue 42:"
    assert len(lines) == 8
    assert "--pr" in lines[1] and "not given" in lines[1]
    assert "ST_PR_NUMBER" in lines[2] and "not set" in lines[2]
    assert "pipeline" in lines[3] and "does not exist" in lines[3]
    assert "ANSWER #57" in lines[4] and "closingIssuesReferences" in lines[4]
    assert all("not run" in line for line in lines[5:])


# --- each step on its own ---------------------------------------------------------------


def test_gh_argument_list_is_the_documented_one(gh, forge):
    gh.set([make_pr(57, closes=[42])])
    assert resolve(forge["work"], "42").stdout == "57\n"
    assert resolve(forge["work"], "42", "--repo", "acme/widgets").stdout == "57\n"
    first, second = gh.calls()
    assert first[:2] == ["pr", "list"]
    assert first[first.index("--state") + 1] == "open"
    assert first[first.index("--json") + 1].split(",")[:6] == [
        "number",
        "headRefName",
        "headRefOid",
        "body",
        "title",
        "closingIssuesReferences",
    ]
    assert second[second.index("--repo") + 1] == "acme/widgets"


@pytest.mark.parametrize(
    "body",
    [
        "Fixes #42",
        "closes #42.",
        "This RESOLVED #42, finally",
        "Resolves: #42",
        "fix acme/widgets#42",
        "Closes https://github.com/acme/widgets/issues/42",
        "Refactor.\r\n\r\nfixed #42\r\n",
    ],
)
def test_body_keywords_answer(gh, forge, body):
    gh.set([make_pr(9, body="Related to #42 and fixes #41"), make_pr(57, body=body)])
    got = resolve_json(forge["work"], "42", "--offline")
    assert got["rc"] == 1  # --offline does not ask gh
    got = resolve_json(forge["work"], "42")
    assert (got["rc"], got["pr_number"], got["source"]) == (0, 57, "gh-body-keywords")


@pytest.mark.parametrize(
    "body",
    [
        "Fixes #420",
        "Fixes #4200 and #42",
        "see #42",
        "disclosed #42",
        "Fixes #42a",
        "fixes other/repo#42",
        "Closes https://github.com/other/repo/issues/42",
        "Fixes GH-42",
        "prefixes #42",
    ],
)
def test_body_texts_that_do_not_close_42(gh, forge, body):
    gh.set([make_pr(57, body=body)])
    got = resolve_json(forge["work"], "42")
    assert (got["rc"], got["pr_number"]) == (1, None), body


def test_hash_42_never_matches_420_in_references_or_body(gh, forge):
    gh.set([make_pr(420, closes=[420], body="Fixes #420")])
    assert resolve_json(forge["work"], "42")["pr_number"] is None
    got = resolve_json(forge["work"], "420")
    assert (got["pr_number"], got["source"]) == (420, "gh-closing-references")


def test_closing_reference_to_another_repository_does_not_count(gh, forge):
    gh.set([make_pr(8, closes=[("other", "repo", 42)]), make_pr(9, closes=[("ACME", "Widgets", 42)])])
    got = resolve_json(forge["work"], "42")
    assert (got["pr_number"], got["source"]) == (9, "gh-closing-references")


def test_head_branch_answers_from_the_template_and_from_the_registry(gh, forge):
    work = forge["work"]
    gh.set([make_pr(61, head="st/issue-42"), make_pr(62, head="feature/login-42")])
    got = resolve_json(work, "42")
    assert (got["pr_number"], got["source"]) == (61, "gh-head-branch")
    assert "st.worktree.branch template" in got["candidates"][0]["evidence"]

    registry = work / "state" / "active-worktrees" / "42.json"
    registry.parent.mkdir(parents=True)
    registry.write_text(json.dumps({"issue": "42", "branch": "feature/login-42", "path": str(work), "session": "s1"}))
    got = resolve_json(work, "42")
    assert (got["pr_number"], got["source"]) == (62, "gh-head-branch")
    assert "worktree registry" in got["candidates"][0]["evidence"]

    got = resolve_json(work, "42", "--branch", "st/issue-42")
    assert got["pr_number"] == 61


def test_head_branch_shared_by_a_fork_is_narrowed_by_the_branch_tip(gh, forge):
    gh.set(
        [
            make_pr(70, head="st/issue-42", oid="f" * 40, repo=("fork", NAME)),
            make_pr(71, head="st/issue-42", oid=forge["tip"]),
        ]
    )
    got = resolve_json(forge["work"], "42")
    assert (got["pr_number"], got["source"]) == (71, "gh-head-branch")


def test_fetched_pull_refs_answer_offline_with_a_configured_refspec(gh, forge):
    work = forge["work"]
    fetch_pulls(work)
    assert git("rev-parse", "refs/remotes/origin/pr/7", cwd=work) == forge["tip"]
    got = resolve_json(work, "42", "--offline")
    assert (got["rc"], got["pr_number"], got["source"]) == (0, 7, "pull-refs")
    assert "refs/remotes/origin/pr/7" in got["candidates"][0]["evidence"]
    assert gh.calls() == []


def test_fetched_pull_refs_answer_after_a_one_off_fetch(no_gh, forge):
    work = forge["work"]
    git("fetch", "-q", "origin", "refs/pull/*/head:refs/pull/*/head", cwd=work)
    result = resolve(work, "42", "--explain")
    assert result.returncode == 0, result
    assert result.stdout == "7\n"
    assert "gh is not installed" in result.stderr


def test_pull_refs_follow_the_remote_tracking_tip_when_the_local_branch_moved_on(no_gh, forge):
    work = forge["work"]
    fetch_pulls(work)
    (work / "more.txt").write_text("unpushed\n")
    git("add", "more.txt", cwd=work)
    git("commit", "-q", "-m", "not pushed yet", cwd=work)
    got = resolve_json(work, "42")
    assert got["pr_number"] == 7
    assert "refs/remotes/origin/st/issue-42" in got["candidates"][0]["evidence"]


# --- hints, ambiguity, failing gh ----------------------------------------------------------


def test_hint_for_another_issue_is_ignored(gh, forge):
    work = forge["work"]
    gh.set([make_pr(57, closes=[42])])
    result = resolve(work, "42", "--explain", env={"ST_PR_NUMBER": "99", "ST_PR_ISSUE": "43"})
    assert result.returncode == 0, result
    assert result.stdout == "57\n"
    assert "is for issue '43' (ST_PR_ISSUE), not issue 42" in result.stderr
    for owner in ("42", "#42", "042"):
        assert resolve(work, "42", env={"ST_PR_NUMBER": "99", "ST_PR_ISSUE": owner}).stdout == "99\n"
    assert resolve(work, "42", env={"ST_PR_NUMBER": "not-a-number"}).stdout == "57\n"


def test_two_prs_closing_the_same_issue_is_an_error_listing_both(gh, forge):
    work = forge["work"]
    fetch_pulls(work)  # a later step would answer: ambiguity must still stop the cascade
    gh.set(
        [
            make_pr(57, closes=[42], title="first try", head="a"),
            make_pr(58, closes=[42], title="second try", head="b"),
            make_pr(59, closes=[43]),
        ]
    )
    result = resolve(work, "42")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "#57 'first try'" in result.stderr and "#58 'second try'" in result.stderr
    assert "#59" not in result.stderr and "refusing to guess" in result.stderr
    got = resolve_json(work, "42")
    assert (got["rc"], got["pr_number"], got["source"]) == (1, None, "gh-closing-references")
    assert [c["number"] for c in got["candidates"]] == [57, 58]
    assert got["steps"][-1]["status"] == "not-run"


def test_two_body_keywords_and_two_fetched_heads_are_ambiguous_too(gh, forge):
    work = forge["work"]
    git("push", "-q", "origin", f"{forge['tip']}:refs/pull/8/head", cwd=work)
    fetch_pulls(work)
    got = resolve_json(work, "42", "--offline")
    assert (got["rc"], got["source"], [c["number"] for c in got["candidates"]]) == (1, "pull-refs", [7, 8])
    gh.set([make_pr(57, body="fixes #42"), make_pr(58, body="Closes #42")])
    got = resolve_json(work, "42")
    assert (got["rc"], got["source"], [c["number"] for c in got["candidates"]]) == (1, "gh-body-keywords", [57, 58])


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("unauthenticated", "gh is not authenticated"),
        ("failing", "gh failed (exit 1): HTTP 502: Bad Gateway"),
        ("no-github-remote", "none of the git remotes"),
        ("garbage", "not JSON"),
        ("hang", "did not answer within 1s"),
    ],
)
def test_gh_failing_is_a_skipped_step_and_the_next_step_runs(gh, forge, mode, reason):
    work = forge["work"]
    fetch_pulls(work)
    gh.set([make_pr(57, closes=[42])], mode=mode)
    result = resolve(work, "42", "--explain", env={"ST_GH_TIMEOUT": "1"})
    assert result.returncode == 0, result
    assert result.stdout == "7\n"
    skipped = [line for line in result.stderr.splitlines() if "gh:" in line]
    assert len(skipped) == 3 and all("skipped" in line and reason in line for line in skipped), result.stderr


def test_gh_missing_is_a_skipped_step_and_the_next_step_runs(no_gh, forge):
    work = forge["work"]
    fetch_pulls(work)
    got = resolve_json(work, "42")
    assert (got["rc"], got["pr_number"], got["source"]) == (0, 7, "pull-refs")
    assert {s["reason"] for s in got["steps"][3:6]} == {"gh is not installed (no `gh` on PATH)"}


def test_old_gh_without_closing_references_still_reads_bodies(gh, forge):
    gh.set([make_pr(57, body="Fixes #42", closes=[42])], mode="old-gh")
    got = resolve_json(forge["work"], "42")
    assert (got["pr_number"], got["source"]) == (57, "gh-body-keywords")
    assert "does not know closingIssuesReferences" in got["steps"][3]["reason"]
    assert len(gh.calls()) == 2


# --- input and --write ------------------------------------------------------------------


def test_write_stores_the_answer_in_the_string_form(gh, forge):
    work = forge["work"]
    gh.set([make_pr(57, closes=[42])])
    result = resolve(work, "42", "--write")
    assert (result.returncode, result.stdout) == (0, "57\n")
    stored = json.loads((work / "state" / "pipeline" / "42.json").read_text())
    assert stored["42"]["pr_number"] == "57" and "lastActivity" in stored
    gh.set([])
    got = resolve_json(work, "42")
    assert (got["pr_number"], got["source"]) == (57, "pipeline")


def test_pipeline_pr_number_is_parseint_and_nan_counts_as_absent(no_gh, forge):
    work = forge["work"]
    path = work / "state" / "pipeline" / "42.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"42": {"pr_number": " 57abc"}}))
    assert resolve(work, "42", "--offline").stdout == "57\n"
    for raw in ("abc", "", "0", "-3"):
        path.write_text(json.dumps({"42": {"pr_number": raw}}))
        got = resolve_json(work, "42", "--offline")
        assert got["steps"][2]["status"] == "no-answer", raw
        assert got["rc"] == 1
    path.write_text("{not json")
    got = resolve_json(work, "42", "--offline")
    assert got["steps"][2]["status"] == "skipped" and "not valid JSON" in got["steps"][2]["reason"]


@pytest.mark.parametrize("args", [("../42",), ("42x",), ("0",), ("42", "--pr", "abc"), ("42", "--pr", "0")])
def test_bad_issue_or_pr_is_a_usage_error(forge, args):
    result = resolve(forge["work"], *args)
    assert result.returncode == 2, result
    assert result.stderr.startswith("error: invalid") and "Traceback" not in result.stderr
    assert not (forge["work"] / "state").exists()


def test_works_outside_a_repository_with_an_explicit_answer(tmp_path, no_gh):
    outside = tmp_path / "plain"
    outside.mkdir()
    assert resolve(outside, "42", "--pr", "57").stdout == "57\n"
    result = resolve(outside, "42", "--explain")
    assert result.returncode == 1 and "not inside a git work tree" in result.stderr


def test_the_explained_fetch_hint_works_pasted_as_is(no_gh, forge):
    """Issue 20.10: the command --explain prints for missing PR heads, run as printed in a
    shell in the clone, fetches what the cascade then reads: the PR is found."""
    import re
    import subprocess

    work = forge["work"]
    before = resolve(work, "42", "--explain")
    assert before.returncode == 1, before
    [line] = [line for line in before.stderr.splitlines() if "git fetch" in line]
    command = re.search(r"`?(git fetch [^`\n]*)`?", line).group(1)  # what a person would copy
    pasted = subprocess.run(["/bin/sh", "-c", command], cwd=work, capture_output=True, text=True, check=False)
    assert pasted.returncode == 0, pasted
    got = resolve_json(work, "42")
    assert (got["rc"], got["pr_number"], got["source"]) == (0, 7, "pull-refs"), got
