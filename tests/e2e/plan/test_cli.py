"""Every plan subcommand and flag through the real CLI (`git-st`, `git st`) in real git repos:
the exact message lines, the `update_plan:` line, exit codes, and what lands on disk."""

from __future__ import annotations

import json
import os

import pytest

from tests.support import (
    checkpoints,
    events,
    git,
    git_st,
    plan_path,
    records,
    show_json,
    st,
    st_quick,
    update_plan_line,
)


@pytest.fixture
def plan_repo(repo):
    st_quick("init", cwd=repo)
    return repo


def test_init_starts_the_plan_ignores_the_sidecar_and_says_so(repo):
    result = git_st("init", cwd=repo)
    assert result.returncode == 0, result
    assert result.stdout.splitlines() == [
        "initialized .step/st-plan.jsonl",
        (
            "ignored .step/st-plan.jsonl.lock: added /st-plan.jsonl.lock /st-plan.jsonl.torn-* to .step/.gitignore "
            "(commit it so every clone and worktree inherits the rule)"
        ),
        'update_plan: {"plan":[]}',
    ]
    assert (repo / ".step/.gitignore").read_text() == "/st-plan.jsonl.lock\n/st-plan.jsonl.torn-*\n"
    (rec,) = records(plan_path(repo))
    assert (rec["v"], rec["seq"], rec["lane"], rec["op"]) == (3, 1, "event", "init")
    assert (repo / ".step/st-plan.jsonl.lock").exists()
    # git sees the plan and the rule, never the lock
    status = git("status", "--porcelain", "--untracked-files=all", cwd=repo)
    assert ".step/st-plan.jsonl.lock" not in status
    assert ".step/st-plan.jsonl" in status and ".step/.gitignore" in status

    again = st("init", cwd=repo)
    assert again.returncode == 0, again
    assert again.stdout.splitlines() == ["already initialized: .step/st-plan.jsonl", 'update_plan: {"plan":[]}']
    assert len(records(plan_path(repo))) == 1


def test_init_replace_clears_the_plan_by_appending(plan_repo):
    st_quick("add", "--step", "One", cwd=plan_repo)
    before = plan_path(plan_repo).read_bytes()
    result = st("init", "--replace", cwd=plan_repo)
    assert result.returncode == 0, result
    assert result.stdout.splitlines() == [
        "already initialized: .step/st-plan.jsonl",
        "cleared plan in .step/st-plan.jsonl",
        'update_plan: {"plan":[]}',
    ]
    after = plan_path(plan_repo).read_bytes()
    assert after.startswith(before)
    assert records(plan_path(plan_repo))[-1]["op"] == "replace"
    assert show_json(st, plan_repo) == []


def test_add_allocates_ids_and_prints_update_plan(plan_repo):
    out = [st("add", "--step", step, cwd=plan_repo) for step in ("Reproduce bug", "Patch", "Verify")]
    assert [r.returncode for r in out] == [0, 0, 0], out
    assert out[0].stdout.splitlines() == [
        "upserted st-001",
        'update_plan: {"plan":[{"step":"Reproduce bug","status":"pending"}]}',
    ]
    assert out[2].stdout.splitlines()[0] == "upserted st-003"
    assert update_plan_line(out[2].stdout) == {
        "plan": [
            {"step": "Reproduce bug", "status": "pending"},
            {"step": "Patch", "status": "pending"},
            {"step": "Verify", "status": "pending"},
        ]
    }


def test_add_flags_and_positional_step(plan_repo):
    assert st("add", "--id", "base", "--step", "Base", "--status", "done", cwd=plan_repo).returncode == 0
    result = st(
        "add",
        "Write it",
        "--id",
        "st-010",
        "--status",
        "Open",
        "--deps",
        "base, base:relates-to,base",
        "--notes",
        "  keep   my spacing\n",
        cwd=plan_repo,
    )
    assert result.returncode == 0, result
    assert result.stdout.splitlines()[0] == "upserted st-010"
    item = records(plan_path(plan_repo))[-1]["item"]
    assert item == {
        "id": "st-010",
        "step": "Write it",
        "status": "pending",
        "deps": [{"id": "base", "type": "blocks"}, {"id": "base", "type": "relates-to"}],
        "notes": "  keep   my spacing\n",
        "comments": [],
    }
    # the next allocated id continues after the highest st-NNN
    assert st("add", "--step", "Next", cwd=plan_repo).stdout.startswith("upserted st-011\n")


