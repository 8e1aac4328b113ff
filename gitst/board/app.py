"""The board's routes (Starlette): the page, its two assets, ``/api/state``, ``/api/item``.

Imported only by :func:`gitst.board.server.serve` (Starlette is the optional extra
``gitst[board]``). Every route checks the token and the ``Host`` first (403), and every
response carries :data:`gitst.board.server.HEADERS` (the CSP among them).
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gitst.board.server import ASSETS, HEADERS, Board, asset_bytes, item_body

__all__ = ["make_app"]


def make_app(board: Board, port: int) -> Starlette:
    hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
    page = asset_bytes("index.html").replace(b"{{TOKEN}}", board.token.encode("ascii"))
    assets = {name: asset_bytes(name) for name in ASSETS}

    def respond(body: bytes, media_type: str, status: int = 200, headers: dict[str, str] | None = None) -> Response:
        return Response(body, status_code=status, media_type=media_type, headers={**HEADERS, **(headers or {})})

    def refused(request: Request) -> Response | None:
        token = request.query_params.get("token") or request.headers.get("x-gitst-token")
        if request.headers.get("host") not in hosts or not board.allowed(token):
            return respond(
                b"403 forbidden: open the URL `git st board` printed (it carries the token)\n", "text/plain", 403
            )
        return None

    async def index(request: Request) -> Response:
        return refused(request) or respond(page, "text/html")

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in assets:
            return refused(request) or respond(b"not found\n", "text/plain", 404)
        return refused(request) or respond(assets[name], ASSETS[name])

    def state(request: Request) -> Response:  # sync: a page back from idle reads (thread pool)
        denied = refused(request)
        if denied is not None:
            return denied
        board.asked()
        version, body = board.current()
        etag = f'"{version}"'
        if request.headers.get("if-none-match") == etag:
            return respond(b"", "application/json", 304, {"ETag": etag})
        return respond(body, "application/json", headers={"ETag": etag})

    def item(request: Request) -> Response:  # sync: Starlette runs it in its thread pool (reads the plan)
        denied = refused(request)
        if denied is not None:
            return denied
        status, body = item_body(board, request.query_params.get("id", ""))
        return respond(body, "application/json", status)

    routes = [
        Route("/", index),
        Route("/static/{name}", asset),
        Route("/api/state", state),
        Route("/api/item", item),
    ]
    return Starlette(routes=routes)
