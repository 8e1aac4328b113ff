"""`git st mcp`: serve the agent loop over the Model Context Protocol on stdio (docs/mcp.md)."""

from __future__ import annotations

import importlib.util

import click

from gitst.cli._parallel import session_option, who
from gitst.core.errors import EnvironmentProblem
from gitst.mcp.tools import open_scope

INSTALL_FIX = (
    "install the extra into gitst's own environment: `pip install 'gitst[mcp]'` (pipx: `pipx inject gitst mcp`; "
    "uv: `uv tool install 'gitst[mcp]'`; a checkout: `./install.sh --dev`)"
)


def require_sdk() -> None:
    """Exit 4 with the install command when the optional ``mcp`` SDK is missing."""
    if importlib.util.find_spec("mcp") is None:
        raise EnvironmentProblem("`git st mcp` needs the MCP SDK (the optional extra gitst[mcp])", fix=INSTALL_FIX)


@click.command("mcp")
@session_option
def mcp(session: str | None) -> int:
    """Serve this repository's agent loop to an MCP client over stdio: the tools next,
    heartbeat, release, reserve, show, set_status, add and status (docs/mcp.md). The session
    is the MCP client's: --session, else ST_SESSION_ID (CLAUDE_SESSION_ID, CODEX_THREAD_ID),
    else the client process above this server.

    Exit 0 when the client closes the connection; 4 outside a git work tree or without the
    extra gitst[mcp] (`pip install 'gitst[mcp]'`)."""
    require_sdk()
    scope = open_scope(who(session))
    from gitst.mcp import server  # lazy: optional extra gitst[mcp] (the mcp SDK, pydantic: ~0.5 s)

    server.serve(scope)
    return 0