def test_add_with_an_existing_id_updates_and_keeps_what_was_not_given(plan_repo):
    st_quick("add", "--step", "Old text", "--notes", "n", cwd=plan_repo)
    st_quick("add-comment", "--id", "st-001", "--text", "hello", cwd=plan_repo)
    result = st("add", "--id", "st-001", "--step", "New text", cwd=plan_repo)
    assert result.returncode == 0, result
    (item,) = show_json(st, plan_repo)
    assert item["step"] == "New text" and item["notes"] == "n"
    assert [c["text"] for c in item["comments"]] == ["hello"]


def test_set_status_accepts_aliases_and_prints_the_canonical_status(plan_repo):
    st_quick("add", "--step", "A", cwd=plan_repo)
    result = st("set-status", "--id", "st-001", "--status", "done", cwd=plan_repo)
    assert result.returncode == 0, result
    assert result.stdout.splitlines() == [
        "updated st-001 -> completed",
        'update_plan: {"plan":[{"step":"A","status":"completed"}]}',
    ]
    positional = st("set-status", "st-001", "doing", cwd=plan_repo)
    assert positional.stdout.splitlines()[0] == "updated st-001 -> in_progress"
    for alias, canonical in (
        ("cancelled", "canceled"),
        ("on-hold", "deferred"),
        ("BLOCKED", "blocked"),
        ("open", "pending"),
    ):
        out = st("set-status", "st-001", alias, cwd=plan_repo)
        assert out.stdout.splitlines()[0] == f"updated st-001 -> {canonical}", out


def test_set_deps_prints_the_edges_and_clears_with_empty(plan_repo):
    for step in ("A", "B", "C"):
        st_quick("add", "--step", step, cwd=plan_repo)
    result = st("set-deps", "--id", "st-003", "--deps", "st-001,st-002:relates-to", cwd=plan_repo)
    assert result.returncode == 0, result
    assert result.stdout.splitlines()[0] == "updated st-003 deps -> st-001, st-002:relates-to"
    assert records(plan_path(plan_repo))[-1]["deps"] == [
        {"id": "st-001", "type": "blocks"},
        {"id": "st-002", "type": "relates-to"},
    ]
    cleared = st("set-deps", "--id", "st-003", "--deps", "", cwd=plan_repo)
    assert cleared.stdout.splitlines()[0] == "updated st-003 deps -> (none)"
    assert show_json(st, plan_repo)[2]["deps"] == []


def test_set_notes_keeps_text_exactly_and_writes_utf8(plan_repo):
    st_quick("add", "--step", "Café ☕", cwd=plan_repo)
    notes = "  leading and trailing  \n\tünïcödé — 日本語 "
    result = st("set-notes", "--id", "st-001", "--notes", notes, cwd=plan_repo)
    assert result.returncode == 0, result
    assert result.stdout.splitlines()[0] == "updated st-001 notes"
    assert show_json(st, plan_repo)[0]["notes"] == notes
    raw = plan_path(plan_repo).read_bytes()
    assert "日本語".encode() in raw and "Café ☕".encode() in raw and b"\\u" not in raw
    assert update_plan_line(result.stdout)["plan"][0]["step"] == "Café ☕"
    assert '"step":"Café ☕"' in result.stdout  # UTF-8 on stdout too, not \u escapes
    assert st("set-notes", "st-001", "", cwd=plan_repo).returncode == 0
    assert show_json(st, plan_repo)[0]["notes"] == ""


def test_add_comment_with_and_without_author(plan_repo):
    st_quick("add", "--step", "A", cwd=plan_repo)
    result = st("add-comment", "--id", "st-001", "--text", "Needs review", "--author", "tk", cwd=plan_repo)
    assert result.returncode == 0, result
    assert result.stdout.splitlines()[0] == "added comment to st-001"
    st_quick("add-comment", "st-001", "second", cwd=plan_repo)
    comments = show_json(st, plan_repo)[0]["comments"]
    assert [(c["author"], c["text"]) for c in comments] == [("tk", "Needs review"), ("tester", "second")]
    assert all(c["ts"].endswith("Z") for c in comments)
    record = records(plan_path(plan_repo))[-1]
    assert record["op"] == "add_comment" and record["comment"]["text"] == "second"


