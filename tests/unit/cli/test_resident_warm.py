"""What the resident process builds once before its first command (docs/resident.md, "Costs"):
every shipped schema compiled and the timestamp pattern, so that a worker forked from it
finds them built instead of building them again for each command."""

from __future__ import annotations

import os

from gitst.cli.resident import server
from gitst.core import timestamps
from gitst.schemas import catalog


def test_the_resident_process_builds_the_schemas_once_for_every_worker():
    catalog.compiled.cache_clear()
    timestamps._compiled.cache_clear()
    server._warm()
    names = catalog.names()
    built = catalog.compiled.cache_info()
    assert built.currsize == len(names) > 30
    assert timestamps._compiled.cache_info().currsize == 1
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # a worker: what it asks for was built before the fork
        os.close(read)
        for name in names:
            catalog.compiled(name)
        timestamps.moment("2026-11-26T12:00:00Z")
        after = catalog.compiled.cache_info()
        os.write(write, f"{after.misses} {timestamps._compiled.cache_info().misses}".encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        misses = answer.read()
    os.waitpid(child, 0)
    assert misses == f"{built.misses} 1"
