"""The shipped .pre-commit-hooks.yaml through the real pre-commit framework (must show 6).

The framework is pointed at a git repository holding a snapshot of this checkout
(`repo: <path>`, `rev: <sha>`), so it does what it does for any user: clones it, builds and
installs gitst into its own virtualenv (`language: python`) and runs the `git-st` of that
virtualenv. Offline: pip builds with virtualenv's bundled setuptools wheel (`PIP_NO_INDEX`,
`PIP_FIND_LINKS`) and gitst's own dependencies come from this test run's site-packages
(`PIP_NO_DEPS` + `PYTHONPATH`) instead of being downloaded — the one shortcut taken.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from filelock import FileLock

from tests.support import REPO_ROOT, git, mutate, run, run_shared_dir

PLAN = ".step/st-plan.jsonl"
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "snap",
    "GIT_AUTHOR_EMAIL": "snap@example.com",
    "GIT_COMMITTER_NAME": "snap",
    "GIT_COMMITTER_EMAIL": "snap@example.com",
}


@pytest.fixture(scope="module")
def gitst_snapshot(tmp_path_factory) -> tuple[Path, str]:
    """This checkout's files (tracked and new, not ignored) committed in a fresh repo: one for
    the run's xdist workers (made by the first to need it, under a lock), so the framework's
    cache below holds one environment for it whichever worker runs a test."""
    dest = run_shared_dir(tmp_path_factory) / "gitst-snapshot"
    env = {**os.environ, **GIT_ENV}
    with FileLock(f"{dest}.lock"):
        if not dest.with_suffix(".made").exists():
            shutil.rmtree(dest, ignore_errors=True)  # what a worker that failed half-way left
            _snapshot(dest, env)
            dest.with_suffix(".made").touch()
    sha = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=dest, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    return dest, sha


def _snapshot(dest: Path, env: dict) -> None:
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO_ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    dest.mkdir()
    for rel in filter(None, listed):
        source = REPO_ROOT / rel
        if not os.path.lexists(source):
            continue  # deleted in the working tree
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        else:
            shutil.copy2(source, target)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "--no-verify", "-m", "snapshot"]):
        subprocess.run(["git", *args], cwd=dest, env=env, check=True)


@pytest.fixture(scope="module")
def framework_cache(tmp_path_factory) -> Path:
    """PRE_COMMIT_HOME, one for the run's xdist workers: the framework builds each hook
    environment once (it locks its own store while it clones and installs)."""
    cache = run_shared_dir(tmp_path_factory) / "pre-commit-home"
    cache.mkdir(exist_ok=True)
    return cache


@pytest.fixture
def framework_env(framework_cache, st_bindir) -> dict:
    import virtualenv

    embed = Path(virtualenv.__file__).parent / "seed" / "wheels" / "embed"
    assert any(embed.glob("setuptools-*.whl")), f"no bundled setuptools wheel in {embed}"
    # gitst comes only from the framework's virtualenv: this test run's wrapper is not on PATH
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p and Path(p) != st_bindir)
    return {
        "PATH": path,
        "PRE_COMMIT_HOME": str(framework_cache),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(embed),
        "PIP_NO_DEPS": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PYTHONPATH": sysconfig.get_paths()["purelib"],
        "VIRTUALENV_NO_PERIODIC_UPDATE": "1",
    }


def _doc_snippets() -> list[str]:
    """The ```yaml blocks of docs/hooks.md's "The pre-commit framework" section, verbatim."""
    text = (REPO_ROOT / "docs" / "hooks.md").read_text()
    section = text[text.index("## The pre-commit framework") :]
    section = section[: section.index("\n## ", 1)]
    blocks = section.split("```yaml\n")[1:]
    return [block[: block.index("```")] for block in blocks]


def _set_marked(snippet: str, key: str, value: str) -> str:
    """The snippet with ``key``'s value replaced, only on a line the snippet marks `(set this)`."""
    lines = snippet.splitlines(keepends=True)
    marked = [i for i, line in enumerate(lines) if line.lstrip("- ").startswith(f"{key}:") and "(set this)" in line]
    assert len(marked) == 1, (key, snippet)
    line = lines[marked[0]]
    indent = line[: line.index(key)]
    lines[marked[0]] = f"{indent}{key}: {value}\n"
    return "".join(lines)


def _commit_a_plan(repo: Path, env: dict) -> None:
    git("add", ".pre-commit-config.yaml", cwd=repo)
    git("commit", "-q", "--no-verify", "-m", "use gitst through pre-commit", cwd=repo)
    installed = run([sys.executable, "-m", "pre_commit", "install"], cwd=repo, env=env)
    assert installed.returncode == 0, installed
    mutate(repo, "init")
    mutate(repo, "add", "--id", "st-001", "--step", "first")
    git("add", "-A", cwd=repo)
    first = run(["git", "commit", "-m", "plan"], cwd=repo, env=env, timeout=300)
    assert first.returncode == 0, first
    report = first.stdout + first.stderr
    assert "gitst validate" in report and "gitst plan is append-only" in report
    assert report.count("Passed") == 2 and "Failed" not in report
    plan = repo / PLAN
    plan.write_bytes(plan.read_bytes().replace(b'"first"', b'"rewritten"'))
    git("add", PLAN, cwd=repo)
    rewritten = run(["git", "commit", "-m", "rewrite"], cwd=repo, env=env, timeout=300)
    assert rewritten.returncode != 0 and f"{PLAN}:2:" in rewritten.stdout + rewritten.stderr