def test_remove_prints_removed_and_refuses_a_depended_on_item(plan_repo):
    st_quick("add", "--step", "A", cwd=plan_repo)
    st_quick("add", "--step", "B", "--deps", "st-001", cwd=plan_repo)
    refused = st("remove", "--id", "st-001", cwd=plan_repo)
    assert refused.returncode == 2
    assert refused.stderr.startswith("error: item 'st-002' references unknown dependency 'st-001'")
    result = st("remove", "--id", "st-002", cwd=plan_repo)
    assert result.returncode == 0, result
    assert result.stdout.splitlines() == ["removed st-002", 'update_plan: {"plan":[{"step":"A","status":"pending"}]}']
    assert st("remove", "st-001", cwd=plan_repo).stdout.startswith("removed st-001\n")


def test_import_plan_upserts_or_replaces(plan_repo, tmp_path):
    st_quick("add", "--step", "Existing", cwd=plan_repo)
    snapshot = tmp_path / "in.json"
    snapshot.write_text(
        json.dumps(
            [
                {"id": "x-1", "step": "Imported one", "deps": ["st-001"], "owner": "alice"},
                {"id": "x-2", "step": "Imported two", "status": "todo", "deps": [{"id": "x-1"}], "notes": " n "},
            ]
        )
    )
    result = st("import-plan", "--input", str(snapshot), cwd=plan_repo)
    assert result.returncode == 0, result
    assert result.stdout.splitlines()[0] == f"imported 2 item(s) from {snapshot}"
    items = show_json(st, plan_repo)
    assert [i["id"] for i in items] == ["st-001", "x-1", "x-2"]
    assert items[1]["owner"] == "alice" and items[1]["deps"] == [{"id": "st-001", "type": "blocks"}]
    assert items[2]["deps"] == [{"id": "x-1", "type": "blocks"}] and items[2]["notes"] == " n "

    export = tmp_path / "out" / "export.json"
    missing_parent = st("export", "--output", str(export), cwd=plan_repo)  # makes them, as the original
    assert missing_parent.returncode == 0 and export.is_file(), missing_parent  # (issue 20, point 11)
    exported = st("export", "--output", str(export), cwd=plan_repo)
    assert exported.returncode == 0 and exported.stdout.strip() == f"wrote {export}"
    replaced = st("import-plan", str(snapshot), "--replace", cwd=plan_repo)  # positional INPUT
    assert replaced.returncode == 2  # x-1 depends on st-001, which --replace would drop
    assert "unknown dependency 'st-001'" in replaced.stderr
    only = tmp_path / "only.json"
    only.write_text(json.dumps({"items": [{"id": "solo", "step": "Solo", "deps": []}]}))
    replaced = st("import-plan", "--input", str(only), "--replace", cwd=plan_repo)
    assert replaced.returncode == 0, replaced
    assert replaced.stdout.splitlines() == [
        f"replaced plan from {only}",
        'update_plan: {"plan":[{"step":"Solo","status":"pending"}]}',
    ]
    # export's output imports back to the same items
    back = st("import-plan", "--input", str(export), "--replace", cwd=plan_repo)
    assert back.returncode == 0, back
    assert [i["id"] for i in show_json(st, plan_repo)] == ["st-001", "x-1", "x-2"]


def test_import_plan_rejects_bad_snapshots(plan_repo, tmp_path):
    before = plan_path(plan_repo).read_bytes()
    cases = {
        "dup.json": json.dumps([{"id": "a", "step": "A", "deps": []}, {"id": "a", "step": "B", "deps": []}]),
        "notjson.json": "{nope",
        "shape.json": json.dumps({"plan": []}),
        "status.json": json.dumps([{"id": "a", "step": "A", "status": "someday", "deps": []}]),
    }
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text)
        result = st("import-plan", "--input", str(path), cwd=plan_repo)
        assert result.returncode == 2, (name, result)
        assert result.stderr.startswith("error: "), result
    missing = st("import-plan", "--input", str(tmp_path / "absent.json"), cwd=plan_repo)
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    assert plan_path(plan_repo).read_bytes() == before


@pytest.fixture
def mixed_plan(plan_repo):
    """One item in each state, written in-process (the read commands are what is tested)."""
    from gitst.plan import engine

    target = engine.Target.of(str(plan_path(plan_repo)))
    engine.add(target, step="Done thing", status="completed")  # st-001
    engine.add(target, step="Doing thing", deps="st-001")  # st-002
    engine.set_status(target, "st-002", "in_progress")
    engine.add(target, step="Waiting thing", deps="st-002,st-001")  # st-003
    engine.add(target, step="Stuck thing", status="blocked")  # st-004
    engine.add(target, step="Later thing", status="deferred")  # st-005
    engine.add(target, step="Dropped thing", status="canceled")  # st-006
    engine.add(target, step="Free thing")  # st-007
    return plan_repo


