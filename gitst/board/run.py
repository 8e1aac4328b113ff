"""Serve the board: uvicorn on the socket :func:`gitst.board.server.bind` made, with the
refresher and the parent watch beside it. Imported only by ``git st board`` once the optional
extra gitst[board] is known to be installed."""

from __future__ import annotations

import socket
import threading

import uvicorn

from gitst.board.app import make_app
from gitst.board.parent import ParentWatch
from gitst.board.server import Board

__all__ = ["serve"]


def serve(board: Board, sock: socket.socket, *, watch_parent: bool = True) -> None:
    """Serve until SIGINT/SIGTERM or the parent's death (then return)."""
    port = sock.getsockname()[1]
    app = make_app(board, port)
    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)

    def stop_server() -> None:
        server.should_exit = True

    threads = [threading.Thread(target=board.run_refresher, name="board-refresh", daemon=True)]
    if watch_parent:
        threads.append(
            threading.Thread(target=ParentWatch(stop_server).run, args=(board.stop,), name="board-parent", daemon=True)
        )
    for thread in threads:
        thread.start()
    try:
        server.run(sockets=[sock])
    finally:
        board.stop.set()
        sock.close()