def test_the_documented_local_snippet_works_as_written(repo, framework_env, st_bindir):
    local, _ = _doc_snippets()
    (repo / ".pre-commit-config.yaml").write_text(local)  # literally: nothing filled in
    env = {**framework_env, "PATH": f"{st_bindir}{os.pathsep}{framework_env['PATH']}"}  # gitst installed
    _commit_a_plan(repo, env)


def test_the_documented_pinned_snippet_works_with_only_the_marked_lines_set(repo, gitst_snapshot, framework_env):
    _, pinned = _doc_snippets()
    source, sha = gitst_snapshot
    config = _set_marked(_set_marked(pinned, "repo", str(source)), "rev", sha)
    assert config.splitlines()[3:] == pinned.splitlines()[3:]  # the rest as written
    (repo / ".pre-commit-config.yaml").write_text(config)
    _commit_a_plan(repo, framework_env)


def test_shipped_manifest_is_valid_for_the_framework():
    from pre_commit.clientlib import load_manifest

    hooks = {h["id"]: h for h in load_manifest(str(REPO_ROOT / ".pre-commit-hooks.yaml"))}
    assert set(hooks) == {"gitst-validate", "gitst-plan-append-only"}
    assert all(h["language"] == "python" and h["entry"].startswith("git-st hook ") for h in hooks.values())


def test_framework_runs_the_shipped_hooks(repo, gitst_snapshot, framework_env):
    source, sha = gitst_snapshot
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {source}\n  rev: {sha}\n  hooks:\n  - id: gitst-validate\n  - id: gitst-plan-append-only\n"
    )
    git("add", ".pre-commit-config.yaml", cwd=repo)
    git("commit", "-q", "-m", "use gitst through pre-commit", cwd=repo)
    installed = run([sys.executable, "-m", "pre_commit", "install"], cwd=repo, env=framework_env)
    assert installed.returncode == 0, installed

    def commit(message: str):
        return run(["git", "commit", "-m", message], cwd=repo, env=framework_env, timeout=300)

    # a new plan: both hooks pass (the first run builds the framework's environment)
    mutate(repo, "init")
    mutate(repo, "add", "--id", "st-001", "--step", "first")
    git("add", "-A", cwd=repo)
    first = commit("plan")
    assert first.returncode == 0, first
    report = first.stdout + first.stderr  # git passes the framework's report through
    assert "gitst validate" in report and "gitst plan is append-only" in report
    assert report.count("Passed") == 2 and "Failed" not in report

    # an append passes
    mutate(repo, "set-status", "st-001", "in_progress")
    git("add", PLAN, cwd=repo)
    appended = commit("append")
    assert appended.returncode == 0, appended

    # a rewrite of line 2 fails the append-only hook, naming the line
    good = (repo / PLAN).read_bytes()
    (repo / PLAN).write_bytes(good.replace(b'"first"', b'"rewritten"'))
    git("add", PLAN, cwd=repo)
    rewritten = commit("rewrite")
    assert rewritten.returncode != 0, rewritten
    out = rewritten.stdout + rewritten.stderr
    assert "gitst plan is append-only" in out and "Failed" in out
    assert f"{PLAN}:2:" in out

    # an invalid record fails the validate hook
    (repo / PLAN).write_bytes(good + b'{"v":3,"lane":"event"}\n')
    git("add", PLAN, cwd=repo)
    invalid = commit("invalid")
    assert invalid.returncode != 0, invalid
    out = invalid.stdout + invalid.stderr
    assert "gitst validate" in out and "Failed" in out
    assert f"{PLAN}:4:" in out

    # a staged lock sidecar fails the validate hook
    (repo / PLAN).write_bytes(good)
    (repo / ".step" / "st-plan.jsonl.lock").write_text("")
    git("add", "-f", PLAN, ".step/st-plan.jsonl.lock", cwd=repo)
    sidecar = commit("sidecar")
    assert sidecar.returncode != 0, sidecar
    assert "HOOK_LOCK_SIDECAR_STAGED" in sidecar.stdout + sidecar.stderr

    # CI style: every file of the clean tree passes
    git("rm", "-q", "--cached", ".step/st-plan.jsonl.lock", cwd=repo)
    everything = run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=repo, env=framework_env, timeout=300
    )
    assert everything.returncode == 0, everything
    assert json.loads((repo / PLAN).read_bytes().splitlines()[-1])["op"] == "set_status"
