"""``git st mcp``: the Model Context Protocol server over stdio (docs/mcp.md).

Built on the official ``mcp`` SDK (the optional extra ``gitst[mcp]``; only this module
imports it, and only ``git st mcp`` imports this module). Eight tools, each a function of
:mod:`gitst.mcp.tools` that calls the library function its CLI command calls. A
:class:`GitstError` comes back as an MCP tool error (``isError: true``) whose text is the JSON
``{"error", "fix", "exit_code"}``: gitst's own message and fix, never a stack trace.
"""

from __future__ import annotations

import inspect
import sys
import threading
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from gitst import __version__
from gitst.core.errors import ENVIRONMENT, GitstError
from gitst.core.jsonio import dumps
from gitst.core.terminal import escape_json_controls
from gitst.mcp import tools
from gitst.mcp.tools import SHOW_LIMIT, Scope

__all__ = ["build", "serve"]

INSTRUCTIONS = (
    "gitst's agent loop for this repository: `next` takes the next ready plan item (claim, "
    "worktree, in_progress) and returns its `path`: work there, commit, then run `git st land` "
    "in that worktree. `heartbeat` keeps long claims alive; `reserve` leases the paths you will "
    "edit; `release` gives claims and reservations back; `show`, `add`, `set_status` read and write the plan; "
    "`status` shows every session, claim and worktree."
)

Worktree = Annotated[
    str | None,
    Field(description="A worktree of this repository (the `path` from `next`); default: where the server runs."),
]


def text_of(data: dict[str, Any]) -> TextContent:
    """``data`` as one compact line of JSON, every string exact, with the control and format
    characters a JSON encoder leaves raw (DEL, C1, bidi overrides) written as ``\\u`` escapes
    too: a hostile title reaches a client that prints the text as JSON escapes, never raw."""
    return TextContent(type="text", text=escape_json_controls(dumps(data)))


def result(data: dict[str, Any]) -> CallToolResult:
    """A tool's answer: the JSON object as ``structuredContent`` and as its text."""
    return CallToolResult(content=[text_of(data)], structured_content=data)


def error_result(error: GitstError) -> CallToolResult:
    """A tool error (``isError: true``): gitst's message, fix and exit code as one JSON object."""
    return CallToolResult(
        content=[text_of({"error": error.message, "fix": error.fix, "exit_code": error.exit_code})], is_error=True
    )


class Guard:
    """Runs one tool at a time (the SDK runs sync tools in worker threads; gitst's library
    is process-safe, not thread-safe) and turns every failure into a tool error."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.lock = threading.Lock()

    def __call__(self, name: str, call: Callable[[], dict[str, Any]]) -> CallToolResult:
        with self.lock:
            try:
                self.scope.begin()
                return result(call())
            except GitstError as error:
                return error_result(error)
            except OSError as error:  # a full disk, EIO: the environment (exit 4), as the CLI says
                return error_result(GitstError(f"{name}: {error}", exit_code=ENVIRONMENT))
            except Exception as error:  # a bug: one line on the server's stderr, no traceback to the agent
                print(f"gitst mcp: {name} failed: {type(error).__name__}: {error}", file=sys.stderr)
                text = f"internal error in gitst ({type(error).__name__}: {error})"
                return error_result(GitstError(text, fix="report it with the server's stderr"))


def build(scope: Scope) -> MCPServer[Any]:
    """The server with its eight tools, each scoped to ``scope``."""
    server: MCPServer[Any] = MCPServer(
        "gitst", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING", warn_on_duplicate_tools=True
    )
    guard = Guard(scope)
    _loop_tools(server, guard, scope)
    _plan_tools(server, guard, scope)
    _team_tools(server, guard, scope)
    return server


F = TypeVar("F", bound=Callable[..., CallToolResult])


def tool(server: MCPServer[Any], annotations: ToolAnnotations, name: str | None = None) -> Callable[[F], F]:
    """``server.tool`` with the docstring as the description, its indentation taken out."""

    def register(fn: F) -> F:
        server.add_tool(fn, name=name, description=inspect.cleandoc(fn.__doc__ or ""), annotations=annotations)
        return fn

    return register


WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def _loop_tools(server: MCPServer[Any], guard: Guard, scope: Scope) -> None:
    @tool(server, WRITES, "next")
    def next_(
        id: Annotated[str | None, Field(description="Take this item only.")] = None,  # noqa: A002 - the CLI's --id
        label: Annotated[str | None, Field(description="Only items whose `labels` hold this.")] = None,
        match: Annotated[str | None, Field(description="Only items whose id, step or notes hold this text.")] = None,
    ) -> CallToolResult:
        """Take the next ready plan item: claim it for this session, create or resume its worktree, mark it
        in_progress there. Returns the item, `path` (work there) and `branch`; `item: null` with `reason`
        "done" (nothing left) or "wait" (all held or waiting on dependencies: try later)."""
        return guard("next", lambda: tools.next_item(scope, id, label, match))

    @tool(server, WRITES)
    def heartbeat(
        issues: Annotated[list[str] | None, Field(description="The claims to answer for; default all.")] = None,
    ) -> CallToolResult:
        """Renew this session's claims and locks (their TTL, default 30 min). A lost claim is an error."""
        return guard("heartbeat", lambda: tools.heartbeat(scope, issues))

    @tool(server, WRITES)
    def release(
        issue: Annotated[str | None, Field(description="Release the claim on this item or issue only.")] = None,
        patterns: Annotated[list[str] | None, Field(description="Release these path reservations only.")] = None,
    ) -> CallToolResult:
        """Give back what this session holds (here and on the remote): one claim, some reservations, or -
        neither named - every claim and every reservation."""
        return guard("release", lambda: tools.release(scope, issue, patterns))

    @tool(server, WRITES)
    def reserve(
        patterns: Annotated[list[str], Field(description="Repository-relative globs: src/api/**, docs/x.md.")],
        ttl: Annotated[float | None, Field(description="Seconds; default the lock TTL (1800).", gt=0)] = None,
        item: Annotated[str | None, Field(description="The plan item the edits are for.")] = None,
    ) -> CallToolResult:
        """Reserve the paths you will edit, all or none, so other agents hear of it before they start. An
        overlap with another live session's reservation is an error naming its owner."""
        return guard("reserve", lambda: tools.reserve(scope, patterns, ttl, item))


