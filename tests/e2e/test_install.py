"""install.sh on a fresh HOME, and the README's two commands (the first is run literally)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.support import REPO_ROOT, run

ORIGINAL_HOME = os.environ.get("HOME", "")


def _readme_commands() -> list[str]:
    lines = (REPO_ROOT / "README.md").read_text().splitlines()
    start = lines.index("```sh")
    return lines[start + 1 : start + 3]


def _install_env(home: Path) -> dict:
    bindir = home / ".local" / "bin"
    return {
        "HOME": str(home),
        "PATH": f"{bindir}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
        "PIP_CACHE_DIR": os.path.join(ORIGINAL_HOME, ".cache", "pip"),
        "MANPAGER": "cat",
        "PAGER": "cat",
        "PYTHON": shutil.which("python3") or "python3",
    }


@pytest.fixture(scope="module")
def installed_home(tmp_path_factory) -> Path:
    """One real run of install.sh into a fresh HOME, shared by this module's tests."""
    home = tmp_path_factory.mktemp("installhome")
    (home / ".gitconfig").write_text("[user]\n\tname = T\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n")
    (home / ".local" / "bin").mkdir(parents=True)
    result = run([str(REPO_ROOT / "install.sh")], cwd=home, env=_install_env(home), timeout=600)
    assert result.returncode == 0, result
    return home


def test_install_puts_both_commands_on_path_and_the_manual_where_man_finds_it(installed_home):
    env = _install_env(installed_home)
    bindir = installed_home / ".local" / "bin"
    for name in ("git-st", "gitst"):
        assert (bindir / name).is_symlink()
        assert os.readlink(bindir / name).startswith(str(installed_home / ".local" / "share" / "gitst" / "venv"))
    assert (installed_home / ".local" / "share" / "man" / "man1" / "git-st.1").is_file()
    version = run(["git", "st", "--version"], cwd=installed_home, env=env)
    assert version.returncode == 0, version
    assert version.stdout.startswith("gitst ")
    # The installed copy (not this checkout) ships the schemas and the hook shims.
    schemas = run(["gitst", "schema", "list"], cwd=installed_home, env=env)
    assert schemas.returncode == 0, schemas
    assert "st-record" in schemas.stdout and "sdlc-state" in schemas.stdout
    site = next((installed_home / ".local" / "share" / "gitst" / "venv" / "lib").glob("python3*/site-packages/gitst"))
    assert (site / "schemas" / "st-record.schema.json").is_file()
    assert (site / "hooks" / "shim.sh").is_file()
    assert not [p for p in site.rglob("*") if p.is_symlink()]
    if shutil.which("man"):
        manual = run(["git", "st", "--help"], cwd=installed_home, env=env)
        assert manual.returncode == 0, manual
        assert "git-st" in manual.stdout and "EXIT STATUS" in manual.stdout


def test_install_is_safe_to_run_twice_and_warns_about_alias_st(installed_home):
    env = _install_env(installed_home)
    before = sorted(p.name for p in (installed_home / ".local" / "bin").iterdir())
    run(["git", "config", "--global", "alias.st", "status"], cwd=installed_home, env=env)
    try:
        again = run([str(REPO_ROOT / "install.sh")], cwd=installed_home, env=env, timeout=600)
    finally:
        run(["git", "config", "--global", "--unset", "alias.st"], cwd=installed_home, env=env)
    assert again.returncode == 0, again
    assert "alias.st is set" in again.stdout and "--no-git-st" in again.stdout
    assert sorted(p.name for p in (installed_home / ".local" / "bin").iterdir()) == before
    assert run(["gitst", "--version"], cwd=installed_home, env=env).returncode == 0


def test_readme_first_command_sets_up_and_runs_a_first_plan_command(installed_home, tmp_path):
    first, _ = _readme_commands()
    assert first.startswith("./install.sh")
    command = first.replace("./install.sh", str(REPO_ROOT / "install.sh"), 1)
    result = run(["bash", "-c", command], cwd=tmp_path, env=_install_env(installed_home), timeout=600)
    assert result.returncode == 0, result
    assert "Reproduce bug" in result.stdout
    assert (tmp_path / "demo" / ".step" / "st-plan.jsonl").is_file()


def test_ci_runs_exactly_the_readme_test_command():
    _, test_command = _readme_commands()
    ci = (REPO_ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci
    assert "pytest" in test_command


def test_pip_install_of_a_clean_clone_ships_the_schemas_and_the_shim_template(tmp_path):
    """`pip install .` in a fresh clone (nothing but what is committed): the schemas and the
    one shim template are real files of the installed package, read with importlib.resources."""
    clone = tmp_path / "clone"
    assert run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], cwd=tmp_path).returncode == 0
    target = tmp_path / "site"
    installed = run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), "."],
        cwd=clone,
        timeout=600,
    )
    assert installed.returncode == 0, installed
    package = target / "gitst"
    shipped = sorted(p.name for p in (package / "schemas").glob("*.schema.json"))
    assert shipped == sorted(p.name for p in (clone / "schemas").glob("*.schema.json")) != []
    assert (package / "hooks" / "shim.sh").is_file() and (package / "py.typed").is_file()
    assert [p for p in package.rglob("*") if p.is_symlink()] == []
    probe = (
        "import gitst, sys\n"
        f"assert gitst.__file__.startswith({str(package)!r}), gitst.__file__\n"
        "from gitst.schemas import catalog\n"
        "from gitst.hooks.install import shim_bytes\n"
        "print(len(catalog.names()), b'hook=pre-push' in shim_bytes('pre-push'))\n"
    )
    used = run([sys.executable, "-c", probe], cwd=tmp_path, env={"PYTHONPATH": str(target)})
    assert used.returncode == 0, used
    assert used.stdout.split() == [str(len(shipped)), "True"]
