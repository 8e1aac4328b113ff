"""The resident process (``ST_RESIDENT=1``, docs/resident.md): `git-st` as a thin client of a
per-user, per-installation process that has gitst imported already and forks a worker per
command.

- :mod:`.client`: what `bin/git-st` runs first: its command's arguments, directory,
  environment, umask and standard streams handed to the resident process; its exit mirrored.
  Imports only C modules (no enum, no socket.py): a client costs the interpreter's start-up.
- :mod:`.server`: the resident process: one per interpreter and gitst installation, started by
  the first client, gone after ``ST_RESIDENT_IDLE`` seconds without a command or when its
  code changes on disk.
- :mod:`.worker`: the forked child that becomes the client's command and runs
  :func:`gitst.cli.main.main` — the same function `git-st` runs without a resident process.
- :mod:`.wire`: where the socket lives and the messages both sides exchange.
"""
