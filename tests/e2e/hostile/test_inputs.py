"""Bad bytes, bad numbers, bad file types and odd timing: one test per case of issue 10's
"Low" list. Each asserts the documented exit code, ``error:`` (with a fix where there is
one), no traceback, and that nothing was written or lost.

Covered elsewhere, by issue 11 (tests/e2e/parallel/): a ``worktree add`` killed between
``git worktree add`` and the registry write, and ``worktree remove N --force`` aimed at another
live session's worktree through a registry entry.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from tests.support import (
    FakeGh,
    assert_refused,
    git,
    make_pr,
    mutate,
    ok,
    plan_path,
    process_gone,
    session_env,
    st,
)

pytestmark = pytest.mark.usefixtures("nothing_written_outside")

ESC = "\x1b[2J\x1b]0;pwned\x07"  # clear screen, set the window title


@pytest.fixture
def planned(repo):
    mutate(repo, "init")
    mutate(repo, "add", "First")
    return repo


def test_arguments_that_are_not_utf8_are_refused_before_anything_runs(planned):
    bad = os.fsdecode(b"caf\xe9")  # Latin-1 bytes: what Python hands over as a lone surrogate
    before = plan_path(planned).read_bytes()
    for args in (["add", bad], ["set-notes", "st-001", bad], ["lock", "acquire", bad], ["claim", bad]):
        result = st(*args, cwd=planned, env=session_env("me"))
        assert_refused(result, 2)
        assert "is not valid UTF-8" in result.stderr and "caf\\xe9" in result.stderr
    assert plan_path(planned).read_bytes() == before
    assert not (planned / "state").exists()
    for name, args in (  # the environment too
        ("ST_ACTOR", ["add", "Second"]),
        ("ST_COMMENT_AUTHOR", ["add-comment", "st-001", "hi"]),
        ("ST_LOCK_TTL", ["lock", "acquire", "x"]),
    ):
        result = st(*args, cwd=planned, env={**session_env("me"), name: bad})
        assert_refused(result, 2)
        assert f"{name} (caf\\xe9) is not valid UTF-8" in result.stderr
    assert plan_path(planned).read_bytes() == before and not (planned / "state").exists()


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["lock", "acquire", "x", "--ttl", "1e308"], {}),
        (["claim", "7", "--ttl", "1e308"], {}),
        (["lock", "acquire", "x"], {"ST_LOCK_TTL": "1e308"}),
        (["lock", "acquire", "x"], {"ST_SESSION_PID": "99999999999999999999"}),
        (["lock", "acquire", "x"], {"ST_LOCK_TIMEOUT": "1e300"}),
    ],
)
def test_huge_numbers_in_options_and_settings_are_refused_writing_nothing(repo, args, env):
    result = st(*args, cwd=repo, env={**session_env("me"), **env})
    assert_refused(result, 2)
    assert "at most" in result.stderr
    assert not (repo / "state").exists()  # no state dir, no stray sidecar


def test_a_huge_lock_ttl_in_git_config_is_refused(repo):
    git("config", "st.lockTtl", "1e308", cwd=repo)
    result = st("lock", "acquire", "x", cwd=repo, env=session_env("me"))
    assert_refused(result, 2)
    assert "git config st.lockTtl" in result.stderr and not (repo / "state").exists()


def test_export_output_makes_a_missing_directory_but_never_writes_into_one_or_past_a_file(planned, tmp_path):
    (tmp_path / "a-file").write_text("x")
    for target in (tmp_path / "a-file" / "out.json", tmp_path):
        result = st("export", "--output", str(target), cwd=planned)
        assert_refused(result, 4)
        assert f"cannot write {target}" in result.stderr
    assert (tmp_path / "a-file").read_text() == "x"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    made = st("export", "--output", str(tmp_path / "missing" / "out.json"), cwd=planned)  # as the original
    assert made.returncode == 0 and (tmp_path / "missing" / "out.json").is_file(), made  # (issue 20, point 11)


def test_merge_driver_with_a_missing_or_fifo_version(planned, tmp_path):
    plan = plan_path(planned).read_bytes()
    ours = tmp_path / "ours"
    ours.write_bytes(plan)
    result = st("merge-driver", str(tmp_path / "gone"), str(ours), str(ours), "p", cwd=planned)
    assert_refused(result, 2)
    assert "does not exist" in result.stderr
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    result = st("merge-driver", str(fifo), str(ours), str(ours), "p", cwd=planned, timeout=30)
    assert_refused(result, 2)
    assert "FIFO" in result.stderr and ours.read_bytes() == plan


def test_a_fifo_or_device_as_the_plan_is_refused_without_blocking(repo, tmp_path):
    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    for args in (["show", "--file", str(fifo)], ["add", "x", "--file", str(fifo)], ["doctor", "--file", str(fifo)]):
        assert_refused(st(*args, cwd=repo, timeout=30), 2)
    for args in (["add", "x", "--file", "/dev/null"], ["show", "--file", "/dev/null"]):
        result = st(*args, cwd=tmp_path, timeout=30)
        assert_refused(result, 2)
        assert "it is a device" in result.stderr
    assert not os.path.exists("/dev/null.lock")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.fifo", "repo"]  # no sidecar next to the FIFO


def test_a_directory_as_the_plan_is_an_environment_error_for_every_command(repo):
    (repo / "somedir").mkdir()
    for args in (["add", "x"], ["show"], ["doctor"], ["init"]):
        result = st(*args, "--file", "somedir", cwd=repo)
        assert_refused(result, 4)
        assert "cannot read plan somedir: it is a directory" in result.stderr
    # paths without a file name to put `.lock` after (found by the fuzzer: a ValueError)
    for name in (".", "/", "..", "somedir/"):
        for args in (["add", "x"], ["show"]):
            assert_refused(st(*args, "--file", name, cwd=repo), 4)


def test_pr_numbers_below_one_from_gh_are_no_answer(repo, tmp_path, monkeypatch):
    gh = FakeGh(tmp_path)
    monkeypatch.setenv("FAKE_GH_WORLD", str(gh.world_path))
    monkeypatch.setenv("PATH", f"{gh.bindir}{os.pathsep}{os.environ['PATH']}")
    gh.set([make_pr(0, closes=[42]), make_pr(-5, body="Fixes #42")])
    result = st("pr", "resolve", "42", cwd=repo)
    assert result.returncode == 1 and result.stdout == "", result
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and "\n  fix: " in result.stderr, result  # no PR: said, with the way out


def test_a_timed_out_gh_is_killed_with_its_children(repo, tmp_path, monkeypatch):
    gh = FakeGh(tmp_path)
    monkeypatch.setenv("FAKE_GH_WORLD", str(gh.world_path))
    monkeypatch.setenv("PATH", f"{gh.bindir}{os.pathsep}{os.environ['PATH']}")
    gh.set([], mode="hang-with-child")
    started = time.monotonic()
    result = st("pr", "resolve", "42", "--explain", cwd=repo, env={"ST_GH_TIMEOUT": "2"})
    assert time.monotonic() - started < 120  # far below "never" (the 300 s deadline of st()), whatever the load
    assert result.returncode == 1 and "did not answer within 2s" in result.stderr, result
    child = int(gh.child_pid.read_text())
    for _ in range(100):  # reaped by init once killed; give the kernel a moment
        if not os.path.exists(f"/proc/{child}") or process_gone(child):
            break
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{child}") or process_gone(child), "gh's child outlived the timeout"


def test_control_sequences_are_escaped_for_people_and_exact_in_json(planned, tmp_path):
    ok(st("add", f"red {ESC} step", "--id", f"id{ESC}", "--notes", ESC, cwd=planned))
    for args in (["show"], ["ready"], ["show", "--format", "table"]):
        shown = st(*args, cwd=planned)
        assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout and "\\x1b[2J" in shown.stdout, shown
    items = json.loads(st("show", "--format", "json", cwd=planned).stdout)["items"]
    assert items[1]["id"] == f"id{ESC}" and items[1]["notes"] == ESC  # JSON: exact
    refused = st("set-status", f"nope{ESC}", "done", cwd=planned)
    assert refused.returncode == 2 and "\x1b" not in refused.stderr and "\\x1b" in refused.stderr
    owner = session_env("owner", ST_ACTOR=f"mallory{ESC}")
    ok(st("lock", "acquire", "res", cwd=planned, env=owner))
    for args in (["lock", "list"], ["sessions"], ["lock", "acquire", "res"]):
        result = st(*args, cwd=planned, env=session_env("other"))
        assert "\x1b" not in result.stdout + result.stderr, result
    listed = json.loads(st("lock", "list", "--format", "json", cwd=planned).stdout)
    assert listed["locks"][0]["owner"]["actor"] == f"mallory{ESC}"
    named = planned / ".step" / f"evil{ESC}.jsonl"
    named.write_text("not json\n")
    validated = st("validate", str(named.relative_to(planned)), cwd=planned)
    assert validated.returncode == 1 and "\x1b" not in validated.stderr and "\\x1b" in validated.stderr


def test_one_problem_has_one_code_in_doctor_the_readers_and_validate(planned):
    plan = plan_path(planned)
    good = plan.read_bytes()
    for bad in ('"op":"frobnicate"', '"op":"upsert","item":{"id":"x"}', '"op":"upsert","item":5'):
        plan.write_bytes(good + ('{"v":3,"ts":"2026-01-01T00:00:00Z","seq":3,"lane":"event",' + bad + "}\n").encode())
        codes = set()
        for args in (["doctor"], ["show"], ["validate", ".step/st-plan.jsonl"]):
            result = st(*args, cwd=planned)
            codes.update(c for c in _codes(result.stderr))
        assert codes == {"SCHEMA"}, (bad, codes)


def _codes(text: str) -> list[str]:
    import re

    return re.findall(r"error\[([A-Z_]+)\]", text)


def test_temp_files_a_crashed_writer_left_are_reported_and_cleaned(repo):
    me = session_env("me")
    ok(st("lock", "acquire", "res", cwd=repo, env=me))
    locks = repo / "state" / "locks"
    stale, fresh = locks / ".res.json.old1.tmp", locks / ".res.json.new1.tmp"
    stale.write_text('{"half": ')
    fresh.write_text('{"half": ')
    hours_ago = time.time() - 7200
    os.utime(stale, (hours_ago, hours_ago))
    validated = st("validate", cwd=repo)
    assert validated.returncode == 0 and validated.stderr.count("warning[STRAY_TEMP]") == 2, validated
    ok(st("lock", "renew", "res", cwd=repo, env=me))  # the next write of the record
    assert not stale.exists() and fresh.exists()  # an hour old: a crash; younger: maybe a live writer


def test_an_fsync_error_after_the_append_leaves_no_record_to_duplicate(planned, monkeypatch, capsys):
    from gitst.cli.main import main

    plan = plan_path(planned)
    before = plan.read_bytes()
    real = os.fsync
    calls = []

    def failing(fd):
        calls.append(fd)
        raise OSError(5, "Input/output error")

    monkeypatch.chdir(planned)
    monkeypatch.setattr(os, "fsync", failing)
    assert main(["add", "Second"]) == 4
    monkeypatch.setattr(os, "fsync", real)
    err = capsys.readouterr().err
    assert "error: cannot write plan .step/st-plan.jsonl: Input/output error" in err and calls
    assert plan.read_bytes() == before  # cut back: the failure report is true
    assert main(["add", "Second"]) == 0  # a retry adds it once
    assert plan.read_bytes().count(b'"Second"') == 1


def test_commands_with_nothing_to_do_write_nothing(repo):
    me = session_env("me")
    for args in (
        ["lock", "release", "nothere"],
        ["lock", "renew", "nothere"],
        ["release", "5"],
        ["release"],
        ["check-issue", "5"],
        ["lock", "list"],
        ["lock", "gc"],
        ["sessions"],
        ["heartbeat"],
        ["worktree", "list"],
        ["pipeline", "list"],
        ["pipeline", "unset", "5", "current_phase"],
    ):
        result = st(*args, cwd=repo, env=me)
        assert result.returncode in (0, 1, 3) and "Traceback" not in result.stderr, result
        assert not (repo / "state").exists(), args


def test_losers_of_a_same_path_worktree_add_race_leave_no_branch(repo, tmp_path):
    target = tmp_path / "shared-path"
    procs = [
        subprocess.Popen(
            ["git-st", "worktree", "add", str(issue), "--path", str(target)],
            cwd=repo,
            env={**os.environ, **session_env(f"s{issue}")},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for issue in (1, 2, 3)
    ]
    results = [(proc.wait(timeout=120), proc.stderr.read()) for proc in procs]
    winners = [rc for rc, _ in results if rc == 0]
    assert len(winners) == 1, results
    for rc, err in results:
        assert rc in (0, 2, 3) and "Traceback" not in err, results  # a conflict, never exit 4
    branches = git("branch", "--list", "st/*", "--format=%(refname:short)", cwd=repo).split()
    assert len(branches) == 1, branches  # only the winner's


def test_a_plan_with_cr_only_line_breaks_is_refused_not_set_aside(repo, tmp_path):
    plan = tmp_path / "cr.jsonl"
    lines = [
        {"v": 3, "ts": "2026-01-01T00:00:00Z", "seq": 1, "lane": "event", "op": "init"},
        {"v": 3, "ts": "2026-01-01T00:00:00Z", "seq": 2, "lane": "event", "op": "init"},
    ]
    data = "\r".join(json.dumps(line) for line in lines).encode() + b"\r"
    plan.write_bytes(data)
    result = st("add", "x", "--file", str(plan), cwd=tmp_path)
    assert_refused(result, 1)
    assert "CR" in result.stderr
    assert plan.read_bytes() == data and not list(tmp_path.glob("cr.jsonl.torn-*"))
