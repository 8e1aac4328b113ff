"""Where gitst must behave like the original st (`../shared/peer/st_plan.py`, MIT, used by
path only): what a differential run against it found, each pinned without the peer, then
the peer's own smoke test with `git st` swapped in and a bounded differential run against
the peer itself, both only where the peer's folder is present."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import random
import sys
from pathlib import Path

import pytest

from tests.support import REPO_ROOT, git_st, plan_path, records, run

PEER_DIR = Path(os.environ.get("GITST_PEER_DIR") or REPO_ROOT.parent / "shared" / "peer")  # (a worktree: set it)
needs_peer = pytest.mark.skipif(
    not (PEER_DIR / "st_plan.py").is_file(),
    reason=f"the original st is not beside this checkout ({PEER_DIR}); its smoke and differential tests need it",
)


# --- the four behaviours, pinned -----------------------------------------------------------


def test_unambiguous_prefixes_of_long_options_work_and_ambiguous_ones_are_named(repo):
    assert git_st("init", cwd=repo).returncode == 0
    added = git_st("add", "--ste", "Prefixes", "--stat", "doing", "--no-update", cwd=repo)
    assert added.returncode == 0, added
    assert added.stdout == "upserted st-001\n"
    assert records(plan_path(repo))[-1]["item"]["status"] == "in_progress"
    assert git_st("set-status", "--i", "st-001", "--stat=done", "--allow", cwd=repo).returncode == 0
    assert records(plan_path(repo))[-1]["status"] == "completed"
    assert records(plan_path(repo))[-1]["mutation"]["allow_multiple_in_progress"] is True
    shown = git_st("show", "--form", "json", cwd=repo)
    assert json.loads(shown.stdout)["items"][0]["status"] == "completed"
    ambiguous = git_st("add", "--st", "x", cwd=repo)
    assert ambiguous.returncode == 2
    assert ambiguous.stderr == "error: ambiguous option --st: could be --step, --status\n"
    # a value that looks like a prefix is a value, not an option
    notes = git_st("set-notes", "st-001", "--notes", "--st", cwd=repo)
    assert notes.returncode == 0, notes
    assert records(plan_path(repo))[-1]["notes"] == "--st"


def test_an_empty_id_allocates_the_next_id_and_a_blank_one_is_refused(repo):
    assert git_st("init", cwd=repo).returncode == 0
    assert git_st("add", "--id", "", "--step", "first", cwd=repo).stdout.startswith("upserted st-001\n")
    assert git_st("add", "--id", "", "--step", "second", cwd=repo).stdout.startswith("upserted st-002\n")
    blank = git_st("add", "--id", "  ", "--step", "third", cwd=repo)
    assert blank.returncode == 2 and blank.stderr.startswith("error: --id cannot be empty")


def test_an_empty_author_is_the_default_author_and_a_blank_one_is_refused(repo):
    assert git_st("init", cwd=repo).returncode == 0
    assert git_st("add", "--step", "x", cwd=repo).returncode == 0
    commented = git_st("add-comment", "st-001", "hello", "--author", "", cwd=repo, env={"ST_COMMENT_AUTHOR": "carol"})
    assert commented.returncode == 0, commented
    assert records(plan_path(repo))[-1]["comment"]["author"] == "carol"
    blank = git_st("add-comment", "st-001", "hello", "--author", " ", cwd=repo)
    assert blank.returncode == 2 and "--author cannot be empty" in blank.stderr


def _bad_checkpoint_plan(repo: Path, seq: int) -> Path:
    """A plan whose latest checkpoint (line 3, after seq 2) says ``seq`` instead."""
    env = {"ST_CHECKPOINT_INTERVAL": "2"}
    for args in (["init"], ["add", "--step", "a"], ["add", "--step", "b"]):
        assert git_st(*args, cwd=repo, env=env).returncode == 0
    path = plan_path(repo)
    lines = path.read_bytes().splitlines(keepends=True)
    checkpoint = json.loads(lines[2])
    assert (checkpoint["lane"], checkpoint["seq"]) == ("checkpoint", 2)
    checkpoint["seq"] = seq
    lines[2] = json.dumps(checkpoint, separators=(",", ":")).encode() + b"\n"
    path.write_bytes(b"".join(lines))
    return path


@pytest.mark.parametrize("seq", [1, 9])
def test_a_write_to_a_plan_whose_latest_checkpoint_has_a_wrong_seq_is_refused(repo, seq):
    path = _bad_checkpoint_plan(repo, seq)
    before = path.read_bytes()
    refused = git_st("add", "--step", "c", cwd=repo)
    assert refused.returncode == 1, refused
    assert (
        f".step/st-plan.jsonl:3: error[ST_CHECKPOINT_SEQ]: checkpoint seq {seq} must equal the watermark before it (2)"
        in (refused.stderr)
    )
    assert "nothing written" in refused.stderr and "--repair-seq" in refused.stderr
    assert path.read_bytes() == before
    doctor = git_st("doctor", cwd=repo)
    assert doctor.returncode == 1 and "ST_CHECKPOINT_SEQ" in doctor.stderr
    assert git_st("doctor", "--repair-seq", cwd=repo).returncode == 0
    assert git_st("add", "--step", "c", cwd=repo).returncode == 0


def test_a_hand_edited_bad_line_after_the_checkpoint_says_fix_or_delete_it(repo):
    assert git_st("init", cwd=repo).returncode == 0
    assert git_st("add", "--step", "a", cwd=repo).returncode == 0
    path = plan_path(repo)
    path.write_bytes(path.read_bytes().replace(b'"status":"pending"', b'"status":"doen"'))
    refused = git_st("add", "--step", "b", cwd=repo)
    assert refused.returncode == 1
    assert "  fix: delete or fix line 2 of .step/st-plan.jsonl" in refused.stderr
    assert "did you mean 'done'?" in refused.stderr
    assert "then   git st doctor --repair-seq" not in refused.stderr  # it cannot fix this


def test_messages_show_the_path_normalized_as_the_original_does(tmp_path):
    made = git_st("init", "--file", "./a//b/../plan.jsonl", cwd=tmp_path)
    assert made.returncode == 0, made
    assert made.stdout.splitlines()[0] == "initialized a/b/../plan.jsonl"  # pathlib's rule: `..` kept


def test_export_makes_the_missing_directory_and_messages_show_paths_as_the_original(tmp_path):
    """Issue 20, point 11: `export --output out/x.json` into a directory that does not exist
    (the original makes it), and `./snap.json` shown as `snap.json`."""
    assert git_st("init", "--file", "p.jsonl", cwd=tmp_path).returncode == 0
    assert git_st("add", "--file", "p.jsonl", "--step", "one", cwd=tmp_path).returncode == 0
    exported = git_st("export", "--file", "p.jsonl", "--output", "./out//x.json", cwd=tmp_path)
    assert exported.returncode == 0, exported
    assert exported.stdout == "wrote out/x.json\n"
    assert json.loads((tmp_path / "out" / "x.json").read_text())["items"][0]["step"] == "one"
    (tmp_path / "snap.json").write_text((tmp_path / "out" / "x.json").read_text())
    imported = git_st("import-plan", "--file", "p.jsonl", "--input", "./snap.json", "--no-update-plan", cwd=tmp_path)
    assert imported.returncode == 0, imported
    assert imported.stdout == "imported 1 item(s) from snap.json\n"
    replaced = git_st("import-plan", "--file", "p.jsonl", "./snap.json", "--replace", "--no-update-plan", cwd=tmp_path)
    assert replaced.stdout == "replaced plan from snap.json\n", replaced


@needs_peer
def test_export_and_import_messages_match_the_original(tmp_path, peer_main):
    """The same commands through the original and gitst: the same messages, the same files."""
    from gitst.cli.main import main as ours

    runs = {}
    for name, main in (("peer", peer_main), ("ours", ours)):
        where = tmp_path / name
        where.mkdir()
        said = []
        for args in (
            ["init", "--file", "./p.jsonl"],
            ["add", "--file", "p.jsonl", "--step", "one"],
            ["export", "--file", "p.jsonl", "--output", "./out/deeper/x.json"],
            ["import-plan", "--file", "p.jsonl", "--input", "./out/deeper/x.json"],
            ["import-plan", "--file", "p.jsonl", "--input", "./out//deeper/x.json", "--replace"],
        ):
            code, out = _in_process(main, args, where)
            assert code == 0, (name, args, out)
            said.append([line for line in out.splitlines() if not line.startswith("update_plan: ")])
        runs[name] = (said[2:], json.loads((where / "out" / "deeper" / "x.json").read_text()))
    assert runs["ours"] == runs["peer"]


# --- against the original itself ----------------------------------------------------------


@needs_peer
def test_the_originals_smoke_test_passes_with_git_st_swapped_in(st_bindir, tmp_path):
    """smoke_sync.py runs `python st_plan.py ARGS`; pointed at the `git-st` wrapper (a Python
    script running this checkout) it drives gitst through the same scenario."""
    probe = (
        "import importlib.util, pathlib, sys\n"
        f"spec = importlib.util.spec_from_file_location('smoke_sync', {str(PEER_DIR / 'smoke_sync.py')!r})\n"
        "smoke = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(smoke)\n"
        f"smoke.ST_PLAN_SCRIPT = pathlib.Path({str(st_bindir / 'git-st')!r})\n"
        "sys.exit(smoke.main())\n"
    )
    result = run([sys.executable, "-c", probe], cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result
    assert result.stdout.strip() == "st smoke sync: PASS"
    assert importlib.util.find_spec("gitst") is not None


def _in_process(main, args: list[str], cwd: Path) -> tuple[int, str]:
    """Run a CLI's ``main`` in this process in ``cwd``: (exit code, stdout). Both programs
    are plain Python, so a few hundred commands cost milliseconds, not interpreter starts."""
    here = os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.chdir(here)
    return code, out.getvalue()


@pytest.fixture
def peer_main(monkeypatch):
    """The original's ``main`` (loaded by path from its folder, never copied), taking args."""
    monkeypatch.syspath_prepend(str(PEER_DIR))
    spec = importlib.util.spec_from_file_location("st_plan_peer", PEER_DIR / "st_plan.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def main(args: list[str]) -> int:
        monkeypatch.setattr(sys, "argv", ["st_plan.py", *args])
        return module.main()

    return main


def _random_sequence(rng: random.Random) -> list[list[str]]:
    """A few plan commands in the forms the original accepts, prefixes and empty values
    included (what the issue's 300-sequence run used)."""
    steps: list[list[str]] = [["init", "--file", "./p.jsonl"]]
    for _ in range(rng.randint(4, 7)):
        ids = [f"st-00{n}" for n in range(1, 4)]
        choice = rng.choice(["add", "add", "status", "deps", "comment", "notes", "remove"])
        if choice == "add":
            args = ["add", "--file", "p.jsonl", rng.choice(["--step", "--ste"]), f"step {rng.randint(1, 99)}"]
            if rng.random() < 0.5:
                # "" (the next id) or a new id: on an existing id gitst updates the fields given
                # and keeps the others, where the original replaces the item (docs/plan.md)
                fresh = f"st-{rng.randint(100, 999)}"
                args += [rng.choice(["--id", "--i"]), rng.choice(["", fresh])]
            if rng.random() < 0.4:
                args += [
                    rng.choice(["--status", "--stat"]),
                    rng.choice(["doing", "done", "open", "blocked", "deferred"]),
                ]
        elif choice == "status":
            args = ["set-status", "--file", "p.jsonl", "--id", rng.choice(ids)]
            args += [rng.choice(["--status", "--sta"]), rng.choice(["done", "doing", "pending", "canceled"])]
        elif choice == "deps":
            args = ["set-deps", "--file", "p.jsonl", "--id", rng.choice(ids), "--deps", rng.choice(["", *ids])]
        elif choice == "comment":
            args = ["add-comment", "--file", "p.jsonl", "--id", rng.choice(ids), "--text", "note"]
            args += ["--author", rng.choice(["", "dave"])]
        elif choice == "notes":
            args = ["set-notes", "--file", "p.jsonl", "--id", rng.choice(ids), "--notes", rng.choice(["", "n"])]
        else:
            args = ["remove", "--file", "p.jsonl", "--id", rng.choice(ids)]
        steps.append(args)
    return steps


def _comparable(items: list[dict]) -> list[dict]:
    """Items without comment timestamps (the two runs happen at different seconds)."""
    out = []
    for item in items:
        copy = dict(item)
        copy["comments"] = [{k: v for k, v in c.items() if k != "ts"} for c in item.get("comments", [])]
        out.append(copy)
    return out


@needs_peer
def test_a_bounded_differential_run_against_the_original(tmp_path, monkeypatch, peer_main):
    """60 seeded random sequences (300-odd commands), each command run by both: same success or refusal, the
    same message and update_plan line (gitst's init adds one, its documented extra), and
    the same plan at the end."""
    from gitst.cli.main import main as ours

    monkeypatch.setenv("ST_COMMENT_AUTHOR", "erin")
    rng = random.Random(14)
    for number in range(60):
        sequence = _random_sequence(rng)
        theirs, mine = tmp_path / f"peer-{number}", tmp_path / f"ours-{number}"
        theirs.mkdir()
        mine.mkdir()
        for args in sequence:
            (expected_code, expected), (got_code, got) = (
                _in_process(peer_main, args, theirs),
                _in_process(ours, args, mine),
            )
            assert (expected_code == 0) == (got_code == 0), (sequence, args, expected, got)
            if expected_code == 0:
                if args[0] == "init":  # gitst's init also prints the (empty) update_plan line
                    got = "".join(line for line in got.splitlines(True) if not line.startswith("update_plan: "))
                assert got == expected, (args, expected, got)
        shown = ["show", "--file", "p.jsonl", "--format", "json"]
        assert _comparable(json.loads(_in_process(ours, shown, mine)[1])["items"]) == _comparable(
            json.loads(_in_process(peer_main, shown, theirs)[1])["items"]
        ), sequence
