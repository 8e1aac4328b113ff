"""Fixtures of the MCP server's tests: `git st mcp` started in a real repository and driven by
the `mcp` SDK's own stdio client (ClientSession + stdio_client), the client nobody here wrote.

The server runs in an anyio blocking portal's event loop, so that a synchronous test makes one
call at a time and checks its effect on disk between them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import _LEAKY_ENV
from tests.support import git, init_repo

mcp = pytest.importorskip("mcp", reason="the optional extra gitst[mcp] (./install.sh --dev installs it)")
from anyio.from_thread import BlockingPortal, start_blocking_portal  # noqa: E402 - after the skip
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402


def server_env(home: Path, bindir: Path, **extra: str) -> dict[str, str]:
    """The environment a harness gives the server: its own HOME and git config, our CLI on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_ENV and not k.startswith("ST_")}
    home.mkdir(exist_ok=True)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test User\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"
    )
    env.update(
        {
            "HOME": str(home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
            "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
            **extra,
        }
    )
    return env


class Client:
    """A live MCP client session on one `git st mcp`, callable from synchronous tests."""

    def __init__(self, portal: BlockingPortal, session: ClientSession) -> None:
        self.portal = portal
        self.session = session

    def list_tools(self) -> list[Any]:
        return self.portal.call(self.session.list_tools).tools

    def call(self, name: str, **arguments: Any) -> Any:
        """The raw CallToolResult of tool ``name``."""
        return self.portal.call(self.session.call_tool, name, arguments)

    def ok(self, name: str, **arguments: Any) -> dict[str, Any]:
        """The JSON a successful call returns (its text and its structured content agree)."""
        result = self.call(name, **arguments)
        assert not result.is_error, result.content
        data = json.loads(result.content[0].text)
        assert data == result.structured_content
        return data

    def error(self, name: str, **arguments: Any) -> dict[str, Any]:
        """The JSON of a tool error: ``{"error", "fix", "exit_code"}``."""
        result = self.call(name, **arguments)
        assert result.is_error, result.content
        text = result.content[0].text
        assert "Traceback" not in text
        return json.loads(text)


@pytest.fixture
def served(tmp_path_factory, st_bindir) -> Iterator[tuple[Client, Path]]:
    """`git st mcp` serving a repository whose main branch holds a three-item plan; the
    session is the client's: no ST_SESSION_ID, so the test process above the server."""
    base = tmp_path_factory.mktemp("mcp")
    env = server_env(base / "home", st_bindir)
    repo = init_repo(base / "repo")
    for args in (["init", "-q"], ["add", "-q", "first"], ["add", "-q", "second", "--deps", "st-001"]):
        git("st", *args, cwd=repo, env=env)
    (repo / ".gitattributes").write_text("**/.step/*.jsonl merge=gitst-plan\n")
    git("add", "-A", cwd=repo, env=env)
    git("commit", "-q", "-m", "plan", cwd=repo, env=env)
    params = StdioServerParameters(command="git", args=["st", "mcp"], cwd=str(repo), env=env)
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(stdio_client(params)) as (read, write),
        portal.wrap_async_context_manager(ClientSession(read, write)) as session,
    ):
        portal.call(session.initialize)
        yield Client(portal, session), repo
