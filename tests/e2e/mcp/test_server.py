"""`git st mcp` driven by the `mcp` SDK's stdio client: every tool's call and its effect on
the plan, the claims, the worktrees and the reservations on disk (docs/mcp.md).

One agent's session on one server, step by step in order (each step builds on the state the
one before left: `next` takes the item the plan tools left ready), as one test: a server
start costs ~1-8 s and xdist would split the steps of a module across workers.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from gitst.sessions import reservations
from tests.support import git, read_json

from .conftest import server_env

TOOLS = {"next", "heartbeat", "release", "reserve", "show", "set_status", "add", "status"}
HOSTILE = "evil \x1b]0;pwned\x07 \x1b[31mred\x1b[0m \x9b2J \x7f \u202e tail"


def plan_items(worktree: Path) -> dict[str, dict]:
    """The plan of ``worktree`` as `git st export` writes it (the CLI, not the server)."""
    out = subprocess.run(
        ["git", "st", "export"], cwd=worktree, capture_output=True, text=True, check=True, timeout=300
    ).stdout
    return {item["id"]: item for item in json.loads(out)["items"]}


def _tools_list_has_the_eight_tools_with_schemas(client, repo):
    tools = {tool.name: tool for tool in client.list_tools()}
    assert set(tools) == TOOLS
    assert tools["set_status"].input_schema["required"] == ["id", "status"]
    assert tools["reserve"].input_schema["required"] == ["patterns"]
    assert tools["show"].annotations.read_only_hint is True
    assert all(tool.description for tool in tools.values())


def _show_lists_the_plan_and_one_item(client, repo):
    listing = client.ok("show")
    assert listing["total"] == 2 and not listing["truncated"]
    assert [(i["id"], i["dep_state"]) for i in listing["items"]] == [("st-001", "ready"), ("st-002", "waiting_on_deps")]
    assert listing["plan"] == str(repo / ".step/st-plan.jsonl")
    assert [i["id"] for i in client.ok("show", view="ready")["items"]] == ["st-001"]
    assert client.ok("show", limit=1)["truncated"] is True
    one = client.ok("show", id="st-001")
    assert one["item"]["step"] == "first"
    assert one["dependents"] == [{"id": "st-002", "type": "blocks", "status": "pending"}]


def _add_and_set_status_write_the_plan_file(client, repo):
    added = client.ok("add", step="third", deps="st-001", notes="n")
    assert added["item"]["id"] == "st-003"
    done = client.ok("set_status", id="st-002", status="canceled")
    assert done["status"] == "canceled"
    on_disk = plan_items(repo)
    assert on_disk["st-003"]["deps"] == [{"id": "st-001", "type": "blocks"}]
    assert on_disk["st-003"]["notes"] == "n"
    assert on_disk["st-002"]["status"] == "canceled"
    # a write from outside the server (the CLI in the agent's shell) is seen by the next call
    git("st", "add", "-q", "from the cli", "--status", "canceled", cwd=repo)
    assert [i["step"] for i in client.ok("show", status=["canceled"])["items"]] == ["second", "from the cli"]


def _errors_are_tool_errors_with_gitst_message_and_fix(client, repo):
    unknown = client.error("set_status", id="st-042", status="completed")
    assert unknown["exit_code"] == 2
    assert "unknown id 'st-042'" in unknown["error"] and "st-001" in unknown["fix"]
    bad = client.error("set_status", id="st-001", status="nonsense")
    assert bad["exit_code"] == 2 and "nonsense" in bad["error"]
    outside = client.error("show", worktree=str(repo.parent))
    assert outside["exit_code"] == 2 and "not a worktree of the repository" in outside["error"]
    assert plan_items(repo)["st-001"]["status"] == "pending"


def _a_hostile_title_round_trips_as_plain_json(client, repo):
    result = client.call("add", step=HOSTILE, status="deferred")
    assert not result.is_error
    text = result.content[0].text
    assert not any(c in text for c in "\x1b\x07\x9b\x7f\u202e")  # no raw control character reaches the client
    item = json.loads(text)["item"]
    assert item["step"] == HOSTILE  # exact: JSON escapes, not terminal escapes
    shown = client.call("show", id=item["id"])
    assert "\x1b" not in shown.content[0].text
    assert shown.structured_content["item"]["step"] == HOSTILE
    assert plan_items(repo)[item["id"]]["step"] == HOSTILE


def _next_claims_makes_the_worktree_and_marks_in_progress(client, repo):
    git("commit", "-q", "-am", "plan changes", cwd=repo)  # `next` reads the plan at main's tip
    taken = client.ok("next")
    assert taken["id"] == "st-001" and taken["resumed"] is False
    assert taken["session"] == f"pid-{os.getpid()}@{socket.gethostname()}"  # the client process is the session
    worktree = Path(taken["path"])
    assert worktree.is_dir() and git("branch", "--show-current", cwd=worktree) == taken["branch"]
    assert plan_items(worktree)["st-001"]["status"] == "in_progress"
    lock = read_json(repo / "state" / "locks" / "issue-st-001.json")
    assert lock["owner"]["session"] == taken["session"] and lock["owner"]["pid"] == os.getpid()
    # the plan tools reach the item's worktree too, and nothing else
    shown = client.ok("show", id="st-001", worktree=str(worktree))
    assert shown["item"]["status"] == "in_progress"
    again = client.ok("next")  # the session's own open item comes back (an agent that lost its shell)
    assert again["id"] == "st-001" and again["resumed"] is True and again["path"] == taken["path"]
    waiting = client.error("next", id="st-003")  # it waits on st-001: exit 3, said exactly
    assert waiting["exit_code"] == 3 and "st-001" in waiting["error"]


def _heartbeat_renews_the_claim(client, repo):
    before = read_json(repo / "state" / "locks" / "issue-st-001.json")
    beat = client.ok("heartbeat")
    assert "issue-st-001" in beat["renewed"] and beat["lost"] == []
    after = read_json(repo / "state" / "locks" / "issue-st-001.json")
    assert after["renewed_at"] >= before["renewed_at"] and after["token"] == before["token"]


def _reserve_leases_paths_and_refuses_another_sessions_overlap(client, repo):
    held = client.ok("reserve", patterns=["src/api/**"], item="st-001")
    assert [r["pattern"] for r in held["reserved"]] == ["src/api/**"]
    on_disk = reservations.listing(root=repo / "state")
    assert [(r.pattern, r.session, r.item) for r in on_disk] == [("src/api/**", held["session"], "st-001")]
    other = subprocess.run(
        [sys.executable, "-c", RESERVE_AS_OTHER, str(repo)], capture_output=True, text=True, timeout=300, check=False
    )
    assert other.returncode == 3, other.stderr
    assert held["session"] in other.stderr and "src/api/**" in other.stderr


RESERVE_AS_OTHER = """
import sys
from gitst.core.errors import GitstError
from gitst.sessions import reservations
from gitst.sessions.identity import current
try:
    reservations.reserve(["src/api/handlers.py"], current("agent-other"), cwd=sys.argv[1])
