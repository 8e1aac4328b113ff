"""The board's HTTP server: Starlette routes on uvicorn, bound to 127.0.0.1 only.

- Every request carries the per-run token (``?token=`` or the ``X-Gitst-Token`` header), else
  403 — the page, its script and style, and the JSON API alike; a ``Host`` other than the
  loopback address it was served on is refused too (a DNS-rebinding page cannot ask).
- Read-only: ``GET`` only; the snapshot is rebuilt by one thread every ``refresh`` seconds while
  a page asks for it (within :data:`IDLE_AFTER` seconds), and served from memory with an
  ``ETag``: the page polls ``/api/state`` and gets ``304`` until something changed.
- Stops on SIGINT/SIGTERM (uvicorn's handlers) and when the process that started it dies
  (:class:`gitst.board.parent.ParentWatch`: the parent, and ``git`` between it and us, polled).
- Every response says ``Content-Security-Policy: default-src 'none'; script-src 'self' …``:
  no inline script, nothing from another origin; the page renders data with ``textContent``.
"""

from __future__ import annotations

import hmac
import secrets
import socket
import threading
import time
from importlib import resources
from typing import Any

from gitst.board.snapshot import PlanCache, item_history, snapshot
from gitst.core.errors import GitstError
from gitst.core.jsonio import dumps_bytes
from gitst.core.values import field, value_class
from gitst.plan.store import Target

__all__ = ["ASSETS", "HEADERS", "IDLE_AFTER", "Board", "asset_bytes", "bind", "item_body"]

IDLE_AFTER = 15.0  # seconds without a request after which the snapshot is no longer rebuilt
ASSETS = {"board.js": "text/javascript", "board.css": "text/css"}
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",  # the token is in the URL: never sent on
    "Cache-Control": "no-store",
}


def asset_bytes(name: str) -> bytes:
    return resources.files("gitst.board").joinpath("static").joinpath(name).read_bytes()


@value_class
class Board:
    """The snapshot served, kept up to date by :meth:`run_refresher`."""

    target: Target
    cwd: str | None = None
    refresh: float = 1.0
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    version: int = 0
    body: bytes = b""
    _key: bytes = b""
    _asked: float = field(default_factory=time.monotonic)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _reading: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)
    plan: PlanCache = field(default_factory=PlanCache)

    def build(self) -> None:
        """Read everything once; a new version when anything but the time stamp changed."""
        with self._reading:  # the refresher and a page back from idle never read at once
            self._build()

    def _build(self) -> None:
        try:
            doc: dict[str, Any] = snapshot(self.target, self.cwd, self.plan)
        except GitstError as exc:  # a broken state dir or plan: shown on the page, not fatal
            doc = {"error": exc.message}
        stamp = doc.pop("generated_at", None)
        key = dumps_bytes(doc)  # one encoding: the body is it with the stamp and version added
        with self._lock:
            if key != self._key:
                self._key = key
                self.version += 1
            tail = dumps_bytes({"generated_at": stamp, "version": self.version})
            self.body = key[:-1] + (b"," if len(key) > 2 else b"") + tail[1:]

    def asked(self) -> None:
        """A page asked: after :data:`IDLE_AFTER` s without one, read now (the refresher
        paused) so that it does not first paint what was true when the last page left."""
        now = time.monotonic()
        idle = now - self._asked >= IDLE_AFTER
        self._asked = now
        if idle:
            self.build()

    def current(self) -> tuple[int, bytes]:
        with self._lock:
            return self.version, self.body

    def run_refresher(self) -> None:
        """Rebuild every ``refresh`` seconds while a page polls (the first build is done
        before the server answers)."""
        while not self.stop.wait(self.refresh):
            if time.monotonic() - self._asked < IDLE_AFTER:
                self.build()

    def allowed(self, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token.encode(), self.token.encode())


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 (``port`` 0: a free one): the only interface, ever."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    sock.listen(64)
    return sock


def item_body(board: Board, item_id: str) -> tuple[int, bytes]:
    """``/api/item``: (HTTP status, JSON body) for one item's view and history."""
    try:
        return 200, dumps_bytes(item_history(board.target, item_id))
    except GitstError as exc:
        return 404, dumps_bytes({"error": exc.message})
