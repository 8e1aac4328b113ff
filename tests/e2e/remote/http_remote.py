"""A smart-HTTP git remote for the tests: a threaded HTTP server on 127.0.0.1 (a free port) in
the test process that runs the real `git http-backend` as CGI for every request, streaming the
request body to it and its response back. It can be told to misbehave:

- ``server.stall = "receive-pack"``: a push (POST .../git-receive-pack) is read in full and
  never answered, and the push never reaches the repository (held until :meth:`release` or
  :meth:`stop`);
- ``server.stall = "receive-pack-after"``: the push is handed to `git http-backend` (so it lands
  in the repository) and its answer is never sent: the client cannot know it landed;
- ``server.stall = "drop"``: a push is dropped mid-way: the connection is closed before the
  request is read to its end, unanswered, and the push never reaches the repository;
- ``server.stall = "drop-after"``: the push is handed to `git http-backend` (it lands) and the
  connection is then closed unanswered: the client learns at once that it failed, not whether
  it landed (``server.dropped`` counts the connections dropped either way);
- ``server.delay = 0.2``: every request waits that long before it is served (a slow link).

Loopback only, bounded (a socket timeout on every connection, a cap on a request body, every
held request and every backend process ended by :meth:`stop`); nothing here is mocked: git
talks HTTP to a real server and the real backend writes the real bare repository."""

from __future__ import annotations

import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from tests.support import git

MAX_BODY = 64 * 1024 * 1024  # a test push is a few KiB; anything near this is a bug


class _Handler(BaseHTTPRequestHandler):
    server: SmartHTTP
    protocol_version = "HTTP/1.0"  # one request per connection; the end of the body is the close
    timeout = 60  # a client that stops sending never holds a thread for ever

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        pass  # quiet: pytest shows the test's own output

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _body(self) -> bytes:
        """The request body as sent (gzip'd or not: the backend decodes it), chunked or not."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts, size = [], 0
            while True:
                line = self.rfile.readline(1024)
                length = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if length == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                size += length
                if size > MAX_BODY:
                    raise ValueError("request body too large")
                parts.append(self.rfile.read(length))
                self.rfile.readline(1024)  # the CRLF after the chunk
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ValueError("request body too large")
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        server = self.server
        url = urlsplit(self.path)
        with server.changed:
            server.requests.append((self.command, url.path))
            if self.headers.get("Content-Encoding"):
                server.encoded.append((url.path, self.headers["Content-Encoding"]))
            server.changed.notify_all()
        if server.delay:
            server.stopping.wait(server.delay)  # a slow link (returns early when stopping)
        stall = server.stall if url.path.endswith("/git-receive-pack") and self.command == "POST" else None
        if stall == "drop":
            self._drop()  # the body is left unread: the push breaks off mid-way
            return
        try:
            body = self._body() if self.command == "POST" else b""
        except (ValueError, OSError):
            self.send_error(400)
            return
        if stall == "receive-pack":
            self._hold()
            return
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/"),
            "GIT_PROJECT_ROOT": str(server.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GATEWAY_INTERFACE": "CGI/1.1",
            "SERVER_PROTOCOL": "HTTP/1.0",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": url.path,
            "QUERY_STRING": url.query,
            "REMOTE_ADDR": self.client_address[0],
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
        }
        for header in ("Content-Encoding", "Git-Protocol", "Accept"):
            if self.headers.get(header):
                env["HTTP_" + header.upper().replace("-", "_")] = self.headers[header]
        proc = subprocess.Popen(
            ["git", "http-backend"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        with server.changed:
            server.backends.add(proc)
        try:
            out, _ = proc.communicate(body, timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            self.send_error(504)
            return
        finally:
            with server.changed:
                server.backends.discard(proc)
        if stall == "receive-pack-after":
            self._hold()  # the push landed; its answer never leaves
            return
        if stall == "drop-after":
            self._drop()  # the push landed; the connection breaks before its answer
            return
        self._answer(out)

    def _answer(self, cgi: bytes) -> None:
        """The CGI response: its headers (Status: -> the HTTP status), then its body."""
        head, _, body = cgi.partition(b"\r\n\r\n") if b"\r\n\r\n" in cgi else cgi.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.strip().lower() == "status":
                status = int(value.split()[0])
            elif name.strip():
                headers.append((name.strip(), value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _drop(self) -> None:
        """Close the connection now, unanswered (the client sees it end with no response)."""
        self.close_connection = True
        with self.server.changed:
            self.server.dropped += 1
            self.server.changed.notify_all()

    def _hold(self) -> None:
        """Never answer: keep the connection open until released, then close it unanswered."""
        with self.server.changed:
            self.server.held += 1
            self.server.changed.notify_all()
        self.server.released.wait(300)
        self.close_connection = True


class SmartHTTP(ThreadingHTTPServer):
    """`git http-backend` serving the bare repositories under ``root`` at http://127.0.0.1:PORT/."""

    daemon_threads = True

    def __init__(self, root: Path):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.root = root
        self.port = self.server_address[1]
        self.stall: str | None = None
        self.delay = 0.0
        self.held = 0
        self.dropped = 0
        self.requests: list[tuple[str, str]] = []
        self.encoded: list[tuple[str, str]] = []  # (path, Content-Encoding) of encoded bodies
        self.backends: set[subprocess.Popen] = set()
        self.changed = threading.Condition()
        self.released = threading.Event()
        self.stopping = threading.Event()
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def url(self, name: str = "remote.git") -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def start(self) -> SmartHTTP:
        for bare in self.root.glob("*.git"):
            git("config", "http.receivepack", "true", cwd=bare)
        self._thread.start()
        return self

    def wait_held(self, count: int = 1, timeout: float = 60) -> bool:
        """At least ``count`` requests are being held unanswered (a condition, not a pause)."""
        with self.changed:
            return self.changed.wait_for(lambda: self.held >= count, timeout)

    def release(self) -> None:
        """Stop stalling: held requests are closed unanswered, later ones are served."""
        self.stall = None
        self.released.set()

    def stop(self) -> None:
        self.stall = None
        self.delay = 0.0
        self.stopping.set()
        self.released.set()
        self.shutdown()
        self.server_close()
        with self.changed:
            backends = list(self.backends)
        for proc in backends:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait(timeout=10)
        self._thread.join(timeout=10)
