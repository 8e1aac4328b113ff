"""Helpers for tests that drive real git and the real CLI in temporary directories."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    args: list

    def __repr__(self) -> str:  # shown by pytest when an assertion fails
        return (
            f"Result(rc={self.returncode}, args={self.args!r}\n"
            f"--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr})"
        )


def git(
    *args: str, cwd: str | os.PathLike, check: bool = True, env: dict | None = None, input: str | None = None
) -> str:
    """Run real git; return stdout (stripped of the final newline)."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, input=input)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout.rstrip("\n")


def run(
    args: list[str], *, cwd: str | os.PathLike, env: dict | None = None, input: str | None = None, timeout: float = 120
) -> Result:
    """Run any command; capture text output."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=full_env, input=input, timeout=timeout)
    return Result(proc.returncode, proc.stdout, proc.stderr, list(args))


def st(
    *args: str, cwd: str | os.PathLike, env: dict | None = None, input: str | None = None, timeout: float = 120
) -> Result:
    """Run the real CLI as `git-st ARGS` (the wrapper the session fixture put first on PATH)."""
    return run(["git-st", *args], cwd=cwd, env=env, input=input, timeout=timeout)


def git_st(*args: str, cwd: str | os.PathLike, env: dict | None = None, input: str | None = None) -> Result:
    """Run the real CLI the way users do: `git st ARGS` (git finds git-st on PATH)."""
    return run(["git", "st", *args], cwd=cwd, env=env, input=input)


def write_wrapper(bindir: Path, name: str = "git-st") -> Path:
    """An executable that runs this checkout's gitst with the test interpreter."""
    script = bindir / name
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"sys.path.insert(0, {str(REPO_ROOT)!r})\n"
        "from gitst.cli.main import main\n"
        "sys.exit(main())\n"
    )
    script.chmod(0o755)
    return script


def init_repo(path: Path, *, commit: bool = True) -> Path:
    """A fresh real repository with one commit on `main`."""
    path.mkdir(parents=True, exist_ok=True)
    git("init", "-q", "-b", "main", str(path), cwd=path.parent)
    if commit:
        (path / "README").write_text("test repo\n")
        git("add", "README", cwd=path)
        git("commit", "-q", "-m", "initial", cwd=path)
    return path
