"""The house rules a reviewer can hold in their head (docs/conventions.md, "Size and imports"):
no function above cyclomatic complexity 15 (radon's measure) or 80 lines, no module above
700 lines, and an import inside a function only where laziness is measured and said
(``# lazy: <why>`` on the import's first line). Each rule is also shown to catch a breach."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from radon.complexity import cc_visit

from tests.support import REPO_ROOT

MAX_COMPLEXITY = 15
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 700
LAZY_MARK = "# lazy:"


def _modules() -> list[Path]:
    return sorted(path for path in (REPO_ROOT / "gitst").rglob("*.py") if "__pycache__" not in path.parts)


def _name(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT))


def too_complex(source: str) -> list[str]:
    out = []
    blocks = list(cc_visit(source))
    while blocks:
        block = blocks.pop()
        blocks.extend([*getattr(block, "methods", []), *getattr(block, "closures", [])])
        is_function = hasattr(block, "is_method")  # radon's Function; a Class has none
        if is_function and block.complexity > MAX_COMPLEXITY:
            out.append(f"{block.fullname} (line {block.lineno}): complexity {block.complexity}")
    return sorted(set(out))


def too_long(source: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                out.append(f"{node.name} (line {node.lineno}): {length} lines")
    return out


def unmarked_lazy_imports(source: str) -> list[str]:
    lines = source.splitlines()
    functions = [
        node for node in ast.walk(ast.parse(source)) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    imports = {
        inner.lineno
        for node in functions
        for inner in ast.walk(node)
        if isinstance(inner, (ast.Import, ast.ImportFrom))
    }
    return [f"line {line}: {lines[line - 1].strip()}" for line in sorted(imports) if LAZY_MARK not in lines[line - 1]]


def test_no_function_is_too_complex() -> None:
    found = {_name(path): too_complex(path.read_text()) for path in _modules()}
    assert not {name: problems for name, problems in found.items() if problems}


def test_no_function_is_too_long() -> None:
    found = {_name(path): too_long(path.read_text()) for path in _modules()}
    assert not {name: problems for name, problems in found.items() if problems}


def test_no_module_is_too_long() -> None:
    found = {_name(path): len(path.read_text().splitlines()) for path in _modules()}
    assert not {name: lines for name, lines in found.items() if lines > MAX_MODULE_LINES}


def test_every_import_inside_a_function_says_why_it_is_lazy() -> None:
    found = {_name(path): unmarked_lazy_imports(path.read_text()) for path in _modules()}
    assert not {name: problems for name, problems in found.items() if problems}


# A @dataclass compiles its methods when its module is imported (~1 ms each): gitst's value
# classes are `gitst.core.values.value_class` (or slotted `Value`s). The aide graph's entities
# stay dataclasses: many instances in a loop, where value_class's __init__ costs more.
DATACLASSES_ALLOWED = {"gitst/aide/reducer.py"}


def dataclasses_used(source: str) -> list[str]:
    """Lines importing :mod:`dataclasses` (a ``@dataclass`` needs one)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if (isinstance(node, ast.ImportFrom) and node.module == "dataclasses") or "dataclasses" in names:
            out.append(f"line {node.lineno}: imports dataclasses")
    return out


def test_no_module_builds_a_dataclass() -> None:
    found = {_name(path): dataclasses_used(path.read_text()) for path in _modules()}
    assert not {name: problems for name, problems in found.items() if problems and name not in DATACLASSES_ALLOWED}


BRANCHY = "def f(x):\n" + "".join(f"    if x == {i}:\n        return {i}\n" for i in range(16)) + "    return -1\n"


@pytest.mark.parametrize(
    ("check", "source"),
    [
        (too_complex, BRANCHY),
        (too_long, "def f():\n" + "    x = 1\n" * 80),
        (unmarked_lazy_imports, "def f():\n    import json\n    return json\n"),
        (dataclasses_used, "from dataclasses import dataclass\n"),
        (dataclasses_used, "import dataclasses\n"),
    ],
)
def test_each_rule_catches_a_breach(check, source: str) -> None:
    assert check(source)


def test_a_marked_lazy_import_and_a_short_simple_function_pass() -> None:
    source = "def f(x):\n    import json  # lazy: only this command needs it\n    return json.dumps(x)\n"
    assert not too_complex(source)
    assert not too_long(source)
    assert not unmarked_lazy_imports(source)
