"""How far one command walks through the layers: module visits, returns up the layers, and
how often the same value is re-parsed on the way.

    .venv/bin/python benchmarks/call_walk.py            # both walks
    .venv/bin/python benchmarks/call_walk.py --top 15   # and the most-entered modules
    .venv/bin/python benchmarks/call_walk.py --trail    # and each followed visit, in order

Runs ``git st worktree add 7`` and ``git st add "a title"`` in a fresh repository, in this
process, under :func:`sys.setprofile`, and counts (gitst frames only), first following the issue
id (``7``) and the plan path (the calls handed it, as a string, a path or a value holding one),
then over every call:

- *module visits*: calls whose callee lives in another gitst module than its caller;
- *returns up the layers*: returns from a package to a caller in a higher layer
  (the layer order of ``.importlinter``);
- *entries per module*, and the calls of the functions that parse or re-derive the issue id
  and the plan path (``validate_identifier``, ``Path()``, ``abspath``, ``lock_path``).

Counts, not times: the same code gives the same figures on any machine (issue 22's "walk").
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dis
import inspect
import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import FrameType

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

# .importlinter's layers, top first
LAYERS = [
    ["cli"],
    ["hooks"],
    ["loop"],
    ["worktrees", "validate"],
    ["snapshots"],
    ["pipeline", "plan", "aide", "sdlc", "deliberations", "circuits"],
    ["sessions"],
    ["statedir"],
    ["schemas"],
    ["settings"],
    ["git"],
    ["core"],
]
RANK = {package: len(LAYERS) - i for i, names in enumerate(LAYERS) for package in names}
PATH_MAKERS = ("__new__", "__init__", "_from_parts")
WATCHED = {"validate_identifier", "abspath", "lock_path", "__new__", "_from_parts", "__init__"}


_GENERATOR = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


_RESUME = dis.opmap.get("RESUME")


def _first_entry(frame: FrameType) -> bool:
    """Whether a generator's frame runs for the first time (a context manager's ``with``
    entering it), not resumed after a ``yield``: on Python 3.11+ it stands at a ``RESUME``
    whose low two bits are 0 (``f_lasti`` is past the ``RETURN_GENERATOR`` prefix there, so
    "``f_lasti`` is 0" never tells a first entry: a ``@contextmanager``'s ``with`` went
    uncounted)."""
    if _RESUME is None:
        return frame.f_lasti <= 0
    code = frame.f_code.co_code
    return code[frame.f_lasti] == _RESUME and code[frame.f_lasti + 1] & 3 == 0


def _package(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "gitst" or len(parts) < 2:
        return None
    return parts[1]


def _carries(value: object, wanted: str, depth: int = 1) -> bool:
    """Whether ``value`` is (or, one level down, holds) the followed value: the issue id as a
    string, or the plan path as a string or path (a typed value holding it counts too)."""
    if isinstance(value, str):
        return value == wanted or value.endswith(os.sep + wanted)
    if isinstance(value, os.PathLike):
        return os.fspath(value).endswith(os.sep + wanted)
    if depth and not isinstance(value, (int, float, bytes, dict, list, tuple)) and value is not None:
        fields = list(getattr(value, "__dict__", {}).values())
        fields += [getattr(value, slot, None) for slot in getattr(type(value), "__slots__", ())]
        return any(_carries(field, wanted, 0) for field in fields)
    return False


class Walk:
    def __init__(self, follow: str) -> None:
        self.follow = follow
        self.carried: set[int] = set()  # the frames that were handed the followed value
        self.follow_visits = 0
        self.follow_returns_up = 0
        self.follow_modules: set[str] = set()
        self.visits = 0
        self.returns_up = 0
        self.entries: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()
        self.callers: collections.Counter[str] = collections.Counter()
        self.trail: list[str] = []  # the followed module visits, caller -> callee, in order

    def profile(self, frame: FrameType, event: str, _arg: object) -> None:
        if event not in ("call", "return"):
            return
        if event == "call" and frame.f_code.co_flags & _GENERATOR and not _first_entry(frame):
            return  # a generator resumed (a context manager's exit): not a new visit
        module = frame.f_globals.get("__name__", "")
        back = frame.f_back
        while back is not None and back.f_globals.get("__name__") == "contextlib":
            back = back.f_back  # a `with` of a context manager: its caller is the `with`'s frame
        caller = back.f_globals.get("__name__", "") if back else ""
        name = frame.f_code.co_name
        if event == "call":
            if name in WATCHED:
                if name == "validate_identifier" and module.startswith("gitst"):
                    self.calls["validate_identifier"] += 1
                    back = frame.f_back
                    self.callers[f"{back.f_globals.get('__name__')}.{back.f_code.co_name}"] += 1
                elif name == "abspath" and module == "posixpath" and caller.startswith("gitst"):
                    self.calls["os.path.abspath from gitst"] += 1
                elif name in PATH_MAKERS and module == "pathlib" and caller.startswith("gitst"):
                    self.calls["Path() from gitst"] += 1
                elif name == "lock_path" and module.startswith("gitst"):
                    self.calls["lock_path"] += 1
            if module.startswith("gitst") and module != caller:
                self.visits += 1
                self.entries[module] += 1
            if module.startswith("gitst") and self._handed(frame):
                self.carried.add(id(frame))
                self.follow_modules.add(module)
                if module != caller:
                    self.follow_visits += 1
                    self.trail.append(f"{caller} -> {module}.{name}")
        else:
            here, there = _package(module), _package(caller)
            up = bool(here and there and here != there and RANK.get(there, 0) > RANK.get(here, 0))
            if up:
                self.returns_up += 1
            if id(frame) in self.carried:
                self.carried.discard(id(frame))
                self.follow_returns_up += up

    def _handed(self, frame: FrameType) -> bool:
        code = frame.f_code
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        return any(_carries(frame.f_locals.get(name), self.follow) for name in names)


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _repo(tmp: Path) -> Path:
    repo = tmp / "repo"
    repo.mkdir()
    _git("init", "-q", "-b", "main", cwd=repo)
    (repo / "README").write_text("walk\n")
    _git("add", "README", cwd=repo)
    _git("-c", "user.name=walk", "-c", "user.email=walk@example.invalid", "commit", "-qm", "initial", cwd=repo)
    return repo


def _run(args: list[str], cwd: Path, walk: Walk | None) -> int:
    from gitst.cli.main import main
    from gitst.git import repo as git_repo

    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
            if walk is not None:
                sys.setprofile(walk.profile)
            try:
                rc = main(list(args))
            finally:
                sys.setprofile(None)
    finally:
        os.chdir(old)
        git_repo.clear_cache()
    if rc != 0:
        raise SystemExit(f"{args}: exit {rc}\n{err.getvalue()}")
    return rc


def measure(top: int, trail: bool = False) -> None:
    os.environ.setdefault("GIT_AUTHOR_NAME", "walk")
    os.environ.setdefault("GIT_AUTHOR_EMAIL", "walk@example.invalid")
    os.environ.setdefault("GIT_COMMITTER_NAME", "walk")
    os.environ.setdefault("GIT_COMMITTER_EMAIL", "walk@example.invalid")
    os.environ["ST_SESSION_ID"] = "walk-session"
    os.environ["ST_SESSION_PID"] = str(os.getpid())
    with tempfile.TemporaryDirectory() as tmp:
        repo = _repo(Path(tmp))
        _run(["init"], repo, None)
        # warm: every module imported and every cache filled the way a second command finds them
        _run(["add", "warm-up item"], repo, None)
        _run(["worktree", "add", "6"], repo, None)
        walks = (
            ("worktree add 7", ["worktree", "add", "7"], "7"),
            ('add "a title"', ["add", "a title"], "st-plan.jsonl"),
        )
        for label, args, follow in walks:
            walk = Walk(follow)
            _run(args, repo, walk)
            print(
                f"{label}: following {follow!r}: {walk.follow_visits} module visits, "
                f"{walk.follow_returns_up} returns up the layers, {len(walk.follow_modules)} modules"
            )
            print(
                f"    every call: {walk.visits} module visits, {walk.returns_up} returns up the layers, "
                f"{len(walk.entries)} modules"
            )
            if trail:
                for step in walk.trail:
                    print(f"    visit: {step}")
            for name, count in sorted(walk.calls.items()):
                print(f"    {name}: {count}")
            for caller, count in walk.callers.most_common(top):
                print(f"    validate_identifier from {caller}: {count}")
            for module, count in walk.entries.most_common(top):
                print(f"    entered {module}: {count}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=5, help="show the N most-entered modules")
    parser.add_argument("--trail", action="store_true", help="list the followed module visits in order")
    args = parser.parse_args()
    measure(args.top, args.trail)


if __name__ == "__main__":
    main()
