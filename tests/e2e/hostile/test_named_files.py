"""Issue 21: the newer readers and writers (sdlc, deliberations, snapshots, import-plan,
aide replay) are held to the rules the plan's already were (docs/security.md):

- a file a clone controls or a user names is opened the one way (``gitst.core.safepaths``):
  a committed link (``state.json -> ~/.docker/config.json``, ``-> /dev/zero``) is refused,
  so are a FIFO and a device, before a byte is read (21.1, 21.8); standard input is bounded;
- a writer never stores what its reader refuses: the JSON limits apply on write (21.7);
- a directory where a record belongs is ``READ``, exit 1; a corrupt ``state.json`` is
  reported by ``validate``; invisible format characters are escaped in human views (LOW).

Each command runs as a fresh process of the real CLI in a real repository (or a real clone),
with a deadline: a command that waits on a FIFO or reads ``/dev/zero`` fails by timing out.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.support import assert_refused, clone_of, git, ok, st

DEADLINE = 60  # seconds: a refusal takes well under one even at load 20; a hang never ends


def deep(levels: int) -> object:
    value: object = "leaf"
    for _ in range(levels - 1):
        value = {"d": value}
    return value


def no_secret(result) -> None:
    assert "SENTINEL-SECRET" not in result.stdout + result.stderr, result


# --- 21.1: sdlc reads state.json through safepaths -------------------------------------------

SDLC_COMMANDS = [
    ["sdlc", "show", "--format", "json"],
    ["sdlc", "show"],
    ["sdlc", "phase", "next"],
    ["sdlc", "phase-status", "awaiting_human"],
    ["sdlc", "issue", "add", "A-1", "--repo", "acme/w", "--title", "t"],
    ["sdlc", "init", "run"],
]


def test_sdlc_never_reads_through_a_committed_state_json_link(tmp_path, nothing_written_outside):
    secret = nothing_written_outside / "secret"
    clone = clone_of(tmp_path, "clone", lambda origin: (origin / "state.json").symlink_to(secret))
    for args in SDLC_COMMANDS:
        result = st(*args, cwd=clone, timeout=DEADLINE)
        assert_refused(result, 2)
        assert "state.json" in result.stderr and "symbolic link" in result.stderr, result
        no_secret(result)
    assert (clone / "state.json").is_symlink()


def test_sdlc_never_reads_a_committed_link_to_dev_zero(tmp_path):
    clone = clone_of(tmp_path, "clone", lambda origin: (origin / "state.json").symlink_to("/dev/zero"))
    for args in SDLC_COMMANDS[:3]:
        assert_refused(st(*args, cwd=clone, timeout=DEADLINE), 2)


def test_sdlc_never_reads_through_a_linked_directory_on_the_way(tmp_path, nothing_written_outside):
    def build(origin):
        (origin / "runs").symlink_to(nothing_written_outside)

    clone = clone_of(tmp_path, "clone", build)
    (nothing_written_outside / "state.json").write_text('{"run_id": "2026-01-01-x", "phase": "BOOTSTRAP"}')
    try:
        for args in SDLC_COMMANDS[:3]:
            result = st(*args, cwd=clone, env={"ST_SDLC_STATE": "runs/state.json"}, timeout=DEADLINE)
            assert_refused(result, 2)
            assert "runs is a symbolic link" in result.stderr, result
            assert "2026-01-01-x" not in result.stdout
    finally:
        (nothing_written_outside / "state.json").unlink()


def test_a_fifo_or_device_as_the_sdlc_state_is_refused_without_blocking(repo, tmp_path):
    fifo = repo / "state.json"
    os.mkfifo(fifo)
    for args in SDLC_COMMANDS:
        result = st(*args, cwd=repo, timeout=DEADLINE)
        assert_refused(result, 2)
        assert "FIFO" in result.stderr, result
    assert not list((repo / ".git").glob("gitst/sdlc-*.lock")) or fifo.exists()
    other = tmp_path / "named.fifo"
    os.mkfifo(other)
    for named in (str(other), "/dev/zero"):
        for args in (["sdlc", "show", "--file", named], ["sdlc", "phase", "next", "--file", named]):
            assert_refused(st(*args, cwd=repo, timeout=DEADLINE), 2)


def test_sdlc_still_reads_and_writes_a_regular_state_json(repo):
    ok(st("sdlc", "init", "run", cwd=repo))
    ok(st("sdlc", "issue", "add", "A-1", "--repo", "acme/w", "--title", "t", cwd=repo))
    shown = json.loads(ok(st("sdlc", "show", "--format", "json", cwd=repo)).stdout)
    assert shown["issues"]["A-1"]["status"] == "ready"
    (repo / "state.json").unlink()
    (repo / "state.json").mkdir()
    in_the_way = st("sdlc", "show", cwd=repo)
    assert in_the_way.returncode == 1 and "error[READ]" in in_the_way.stderr, in_the_way


# --- 21.8: every named file is a regular file; stdin is bounded --------------------------------

NAMED = [
    ["import-plan", "--input", "{}"],
    ["deliberation", "add", "--role", "judge", "--status", "ok", "--from", "{}"],
    ["deliberation", "add", "--role", "judge", "--status", "ok", "--response-file", "{}"],
    ["snapshot", "save", "--from", "{}"],
    ["aide", "replay", "{}"],
]


@pytest.mark.parametrize("args", NAMED, ids=lambda args: " ".join(args[:2]) + " " + args[-2])
def test_a_named_fifo_or_device_is_refused_without_blocking(repo, tmp_path, args):
    fifo = tmp_path / "input.fifo"
    os.mkfifo(fifo)
    for named, what in ((str(fifo), "FIFO"), ("/dev/zero", "device")):
        result = st(*[named if a == "{}" else a for a in args], cwd=repo, timeout=DEADLINE)
        assert_refused(result, 2)
        assert what in result.stderr, result
    assert not (repo / "state" / "deliberations").exists()
    assert not (repo / "state" / "session-snapshots").exists()
    assert not (repo / ".step" / "st-plan.jsonl").exists()


STDIN = [
    ["import-plan", "--input", "-"],
    ["deliberation", "add", "--role", "judge", "--status", "ok", "--from", "-"],
    ["deliberation", "add", "--role", "judge", "--status", "ok", "--response-file", "-"],
    ["snapshot", "save", "--from", "-"],
]


@pytest.mark.parametrize("args", STDIN, ids=lambda args: " ".join(args[:2]) + " " + args[-2])
def test_standard_input_is_bounded(repo, args):
    with open("/dev/zero", "rb") as zero:
        proc = subprocess.run(
            ["git-st", *args], cwd=repo, stdin=zero, capture_output=True, text=True, timeout=DEADLINE, check=False
        )
    assert proc.returncode == 2, proc.stderr
    assert "standard input holds more than 64 MiB" in proc.stderr and "Traceback" not in proc.stderr
    assert not (repo / "state" / "deliberations").exists()


def test_named_regular_files_and_stdin_still_work(repo, tmp_path):
    items = tmp_path / "items.json"
    items.write_text(json.dumps([{"id": "st-001", "step": "one"}]))
    ok(st("init", cwd=repo))
    ok(st("import-plan", "--input", str(items), cwd=repo))
    response = tmp_path / "response.txt"
    response.write_text("APPROVE")
    ok(st("deliberation", "add", "--role", "judge", "--status", "ok", "--response-file", str(response), cwd=repo))
    ok(st("snapshot", "save", "--from", "-", cwd=repo, input=json.dumps({"summary": "half way"})))
    assert "half way" in ok(st("snapshot", "load", "--session", "anonymous", cwd=repo)).stdout


# --- 21.7: writers never store what their readers refuse -------------------------------------


def test_deliberation_add_refuses_what_list_would_refuse(repo):
    ok(st("deliberation", "add", "--role", "judge", "--status", "ok", "--from", "-", cwd=repo,
          input=json.dumps({"verdict": deep(120)})))  # fmt: skip
    for document, code in (({"verdict": deep(130)}, "JSON_DEPTH"), ({"verdict": deep(300)}, "JSON_DEPTH"),
                           ({"tokens_total": 2**60}, "JSON_NUMBER")):  # fmt: skip
        result = st("deliberation", "add", "--role", "judge", "--status", "ok", "--from", "-", cwd=repo,
                    input=json.dumps(document))  # fmt: skip
        assert_refused(result, 2)
        assert f"error[{code}]" in result.stderr, result
    listed = st("deliberation", "list", "--format", "json", cwd=repo)
    assert listed.returncode == 0, listed
    assert len(json.loads(listed.stdout)["deliberations"]) == 1


def test_snapshot_save_refuses_what_load_would_refuse(repo):
    ok(st("snapshot", "save", "--summary", "good", "--session", "a", cwd=repo))
    for document in ({"summary": "x", "extra": deep(130)}, {"summary": "x", "extra": deep(400)}, {"n": 2**63}):
        result = st("snapshot", "save", "--from", "-", "--session", "b", cwd=repo, input=json.dumps(document))
        assert_refused(result, 2)
    assert not (repo / "state" / "session-snapshots" / "b.json").exists()
    loaded = st("snapshot", "load", "--format", "json", "--session", "a", cwd=repo)
    assert json.loads(ok(loaded).stdout)["snapshot"]["summary"] == "good"
    assert ok(st("snapshot", "list", cwd=repo)).stderr == ""


# --- LOW: a directory where a record belongs is READ (exit 1) ---------------------------------


def test_a_directory_where_a_record_belongs_is_a_read_error(repo):
    ident = "20260101T000000000Z-abcdef12"
    (repo / "state" / "deliberations" / f"{ident}.json").mkdir(parents=True)
    (repo / "state" / "session-snapshots" / "s1.json").mkdir(parents=True)
    for args in (["deliberation", "show", ident], ["snapshot", "load", "--session", "s1"]):
        result = st(*args, cwd=repo)
        assert result.returncode == 1, result
        assert "error[READ]" in result.stderr and "Traceback" not in result.stderr, result


# --- LOW: a corrupt state.json is reported, not skipped -------------------------------------


def test_validate_reports_a_corrupt_state_json(repo):
    (repo / "state.json").write_text('{"run_id": "2026-01-01-x", "phase": ')
    (repo / "web").mkdir()
    (repo / "web" / "state.json").write_text('{"todos": []}')  # somebody else's: still skipped
    git("add", "state.json", "web/state.json", cwd=repo)
    git("commit", "-q", "-m", "state", cwd=repo)
    for args in (["validate"], ["validate", "state.json"]):
        result = st(*args, cwd=repo)
        assert result.returncode == 1, result
        assert "state.json:1:" in result.stderr and "error[JSON]" in result.stderr, result
        assert "web/state.json" not in result.stderr
    (repo / "state.json").write_text(json.dumps({"run_id": "2026-01-01-x", "extra": deep(200)}))
    too_deep = st("validate", "state.json", cwd=repo)
    assert too_deep.returncode == 1 and "error[JSON_DEPTH]" in too_deep.stderr, too_deep


# --- LOW: invisible format characters are escaped in human views ----------------------------


def test_bidi_and_zero_width_characters_are_escaped_in_human_views(repo):
    role = "judge\u202eevil\u200b\u2066x\ufeff"
    ok(st("deliberation", "add", "--role", role, "--status", "ok", "--response", "fine\u202e", cwd=repo))
    listed = ok(st("deliberation", "list", cwd=repo)).stdout
    assert "judge\\u202eevil\\u200b\\u2066x\\ufeff" in listed, listed
    assert not any(ch in listed for ch in "\u202e\u200b\u2066\ufeff")
    as_json = json.loads(ok(st("deliberation", "list", "--format", "json", cwd=repo)).stdout)
    assert as_json["deliberations"][0]["record"]["role"] == role  # JSON stays exact
    ok(st("snapshot", "save", "--summary", "all good\u202egnirts", cwd=repo))
    loaded = ok(st("snapshot", "load", "--session", "anonymous", cwd=repo)).stdout
    assert "all good\\u202egnirts" in loaded and "\u202e" not in loaded
    ok(st("sdlc", "init", "run", cwd=repo))
    ok(st("sdlc", "issue", "add", "A-1", "--repo", "acme/w", "--title", "fix\u2067\u202elogin", cwd=repo))
    shown = ok(st("sdlc", "show", cwd=repo)).stdout
    assert "fix\\u2067\\u202elogin" in shown and "\u202e" not in shown, shown


# --- 21.1, found the same way: hooks install extends the clone's .gitattributes -----------------


@pytest.mark.parametrize("target", ["/dev/zero", "SECRET"])
def test_hooks_install_never_reads_through_a_committed_gitattributes_link(tmp_path, nothing_written_outside, target):
    secret = nothing_written_outside / "secret"

    def build(origin):
        (origin / ".gitattributes").symlink_to(secret if target == "SECRET" else target)

    clone = clone_of(tmp_path, "clone", build)
    result = st("hooks", "install", cwd=clone, timeout=DEADLINE)
    assert_refused(result, 2)
    assert ".gitattributes" in result.stderr and "symbolic link" in result.stderr, result
    no_secret(result)
    assert not (clone / ".git" / "hooks" / "pre-commit").exists()  # refused before any write
    assert (clone / ".gitattributes").is_symlink()
