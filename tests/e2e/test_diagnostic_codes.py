"""Diagnostic codes are one style everywhere (docs/conventions.md): UPPER_SNAKE, one code per
problem whatever command reports it, each documented once in a table of docs/."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests.support import REPO_ROOT, git, st

CODE = re.compile(r"^[A-Z][A-Z0-9_]*$")
IN_TEXT = re.compile(r"(?:error|warning)\[([^\]]*)\]")
BAD = REPO_ROOT / "tests" / "fixtures" / "bad"

# How the copied fixtures get their kind (they do not sit where the path patterns look).
ATTRIBUTES = """\
fixtures/st-plan/** st-kind=st-plan
fixtures/aide-wire/** st-kind=aide-wire
fixtures/aide-envelope/** st-kind=aide-envelope
fixtures/pipeline/** st-kind=pipeline
fixtures/sdlc/** st-kind=sdlc-state
fixtures/deliberation/** st-kind=deliberation
fixtures/session-snapshot/** st-kind=session-snapshot
fixtures/circuit/** st-kind=circuit
fixtures/other/live-session.json st-kind=live-session
fixtures/other/watch-list.json st-kind=watch-list
fixtures/other/lock.json st-kind=lock
fixtures/other/active-chat.json st-kind=active-chat
fixtures/other/active-worktree.json st-kind=active-worktree
fixtures/unknown.json st-kind=no-such-kind
"""


def documented_codes() -> dict[str, list[str]]:
    """Every code in the first column of a table in docs/*.md -> where (file:line)."""
    found: dict[str, list[str]] = {}
    for doc in sorted((REPO_ROOT / "docs").glob("*.md")):
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            if not line.startswith("| `"):
                continue
            first_cell = line.split("|")[1]
            for code in re.findall(r"`([^`]+)`", first_cell):
                if CODE.match(code):
                    found.setdefault(code, []).append(f"{doc.name}:{number}")
    return found


def assert_style_and_documented(codes: set[str]) -> None:
    bad = sorted(code for code in codes if not CODE.match(code))
    assert not bad, f"codes that are not UPPER_SNAKE: {bad}"
    documented = documented_codes()
    undocumented = sorted(code for code in codes if code not in documented)
    assert not undocumented, f"codes in no table of docs/: {undocumented}"


def test_validate_over_every_bad_fixture_reports_only_upper_snake_codes(repo):
    # Transitions need an older version: commit it, then put the newer one in place.
    against = {}
    for old in sorted((BAD / "sdlc-against").glob("*/old.json")):
        against[f"against/{old.parent.name}/state.json"] = (old.read_bytes(), (old.parent / "new.json").read_bytes())
    rewrite = BAD / "st-plan-against" / "rewrite"
    against["against/rewrite/.step/st-plan.jsonl"] = (
        (rewrite / "old.jsonl").read_bytes(),
        (rewrite / "new.jsonl").read_bytes(),
    )
    for name, (old, _) in against.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_bytes(old)
    git("add", "against", cwd=repo)
    git("commit", "-q", "-m", "older versions", cwd=repo)
    for name, (_, new) in against.items():
        (repo / name).write_bytes(new)

    shutil.copytree(BAD, repo / "fixtures", ignore=shutil.ignore_patterns("*-against"))
    (repo / "fixtures" / "unknown.json").write_text("{}\n")
    (repo / ".gitattributes").write_text(ATTRIBUTES)
    copied = [p for p in (repo / "fixtures").rglob("*") if p.is_file()]

    result = st("validate", "--format", "json", "--against", "HEAD", "fixtures", "against", "README", cwd=repo)
    assert result.returncode == 1, result
    report = json.loads(result.stdout)
    # every file was checked as a kind (nothing silently skipped), so every rule had its say
    assert report["summary"]["files"] == len(copied) + len(against) + 1, report["summary"]
    assert sorted(f["path"] for f in report["files"] if f["kind"] is None) == ["README", "fixtures/unknown.json"]
    codes = {d["code"] for f in report["files"] for d in f["diagnostics"]}
    for expected in (
        "JSON",
        "SCHEMA",
        "TIMESTAMP",
        "NO_KIND",
        "UNKNOWN_KIND",
        "ST_TRAILING_SEQ",
        "ST_RULE_CYCLE",
        "ST_TORN_TAIL",
        "ST_NOT_APPEND_ONLY",
        "AIDE_ID_EXISTS",
        "AIDE_EVENT_ID",
        "PIPELINE_KEY_COUNT",
        "SDLC_ENUM",
        "SDLC_PHASE_BACKWARDS",
    ):
        assert expected in codes, (expected, sorted(codes))
    assert_style_and_documented(codes)
    text = st("validate", "--against", "HEAD", "fixtures", "against", "README", cwd=repo)
    assert set(IN_TEXT.findall(text.stderr)) == codes