def test_show_markdown_groups_items(mixed_plan):
    result = st("show", cwd=mixed_plan)
    assert result.returncode == 0, result
    assert result.stdout.splitlines() == [
        "### In Progress",
        "- [~] st-002 Doing thing (dep_state: ready; deps: st-001; status: in_progress)",
        "",
        "### Ready",
        "- [ ] st-007 Free thing (dep_state: ready)",
        "",
        "### Waiting on Dependencies",
        "- [ ] st-003 Waiting thing (dep_state: waiting_on_deps; deps: st-002, st-001; waiting: st-002)",
        "",
        "### Blocked",
        "- [!] st-004 Stuck thing (dep_state: blocked_manual; status: blocked)",
        "",
        "### Deferred",
        "- [-] st-005 Later thing (status: deferred)",
        "",
        "### Canceled",
        "- [ ] st-006 ~~Dropped thing~~ (status: canceled)",
        "",
        "### Completed",
        "- [x] st-001 Done thing",
    ]
    assert st("show", "--format", "markdown", cwd=mixed_plan).stdout == result.stdout


def test_show_json_has_dep_state_and_waiting_on(mixed_plan):
    items = show_json(st, mixed_plan)
    assert [(i["id"], i["dep_state"], i["waiting_on"]) for i in items] == [
        ("st-001", "n/a", []),
        ("st-002", "ready", []),
        ("st-003", "waiting_on_deps", ["st-002"]),
        ("st-004", "blocked_manual", []),
        ("st-005", "n/a", []),
        ("st-006", "n/a", []),
        ("st-007", "ready", []),
    ]
    assert list(items[2]) == ["id", "step", "status", "deps", "notes", "comments", "dep_state", "waiting_on"]


def test_show_table(mixed_plan):
    lines = st("show", "--format", "table", cwd=mixed_plan).stdout.splitlines()
    assert lines[0].split() == ["ID", "STATUS", "DEP_STATE", "WAITING_ON", "DEPS", "STEP"]
    assert set(lines[1]) == {"-"}
    assert lines[4].split() == [
        "st-003",
        "pending",
        "waiting_on_deps",
        "st-002",
        "st-002,",
        "st-001",
        "Waiting",
        "thing",
    ]
    assert len(lines) == 2 + 7


def test_ready_and_blocked_in_every_format(mixed_plan):
    ready = st("ready", cwd=mixed_plan)
    assert ready.stdout.splitlines() == ["- st-007 Free thing (dep_state: ready)"]
    blocked = st("blocked", cwd=mixed_plan)
    assert blocked.stdout.splitlines() == [
        "- st-003 Waiting thing (dep_state: waiting_on_deps; deps: st-002, st-001; waiting: st-002)",
        "- st-004 Stuck thing (dep_state: blocked_manual)",
    ]
    assert [i["id"] for i in json.loads(st("ready", "--format", "json", cwd=mixed_plan).stdout)["items"]] == ["st-007"]
    assert [i["id"] for i in json.loads(st("blocked", "--format", "json", cwd=mixed_plan).stdout)["items"]] == [
        "st-003",
        "st-004",
    ]
    table = st("blocked", "--format", "table", cwd=mixed_plan).stdout.splitlines()
    assert [line.split()[0] for line in table[2:]] == ["st-003", "st-004"]
    empty = st("ready", "--file", "other.jsonl", cwd=mixed_plan)
    assert empty.stdout.splitlines() == ["- (none)"]


def test_emit_update_plan_prints_bare_json_with_the_status_map(mixed_plan):
    result = st("emit-update-plan", cwd=mixed_plan)
    assert result.returncode == 0, result
    assert json.loads(result.stdout) == {
        "plan": [
            {"step": "Done thing", "status": "completed"},
            {"step": "Doing thing", "status": "in_progress"},
            {"step": "Waiting thing", "status": "pending"},
            {"step": "Stuck thing", "status": "pending"},
            {"step": "Later thing", "status": "pending"},
            {"step": "Dropped thing", "status": "pending"},
            {"step": "Free thing", "status": "pending"},
        ]
    }
    assert result.stdout.startswith('{"plan":[{"step":"Done thing"')  # compact


