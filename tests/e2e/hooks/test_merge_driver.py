"""The plan merge driver through real `git merge` and `git rebase` (must show 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import git, git_st, mutate, ok, run, st

PLAN = Path(".step") / "st-plan.jsonl"


def records(repo: Path) -> list[dict]:
    return [json.loads(line) for line in (repo / PLAN).read_bytes().splitlines()]


def events(repo: Path) -> list[dict]:
    return [r for r in records(repo) if r["lane"] == "event"]


@pytest.fixture
def plan_repo(repo):
    """A repo with gitst's hooks + merge driver and a committed plan of two items."""
    ok(st("hooks", "install", cwd=repo))
    ok(st("init", cwd=repo))
    mutate(repo, "add", "--id", "st-001", "--step", "first")
    mutate(repo, "add", "--id", "st-002", "--step", "second")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "plan", cwd=repo)
    return repo


def comment_texts(repo: Path) -> list[str]:
    return [e["comment"]["text"] for e in events(repo) if e["op"] == "add_comment"]


def diverge(repo: Path, *, feature_commits: int = 10) -> None:
    """feature: 10 mutations, one commit each; main: 10 mutations in one commit."""
    git("checkout", "-q", "-b", "feature", cwd=repo)
    for i in range(feature_commits):
        if i % 2:
            mutate(repo, "add-comment", "st-001", f"feature {i}")
        else:
            mutate(repo, "add", "--id", f"feat-{i}", "--step", f"feature step {i}")
        git("commit", "-q", "-am", f"feature {i}", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    for i in range(10):
        if i % 2:
            mutate(repo, "add-comment", "st-002", f"main {i}")
        elif i == 4:
            mutate(repo, "set-status", "st-002", "in_progress")
        else:
            mutate(repo, "add", "--id", f"main-{i}", "--step", f"main step {i}")
    git("commit", "-q", "-am", "main work", cwd=repo)


def assert_all_twenty(repo: Path) -> None:
    texts = comment_texts(repo)
    for i in range(1, 10, 2):
        assert texts.count(f"feature {i}") == 1, texts
        assert texts.count(f"main {i}") == 1, texts
    added = {e["item"]["id"] for e in events(repo) if e["op"] == "upsert"}
    assert {f"feat-{i}" for i in range(0, 10, 2)} <= added
    assert {"main-0", "main-2", "main-6", "main-8"} <= added
    assert any(e["op"] == "set_status" and e["id"] == "st-002" for e in events(repo))
    seqs = [r["seq"] for r in records(repo)]
    doctor = ok(git_st("doctor", cwd=repo))
    assert "seq contract ok" in doctor.stdout
    assert doctor.stderr == ""
    show = json.loads(ok(st("show", "--format", "json", cwd=repo)).stdout)
    ids = {item["id"] for item in show["items"]}
    assert {"st-001", "st-002", "feat-0", "feat-8", "main-0", "main-8"} <= ids
    assert seqs == sorted(seqs), seqs  # theirs' events were re-sequenced after ours
    assert records(repo)[-1]["lane"] == "checkpoint"  # and sealed by a checkpoint


def merge_feature_cleanly(repo: Path):
    """`git merge feature` on main: no conflict, nothing left to do, ours kept byte for byte.
    Returns git's result and our plan's bytes before the merge."""
    ours_before = (repo / PLAN).read_bytes()
    merged = run(["git", "merge", "--no-edit", "feature"], cwd=repo)
    assert merged.returncode == 0, merged
    assert "CONFLICT" not in merged.stdout
    assert git("status", "--porcelain", cwd=repo) == ""
    assert (repo / PLAN).read_bytes().startswith(ours_before)
    return merged, ours_before


def test_merge_of_two_appending_branches_needs_no_hand_editing(plan_repo):
    repo = plan_repo
    diverge(repo)
    _merged, ours_before = merge_feature_cleanly(repo)
    after = (repo / PLAN).read_bytes()
    appended = after[len(ours_before) :].splitlines()
    assert json.loads(appended[-1])["lane"] == "checkpoint"
    watermark = max(r["seq"] for r in (json.loads(x) for x in ours_before.splitlines()))
    assert next(json.loads(x)["seq"] for x in appended if json.loads(x)["lane"] == "event") == watermark + 1
    assert_all_twenty(repo)


def rebase_feature_onto_main(repo: Path, commits: int):
    """`git rebase main` on feature: it completes, all ``commits`` are kept, and every
    rebased commit holds a valid plan, not only the last one. Returns git's result."""
    from gitst.git.runner import run as git_run
    from gitst.plan.doctor import check_plan_bytes

    git("checkout", "-q", "feature", cwd=repo)
    rebased = run(["git", "rebase", "main"], cwd=repo)
    assert rebased.returncode == 0, rebased
    assert git("status", "--porcelain", cwd=repo) == ""
    assert git("rev-list", "--count", "main..feature", cwd=repo) == str(commits)
    for commit in git("rev-list", "main..feature", cwd=repo).split():
        blob = git_run(["show", f"{commit}:{PLAN.as_posix()}"], repo).stdout
        assert [d for d in check_plan_bytes(blob, "plan") if d.is_error] == [], commit
    return rebased


def test_rebase_of_an_appending_branch_needs_no_hand_editing(plan_repo):
    repo = plan_repo
    diverge(repo)
    rebase_feature_onto_main(repo, 10)
    assert_all_twenty(repo)


def test_merging_the_same_branch_again_later_appends_only_what_is_new(plan_repo):
    repo = plan_repo
    diverge(repo, feature_commits=2)
    assert run(["git", "merge", "--no-edit", "feature"], cwd=repo).returncode == 0
    git("checkout", "-q", "feature", cwd=repo)
    mutate(repo, "add-comment", "st-001", "late feature")
    git("commit", "-q", "-am", "late", cwd=repo)
    # feature merges main back (main holds feature's first records re-sequenced)...
    assert run(["git", "merge", "--no-edit", "main"], cwd=repo).returncode == 0
    git("checkout", "-q", "main", cwd=repo)
    # ...and main merges feature again: nothing may arrive twice
    assert run(["git", "merge", "--no-edit", "feature"], cwd=repo).returncode == 0
    texts = comment_texts(repo)
    assert texts.count("feature 1") == 1 and texts.count("late feature") == 1
    assert texts.count("main 1") == 1
    ok(git_st("doctor", cwd=repo))


def test_a_contradictory_merge_fails_naming_the_item_and_field(plan_repo):
    repo = plan_repo
    git("checkout", "-q", "-b", "feature", cwd=repo)
    mutate(repo, "set-status", "st-001", "blocked")
    git("commit", "-q", "-am", "block it", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    mutate(repo, "set-status", "st-001", "completed")
    git("commit", "-q", "-am", "finish it", cwd=repo)
    ours = (repo / PLAN).read_bytes()

    merged = run(["git", "merge", "--no-edit", "feature"], cwd=repo)
    assert merged.returncode != 0, merged
    assert "item 'st-001' changed on both sides: status" in merged.stderr
    assert '"completed"' in merged.stderr and '"blocked"' in merged.stderr
    assert "fix: keep our plan (git checkout --ours -- .step/st-plan.jsonl)" in merged.stderr
    assert "Traceback" not in merged.stderr
    assert "UU .step/st-plan.jsonl" in git("status", "--porcelain", cwd=repo)
    assert (repo / PLAN).read_bytes() == ours  # left as ours, no markers inside the JSONL


def three_versions(repo: Path) -> tuple[bytes, bytes, bytes]:
    """Base, ours (a comment on st-001) and theirs (a comment on st-002) of the plan; the
    work tree is left with theirs."""
    base = (repo / PLAN).read_bytes()
    mutate(repo, "add-comment", "st-001", "ours")
    ours = (repo / PLAN).read_bytes()
    (repo / PLAN).write_bytes(base)
    mutate(repo, "add-comment", "st-002", "theirs")
    return base, ours, (repo / PLAN).read_bytes()


def test_merge_driver_command_directly(plan_repo, tmp_path):
    """`git st merge-driver %O %A %B %P` as git calls it: result in %A, exit 0."""
    repo = plan_repo
    base, ours, theirs = three_versions(repo)
    files = {}
    for name, data in (("O", base), ("A", ours), ("B", theirs)):
        files[name] = tmp_path / name
        files[name].write_bytes(data)
    result = st("merge-driver", str(files["O"]), str(files["A"]), str(files["B"]), PLAN.as_posix(), cwd=repo)
    assert result.returncode == 0, result
    merged = files["A"].read_bytes()
    assert merged.startswith(ours) and b'"theirs"' in merged
    again = st("merge-driver", str(files["O"]), str(files["A"]), str(files["B"]), PLAN.as_posix(), cwd=repo)
    assert again.returncode == 0 and files["A"].read_bytes() == merged  # idempotent

    files["B"].write_bytes(b'{"not": "a record"\n')
    broken = st("merge-driver", str(files["O"]), str(files["A"]), str(files["B"]), PLAN.as_posix(), cwd=repo)
    assert broken.returncode == 1, broken
    assert "their side: line 1" in broken.stderr and ".step/st-plan.jsonl" in broken.stderr
    assert files["A"].read_bytes() == merged


def test_merge_driver_refuses_a_record_it_would_drop(plan_repo, tmp_path):
    """Issue 21 (low): a record on the base side (or any side) that is neither an event nor a
    checkpoint was silently dropped; it is refused, naming the side and line, %A untouched."""
    repo = plan_repo
    base, ours, theirs = three_versions(repo)
    stranger = b'{"v":3,"ts":"2026-01-01T00:00:00Z","seq":3,"lane":"note","text":"keep me"}\n'
    files = {}
    for name, data in (("O", base + stranger), ("A", ours), ("B", theirs)):
        files[name] = tmp_path / name
        files[name].write_bytes(data)
    result = st("merge-driver", str(files["O"]), str(files["A"]), str(files["B"]), PLAN.as_posix(), cwd=repo)
    assert result.returncode == 1, result
    line = len(base.splitlines()) + 1
    assert f"the merge base: line {line} is not a plan record" in result.stderr, result
    assert 'lane "note"' in result.stderr and "Traceback" not in result.stderr
    assert files["A"].read_bytes() == ours


# --- both branches `git st add` without --id (auto ids collide) ----------------------------


def items_by_step(repo: Path) -> dict[str, dict]:
    from gitst.plan.store import read_full

    return {item["step"]: item for item in read_full(repo / PLAN, events_only=True).items()}


def add_own_steps(repo: Path, side: str, *, commit_each: bool) -> None:
    """Five `git st add` without --id (st-003..st-007 on either branch), deps and status
    changes among them, as a parallel agent works on its own branch."""

    def step(text: str, *args: str) -> None:
        mutate(repo, *args)
        if commit_each:
            git("commit", "-q", "-am", text, cwd=repo)

    def id_of(n: int) -> str:
        return items_by_step(repo)[f"{side} step {n}"]["id"]

    step("add 0", "add", "--step", f"{side} step 0")
    step("add 1", "add", "--step", f"{side} step 1", "--deps", id_of(0))
    step("start 0", "set-status", id_of(0), "in_progress")
    step("add 2", "add", "--step", f"{side} step 2")
    step("add 3", "add", "--step", f"{side} step 3", "--deps", f"{id_of(1)},{id_of(2)}")
    step("finish 0", "set-status", id_of(0), "completed")
    step("add 4", "add", "--step", f"{side} step 4")
    step("deps 4", "set-deps", id_of(4), id_of(3))
    step("comment 2", "add-comment", id_of(2), f"{side} note")
    if not commit_each:
        git("commit", "-q", "-am", f"{side} work", cwd=repo)


def diverge_auto(repo: Path) -> None:
    """feature: one commit per mutation; main: all of its own in one commit."""
    git("checkout", "-q", "-b", "feature", cwd=repo)
    add_own_steps(repo, "feature", commit_each=True)
    git("checkout", "-q", "main", cwd=repo)
    add_own_steps(repo, "main", commit_each=False)


RENAMES = [
    (
        f"""gitst merge: theirs' st-{n + 3:03d} "feature step {n}" is now st-{n + 8:03d} """
        f"""(ours created st-{n + 3:03d} too)"""
    )
    for n in range(5)
]


def assert_both_sides_whole(repo: Path, total: int = 12) -> None:
    """main kept st-003..st-007; feature's five are st-008..st-012 with their deps, statuses
    and comments following them; the plan passes the doctor."""
    show = json.loads(ok(git_st("show", "--format", "json", cwd=repo)).stdout)["items"]
    ids = [item["id"] for item in show]
    assert len(ids) == len(set(ids)) == total
    by_step = items_by_step(repo)
    for side, first in (("main", 3), ("feature", 8)):
        mine = {n: by_step[f"{side} step {n}"] for n in range(5)}
        assert [mine[n]["id"] for n in range(5)] == [f"st-{first + n:03d}" for n in range(5)]

        def deps(n: int, mine: dict[int, dict] = mine) -> list[str]:
            return [edge["id"] for edge in mine[n]["deps"]]

        assert deps(1) == [mine[0]["id"]]
        assert deps(3) == [mine[1]["id"], mine[2]["id"]]
        assert deps(4) == [mine[3]["id"]]
        assert mine[0]["status"] == "completed"
        assert [c["text"] for c in mine[2]["comments"]] == [f"{side} note"]
    doctor = ok(git_st("doctor", cwd=repo))
    assert "seq contract ok" in doctor.stdout and doctor.stderr == ""


def test_merge_of_branches_that_both_added_without_id(plan_repo):
    repo = plan_repo
    diverge_auto(repo)
    merged, _ours_before = merge_feature_cleanly(repo)
    assert [line for line in merged.stderr.splitlines() if line.startswith("gitst merge:")] == RENAMES
    assert_both_sides_whole(repo)
    # the renumbered events say so (a later merge, or a merge back, reads it)
    upserts = [e for e in events(repo) if e["op"] == "upsert" and e["item"]["step"] == "feature step 3"]
    assert upserts[-1]["merge"] == {"renamed": {"st-006": "st-011", "st-004": "st-009", "st-005": "st-010"}}

    # both go on; feature merges main back, main goes on and merges feature again
    mutate(repo, "add", "--step", "main late")  # st-013 on main
    git("commit", "-q", "-am", "main late", cwd=repo)
    git("checkout", "-q", "feature", cwd=repo)
    mutate(repo, "add", "--step", "feature late")  # st-008 in feature's own numbering
    git("commit", "-q", "-am", "feature late", cwd=repo)
    main_plan = git("show", "main:.step/st-plan.jsonl", cwd=repo).encode() + b"\n"
    back = run(["git", "merge", "--no-edit", "main"], cwd=repo)
    assert back.returncode == 0, back
    # main is published (st.sync.base): its ids never change, even merged into the feature
    # branch; feature's items take main's numbering, and its new item is the one that moves
    assert [line for line in back.stderr.splitlines() if line.startswith("gitst merge:")] == [
        (
            'gitst merge: this branch\'s st-008 "feature late" is now st-014 '
            "(main already has another st-008; ids on main never change)"
        )
    ]
    assert (repo / PLAN).read_bytes().startswith(main_plan)  # main's plan kept byte for byte
    by_step = items_by_step(repo)
    assert len(by_step) == 14 and by_step["feature late"]["id"] == "st-014"
    assert [by_step[f"feature step {n}"]["id"] for n in range(5)] == [f"st-{n + 8:03d}" for n in range(5)]
    assert [by_step[f"main step {n}"]["id"] for n in range(5)] == [f"st-{n + 3:03d}" for n in range(5)]
    ok(git_st("doctor", cwd=repo))

    git("checkout", "-q", "main", cwd=repo)
    mutate(repo, "set-status", "st-004", "completed")  # main step 1
    git("commit", "-q", "-am", "main step 1 done", cwd=repo)
    again = run(["git", "merge", "--no-edit", "feature"], cwd=repo)
    assert again.returncode == 0, again
    # only feature's late item is new here, already numbered after main's: nothing moves,
    # nothing arrives twice
    assert [line for line in again.stderr.splitlines() if line.startswith("gitst merge:")] == []
    by_step = items_by_step(repo)
    assert by_step["feature late"]["id"] == "st-014" and by_step["main late"]["id"] == "st-013"
    assert by_step["main step 1"]["status"] == "completed"
    assert_both_sides_whole(repo, total=14)


def test_rebase_of_a_branch_that_added_without_id(plan_repo):
    repo = plan_repo
    diverge_auto(repo)
    rebased = rebase_feature_onto_main(repo, 9)
    # each pick that added an item reports its new id
    assert [line for line in rebased.stderr.splitlines() if line.startswith("gitst merge:")] == RENAMES
    assert_both_sides_whole(repo)


def test_an_explicit_id_added_on_both_branches_is_still_refused(plan_repo):
    repo = plan_repo
    git("checkout", "-q", "-b", "feature", cwd=repo)
    mutate(repo, "add", "--id", "docs", "--step", "Write the docs")
    git("commit", "-q", "-am", "docs", cwd=repo)
    git("checkout", "-q", "main", cwd=repo)
    mutate(repo, "add", "--id", "docs", "--step", "Review the docs")
    git("commit", "-q", "-am", "docs", cwd=repo)
    ours = (repo / PLAN).read_bytes()

    merged = run(["git", "merge", "--no-edit", "feature"], cwd=repo)
    assert merged.returncode != 0, merged
    assert (
        "cannot merge the plan: the plans contradict each other: item 'docs' added on both sides: "
        'step (ours: "Review the docs", theirs: "Write the docs")'
    ) in merged.stderr
    assert "fix: keep our plan" in merged.stderr and "Traceback" not in merged.stderr
    assert "gitst merge:" not in merged.stderr  # nothing renumbered
    assert (repo / PLAN).read_bytes() == ours
