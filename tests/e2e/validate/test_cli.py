"""`git st validate` and `git st schema` as users run them, in real repositories."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from tests.support import FIXTURES, git, git_st, st

SEEDS = FIXTURES / "seeds"
BAD = FIXTURES / "bad"
SDLC_GOOD = (SEEDS / "003" / "state.json").read_bytes()
SDLC_BAD = (BAD / "sdlc" / "phase-enum.json").read_bytes()


def _put(repo: Path, relpath: str, data: bytes | str) -> Path:
    path = repo / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _commit(repo: Path, *paths: str, message: str = "add") -> None:
    git("add", "--", *paths, cwd=repo)
    git("commit", "-q", "-m", message, cwd=repo)


def test_explicit_files_text_output_and_exit_codes(repo):
    _put(repo, "run/state.json", SDLC_BAD)
    _put(repo, "good/state.json", SDLC_GOOD)
    result = git_st("validate", "run/state.json", "good/state.json", cwd=repo)
    assert result.returncode == 1, result
    assert result.stdout.splitlines()[:2] == [
        "FAIL  sdlc-state  run/state.json  (1 error)",
        "ok    sdlc-state  good/state.json",
    ]
    assert "2 files checked: 1 ok, 1 failed (1 error, 0 warnings)" in result.stdout
    [line] = result.stderr.splitlines()
    assert line.startswith("run/state.json:4:12: error[SDLC_ENUM]: /phase: ")
    assert st("validate", "good/state.json", cwd=repo).returncode == 0


def test_json_output_shape(repo):
    _put(repo, "run/state.json", SDLC_BAD)
    result = st("validate", "run/state.json", "--format", "json", cwd=repo)
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert result.stderr == ""
    assert set(data) == {"ok", "strict", "mode", "against", "files", "summary"}
    assert data["ok"] is False and data["mode"] == "paths" and data["against"] is None
    assert data["summary"] == {"files": 1, "checked": 1, "skipped": 0, "failed": 1, "errors": 1, "warnings": 0}
    [entry] = data["files"]
    assert {k: entry[k] for k in ("path", "kind", "kind_source", "skipped", "ok", "errors", "warnings")} == {
        "path": "run/state.json",
        "kind": "sdlc-state",
        "kind_source": "pattern",
        "skipped": None,
        "ok": False,
        "errors": 1,
        "warnings": 0,
    }
    [diagnostic] = entry["diagnostics"]
    assert diagnostic["code"] == "SDLC_ENUM" and diagnostic["line"] == 4 and diagnostic["col"] == 12
    assert diagnostic["severity"] == "error" and diagnostic["pointer"] == "/phase"


def test_github_annotations(repo):
    _put(repo, "state.json", SDLC_BAD)
    result = st("validate", "state.json", "--format", "github", cwd=repo)
    assert result.returncode == 1
    assert result.stdout.splitlines()[0].startswith("::error file=state.json,line=4,col=12,title=SDLC_ENUM::/phase")


def test_warnings_fail_only_with_strict(repo):
    shutil.copy(BAD / "aide-wire" / "batch-unclosed.aide.jsonl", repo / "s.aide.jsonl")
    result = st("validate", "s.aide.jsonl", cwd=repo)
    assert result.returncode == 0, result
    assert "warn  aide-wire  s.aide.jsonl  (1 warning)" in result.stdout
    assert "s.aide.jsonl:1: warning[AIDE_BATCH_UNCLOSED]" in result.stderr
    strict = st("validate", "--strict", "s.aide.jsonl", cwd=repo)
    assert strict.returncode == 1
    assert "FAIL  aide-wire" in strict.stdout


def test_usage_errors_exit_2_without_traceback(repo):
    for args in (
        ["validate", "missing.json"],
        ["validate", "--kind", "nope", "README"],
        ["validate", "--against", "no-such-rev", "README"],
        ["validate", "--kind", "pipeline"],
    ):
        result = st(*args, cwd=repo)
        assert result.returncode == 2, result
        assert "Traceback" not in result.stderr and result.stderr.strip()


def test_a_named_file_of_no_kind_is_an_error_and_content_is_sniffed(repo):
    _put(repo, "notes.txt", "hello\n")
    _put(repo, "exported-run.json", SDLC_GOOD)
    _put(repo, "log.jsonl", (SEEDS / "002" / "full-examples.aide.jsonl").read_bytes())
    result = st("validate", "notes.txt", "exported-run.json", "log.jsonl", "--format", "json", cwd=repo)
    data = json.loads(result.stdout)
    by_path = {f["path"]: f for f in data["files"]}
    assert by_path["notes.txt"]["diagnostics"][0]["code"] == "NO_KIND"
    assert (by_path["exported-run.json"]["kind"], by_path["exported-run.json"]["kind_source"]) == (
        "sdlc-state",
        "content",
    )
    assert (by_path["log.jsonl"]["kind"], by_path["log.jsonl"]["ok"]) == ("aide-wire", True)
    assert result.returncode == 1


def test_kind_option_forces_the_kind(repo):
    _put(repo, "anything.txt", '{"42": {"pr_number": 42}}')
    result = st("validate", "--kind", "pipeline", "anything.txt", cwd=repo)
    assert result.returncode == 1
    assert "anything.txt:1:22: error[SCHEMA]: /42/pr_number" in result.stderr
    assert "error[PIPELINE_FILE_NAME]" in result.stderr


def test_directories_recurse_and_pick_only_files_of_a_kind(repo):
    _put(repo, "data/notes.txt", "x")
    _put(repo, "data/deep/state.json", SDLC_GOOD)
    _put(repo, "data/deep/er/party.aide.jsonl", (SEEDS / "002" / "full-examples.aide.jsonl").read_bytes())
    _put(repo, "data/state/pipeline/7.json", '{"8": {}}')
    result = st("validate", "data", "--format", "json", cwd=repo)
    data = json.loads(result.stdout)
    assert sorted((f["path"], f["kind"]) for f in data["files"]) == [
        ("data/deep/er/party.aide.jsonl", "aide-wire"),
        ("data/deep/state.json", "sdlc-state"),
        ("data/state/pipeline/7.json", "pipeline"),
    ]
    assert result.returncode == 1
    text = st("validate", "data", cwd=repo)
    assert "data/state/pipeline/7.json:1:7: error[PIPELINE_KEY_MISMATCH]" in text.stderr


def test_gitattribute_st_kind_sets_unsets_and_rejects(repo):
    _put(repo, ".gitattributes", "logs/*.jsonl st-kind=aide-wire\nvendor/state.json -st-kind\nodd.json st-kind=bogus\n")
    _put(repo, "logs/a.jsonl", '{"t":"entity.update","ref":"ghost","p":{}}\n')
    _put(repo, "vendor/state.json", "not json at all")
    _put(repo, "odd.json", "{}")
    result = st("validate", "logs/a.jsonl", "vendor/state.json", "odd.json", "--format", "json", cwd=repo)
    by_path = {f["path"]: f for f in json.loads(result.stdout)["files"]}
    assert (by_path["logs/a.jsonl"]["kind"], by_path["logs/a.jsonl"]["kind_source"]) == ("aide-wire", "attribute")
    assert by_path["logs/a.jsonl"]["diagnostics"][0]["code"] == "AIDE_UNKNOWN_REF"
    assert by_path["vendor/state.json"]["skipped"] and by_path["vendor/state.json"]["ok"] is True
    assert by_path["odd.json"]["diagnostics"][0]["code"] == "UNKNOWN_KIND"
    assert "bogus" in by_path["odd.json"]["diagnostics"][0]["message"]
    text = st("validate", "vendor/state.json", cwd=repo)
    assert text.returncode == 0 and "skip  -  vendor/state.json  (st-kind is unset" in text.stdout


def test_no_path_checks_tracked_files_of_a_kind_and_the_state_dir(repo, tmp_path, monkeypatch):
    _put(repo, "state.json", SDLC_GOOD)
    _put(repo, "docs/readme.md", "# not a kind")
    _put(repo, "streams/party.aide.jsonl", (SEEDS / "002" / "full-examples.aide.jsonl").read_bytes())
    _put(repo, "untracked.aide.jsonl", "{oops\n")  # not tracked: not checked
    _commit(repo, "state.json", "docs/readme.md", "streams/party.aide.jsonl")
    state = tmp_path / "elsewhere-state"
    _put(state, "pipeline/42.json", (SEEDS / "001" / "state" / "pipeline" / "42.json").read_bytes())
    _put(state, "pipeline/43.json", '{"42": {}}')
    _put(state, "deliberations/x.json", "{}")  # a deliberation (docs/store.md) without its required fields
    _put(state, "memory/x.json", "{}")  # no kind: ignored
    monkeypatch.setenv("ST_STATE_DIR", str(state))
    result = st("validate", "--format", "json", cwd=repo / "docs")
    data = json.loads(result.stdout)
    assert data["mode"] == "default"
    found = {(Path(f["path"]).name, f["kind"], f["ok"]) for f in data["files"]}
    assert found == {
        ("state.json", "sdlc-state", True),
        ("party.aide.jsonl", "aide-wire", True),
        ("42.json", "pipeline", True),
        ("43.json", "pipeline", False),
        ("x.json", "deliberation", False),
    }
    assert "../state.json" in {f["path"] for f in data["files"]}  # paths are relative to the current directory
    assert result.returncode == 1


def test_staged_reads_the_index_not_the_working_tree(repo):
    _put(repo, "state.json", SDLC_GOOD)
    _commit(repo, "state.json")
    # Index invalid, working tree valid: fails.
    _put(repo, "state.json", SDLC_BAD)
    git("add", "state.json", cwd=repo)
    _put(repo, "state.json", SDLC_GOOD)
    result = st("validate", "--staged", cwd=repo)
    assert result.returncode == 1, result
    assert "state.json:4:12: error[SDLC_ENUM]" in result.stderr
    assert (repo / "state.json").read_bytes() == SDLC_GOOD  # untouched
    assert git("stash", "list", cwd=repo) == ""
    # Index valid, working tree invalid: passes.
    git("add", "state.json", cwd=repo)
    _put(repo, "state.json", SDLC_BAD)
    result = st("validate", "--staged", cwd=repo)
    assert result.returncode == 0, result
    assert "ok    sdlc-state  state.json" in result.stdout
    assert (repo / "state.json").read_bytes() == SDLC_BAD
    assert git("status", "--porcelain", cwd=repo) == " M state.json"  # index = HEAD, tree differs


def test_staged_uses_the_gitattributes_of_the_index(repo):
    _put(repo, "logs/a.jsonl", '{"t":"entity.update","ref":"ghost","p":{}}\n')
    _put(repo, ".gitattributes", "logs/*.jsonl st-kind=aide-wire\n")
    git("add", "logs/a.jsonl", ".gitattributes", cwd=repo)
    _put(repo, ".gitattributes", "")  # the working tree no longer says so; the index does
    result = st("validate", "--staged", "--format", "json", cwd=repo)
    [entry] = json.loads(result.stdout)["files"]
    assert entry["kind"] == "aide-wire" and entry["diagnostics"][0]["code"] == "AIDE_UNKNOWN_REF"


def test_staged_pathspecs_limit_the_files(repo):
    _put(repo, "a/state.json", SDLC_BAD)
    _put(repo, "b/state.json", SDLC_GOOD)
    git("add", "a", "b", cwd=repo)
    assert st("validate", "--staged", "b", cwd=repo).returncode == 0
    assert st("validate", "--staged", "state.json", cwd=repo / "a").returncode == 1


def test_against_checks_transitions_from_an_older_revision(repo):
    _put(repo, "state.json", (FIXTURES / "bad" / "sdlc-against" / "phase-backwards" / "old.json").read_bytes())
    _commit(repo, "state.json")
    _put(repo, "state.json", (FIXTURES / "bad" / "sdlc-against" / "phase-backwards" / "new.json").read_bytes())
    assert st("validate", "state.json", cwd=repo).returncode == 0  # a valid snapshot on its own
    result = st("validate", "--against", "HEAD", "state.json", cwd=repo)
    assert result.returncode == 1
    assert "state.json:4:12: error[SDLC_PHASE_BACKWARDS]: phase moved back from EXECUTING to TRACKING" in result.stderr
    # The same for the default mode and for what is staged.
    assert st("validate", "--against", "HEAD", cwd=repo).returncode == 1
    git("add", "state.json", cwd=repo)
    assert st("validate", "--staged", "--against", "HEAD", cwd=repo).returncode == 1
    # A file new since the revision has nothing to compare with.
    _put(repo, "new/state.json", SDLC_GOOD)
    assert st("validate", "--against", "HEAD", "new/state.json", cwd=repo).returncode == 0


def test_unmerged_file_of_a_kind_is_reported(repo):
    _put(repo, "state.json", SDLC_GOOD)
    _commit(repo, "state.json")
    git("checkout", "-q", "-b", "other", cwd=repo)
    _put(repo, "state.json", SDLC_GOOD.replace(b'"phase_status": "in_progress"', b'"phase_status": "completed"'))
    _commit(repo, "state.json")
    git("checkout", "-q", "main", cwd=repo)
    _put(repo, "state.json", SDLC_GOOD.replace(b'"phase_status": "in_progress"', b'"phase_status": "awaiting_human"'))
    _commit(repo, "state.json")
    git("merge", "-q", "other", cwd=repo, check=False)
    result = st("validate", "--staged", cwd=repo)
    assert result.returncode == 1
    assert "state.json: error[UNMERGED]: the path is unmerged in the index" in result.stderr


def test_quiet_prints_only_problems(repo):
    _put(repo, "state.json", SDLC_GOOD)
    assert st("validate", "-q", "state.json", cwd=repo).stdout == ""
    _put(repo, "state.json", SDLC_BAD)
    bad = st("validate", "-q", "state.json", cwd=repo)
    assert bad.stdout == "" and bad.stderr.startswith("state.json:4:12: error[SDLC_ENUM]")


def test_schema_list_and_show(repo):
    listing = st("schema", "list", cwd=repo)
    assert listing.returncode == 0
    assert re.search(r"^  pipeline +pipeline-file +\*\*/state/pipeline/\*\.json$", listing.stdout, re.M), listing
    assert re.search(r"^  circuit +state-circuit +\*\*/state/circuit/\*\.json$", listing.stdout, re.M), listing
    data = json.loads(st("schema", "list", "--format", "json", cwd=repo).stdout)
    assert {k["kind"] for k in data["kinds"]} >= {"st-plan", "pipeline", "aide-wire", "aide-envelope", "sdlc-state"}
    assert {k["kind"] for k in data["kinds"]} >= {"deliberation", "session-snapshot", "circuit"}
    assert {
        "name": "aide-voice",
        "id": "https://gitst.dev/schemas/aide-voice.schema.json",
        "title": "aide wire primitive voice",
    } in data["schemas"]
    shown = st("schema", "show", "pipeline", cwd=repo)
    assert shown.returncode == 0
    assert json.loads(shown.stdout)["$id"] == "https://gitst.dev/schemas/pipeline-file.schema.json"
    assert (
        json.loads(st("schema", "show", "aide-entity-create", cwd=repo).stdout)["title"]
        == "aide wire primitive entity.create"
    )
    missing = st("schema", "show", "nope", cwd=repo)
    assert missing.returncode == 2 and "neither a kind nor a schema" in missing.stderr


def test_against_head_before_the_first_commit_compares_with_nothing(tmp_path):
    from tests.support import init_repo

    repo = init_repo(tmp_path / "fresh", commit=False)
    _put(repo, "state.json", SDLC_GOOD)
    git("add", "state.json", cwd=repo)
    result = st("validate", "--staged", "--against", "HEAD", cwd=repo)
    assert result.returncode == 0, result
    assert st("validate", "--staged", "--against", "main~3", cwd=repo).returncode == 2


def test_staged_paths_are_literal_not_globs(repo):
    _put(repo, "a/state.json", SDLC_BAD)
    _put(repo, "[a]/state.json", SDLC_GOOD)
    git("add", "a", "[a]", cwd=repo)
    data = json.loads(st("validate", "--staged", "--format", "json", "[a]/state.json", cwd=repo).stdout)
    assert [f["path"] for f in data["files"]] == ["[a]/state.json"]


def test_no_path_reports_the_kind_and_result_of_one_file_of_each_kind(repo):
    """Must show 4: a repo holding one file of each kind; the plan, the lock and the chat
    record are written by gitst's own commands (a claim takes the issue's lock)."""
    from gitst.schemas import catalog as schemastore
    from gitst.validate import kinds

    env = {"ST_SESSION_ID": "agent-a", "ST_SESSION_PID": str(os.getpid())}
    assert st("init", cwd=repo, env=env).returncode == 0
    assert st("add", "--step", "Reproduce bug", cwd=repo, env=env).returncode == 0
    assert st("claim", "7", cwd=repo, env=env).returncode == 0
    # the rest of the store, written by its own commands (docs/store.md)
    assert st("deliberation", "add", "--role", "judge", "--status", "ok", cwd=repo, env=env).returncode == 0
    assert st("snapshot", "save", "--summary", "x", cwd=repo, env=env).returncode == 0
    assert st("circuit", "record", "failure", "codex", cwd=repo, env=env).returncode == 0
    _put(repo, "state/pipeline/42.json", (SEEDS / "001" / "state" / "pipeline" / "42.json").read_bytes())
    for name, schema in (
        ("state/live-session.json", "live-session"),
        ("state/watch-list.json", "watch-list"),
        ("state/active-worktrees/9.json", "state-active-worktree"),
        ("state/pending-releases/7.json", "state-pending-release"),
    ):
        _put(repo, name, json.dumps(schemastore.load(schema)["examples"][0], indent=2))
    _put(repo, "runs/state.json", SDLC_GOOD)
    _put(repo, "aide/party.aide.jsonl", (SEEDS / "002" / "full-examples.aide.jsonl").read_bytes())
    _put(repo, "aide/party.aide.events.jsonl", (SEEDS / "002" / "seed.aide.events.jsonl").read_bytes())
    _put(repo, ".gitignore", "/state/\n")
    _commit(repo, ".gitignore", ".step", "runs", "aide")
    assert git("status", "--porcelain", cwd=repo) == ""  # the state dir is runtime-only, ignored

    result = git_st("validate", cwd=repo)
    assert result.returncode == 0, result
    rows = [line.split() for line in result.stdout.splitlines()[:-1]]
    assert sorted(kind for _, kind, _ in rows) == sorted(kinds.REGISTRY)
    assert {status for status, _, _ in rows} == {"ok"}
    assert {kind: path for _, kind, path in rows}["st-plan"] == ".step/st-plan.jsonl"
    assert result.stdout.splitlines()[-1] == "14 files checked: 14 ok, 0 failed (0 errors, 0 warnings)"

    data = json.loads(st("validate", "--format", "json", cwd=repo).stdout)
    assert data["ok"] is True and data["summary"]["files"] == 14
    assert {f["kind"]: f["kind_source"] for f in data["files"]} == dict.fromkeys(kinds.REGISTRY, "pattern")

    (repo / "state" / "watch-list.json").write_text('{"issues": ["x"]}')
    broken = git_st("validate", cwd=repo)
    assert broken.returncode == 1
    assert re.search(r"^FAIL  watch-list +state/watch-list\.json  \(1 error\)$", broken.stdout, re.M), broken
    assert "state/watch-list.json:1:13: error[SCHEMA]: /issues/0:" in broken.stderr