def _plan_tools(server: MCPServer[Any], guard: Guard, scope: Scope) -> None:
    @tool(server, READS)
    def show(
        id: Annotated[str | None, Field(description="One item: all of it, its dependents, its history.")] = None,  # noqa: A002
        view: Annotated[str, Field(description="all, ready or blocked.")] = "all",
        status: Annotated[list[str] | None, Field(description="Keep only items of these statuses.")] = None,
        limit: Annotated[int, Field(description="At most this many items.", ge=1)] = SHOW_LIMIT,
        worktree: Worktree = None,
    ) -> CallToolResult:
        """The plan: one item by id, or the items of a view in plan order (`total`, `truncated`; notes cut
        to 200 characters, comments counted)."""
        return guard("show", lambda: tools.show(scope, id, view, status or [], limit, worktree))

    @tool(server, WRITES)
    def set_status(
        id: Annotated[str, Field(description="The item id, e.g. st-003.")],  # noqa: A002
        status: Annotated[str, Field(description="pending, in_progress, completed, blocked, deferred, canceled.")],
        allow_multiple_in_progress: bool = False,
        worktree: Worktree = None,
    ) -> CallToolResult:
        """Change an item's status in the plan of the worktree."""
        return guard("set_status", lambda: tools.set_status(scope, id, status, allow_multiple_in_progress, worktree))

    @tool(server, WRITES)
    def add(
        step: Annotated[str, Field(description="What the item is: one line.")],
        id: Annotated[str | None, Field(description="Update this item instead of adding one.")] = None,  # noqa: A002
        status: Annotated[str | None, Field(description="Default pending.")] = None,
        deps: Annotated[str | None, Field(description="Comma-separated ids it depends on.")] = None,
        notes: str | None = None,
        worktree: Worktree = None,
    ) -> CallToolResult:
        """Add an item to the plan of the worktree (the next free id), or update the item `id`."""
        fields = {"item_id": id, "status": status, "deps": deps, "notes": notes}
        return guard("add", lambda: tools.add(scope, step, fields, worktree))


def _team_tools(server: MCPServer[Any], guard: Guard, scope: Scope) -> None:
    @tool(server, READS)
    def status() -> CallToolResult:
        """Every session (live, stale, dead), what it holds, every worktree, the remote's claims."""
        return guard("status", lambda: tools.status(scope))


def serve(scope: Scope) -> None:
    """Serve ``scope`` over stdio until the client closes stdin."""
    build(scope).run("stdio")