def test_guardrail_waiting_item_is_never_in_progress_and_reads_never_fail(plan_repo):
    st_quick("add", "--step", "Dep", cwd=plan_repo)
    st_quick("add", "--step", "Work", "--deps", "st-001", cwd=plan_repo)
    # Another writer left st-002 in progress while its dependency is open (and a second one):
    path = plan_path(plan_repo)
    with open(path, "ab") as handle:
        for seq, item in ((4, "st-002"), (5, "st-001")):
            handle.write(
                json.dumps(
                    {
                        "v": 3,
                        "ts": "2026-02-09T20:00:00Z",
                        "seq": seq,
                        "lane": "event",
                        "op": "set_status",
                        "id": item,
                        "status": "in_progress",
                    }
                ).encode()
                + b"\n"
            )
    items = show_json(st, plan_repo)
    assert [(i["status"], i["dep_state"]) for i in items] == [
        ("in_progress", "ready"),
        ("in_progress", "waiting_on_deps"),
    ]
    assert json.loads(st("emit-update-plan", cwd=plan_repo).stdout)["plan"] == [
        {"step": "Dep", "status": "in_progress"},
        {"step": "Work", "status": "pending"},
    ]
    for command in ("show", "ready", "blocked", "export"):
        assert st(command, cwd=plan_repo).returncode == 0


REJECTED = [
    (["set-status", "--id", "st-404", "--status", "done"], "error: unknown id 'st-404'"),
    (["set-status", "--id", "st-001", "--status", "someday"], "error: invalid status 'someday'"),
    (["set-deps", "--id", "st-404", "--deps", ""], "error: unknown id 'st-404'"),
    (
        ["set-deps", "--id", "st-001", "--deps", "st-002,,st-003"],
        "error: --deps 'st-002,,st-003' contains an empty dependency token",
    ),
    (["set-deps", "--id", "st-001", "--deps", "st-002:Not_Kebab"], "error: invalid dependency type 'Not_Kebab'"),
    (["set-notes", "--id", "st-404", "--notes", "x"], "error: unknown id 'st-404'"),
    (["add-comment", "--id", "st-404", "--text", "x"], "error: unknown id 'st-404'"),
    (["add-comment", "--id", "st-001", "--text", "   "], "error: --text cannot be empty"),
    (["add-comment", "--id", "st-001", "--text", "x", "--author", " "], "error: --author cannot be empty"),
    (["remove", "--id", "st-404"], "error: unknown id 'st-404'"),
    (["add", "--step", "   "], "error: --step cannot be empty"),
    (["add", "--step", "x", "--id", "  "], "error: --id cannot be empty"),
    (["add", "--step", "x", "--status", "nope"], "error: invalid status 'nope'"),
    (["add", "--step", "x", "--deps", "st-001:"], None),  # empty type means blocks: accepted
    (["set-status", "--id", "", "--status", "done"], "error: --id cannot be empty"),
    (["set-status", "st-001"], "error: missing --status"),
    (["add"], "error: missing --step"),
    (
        ["set-status", "st-001", "done", "--id", "st-002"],
        "error: --id 'st-002' and the positional value 'st-001' disagree",
    ),
]


def test_rejected_input_exits_2_and_writes_nothing(plan_repo):
    st_quick("add", "--step", "A", cwd=plan_repo)
    path = plan_path(plan_repo)
    for args, expected in REJECTED:
        before = path.read_bytes()
        result = st(*args, cwd=plan_repo)
        if expected is None:
            assert result.returncode == 0, result
            continue
        assert result.returncode == 2, result
        assert result.stderr.startswith(expected), result
        assert "Traceback" not in result.stderr, result
        assert result.stdout == "", result
        assert path.read_bytes() == before, args


def test_reads_of_a_missing_plan_print_an_empty_plan_and_create_nothing(repo):
    assert st("show", cwd=repo).stdout.splitlines() == ["- [ ] (empty plan)"]
    assert json.loads(st("show", "--format", "json", cwd=repo).stdout) == {"items": []}
    assert st("show", "--format", "table", cwd=repo).returncode == 0
    assert st("ready", cwd=repo).stdout.splitlines() == ["- (none)"]
    assert st("blocked", cwd=repo).stdout.splitlines() == ["- (none)"]
    assert st("emit-update-plan", cwd=repo).stdout.strip() == '{"plan":[]}'
    assert json.loads(st("export", cwd=repo).stdout) == {"items": []}
    assert st("doctor", cwd=repo).returncode == 0
    assert not (repo / ".step").exists()
    # a rejected mutation on a missing plan creates nothing either (not even the lock dir)
    assert st("set-status", "st-001", "done", cwd=repo).returncode == 2
    assert not (repo / ".step").exists()


