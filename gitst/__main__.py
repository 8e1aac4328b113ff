"""`python -m gitst` runs the same CLI as `git st`; :func:`run` is also what bin/git-st runs."""

import os
import sys


def run() -> int:
    """The command line's exit code: first offered to the resident process when
    ``ST_RESIDENT`` is set (docs/resident.md), whatever it does not take run here."""
    code = None
    if "ST_RESIDENT" in os.environ:
        from gitst.cli.resident.client import launch  # lazy: only with ST_RESIDENT set (the hook's import set)

        code = launch(sys.argv)
    if code is None:
        from gitst.cli.main import main  # lazy: after the resident process declined

        code = main()
    return code


if __name__ == "__main__":
    sys.exit(run())
