"""`python -m gitst` runs the same CLI as `git st`."""

from gitst.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
