"""Shared fixtures: an isolated environment, the real CLI on PATH, real git repositories."""

from __future__ import annotations

import itertools
import os
import tempfile
from pathlib import Path

import pytest

from tests.support import REPO_ROOT, SHORT_TMP, init_repo, write_wrapper

_LEAKY_ENV = (
    "ST_CHECKPOINT_INTERVAL",
    "ST_LOCK_TIMEOUT",
    "ST_STATE_DIR",
    "ST_SESSION_ID",
    "ST_SESSION_PID",
    "ST_RESIDENT",
    "ST_RESIDENT_IDLE",
    "ST_ACTOR",
    "ST_LOCK_TTL",
    "ST_WORKTREE_PORTS",
    "ST_HOST",
    "ST_PR_NUMBER",
    "ST_PR_ISSUE",
    "CLAUDE_SESSION_ID",
    "CODEX_THREAD_ID",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "PRE_COMMIT_HOME",
    "GH_TOKEN",
    "GITHUB_TOKEN",
)


# Options that run only part of the suite: its coverage says nothing about the floor.
_PARTIAL_RUN_OPTIONS = ("keyword", "markexpr", "lf", "deselect", "ignore", "ignore_glob", "stepwise", "maxfail")


def _compile_gitst() -> None:
    """Byte-compile this checkout's gitst (gitst/**/__pycache__, git-ignored) once per run.

    Every `git st` process, hook and merge driver the tests start imports gitst; under
    ``PYTHONDONTWRITEBYTECODE=1`` (set on this box, and in many CI images) no process ever
    writes the .pyc files, so each one compiled every module it imports from source: ~75 ms
    of CPU a `git st show` (187 -> 113 ms), thousands of times a run. Python still *reads*
    .pyc files under that setting, checked against the source's mtime and size, so a stale one
    is never used; compileall rewrites only the changed ones."""
    import compileall  # lazy: only the controller process of a test run compiles

    compileall.compile_dir(str(REPO_ROOT / "gitst"), quiet=1, workers=1)


def pytest_configure(config: pytest.Config) -> None:
    """The coverage floor ([tool.coverage.report] fail_under) gates the README's test command,
    the whole suite; a run of some tests (paths, -k, -m, --lf, -x...) measures without it.
    The controller (not each xdist worker) byte-compiles gitst for the processes tests start."""
    if not hasattr(config, "workerinput"):
        _compile_gitst()
    plugin = config.pluginmanager.getplugin("_cov")  # pytest-cov's plugin, when --cov is on
    if plugin is None:
        return
    whole = config.args_source is pytest.Config.ArgsSource.TESTPATHS and not any(
        getattr(config.option, name, None) for name in _PARTIAL_RUN_OPTIONS
    )
    if not whole:
        plugin.options.cov_fail_under = None


SLOW_SECONDS = 30  # the weight of a `slow` test that names none: @pytest.mark.slow(70)


def _slow_seconds(item: pytest.Item) -> float | None:
    marker = item.get_closest_marker("slow")
    if marker is None:
        return None
    return float(marker.args[0]) if marker.args else SLOW_SECONDS


def _worksteal_order(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    """The order whose contiguous chunks `--dist worksteal` hands the ``workers`` at the start
    (worker i gets len(pending) // (workers - i) of what is left) each begin with a share of
    the long tests: longest first, each to the chunk with the fewest seconds so far (LPT). So
    every core starts on long tests, the short ones fill in behind them, and a worker that
    runs dry steals short tests from the back of another's queue - never a long test last."""
    weights = {id(item): _slow_seconds(item) for item in items}
    slow = sorted((i for i in items if weights[id(i)] is not None), key=lambda i: -(weights[id(i)] or 0))
    rest = iter([i for i in items if weights[id(i)] is None])
    heads: list[list[pytest.Item]] = [[] for _ in range(workers)]
    loads = [0.0] * workers
    for item in slow:
        chunk = loads.index(min(loads))
        heads[chunk].append(item)
        loads[chunk] += weights[id(item)] or 0
    ordered: list[pytest.Item] = []
    left = len(items)
    for chunk in range(workers):
        size = left // (workers - chunk)
        left -= size
        ordered += heads[chunk]
        ordered += itertools.islice(rest, max(0, size - len(heads[chunk])))
    ordered += list(rest)
    return ordered


# Workers per core of `-n auto` (the README's command). A quarter to a third of the cores'
# time in the suite's run is waiting, not CPU - leases running out, agents sleeping between
# tool calls, daemons, npx, 8 racing processes each waiting on the others' pushes: the tests
# and every process they start used 1,486 s of CPU in a run under load (which inflates it),
# while the quiet-box run took 914 s on 2 cores, 1,828 core-seconds (docs/performance.md).
# Two workers per core fill the waits with other tests' work.
WORKERS_PER_CORE = 2


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: WORKERS_PER_CORE workers per core this process may run on. xdist's own
    answer (one per core) for `-n logical` and when PYTEST_XDIST_AUTO_NUM_WORKERS is set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") or config.option.numprocesses == "logical":
        return None
    return WORKERS_PER_CORE * len(os.sched_getaffinity(0))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """xdist's controller tells each worker its --dist mode (a worker's own option reads "no")."""
    node.workerinput["dist"] = node.config.option.dist


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long tests (marked slow) start first, the rest keep their order. Under xdist's
    --dist worksteal (addopts) every worker starts on its share of them (_worksteal_order):
    the README's `-n auto` run ends when its longest queue does. Every worker computes the
    same order (xdist requires it): from the collection and the worker count alone."""
    workerinput = getattr(config, "workerinput", {})
    workers = int(workerinput.get("workercount", 1))
    if workers > 1 and workerinput.get("dist") == "worksteal":
        items[:] = _worksteal_order(items, workers)
    else:
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


_RESIDENT_RUNTIME = (
    tempfile.mkdtemp(prefix="st-run-", dir=SHORT_TMP) if os.environ.get("ST_TEST_RESIDENT") == "1" else ""
)


@pytest.fixture(scope="session")
def st_bindir(tmp_path_factory) -> Path:
    """A bin dir holding `git-st` and `gitst` wrappers that run this checkout's code."""
    bindir = tmp_path_factory.mktemp("bin")
    write_wrapper(bindir, "git-st")
    write_wrapper(bindir, "gitst")
    return bindir


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch, tmp_path_factory, st_bindir):
    """Every test gets its own HOME and global git config, and our CLI first on PATH."""
    home = tmp_path_factory.mktemp("home")
    for name in _LEAKY_ENV:
        monkeypatch.delenv(name, raising=False)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test User\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n"
        '[protocol "file"]\n\tallow = always\n'
        "[advice]\n\tdetachedHead = false\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("USER", "tester")
    monkeypatch.setenv("PATH", f"{st_bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    if _RESIDENT_RUNTIME:  # ST_TEST_RESIDENT=1: every `git-st` through one resident process per worker
        monkeypatch.setenv("ST_RESIDENT", "1")
        monkeypatch.setenv("XDG_RUNTIME_DIR", _RESIDENT_RUNTIME)
        monkeypatch.setenv("ST_RESIDENT_IDLE", "60")  # gone a minute after the last test
    else:  # a private runtime directory of its own: the merge slot's doorbells stay the test's
        runtime = home / "run"
        runtime.mkdir(mode=0o700)
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    from gitst.git import repo

    repo.clear_cache()
    from gitst.statedir import paths as state_paths

    state_paths.clear_cache()
    yield home


@pytest.fixture
def repo(tmp_path) -> Path:
    """A real git repository with one commit on `main`."""
    return init_repo(tmp_path / "repo")
