"""Every install route on a fresh HOME — install.sh, pip into a venv, pipx, uv tool — each
running `git st --help` (the manual, through man), `git st help show` and `git st
completion bash`; and the README's two commands (the first is run literally)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from filelock import FileLock

from tests.support import REPO_ROOT, run, run_shared_dir

ORIGINAL_HOME = os.environ.get("HOME", "")


def _readme_commands() -> list[str]:
    lines = (REPO_ROOT / "README.md").read_text().splitlines()
    start = lines.index("```sh")
    return lines[start + 1 : start + 3]


def _install_env(home: Path, bindir: Path | None = None) -> dict:
    bindir = bindir or home / ".local" / "bin"
    return {
        "HOME": str(home),
        "PATH": f"{bindir}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
        "PIP_CACHE_DIR": os.path.join(ORIGINAL_HOME, ".cache", "pip"),
        "UV_CACHE_DIR": os.path.join(ORIGINAL_HOME, ".cache", "uv"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "MANPAGER": "cat",
        "PAGER": "cat",
        "MANWIDTH": "100",
        "PYTHON": shutil.which("python3") or "python3",
    }


def _fresh_home(tmp_path_factory, name: str) -> Path:
    home = tmp_path_factory.mktemp(name)
    (home / ".gitconfig").write_text("[user]\n\tname = T\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n")
    return home


def _first_hour(home: Path, env: dict) -> None:
    """What a newcomer types first: the manual, one command's help, the completion script."""
    assert shutil.which("man"), "man-db is part of the machine: `git st --help` needs it"
    help_show = run(["git", "st", "help", "show"], cwd=home, env=env)
    assert help_show.returncode == 0, help_show
    assert help_show.stdout.startswith("Usage: git st show [OPTIONS] [ID]")
    manual = run(["git", "st", "--help"], cwd=home, env=env)
    assert manual.returncode == 0, manual
    assert "GIT-ST(1)" in manual.stdout and "EXIT STATUS" in manual.stdout and "git st show" in manual.stdout
    assert "No manual entry" not in manual.stderr
    completion = run(["git", "st", "completion", "bash"], cwd=home, env=env)
    assert completion.returncode == 0, completion
    assert "_git_st()" in completion.stdout and "complete -o nosort -F _gitst gitst git-st" in completion.stdout
    version = run(["gitst", "--version"], cwd=home, env=env)
    assert version.returncode == 0 and version.stdout.startswith("gitst ")


@pytest.fixture(scope="session")
def gitst_wheel(tmp_path_factory) -> Path:
    """One wheel of a clean clone (what is committed), built once a run for every route below:
    under xdist the first worker to need it builds it, the others wait on the lock and take it."""
    work = run_shared_dir(tmp_path_factory) / "wheel"
    with FileLock(f"{work}.lock"):
        if not work.with_suffix(".built").exists():
            shutil.rmtree(work, ignore_errors=True)  # what a worker that failed half-way left
            work.mkdir()
            clone = work / "clone"
            assert run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], cwd=work).returncode == 0
            built = run(
                [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(work / "dist"), "."],
                cwd=clone,
                env={"PIP_CACHE_DIR": os.path.join(ORIGINAL_HOME, ".cache", "pip")},
                timeout=600,
            )
            assert built.returncode == 0, built
            work.with_suffix(".built").touch()
    (wheel,) = (work / "dist").glob("gitst-*.whl")
    return wheel


def test_the_wheel_ships_the_manual_where_man_finds_it(gitst_wheel):
    import zipfile

    names = zipfile.ZipFile(gitst_wheel).namelist()
    data = [n for n in names if ".data/data/share/man/man1/" in n]
    assert sorted(n.rsplit("/", 1)[1] for n in data) == ["git-st.1", "gitst.1"]
    shipped = zipfile.ZipFile(gitst_wheel).read(next(n for n in data if n.endswith("/git-st.1")))
    assert shipped == (REPO_ROOT / "docs" / "man" / "git-st.1").read_bytes()


def test_pip_into_a_venv(gitst_wheel, tmp_path_factory):
    home = _fresh_home(tmp_path_factory, "pip-home")
    venv = home / "venv"
    assert (
        run([sys.executable, "-m", "venv", str(venv)], cwd=home, timeout=600).returncode == 0
    )  # ensurepip: slow under load
    env = _install_env(home, venv / "bin")  # an activated venv: its bin/ first on PATH
    installed = run([str(venv / "bin" / "pip"), "install", "-q", str(gitst_wheel)], cwd=home, env=env, timeout=600)
    assert installed.returncode == 0, installed
    assert (venv / "share" / "man" / "man1" / "git-st.1").is_file()
    _first_hour(home, env)
    # What the hook shims run on every commit imports no `re` (pip's entry-point launchers
    # do, first thing: a third of an interpreter start, docs/performance.md).
    repo = home / "repo"
    assert run(["git", "init", "-q", str(repo)], cwd=home, env=env).returncode == 0
    (repo / "README").write_text("x\n")
    assert run(["git", "add", "README"], cwd=repo, env=env).returncode == 0
    git_st = venv / "bin" / "git-st"
    assert git_st.read_text().splitlines()[0].startswith(f"#!{venv / 'bin' / 'python'}")  # the venv's own
    traced = run(
        [str(venv / "bin" / "python"), "-X", "importtime", str(git_st), "hook", "pre-commit"], cwd=repo, env=env
    )
    imported = {
        line.rsplit("|", 1)[-1].strip() for line in traced.stderr.splitlines() if line.startswith("import time:")
    }
    assert traced.returncode == 0 and "gitst.hooks.entry" in imported, traced
    assert "re" not in imported, sorted(imported)