def test_file_option_is_relative_to_the_current_directory_and_the_default_to_the_top(repo):
    sub = repo / "pkg" / "sub"
    sub.mkdir(parents=True)
    started = st("init", cwd=sub)
    assert started.returncode == 0, started
    assert started.stdout.splitlines()[0] == "initialized ../../.step/st-plan.jsonl"
    assert (repo / ".step/st-plan.jsonl").exists() and (repo / ".step/.gitignore").exists()
    assert not (sub / ".step").exists()
    result = st("init", "--file", "plans/mine.jsonl", cwd=sub)
    assert result.returncode == 0, result
    assert result.stdout.splitlines()[0] == "initialized plans/mine.jsonl"
    assert (sub / "plans/.gitignore").read_text() == "/mine.jsonl.lock\n/mine.jsonl.torn-*\n"
    assert st("add", "--file", "plans/mine.jsonl", "--step", "Mine", cwd=sub).returncode == 0
    assert [i["step"] for i in show_json(st, sub, "--file", "plans/mine.jsonl")] == ["Mine"]
    assert show_json(st, sub) == []
    assert show_json(st, sub, "--file", "./plans/../plans/mine.jsonl") != []


def test_export_prints_or_writes_items_without_derived_fields(plan_repo, tmp_path):
    st_quick("add", "--step", "Ünïcode", cwd=plan_repo)
    printed = st("export", cwd=plan_repo)
    assert printed.returncode == 0, printed
    data = json.loads(printed.stdout)
    assert data == {
        "items": [{"id": "st-001", "step": "Ünïcode", "status": "pending", "deps": [], "notes": "", "comments": []}]
    }
    target = tmp_path / "e.json"
    written = st("export", "--output", str(target), cwd=plan_repo)
    assert written.stdout.strip() == f"wrote {target}"
    assert json.loads(target.read_text(encoding="utf-8")) == data
    assert "Ünïcode".encode() in target.read_bytes()


def test_mutation_envelope_records_flag_actor_pid_and_session(plan_repo):
    env = {"ST_ACTOR": "agent-7", "ST_SESSION_ID": "sess-42"}
    st_quick("add", "--step", "A", cwd=plan_repo, env=env)
    st_quick("add", "--step", "B", cwd=plan_repo, env=env)
    st_quick("set-status", "st-001", "in_progress", cwd=plan_repo, env=env)
    result = st("set-status", "st-002", "in_progress", "--allow-multiple-in-progress", cwd=plan_repo, env=env)
    assert result.returncode == 0, result
    last = records(plan_path(plan_repo))[-1]
    mutation = last["mutation"]
    assert mutation["allow_multiple_in_progress"] is True
    assert (mutation["actor"], mutation["session"]) == ("agent-7", "sess-42")
    assert isinstance(mutation["pid"], int) and mutation["pid"] > 0
    assert records(plan_path(plan_repo))[-2]["mutation"]["allow_multiple_in_progress"] is False


def test_checkpoint_interval_from_env_then_git_config(plan_repo):
    git("config", "st.checkpointInterval", "3", cwd=plan_repo)
    for step in ("A", "B", "C"):
        st_quick("add", "--step", step, cwd=plan_repo)
    path = plan_path(plan_repo)
    # init + 2 adds = 3 events -> checkpoint at seq 3; the third add starts the next window
    assert [c["seq"] for c in checkpoints(path)] == [3]
    assert checkpoints(path)[0]["items"] == [
        {"id": "st-001", "step": "A", "status": "pending", "deps": [], "notes": "", "comments": []},
        {"id": "st-002", "step": "B", "status": "pending", "deps": [], "notes": "", "comments": []},
    ]
    st("add", "--step", "D", cwd=plan_repo, env={"ST_CHECKPOINT_INTERVAL": "2"})  # env wins over config
    assert [c["seq"] for c in checkpoints(path)] == [3, 5]
    st_quick("add", "--step", "E", cwd=plan_repo)
    st_quick("add", "--step", "F", cwd=plan_repo)
    assert [c["seq"] for c in checkpoints(path)] == [3, 5]
    st_quick("add", "--step", "G", cwd=plan_repo)
    assert [c["seq"] for c in checkpoints(path)] == [3, 5, 8]
    bad = st("add", "--step", "H", cwd=plan_repo, env={"ST_CHECKPOINT_INTERVAL": "zero"})
    assert bad.returncode == 2 and "invalid ST_CHECKPOINT_INTERVAL 'zero'" in bad.stderr
    assert len(events(path)) == 8


