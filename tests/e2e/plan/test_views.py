"""What a person reads from the plan commands: one item with its history, filters, quiet
writes, colour on a terminal only, lines cut to the terminal, the dependency graph as
Mermaid and dot, and errors that name the nearest valid value."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from tests.support import git, git_st, mutate, plan_path, records, run_on_pty, st

ESC = "\x1b["


@pytest.fixture
def plan(repo):
    """A small plan: done / in progress / waiting / blocked, with a comment and notes."""
    mutate(repo, "init")
    mutate(repo, "add", "--step", "Reproduce the bug", "--notes", "see issue 7\nline two")
    mutate(repo, "add", "--step", "Patch the core", "--deps", "st-001")
    mutate(repo, "add", "--step", "Document it", "--deps", "st-002,st-001:relates-to")
    mutate(repo, "add", "--step", "Ask legal", "--status", "blocked")
    mutate(repo, "set-status", "st-001", "done")
    mutate(repo, "add-comment", "st-001", "reproduced on main", "--author", "alice")
    mutate(repo, "set-status", "st-002", "doing")
    return repo


def test_show_id_prints_the_item_its_links_and_its_history(plan):
    result = git_st("show", "st-001", cwd=plan, env={"ST_ACTOR": "bob"})
    assert result.returncode == 0, result
    lines = result.stdout.splitlines()
    assert lines[0] == "st-001  Reproduce the bug"
    assert "status:     completed" in lines
    assert "dependents: st-002 (in_progress), st-003:relates-to (pending)" in lines
    assert "  see issue 7" in lines and "  line two" in lines
    assert any(re.fullmatch(r"  \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  alice: reproduced on main", line) for line in lines)
    history = lines[lines.index("history:") + 1 :]
    assert [h.split("  ")[-1] for h in history] == [
        "upsert: Reproduce the bug (pending)",
        "set-status -> completed",
        "add-comment by alice",
    ]
    assert all(re.match(r"  \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  seq \d+  tester  ", h) for h in history)
    as_json = json.loads(git_st("show", "st-003", "--format", "json", cwd=plan).stdout)
    assert as_json["item"]["waiting_on"] == ["st-002"]
    assert as_json["item"]["deps"] == [{"id": "st-002", "type": "blocks"}, {"id": "st-001", "type": "relates-to"}]
    assert as_json["dependents"] == []
    assert [h["seq"] for h in as_json["history"]] == [4]


def test_unknown_ids_list_a_few_known_ones_and_the_count_of_the_rest(repo):
    mutate(repo, "init")
    for n in range(12):
        mutate(repo, "add", "--step", f"step {n}")
    result = git_st("show", "st-0013", cwd=repo)
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == (
        "error: unknown id 'st-0013' (known: st-001, st-002, st-003, st-004, st-005 and 7 more)"
    )
    assert "  fix: did you mean st-001 or st-003" in result.stderr  # one edit away
    assert git_st("set-status", "nope", "done", cwd=repo).stderr.splitlines()[0].endswith("and 7 more)")


def test_status_filters_show_ready_and_blocked(plan):
    shown = json.loads(git_st("show", "--status", "done,blocked", "--format", "json", cwd=plan).stdout)
    assert [i["id"] for i in shown["items"]] == ["st-001", "st-004"]
    assert git_st("show", "--status", "in_progress", cwd=plan).stdout == (
        "### In Progress\n- [~] st-002 Patch the core (dep_state: ready; deps: st-001; status: in_progress)\n"
    )
    assert git_st("blocked", "--status", "pending", cwd=plan).stdout.startswith("- st-003 Document it")
    assert git_st("ready", "--status", "blocked", cwd=plan).stdout == "- (none)\n"
    bad = git_st("show", "--status", "doen", cwd=plan)
    assert bad.returncode == 2 and "did you mean 'done'?" in bad.stderr


def test_quiet_and_update_plan_switches(plan):
    quiet = git_st("add", "-q", "--step", "Quietly", cwd=plan)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    no_plan = git_st("set-status", "st-005", "doing", "--no-update-plan", "--allow-multiple-in-progress", cwd=plan)
    assert no_plan.stdout == "updated st-005 -> in_progress\n"
    by_env = git_st("add", "--step", "Env", cwd=plan, env={"ST_UPDATE_PLAN": "0"})
    assert by_env.stdout == "upserted st-006\n"
    forced = git_st("add", "--step", "Flag wins", "--update-plan", cwd=plan, env={"ST_UPDATE_PLAN": "0"})
    assert forced.stdout.splitlines()[1].startswith('update_plan: {"plan":[')
    default = git_st("add", "--step", "Default", cwd=plan)
    assert default.stdout.splitlines()[1].startswith("update_plan: ")  # the original's default
    bad = git_st("add", "--step", "x", cwd=plan, env={"ST_UPDATE_PLAN": "maybe"})
    assert bad.returncode == 2 and "ST_UPDATE_PLAN must be true or false" in bad.stderr
    still_errors = git_st("set-status", "-q", "st-404", "done", cwd=plan)
    assert still_errors.returncode == 2 and "unknown id 'st-404'" in still_errors.stderr


def test_update_plan_line_is_what_makes_a_write_expensive_on_a_big_plan(repo):
    mutate(repo, "init")
    mutate(repo, "import-plan", str(_big_snapshot(repo, 2000)))
    loud = git_st("add", "--step", "one more", cwd=repo)
    quiet = git_st("add", "--step", "and one more", "--no-update-plan", cwd=repo)
    assert len(loud.stdout) > 60_000  # the issue measured 79 KB per write at 2,000 items
    assert quiet.stdout == "upserted st-2002\n"  # and ids keep one padding width


def _big_snapshot(repo, count: int):
    path = repo.parent / "big.json"
    items = [{"id": f"st-{n:04d}", "step": f"step number {n} of the big plan"} for n in range(1, count + 1)]
    path.write_text(json.dumps({"items": items}))
    return path


def test_auto_ids_keep_the_padding_width_in_use(repo):
    mutate(repo, "init")
    mutate(repo, "add", "--id", "st-0007", "--step", "four digits")
    mutate(repo, "add", "--step", "next")
    assert [r["item"]["id"] for r in records(plan_path(repo)) if r.get("op") == "upsert"] == ["st-0007", "st-0008"]


def test_colour_on_a_terminal_never_in_a_pipe_off_with_no_color_forced_with_clicolor_force(plan):
    mutate(plan, "add", "--step", "A very long step text that cannot possibly fit in sixty columns of terminal")
    on_tty = run_on_pty(["git", "st", "show"], plan, {})
    assert f"{ESC}33;1m[~]{ESC}0m" in on_tty  # in_progress: bold yellow
    assert f"{ESC}32mcompleted" not in on_tty and f"{ESC}31;1m[!]{ESC}0m" in on_tty  # blocked: red
    assert f"dep_state: {ESC}33mwaiting_on_deps{ESC}0m" in on_tty
    long_line = next(line for line in on_tty.splitlines() if "A very long" in line)
    assert "…" in long_line and len(re.sub(r"\x1b\[[0-9;]*m", "", long_line)) <= 60  # cut to the terminal
    error = run_on_pty(["git", "st", "show", "st-999"], plan, {})
    assert f"{ESC}31;1merror:{ESC}0m unknown id" in error
    plain = run_on_pty(["git", "st", "show"], plan, {"NO_COLOR": "1"})
    assert ESC not in plain and "[~] st-002 Patch the c" in plain
    piped = git_st("show", cwd=plan)
    assert ESC not in piped.stdout and "A very long step text that cannot possibly fit" in piped.stdout
    forced = git_st("show", cwd=plan, env={"CLICOLOR_FORCE": "1"})
    assert f"{ESC}33;1m[~]{ESC}0m" in forced.stdout
    both = git_st("show", cwd=plan, env={"CLICOLOR_FORCE": "1", "NO_COLOR": "1"})
    assert ESC not in both.stdout  # NO_COLOR wins
    table = run_on_pty(["git", "st", "show", "--format", "table"], plan, {})
    assert f"{ESC}32mcompleted   {ESC}0m" in table
    # diagnostics: the severity and code coloured on a terminal, plain in a pipe
    plan_file = plan / ".step" / "st-plan.jsonl"
    plan_file.write_bytes(plan_file.read_bytes() + b"not json\n")
    doctor = run_on_pty(["git", "st", "doctor"], plan, {})
    assert f".step/st-plan.jsonl:{len(plan_file.read_bytes().splitlines())}: {ESC}31;1merror[JSON]:{ESC}0m" in doctor
    checked = run_on_pty(["git", "st", "validate", ".step/st-plan.jsonl"], plan, {})
    assert f"{ESC}31;1merror[JSON]:{ESC}0m" in checked
    assert ESC not in git_st("doctor", cwd=plan).stderr


def test_json_output_is_indented_on_a_terminal_and_one_line_in_a_pipe(plan):
    piped = git_st("show", "--format", "json", cwd=plan).stdout
    assert piped.count("\n") == 1 and json.loads(piped)["items"][0]["id"] == "st-001"
    on_tty = run_on_pty(["git", "st", "show", "--format", "json"], plan, {})
    assert on_tty.startswith('{\n  "items": [\n') and json.loads(on_tty) == json.loads(piped)
    assert ESC not in on_tty  # JSON is never coloured


MERMAID_LINE = re.compile(
    r"flowchart TD"
    r"|  n\d+\[\"[^\"]*\"\]:::(pending|in_progress|completed|blocked|deferred|canceled)"
    r"|  n\d+ (-->|-\. [a-z0-9-]+ \.->) n\d+"
    r"|  classDef [a-z_]+ [a-z-]+:[#\w ]+(,[a-z-]+:[#\w ]+)*"
    r"|  class n\d+(,n\d+)* waiting"
)


@pytest.mark.filterwarnings("ignore:.*deprecated:DeprecationWarning")  # pyparsing, inside pydot
def test_show_draws_the_dependency_graph_as_mermaid_and_dot(plan):
    mutate(plan, "add", "--step", 'Quote "this" \\ and that', "--deps", "st-004")
    mermaid = git_st("show", "--format", "mermaid", cwd=plan)
    assert mermaid.returncode == 0, mermaid
    lines = mermaid.stdout.splitlines()
    # Mermaid's flowchart grammar, for the statements gitst writes (no parser of Mermaid's own
    # runs without a browser): every line is one of them
    assert [line for line in lines if not MERMAID_LINE.fullmatch(line)] == []
    assert '  n0["st-001: Reproduce the bug"]:::completed' in lines
    assert "  n0 --> n1" in lines and "  n0 -. relates-to .-> n2" in lines
    assert '  n4["st-005: Quote #quot;this#quot; \\ and that"]:::pending' in lines
    assert "  class n2,n4 waiting" in lines  # waiting on deps: dashed border
    dot = git_st("show", "--format", "dot", cwd=plan)
    assert dot.returncode == 0, dot
    import pydot

    (graph,) = pydot.graph_from_dot_data(dot.stdout)
    nodes = {n.get_name().strip('"'): n for n in graph.get_nodes() if n.get_name() not in ("node", "graph", "edge")}
    assert set(nodes) == {"st-001", "st-002", "st-003", "st-004", "st-005"}
    assert nodes["st-002"].get("fillcolor") == '"#fff8c5"'  # in_progress
    assert "dashed" in nodes["st-003"].get("style")  # waiting on deps
    edges = {(e.get_source().strip('"'), e.get_destination().strip('"')) for e in graph.get_edges()}
    assert edges == {("st-001", "st-002"), ("st-002", "st-003"), ("st-001", "st-003"), ("st-004", "st-005")}
    if shutil.which("dot"):  # Graphviz itself (Debian's graphviz; .ci/run installs it in CI)
        svg = subprocess.run(["dot", "-Tsvg"], input=dot.stdout, capture_output=True, text=True, check=False)
        assert svg.returncode == 0 and svg.stderr == "", svg.stderr
        assert "Quote &quot;this&quot; \\ and that" in svg.stdout
    refused = git_st("show", "st-001", "--format", "dot", cwd=plan)
    assert refused.returncode == 2


def test_show_in_a_subdirectory_of_a_linked_worktree_is_the_same_view(plan, tmp_path):
    git("add", ".step", cwd=plan)
    git("commit", "-q", "-m", "plan", cwd=plan)
    linked = tmp_path / "wt"
    git("worktree", "add", "-q", "-b", "other", str(linked), cwd=plan)
    (linked / "a" / "b").mkdir(parents=True)
    assert st("show", cwd=linked / "a" / "b").stdout == st("show", cwd=plan).stdout


def test_the_readme_picture_is_what_its_commands_draw(repo):
    from tests.support import REPO_ROOT

    readme = (REPO_ROOT / "README.md").read_text()
    picture = readme[readme.index("```mermaid\n") + len("```mermaid\n") :]
    picture = picture[: picture.index("```")]
    commands = readme[: readme.index("```mermaid\n")]
    commands = commands[commands.rindex("```sh\n") + len("```sh\n") : commands.rindex("```")]
    assert git_st("init", cwd=repo).returncode == 0
    drawn = subprocess.run(["bash", "-c", commands], cwd=repo, capture_output=True, text=True, check=False)
    assert drawn.returncode == 0, drawn.stderr
    assert drawn.stdout.endswith(picture)


def test_table_columns_stay_aligned_with_a_long_waiting_on(tmp_path):
    """Issue 20 (low): a WAITING_ON (or DEPS) wider than its column widens the column for every
    row, so the STEP column starts at one place; a plan whose cells fit prints the original's."""
    plan = ["--file", str(tmp_path / "p.jsonl")]
    ids = [f"prerequisite-{n}" for n in range(3)]
    for item_id in ids:
        assert git_st("add", *plan, "--id", item_id, "--step", f"do {item_id}", cwd=tmp_path).returncode == 0
    waiting = ",".join(ids)
    assert git_st("add", *plan, "--id", "x", "--step", "the step", "--deps", waiting, cwd=tmp_path).returncode == 0
    lines = git_st("show", *plan, "--format", "table", cwd=tmp_path).stdout.splitlines()
    starts = {line.rindex(" do ") + 1 if " do " in line else line.index("the step") for line in lines[2:]}
    assert len(starts) == 1 and lines[0].index("STEP") in starts, lines
    assert lines[1] == "-" * len(lines[0])
    short = tmp_path / "short.jsonl"
    assert git_st("add", "--file", str(short), "--step", "one", cwd=tmp_path).returncode == 0
    table = git_st("show", "--file", str(short), "--format", "table", cwd=tmp_path).stdout
    header = f"{'ID':<10} {'STATUS':<12} {'DEP_STATE':<18} {'WAITING_ON':<20} {'DEPS':<20} STEP"
    assert table.splitlines() == [
        header,
        "-" * len(header),
        f"{'st-001':<10} {'pending':<12} {'ready':<18} {'-':<20} {'-':<20} one",
    ]
