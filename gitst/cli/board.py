"""`git st board` — the plan, sessions, claims and worktrees live in a browser (docs/board.md)."""

from __future__ import annotations

import contextlib
import importlib.util
import sys

import click

from gitst.cli.output import say, write
from gitst.core.errors import EnvironmentProblem, UsageError
from gitst.settings import parse_seconds


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a broken or hidden package: as good as missing
        return False


def _require_extra() -> None:
    """The server stack is the optional extra gitst[board]: say how to install it."""
    missing = [name for name in ("starlette", "uvicorn") if not _installed(name)]
    if missing:
        raise EnvironmentProblem(
            f"`git st board` needs the optional extra gitst[board] ({', '.join(missing)} not installed)",
            fix=f"{sys.executable} -m pip install 'gitst[board]'   (in a checkout: ./install.sh --dev)",
        )


@click.command("board")
@click.option("--port", type=int, default=0, show_default=True, help="Port on 127.0.0.1 (0: a free one).")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the default browser.")
@click.option(
    "--file", "file", default=None, metavar="PATH", help="Plan file (default .step/st-plan.jsonl, as `git st show`)."
)
@click.option(
    "--interval",
    metavar="SECONDS",
    default="1",
    show_default=True,
    help="Seconds between two reads while a page is open.",
)
def board(port: int, open_browser: bool, file: str | None, interval: str) -> int:
    """Serve a read-only live board on 127.0.0.1: the plan as columns by status and as a
    dependency graph, sessions (live/stale/dead), claims, reservations, heartbeats, worktrees
    (dirty, ahead/behind, ports, PRs) and one item's history on click. The URL printed carries
    a per-run token; requests without it get 403. Stops on Ctrl-C or when its parent dies."""
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port} is not a port number (0-65535; 0 picks a free one)")
    refresh = parse_seconds(interval, "--interval", allow_zero=False)
    _require_extra()
    from gitst.board import run, server  # lazy: the board's modules (and its extra) only for this command
    from gitst.plan.store import Target  # lazy: as the plan commands (pinned import sets)

    state = server.Board(Target.of(file), refresh=refresh)
    state.build()  # the first read before the URL is printed: the page opens on data
    try:
        sock = server.bind(port)
    except OSError as exc:
        raise EnvironmentProblem(
            f"cannot listen on 127.0.0.1:{port}: {exc.strerror}", fix="pass another --port, or 0 for a free one"
        ) from None
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/?token={state.token}"
    write(f"board: {url}")
    say("board: read-only; Ctrl-C stops it", err=True)
    if open_browser:
        import webbrowser  # lazy: only with --open

        webbrowser.open(url)
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn raises the SIGINT it caught once it has shut down
        run.serve(state, sock)
    say("board: stopped", err=True)
    return 0