def test_pipx_install(gitst_wheel, tmp_path_factory):
    home = _fresh_home(tmp_path_factory, "pipx-home")
    env = _install_env(home)
    pipx = Path(sys.executable).with_name("pipx")
    installed = run([str(pipx), "install", str(gitst_wheel)], cwd=home, env=env, timeout=600)
    assert installed.returncode == 0, installed
    assert (home / ".local" / "bin" / "git-st").exists()
    assert (home / ".local" / "share" / "man" / "man1" / "git-st.1").exists()  # pipx links the pages
    _first_hour(home, env)


def test_uv_tool_install(gitst_wheel, tmp_path_factory):
    """uv links the commands into ~/.local/bin but not the manual (astral-sh/uv#4731): the
    first `git st` command links it beside them, so `git st --help` works from then on."""
    home = _fresh_home(tmp_path_factory, "uv-home")
    env = _install_env(home)
    uv = Path(sys.executable).with_name("uv")
    installed = run(
        [str(uv), "tool", "install", "--python", sys.executable, str(gitst_wheel)], cwd=home, env=env, timeout=600
    )
    assert installed.returncode == 0, installed
    page = home / ".local" / "share" / "man" / "man1" / "git-st.1"
    assert (home / ".local" / "bin" / "git-st").is_symlink() and not page.exists()
    _first_hour(home, env)  # `git st help show` runs first
    assert page.is_symlink() and page.resolve().is_file()
    assert str(page.resolve()).startswith(str(home / ".local" / "share" / "uv" / "tools" / "gitst"))


@pytest.fixture
def installed_home(tmp_path_factory) -> Iterator[Path]:
    """One real run of install.sh into a fresh HOME, shared by this module's tests: made once a
    run (under xdist by the first worker to need it), and each test holds the lock while it
    uses it - two of them run install.sh on it again, one with a global alias.st set."""
    home = run_shared_dir(tmp_path_factory) / "installhome"
    with FileLock(f"{home}.lock"):
        if not home.with_suffix(".installed").exists():
            shutil.rmtree(home, ignore_errors=True)  # what a worker that failed half-way left
            home.mkdir()
            (home / ".gitconfig").write_text(
                "[user]\n\tname = T\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n"
            )
            (home / ".local" / "bin").mkdir(parents=True)
            result = run([str(REPO_ROOT / "install.sh")], cwd=home, env=_install_env(home), timeout=600)
            assert result.returncode == 0, result
            # it says what it is doing while it works (the pip step takes most of its time)
            assert "install.sh: creating a virtual environment in" in result.stdout
            assert "install.sh: building and installing gitst" in result.stdout
            assert "install.sh: installed shell completion" in result.stdout
            home.with_suffix(".installed").touch()
        yield home


def test_install_puts_both_commands_on_path_and_the_manual_where_man_finds_it(installed_home):
    env = _install_env(installed_home)
    bindir = installed_home / ".local" / "bin"
    for name in ("git-st", "gitst"):
        assert (bindir / name).is_symlink()
        assert os.readlink(bindir / name).startswith(str(installed_home / ".local" / "share" / "gitst" / "venv"))
    assert (installed_home / ".local" / "share" / "man" / "man1" / "git-st.1").is_file()
    completions = installed_home / ".local" / "share" / "bash-completion" / "completions"
    assert "_git_st()" in (completions / "gitst").read_text()
    assert os.readlink(completions / "git-st") == "gitst"  # git's completion loads completions/git-st
    assert (installed_home / ".local" / "share" / "zsh" / "site-functions" / "_gitst").is_file()
    assert (installed_home / ".config" / "fish" / "completions" / "gitst.fish").is_file()
    _first_hour(installed_home, env)
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
    clone = tmp_path / "clone"  # where the reader runs it: the top of the clone
    clone.mkdir()
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**_install_env(installed_home), "TMPDIR": str(temp)}
    result = run(["bash", "-c", command], cwd=clone, env=env, timeout=600)
    assert result.returncode == 0, result
    assert "Reproduce bug" in result.stdout
    assert list(clone.iterdir()) == []  # the demo does not land in the clone
    (plan,) = temp.glob("*/demo/.step/st-plan.jsonl")
    assert plan.is_file()


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
