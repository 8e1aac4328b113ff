"""`git st setup claude|codex [--local] [--remove]`: the configuration written matches the
documented hooks schema, merges with the user's own hooks (which still run), is idempotent,
and `--remove` gives the file back byte for byte (docs/harness.md, "Setup")."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import jsonschema
import pytest

from tests.e2e.harness.payloads import HARNESS_FIXTURES, payload
from tests.support import git, ok, st

SCHEMA = json.loads((HARNESS_FIXTURES / "settings-hooks.schema.json").read_text())
# The user's file before setup: their own hook and settings, formatted their way (tabs, key order).
USER_SETTINGS = (
    '{\n\t"permissions": {"allow": ["Bash(npm test)"]},\n\t"hooks": {\n\t\t"PostToolUse": [\n'
    '\t\t\t{"matcher": "Write|Edit", "hooks": [{"type": "command",\n'
    '\t\t\t\t"command": "touch \\"$CLAUDE_PROJECT_DIR/.user-hook-ran\\""}]}\n'
    '\t\t]\n\t},\n\t"model": "opus"\n}\n'
)


def run_hooks(settings: dict, event: str, data: dict, cwd: Path) -> list[tuple[str, int, str]]:
    """What Claude Code does for ``event``: every command hook whose matcher matches the tool
    runs with ``sh -c``, the payload on stdin, CLAUDE_PROJECT_DIR set. (command, exit, stderr)."""
    ran = []
    for group in settings.get("hooks", {}).get(event, []):
        matcher = group.get("matcher") or "*"
        if matcher != "*" and not re.fullmatch(matcher, str(data.get("tool_name", ""))):
            continue
        for hook in group["hooks"]:
            proc = subprocess.run(
                ["sh", "-c", hook["command"]],
                cwd=cwd,
                input=json.dumps(data),
                capture_output=True,
                text=True,
                env={**__import__("os").environ, "CLAUDE_PROJECT_DIR": str(cwd)},
                timeout=300,
                check=False,
            )
            ran.append((hook["command"], proc.returncode, proc.stderr))
    return ran


def test_claude_setup_merges_with_the_users_hook_and_remove_restores_the_bytes(repo):
    settings_file = repo / ".claude" / "settings.json"
    settings_file.parent.mkdir()
    settings_file.write_text(USER_SETTINGS)
    result = ok(st("setup", "claude", cwd=repo))
    assert f"updated {settings_file}" in result.stdout
    written = json.loads(settings_file.read_text())
    jsonschema.validate(written, SCHEMA)
    assert written["permissions"] == {"allow": ["Bash(npm test)"]} and written["model"] == "opus"
    post = written["hooks"]["PostToolUse"]
    assert post[0]["matcher"] == "Write|Edit" and "user-hook-ran" in post[0]["hooks"][0]["command"]
    assert post[1]["hooks"][0]["command"] == "git st hook-agent PostToolUse"
    assert written["hooks"]["PreToolUse"][0]["matcher"] == "Edit|Write|MultiEdit|NotebookEdit|Bash"
    assert set(written["hooks"]) >= {"SessionStart", "PreCompact", "SessionEnd", "WorktreeCreate", "TaskCompleted"}
    # the user's hook still runs, next to ours
    data = payload("PostToolUse", session="s-user", cwd=repo)
    ran = run_hooks(written, "PostToolUse", data, repo)
    assert [code for _, code, _ in ran] == [0, 0], ran
    assert (repo / ".user-hook-ran").exists()
    # idempotent
    before = settings_file.read_bytes()
    again = ok(st("setup", "claude", cwd=repo))
    assert "unchanged" in again.stdout and settings_file.read_bytes() == before
    # --remove: the user's bytes, exactly
    ok(st("setup", "claude", "--remove", cwd=repo))
    assert settings_file.read_text() == USER_SETTINGS


def test_setup_in_a_linked_worktree_local_and_edited_meanwhile(repo):
    linked = repo.parent / "linked"
    git("worktree", "add", "-q", "-b", "side", str(linked), cwd=repo)
    ok(st("setup", "claude", "--local", cwd=linked / ""))
    local = linked / ".claude" / "settings.local.json"
    jsonschema.validate(json.loads(local.read_text()), SCHEMA)
    assert not (repo / ".claude").exists()  # the main checkout is not touched
    # the user adds a setting after setup: --remove keeps it, takes ours back
    data = json.loads(local.read_text())
    data["env"] = {"FOO": "1"}
    local.write_text(json.dumps(data))
    ok(st("setup", "claude", "--local", "--remove", cwd=linked))
    assert json.loads(local.read_text()) == {"env": {"FOO": "1"}}
    # a file setup created is removed with its directory
    ok(st("setup", "claude", cwd=linked))
    ok(st("setup", "claude", "--remove", "--format", "json", cwd=linked))
    assert not (linked / ".claude" / "settings.json").exists()


def test_codex_setup_writes_hooks_json_and_an_agents_section_both_taken_back(repo):
    agents = repo / "AGENTS.md"
    original = "# Agents\n\nRun `make test` before committing.\n"
    agents.write_text(original)
    result = ok(st("setup", "codex", "--format", "json", cwd=repo))
    files = {Path(f["path"]).name: f for f in json.loads(result.stdout)["files"]}
    assert files["hooks.json"]["action"] == "created" and files["AGENTS.md"]["action"] == "updated"
    hooks = json.loads((repo / ".codex" / "hooks.json").read_text())
    jsonschema.validate(hooks, SCHEMA)
    assert list(hooks) == ["hooks"]  # Codex's hooks.json holds nothing else (SchemaStore codex-hooks)
    assert hooks["hooks"]["PreToolUse"][0]["matcher"] == "Bash|apply_patch|shell"
    text = agents.read_text()
    assert text.startswith(original) and "git st next --format json" in text
    assert ok(st("setup", "codex", cwd=repo)).stdout.count("unchanged") == 2
    ok(st("setup", "codex", "--remove", cwd=repo))
    assert agents.read_text() == original
    assert not (repo / ".codex").exists()


def test_setup_refuses_what_it_cannot_merge(repo):
    settings_file = repo / ".claude" / "settings.json"
    settings_file.parent.mkdir()
    settings_file.write_text('{"hooks": {"Stop": "not a list"}}')
    bad = st("setup", "claude", cwd=repo)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "matcher groups" in bad.stderr, bad
    assert settings_file.read_text() == '{"hooks": {"Stop": "not a list"}}'
    assert st("setup", "codex", "--local", cwd=repo).returncode == 2


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_every_event_setup_registers_is_one_hook_agent_handles(harness):
    from gitst.harness.entry import EVENTS
    from gitst.harness.setup import hook_groups

    assert set(hook_groups(harness)) <= set(EVENTS)
