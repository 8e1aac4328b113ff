"""The dependency rule (docs/architecture.md, .importlinter) holds, and breaking it is caught."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO_ROOT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
CONTRACT = REPO_ROOT / ".importlinter"


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """`lint-imports` over the `gitst` package found under ``root`` (nothing cached)."""
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(CONTRACT), "--no-cache"],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def copy_of_the_package(tmp_path: Path) -> Path:
    root = tmp_path / "copy"
    shutil.copytree(REPO_ROOT / "gitst", root / "gitst", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_the_contract_is_kept():
    result = lint_imports(REPO_ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "source", "broken"),
    [
        # a leaf module reaching up into a feature
        ("gitst/core/upward_probe.py", "from gitst.plan import engine\n", "nothing imports upwards"),
        # a feature reaching a sibling above it (plan sits below validate)
        ("gitst/plan/upward_probe.py", "def f():\n    from gitst.validate import files\n", "nothing imports upwards"),
        # click outside the CLI
        ("gitst/sessions/upward_probe.py", "import click\n", "Only the entry points import the CLI"),
    ],
)
def test_an_upward_import_breaks_the_contract(tmp_path, module, source, broken):
    root = copy_of_the_package(tmp_path)
    assert lint_imports(root).returncode == 0  # the copy itself is clean
    (root / module).write_text(source)
    result = lint_imports(root)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{broken}" in result.stdout and "BROKEN" in result.stdout, result.stdout
    assert module[:-3].replace("/", ".") in result.stdout  # it names the offending module


def test_no_module_imports_itself_back():
    """No import cycles at all, between packages or between modules of one package."""
    import grimp

    graph = grimp.build_graph("gitst", cache_dir=None)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(start: str) -> None:  # Tarjan's strongly connected components, iteratively
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    assert cycles == []


def test_the_kind_registry_imports_its_feature_checkers_for_real():
    """The layer validate -> plan/pipeline/aide/sdlc is an import the contract sees (not a
    ``"module:function"`` string), each feature kind's checker is a typed function of
    gitst/validate/kinds.py, and importing the registry still loads none of the checkers."""
    import grimp

    from gitst.validate import kinds

    graph = grimp.build_graph("gitst", cache_dir=None)
    imported = graph.find_modules_directly_imported_by("gitst.validate.kinds")
    assert {"gitst.plan.check", "gitst.pipeline.check", "gitst.aide.stream", "gitst.sdlc.check"} <= imported
    assert "importlib" not in (REPO_ROOT / "gitst/validate/kinds.py").read_text(encoding="utf-8")
    features = [kind for kind in kinds.REGISTRY.values() if isinstance(kind, kinds.FeatureKind)]
    assert {kind.name for kind in features} == {"st-plan", "pipeline", "aide-wire", "aide-envelope", "sdlc-state"}
    for kind in features:
        assert callable(kind.checker) and kind.checker.__module__ == "gitst.validate.kinds", kind.name
    probe = (
        "import sys, gitst.validate.kinds\n"
        "print(sorted(m for m in sys.modules if m.split('.')[:2] in"
        " (['gitst', 'plan'], ['gitst', 'pipeline'], ['gitst', 'aide'], ['gitst', 'sdlc'])))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    assert loaded.stdout.strip() == "[]"


# Who starts processes, and what: git only through the git layer's one runner; the other three
# run what a user named (docs/architecture.md, "The git layer").
SPAWNERS = {
    "gitst/git/runner.py": "git, through posix_spawn",
    "gitst/pipeline/gh.py": "the gh CLI",
    "gitst/worktrees/setup.py": "the trusted setup script",
    "gitst/circuits/breaker.py": "the command a circuit breaker wraps",
    "gitst/loop/checks.py": "the repository's check command before `git st land` pushes",
    "gitst/cli/resident/client.py": "the resident process, started by its first client (ST_RESIDENT)",
    "gitst/cli/resident/server.py": "the resident process's worker per command (a fork, no exec)",
}
_SPAWN_CALLS = {"system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp"} | {
    f"exec{suffix}" for suffix in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")
}


def _starts_processes(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
            alias.name.split(".")[0] in ("subprocess", "pty") for alias in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("subprocess", "pty"):
            return True
        if isinstance(node, ast.Attribute) and node.attr in _SPAWN_CALLS and getattr(node.value, "id", None) == "os":
            return True
    return False


def test_only_the_git_layer_runs_git_and_the_other_spawners_never_do():
    found = set()
    for path in sorted((REPO_ROOT / "gitst").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if _starts_processes(tree):
            found.add(path.relative_to(REPO_ROOT).as_posix())
    assert found == set(SPAWNERS), "a new module starts processes: run git through gitst/git, or list it here"
    for name in set(SPAWNERS) - {"gitst/git/runner.py"}:
        tree = ast.parse((REPO_ROOT / name).read_text(encoding="utf-8"))
        literals = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)}
        assert "git" not in literals, f"{name} must not run git itself: add a function to gitst/git/"


@pytest.mark.parametrize(
    ("source", "starts"),
    [
        ("import subprocess", True),
        ("from subprocess import run", True),
        ("import os\nos.execvp('x', ['x'])", True),
        ("import os\nos.posix_spawn('/bin/x', ['x'], {})", True),
        ("import os\nos.getpid()", False),
    ],
)
def test_the_spawn_finder_sees_each_way_to_start_a_process(source, starts):
    assert _starts_processes(ast.parse(source)) is starts
