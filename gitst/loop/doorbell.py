"""The merge slot's doorbell: a landing tells the agents of its machine at once that it gave
the slot back.

A waiter for the slot (:mod:`gitst.loop.slot`) looks at the remote between pauses; the first
in line pauses 0.05-0.1 s, so on average the slot stood free ~0.1 s (the rest of the pause
and the look's round trip) before the next took it — on the path of every landing, as the
swarm's landings queue back to back. A give-back by any clone of the same remote on this
machine now **rings**: it replaces a small file named after the remote
(``<private runtime dir>/slot-<hash of the remote's URL>``,
:func:`gitst.core.runtime.private_dir`), and the first in line, which sleeps its pause
watching that file (a ``stat`` every :data:`STEP` seconds), looks at the remote at once.

The ring also says what the landing pushed (``pending=N base=COMMIT``): the first in line
fetches that commit alone beside its take of the slot, or nothing at all when its clone has it
already (a landing from another worktree of the same clone), instead of asking the remote for
the base's tip first (:func:`gitst.loop.base.refresh_to`).

It is a hint and nothing more: what the look reads still decides, a wrong commit is a landing
push refused by its lease (read again, never lost), a waiter on another
machine (or without a private runtime directory) pauses as before, a ring nobody hears is
lost, and a file anybody else wrote can only make a waiter look early. Only the first in line
watches — a ring must not set every waiter asking the remote at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Callable

from gitst.core.runtime import private_dir
from gitst.core.values import value_class
from gitst.git import remote

__all__ = ["STEP", "Doorbell", "for_remote"]

STEP = 0.01  # seconds between two looks at the doorbell's file while a pause lasts

PathLike = str | os.PathLike[str] | None


@value_class
class Doorbell:
    path: str
    _seen: tuple[int, int] | None = None  # (inode, mtime_ns) of the file at the last ring heard
    said: tuple[str, ...] = ()  # the words of the last ring heard (after its time and pid)

    def __post_init__(self) -> None:
        self._seen = self._now()

    def _now(self) -> tuple[int, int] | None:
        try:
            info = os.stat(self.path)
        except OSError:
            return None
        return (info.st_ino, info.st_mtime_ns)

    def mark(self) -> None:
        """What the file is now is heard: only a ring from now on ends a wait."""
        self._seen = self._now()

    def ring(self, note: str = "") -> None:
        """Tell this machine's waiters (a new file: a new inode, whatever the clock); ``note``:
        what the landing that gave the slot back left on the base (``pending=N base=COMMIT``:
        the items still pending there, the commit it pushed)."""
        temporary = f"{self.path}.{os.getpid()}.tmp"
        with contextlib.suppress(OSError):  # a hint: a full disk or a gone directory only means nobody hears it
            with open(temporary, "w", encoding="utf-8") as handle:
                handle.write(f"{time.time_ns()} {os.getpid()} {note}\n")
            os.replace(temporary, self.path)
        self._seen = self._now()  # our own ring is not news to us

    def wait(self, seconds: float, heed: Callable[[list[str]], bool] | None = None) -> bool:
        """Sleep up to ``seconds``, less when it rings (True): a ring since the last one heard,
        during an earlier look included; its words in :attr:`said`. ``heed``: only a ring whose
        words it accepts ends the sleep (a waiting ``next`` wakes for the landing that left
        nothing pending)."""
        end = time.monotonic() + seconds
        while True:
            now = self._now()
            if now != self._seen and now is not None:
                self._seen = now
                words = self._words()
                if heed is None or heed(words):
                    self.said = tuple(words[2:])
                    return True
            left = end - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(STEP, left))

    def rung_at(self) -> int:
        """When it last rang (ns, this machine's clock; 0: never, or not read)."""
        words = self._words()
        return int(words[0]) if words and words[0].isdigit() else 0

    def told(self, key: str) -> str:
        """What the last ring heard said of ``key`` (its ``key=VALUE`` word; "" when it did not)."""
        return next((word[len(key) + 1 :] for word in self.said if word.startswith(f"{key}=")), "")

    def _words(self) -> list[str]:
        try:
            with open(self.path, encoding="utf-8", errors="replace") as handle:
                return handle.read(4096).split()
        except OSError:
            return []


def for_remote(remote_name: str, cwd: PathLike = None) -> Doorbell | None:
    """The doorbell of ``remote_name``'s merge slot on this machine (None: no private runtime
    directory). Every clone of one remote finds the same one: a path or ``file://`` URL is
    resolved to the real directory first."""
    directory = private_dir()
    if directory is None:
        return None
    url = remote.remote_url(remote_name, cwd) or remote_name
    local = url[len("file://") :] if url.startswith("file://") else url
    if "://" not in local and (os.path.isabs(local) or not _scp_like(local)):
        local = os.path.realpath(os.path.join(os.fspath(cwd or os.getcwd()), local))
        url = local
    key = hashlib.sha256(url.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return Doorbell(os.path.join(directory, f"slot-{key}"))


def _scp_like(url: str) -> bool:
    """``host:path`` (git's scp-like syntax), not a relative path with a colon after a slash."""
    colon = url.find(":")
    return colon > 0 and "/" not in url[:colon]