except GitstError as refused:
    print(refused.message, file=sys.stderr)
    sys.exit(refused.exit_code)
"""


def _status_shows_the_session_its_claim_and_worktree(client, repo):
    view = client.ok("status")
    mine = next(s for s in view["sessions"] if s["session"] == view["session"])
    assert mine["state"] == "live"
    assert any(h.get("issue") == "st-001" for h in mine["holds"])
    assert any(w["issue"] == "st-001" for w in view["worktrees"])


def _release_gives_back_claims_and_reservations(client, repo):
    done = client.ok("release")
    assert done["released"] == ["st-001"] and done["unreserved"] == ["src/api/**"]
    assert read_json(repo / "state" / "locks" / "issue-st-001.json")["owner"] is None
    assert reservations.listing(root=repo / "state") == []


def test_an_agent_session_through_mcp(served):
    client, repo = served
    _tools_list_has_the_eight_tools_with_schemas(client, repo)
    _show_lists_the_plan_and_one_item(client, repo)
    _add_and_set_status_write_the_plan_file(client, repo)
    _errors_are_tool_errors_with_gitst_message_and_fix(client, repo)
    _a_hostile_title_round_trips_as_plain_json(client, repo)
    _next_claims_makes_the_worktree_and_marks_in_progress(client, repo)
    _heartbeat_renews_the_claim(client, repo)
    _reserve_leases_paths_and_refuses_another_sessions_overlap(client, repo)
    _status_shows_the_session_its_claim_and_worktree(client, repo)
    _release_gives_back_claims_and_reservations(client, repo)


def test_without_the_extra_it_says_how_to_install(tmp_path, st_bindir):
    """The SDK hidden from the interpreter (a stand-in `mcp` that is not there): exit 4, the fix."""
    fake = tmp_path / "site" / "mcp"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'mcp'\", name='mcp')\n")
    repo = tmp_path / "repo"
    git("init", "-q", str(repo), cwd=tmp_path)
    env = server_env(tmp_path / "home", st_bindir, PYTHONPATH=str(tmp_path / "site"))
    proc = subprocess.run(
        ["git", "st", "mcp"], cwd=repo, env=env, input="", capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 4, proc
    assert "gitst[mcp]" in proc.stderr and "pip install" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_outside_a_repository_it_exits_4(tmp_path):
    proc = subprocess.run(
        ["git-st", "mcp"], cwd=tmp_path, input="", capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 4, proc
    assert "not in a git work tree" in proc.stderr and "Traceback" not in proc.stderr
