"""This user's private runtime directory on this host: ``$XDG_RUNTIME_DIR/gitst``, else
``/tmp/gitst-<uid>``.

It holds what the gitst processes of one user on one machine share and nobody else may touch:
the resident process's socket, lock and log (``gitst.cli.resident.wire``) and the merge slot's
doorbells (:mod:`gitst.loop.doorbell`). It is used only when it is safely ours: a directory
(not a link), owned by us, with no group or world access (mode 0700 when we make it).
Anything else and the caller does without it. Imports only ``os``: every client loads it.
"""

from __future__ import annotations

import os

__all__ = ["private_dir"]


def private_dir(create: bool = True) -> str | None:
    """The directory (made, mode 0700, when ``create``); None when it is missing or not
    safely ours (another owner, a link, a group- or world-accessible mode)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    fallback = f"/tmp/gitst-{os.getuid()}"  # noqa: S108 - checked below: ours, a directory, mode 0700
    directory = os.path.join(runtime, "gitst") if os.path.isabs(runtime) else fallback
    if create:
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    try:
        info = os.lstat(directory)
    except OSError:
        return None
    if (info.st_mode & 0o170000) != 0o040000 or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    return directory