def test_the_other_commands_report_upper_snake_codes(repo):
    codes: set[str] = set()
    # plan doctor and the plan's readers
    assert st("init", cwd=repo).returncode == 0
    plan = repo / ".step" / "st-plan.jsonl"
    with plan.open("ab") as handle:
        handle.write(
            b'{"v":3,"ts":"2026-02-09T20:00:00Z","seq":1,"lane":"checkpoint","items":[]}\n'
            b'not json\n[1]\n{"v":2,"ts":"x","seq":9,"lane":"event","op":"init"}\n'
            # a record the schema accepts whose id is unknown: ST_REPLAY_UNKNOWN_ID in doctor and
            # readers alike (a "done" status would break the schema first: SCHEMA everywhere)
            b'{"v":3,"ts":"2026-02-09T20:00:00Z","seq":1,"lane":"event","op":"set_status","id":"x","status":"completed"}\n'
            b'{"v":3,"ts":"2026-02-09T2'
        )
    doctor = json.loads(st("doctor", "--format", "json", cwd=repo).stdout)
    codes |= {d["code"] for d in doctor["diagnostics"]}
    shown = st("show", cwd=repo)
    codes |= set(IN_TEXT.findall(shown.stderr))
    assert {"JSON", "SCHEMA", "ST_REPLAY_UNKNOWN_ID", "ST_TORN_TAIL", "ST_TRAILING_SEQ"} <= codes, (codes, shown)
    # pipeline reader, state records (locks, sessions, worktree registry)
    state = repo / "state"
    for sub in ("pipeline", "locks", "active-chats", "active-worktrees"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    (state / "pipeline" / "5.json").write_text('{"5": ')
    (state / "pipeline" / "6.json").write_text('{"7": {}}')
    (state / "locks" / "broken.json").write_text("{")
    (state / "active-chats" / "s.json").write_text('{"session": 1}')
    (state / "active-worktrees" / "9.json").write_text("[]")
    for args in (("pipeline", "list"), ("lock", "list"), ("sessions",), ("worktree", "list")):
        result = st(*args, cwd=repo)
        assert result.returncode == 1, result
        found = IN_TEXT.findall(result.stderr)
        assert found, result
        codes |= set(found)
    assert {"PIPELINE_KEY_MISMATCH"} <= codes
    shutil.rmtree(state)
    # the hooks' own refusals
    (repo / ".step" / "st-plan.jsonl.lock").write_text("")
    git("add", "-f", ".step/st-plan.jsonl.lock", cwd=repo)
    (repo / "state").mkdir()
    (repo / "state" / "notes.txt").write_text("x")
    git("add", "-f", "state/notes.txt", cwd=repo)
    hook = st("hook", "pre-commit", cwd=repo)
    assert hook.returncode == 1, hook
    hook_codes = set(IN_TEXT.findall(hook.stderr))
    assert {"HOOK_LOCK_SIDECAR_STAGED", "HOOK_STATE_FILE_STAGED"} <= hook_codes, hook
    assert_style_and_documented(codes | hook_codes)


def test_the_pipeline_reader_gives_a_problem_the_code_validate_gives_it(repo):
    pipeline = repo / "state" / "pipeline"
    pipeline.mkdir(parents=True)
    cases = {  # issue -> (file text, the reader's code)
        1: ('{"1": {"current_phase": "x",}}', "JSON"),
        2: ('["not", "a", "wrapper"]', "SCHEMA"),
        3: ('{"3": "not an object"}', "SCHEMA"),
        4: ('{"5": {"current_phase": "x"}}', "PIPELINE_KEY_MISMATCH"),
        6: ('{"7": {}, "8": {}}', "PIPELINE_KEY_COUNT"),
    }
    for issue, (text, _) in cases.items():
        (pipeline / f"{issue}.json").write_text(text)
    listed = st("pipeline", "list", cwd=repo)
    assert listed.returncode == 1, listed
    reader = {}
    for line in listed.stderr.splitlines():
        match = re.match(r"state/pipeline/(\d+)\.json[:\d]*: error\[([^\]]+)\]", line)
        if match:
            reader[int(match.group(1))] = match.group(2)
    assert reader == {issue: code for issue, (_, code) in cases.items()}, listed.stderr
    validated = json.loads(st("validate", "--format", "json", "state/pipeline", cwd=repo).stdout)
    by_issue = {int(Path(f["path"]).stem): {d["code"] for d in f["diagnostics"]} for f in validated["files"]}
    for issue, code in reader.items():
        assert code in by_issue[issue], (issue, code, by_issue[issue])


def test_each_code_is_documented_in_exactly_one_table():
    twice = {code: where for code, where in documented_codes().items() if len(where) > 1}
    assert not twice, f"codes in more than one table row of docs/: {twice}"
    assert len(documented_codes()) > 60  # the tables were found at all
