"""The MCP tools in-process (gitst.mcp.tools, gitst.mcp.server): the plan tools' payloads, the
scope's refusals, the plan read kept while the file is unchanged, and the guard that turns
every failure into a tool error. The server over stdio: tests/e2e/mcp."""

from __future__ import annotations

import json

import pytest

from gitst.core.errors import UsageError
from gitst.mcp import tools
from gitst.sessions.identity import current
from tests.support import init_repo, st_quick


@pytest.fixture
def scope(tmp_path):
    repo = init_repo(tmp_path / "repo")
    st_quick("init", "-q", cwd=repo)
    for n in range(1, 4):
        st_quick("add", "-q", f"step {n}", "--notes", "x" * 500, cwd=repo)
    return tools.open_scope(current("agent-unit"), repo)


def test_show_lists_at_most_limit_items_with_short_notes(scope):
    shown = tools.show(scope, None, "all", [], 2, None)
    assert shown["total"] == 3 and shown["truncated"] is True
    assert [i["id"] for i in shown["items"]] == ["st-001", "st-002"]
    assert len(shown["items"][0]["notes"]) == tools.NOTES_CUT + 1 and shown["items"][0]["comments"] == 0
    whole = tools.show(scope, "st-001", "all", [], 2, None)
    assert whole["item"]["notes"] == "x" * 500  # one item: all of it


def test_the_plan_read_is_kept_until_the_file_changes(scope):
    target = scope.plan(None)
    first = scope.read(target)
    assert scope.read(target) is first
    tools.set_status(scope, "st-002", "completed", False, None)
    again = scope.read(target)
    assert again is not first and again.state.get("st-002")["status"] == "completed"


def test_a_path_outside_the_repository_is_refused(scope, tmp_path):
    other = init_repo(tmp_path / "other")
    for where in (str(other), str(tmp_path / "missing"), "../"):
        with pytest.raises(UsageError, match="not a worktree of the repository"):
            scope.plan(where)
    assert scope.plan(str(scope.top)).path == scope.top / ".step/st-plan.jsonl"


def test_bad_arguments_are_usage_errors_before_the_plan_is_read(scope):
    with pytest.raises(UsageError, match="unknown view"):
        tools.show(scope, None, "everything", [], 10, None)
    with pytest.raises(UsageError):
        tools.show(scope, None, "all", ["nonsense"], 10, None)


def test_the_guard_turns_failures_into_tool_errors(scope, capsys):
    server = pytest.importorskip("gitst.mcp.server", reason="the optional extra gitst[mcp]")
    guard = server.Guard(scope)

    def broken() -> dict:
        raise KeyError("oops")

    refused = guard("show", lambda: tools.show(scope, "st-404", "all", [], 10, None))
    assert refused.is_error and json.loads(refused.content[0].text)["exit_code"] == 2
    crashed = guard("show", broken)
    error = json.loads(crashed.content[0].text)
    assert crashed.is_error and "internal error in gitst (KeyError" in error["error"] and error["fix"]
    assert "Traceback" not in capsys.readouterr().err
    fine = guard("show", lambda: {"a": "\x1b[31m"})
    assert fine.structured_content == {"a": "\x1b[31m"} and "\x1b" not in fine.content[0].text