def test_lock_busy_exits_3(plan_repo):
    from filelock import FileLock

    path = plan_path(plan_repo)
    before = path.read_bytes()
    with FileLock(str(path) + ".lock"):
        result = st("add", "--step", "A", cwd=plan_repo, env={"ST_LOCK_TIMEOUT": "0.3"})
    assert result.returncode == 3, result
    assert result.stderr.startswith("error: could not lock .step/st-plan.jsonl.lock within 0.3s")
    assert path.read_bytes() == before
    # readers never take the lock
    with FileLock(str(path) + ".lock"):
        assert st("show", cwd=plan_repo, env={"ST_LOCK_TIMEOUT": "0.3"}).returncode == 0


def test_plan_commands_have_help(repo):
    from gitst.cli.main import COMMANDS

    plan_commands = [name for name, entry in COMMANDS.items() if entry[2] == "plan"]
    assert len(plan_commands) == 14
    for command in ("add", "doctor"):
        result = st(command, "--help", cwd=repo)
        assert result.returncode == 0 and "--file" in result.stdout, (command, result)
    import click

    import gitst.cli.plan as plan_cli

    for name in plan_commands:
        command = getattr(plan_cli, COMMANDS[name][1])
        assert isinstance(command, click.Command)
        assert "--file" in [opt for param in command.params for opt in param.opts], name
        assert command.help, name


def test_git_st_subcommand_end_to_end(repo):
    assert git_st("init", cwd=repo).returncode == 0
    assert git_st("add", "--step", "Reproduce bug", cwd=repo).returncode == 0
    result = git_st("show", cwd=repo)
    assert result.stdout.splitlines() == ["### Ready", "- [ ] st-001 Reproduce bug (dep_state: ready)"]
    assert os.path.exists(repo / ".step/st-plan.jsonl")


def test_a_plan_path_that_is_a_directory_is_an_environment_error(repo):
    (repo / ".step" / "st-plan.jsonl").mkdir(parents=True)
    (repo / ".step" / ".gitignore").write_text("/st-plan.jsonl.lock\n")
    for args in (["show"], ["add", "--step", "x"], ["doctor"]):
        result = st(*args, cwd=repo)
        assert result.returncode == 4, result
        assert result.stderr.startswith("error: cannot read plan .step/st-plan.jsonl: it is a directory"), result


def test_the_actor_falls_back_to_git_user_name_before_unknown(repo):
    """Issue 20 (low): without ST_ACTOR, USER and LOGNAME (a container, a CI job), the actor
    recorded in the mutation envelope is `git config user.name`, not "unknown"."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in ("ST_ACTOR", "USER", "LOGNAME")}
    git("config", "user.name", "Dana Writer", cwd=repo)
    for args in (["init"], ["add", "--step", "one"]):
        done = subprocess.run(["git", "st", *args], cwd=repo, env=env, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
    assert [r["mutation"]["actor"] for r in records(plan_path(repo))] == ["Dana Writer", "Dana Writer"]


def test_the_update_plan_line_escapes_del_and_c1_controls_and_stays_exact_json(repo):
    """Issue 21 (low): a step holding DEL or a C1 control (U+009B is a one-character CSI)
    reaches the terminal as a JSON escape; the line still reads back to the exact step."""
    step = "fix \x7f the \x9b31m parser \x85 now"
    assert st("init", cwd=repo).returncode == 0
    added = st("add", "--step", step, cwd=repo)
    assert added.returncode == 0, added
    line = next(line for line in added.stdout.splitlines() if line.startswith("update_plan: "))
    assert not any(0x7F <= ord(ch) <= 0x9F for ch in line), line
    assert "\\u007f" in line and "\\u009b" in line
    assert update_plan_line(added.stdout) == {"plan": [{"step": step, "status": "pending"}]}
    assert show_json(st, repo)[0]["step"] == step  # stored exactly
