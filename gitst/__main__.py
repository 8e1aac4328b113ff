"""`python -m gitst` runs the same CLI as `git st` (bin/git-st), the resident process included."""

import os
import sys

if __name__ == "__main__":
    code = None
    if "ST_RESIDENT" in os.environ:
        from gitst.cli.resident.client import launch

        code = launch(sys.argv)
    if code is None:
        from gitst.cli.main import main

        code = main()
    sys.exit(code)
