"""`git st mcp`: serve the agent loop over the Model Context Protocol on stdio (docs/mcp.md)."""

from __future__ import annotations

import click

from gitst.cli._parallel import session_option, who
from gitst.core.errors import EnvironmentProblem
from gitst.mcp.tools import open_scope

INSTALL_FIX = (
    "install the extra into gitst's own environment: `pip install 'gitst[mcp]'` (pipx: `pipx inject gitst mcp`; "
    "uv: `uv tool install 'gitst[mcp]'`; a checkout: `./install.sh --dev`)"
)
SDK_MODULES = frozenset({"mcp", "mcp_types", "pydantic", "pydantic_core", "anyio", "starlette"})  # the extra's own


@click.command("mcp")
@session_option
def mcp(session: str | None) -> int:
    """Serve this repository's agent loop to an MCP client over stdio: the tools next,
    heartbeat, release, reserve, show, set_status, add and status (docs/mcp.md). The session
    is the MCP client's: --session, else ST_SESSION_ID (CLAUDE_SESSION_ID, CODEX_THREAD_ID),
    else the client process above this server.

    Exit 0 when the client closes the connection; 4 outside a git work tree or without the
    extra gitst[mcp] (`pip install 'gitst[mcp]'`)."""
    scope = open_scope(who(session))
    try:
        from gitst.mcp import server  # lazy: optional extra gitst[mcp] (the mcp SDK, pydantic: ~0.5 s)
    except ModuleNotFoundError as missing:
        if (missing.name or "").partition(".")[0] not in SDK_MODULES:
            raise
        raise EnvironmentProblem(
            f"`git st mcp` needs the MCP SDK, the optional extra gitst[mcp] ({missing.name} is not installed)",
            fix=INSTALL_FIX,
        ) from None
    server.serve(scope)
    return 0
