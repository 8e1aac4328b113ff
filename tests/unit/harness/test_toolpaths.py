"""Which files a tool call writes (gitst.harness.toolpaths): what PreToolUse checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitst.harness.toolpaths import written_paths


@pytest.fixture
def top(tmp_path) -> Path:
    (tmp_path / "src").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    ("tool", "tool_input", "expected"),
    [
        ("Edit", {"file_path": "{top}/src/a.py"}, ["src/a.py"]),
        ("Write", {"file_path": "src/new.py", "content": ""}, ["src/new.py"]),
        ("NotebookEdit", {"notebook_path": "{top}/nb.ipynb"}, ["nb.ipynb"]),
        ("Edit", {"file_path": "/etc/passwd"}, []),  # outside the repository: not ours to check
        ("Read", {"file_path": "{top}/src/a.py"}, []),
        ("Bash", {"command": "cat src/a.py | grep x"}, []),  # reading is fine
        ("Bash", {"command": "echo hi > src/out.txt && cat README"}, ["src/out.txt"]),
        ("Bash", {"command": "sed -i 's/a/b/' src/a.py src/b.py"}, ["src/a.py", "src/b.py"]),
        ("Bash", {"command": "git mv src/a.py src/c.py; rm -f docs/x.md"}, ["src/a.py", "src/c.py", "docs/x.md"]),
        ("Bash", {"command": "FOO=1 tee -a log.txt"}, ["log.txt"]),
        ("Bash", {"command": "echo 'open quote > x"}, []),
        ("shell", {"command": ["bash", "-lc", "touch src/z.py"]}, []),  # argv: one bash -lc word, not parsed
        (
            "apply_patch",
            {"input": "*** Begin Patch\n*** Add File: src/n.py\n+x\n*** Delete File: old.py\n*** End Patch"},
            ["src/n.py", "old.py"],
        ),
        ("Edit", "not a dict", []),
    ],
)
def test_written_paths(top, tool, tool_input, expected):
    if isinstance(tool_input, dict):
        tool_input = {k: v.replace("{top}", str(top)) if isinstance(v, str) else v for k, v in tool_input.items()}
    assert written_paths(tool, tool_input, cwd=str(top), top=str(top)) == expected
