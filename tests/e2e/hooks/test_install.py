"""`git st hooks install|uninstall|status` in real repositories: where the shims land,
chaining of foreign hooks, byte-for-byte restore, idempotence, no baked paths."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from tests.support import REPO_ROOT, git, git_st, run, st

HOOKS = ("pre-commit", "pre-push", "post-merge", "post-rewrite", "post-checkout")
SHIMS = REPO_ROOT / "hooks"

# A foreign hook with bytes no text tool would keep: no trailing newline, a NUL-free
# Latin-1 byte, CRLF, an unusual mode. It blocks when BLOCK exists at the top.
FOREIGN = (
    b'#!/bin/sh\n# caf\xe9 hook\r\necho foreign-ran >> "$(git rev-parse --git-common-dir)/foreign.log"\n[ ! -e BLOCK ]'
)


def snapshot(directory: Path) -> dict:
    """Everything about every entry of a directory that an install could change."""
    result = {}
    for entry in sorted(directory.iterdir()):
        st_ = entry.lstat()
        content = os.readlink(entry) if entry.is_symlink() else entry.read_bytes()
        result[entry.name] = (content, stat.S_IMODE(st_.st_mode), st_.st_mtime_ns, st_.st_ino)
    return result


def status_json(cwd) -> dict:
    result = st("hooks", "status", "--format", "json", cwd=cwd)
    assert result.returncode == 0, result
    return json.loads(result.stdout)


def states(cwd) -> dict:
    return {h["name"]: h["state"] for h in status_json(cwd)["hooks"]}


def write_foreign(path: Path, content: bytes = FOREIGN, mode: int = 0o750) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    path.chmod(mode)


def foreign_runs(repo: Path) -> int:
    log = Path(git("rev-parse", "--git-common-dir", cwd=repo))
    log = (log if log.is_absolute() else repo / log) / "foreign.log"
    return log.read_text().count("foreign-ran") if log.exists() else 0


def test_install_puts_every_shim_and_the_merge_driver_in_place(repo):
    result = git_st("hooks", "install", cwd=repo)
    assert result.returncode == 0, result
    hooks_dir = repo / ".git" / "hooks"
    for name in HOOKS:
        installed = hooks_dir / name
        assert installed.read_bytes() == (SHIMS / name).read_bytes()
        assert os.access(installed, os.X_OK)
        assert f"{name}: installed {installed}" in result.stdout
    assert states(repo) == dict.fromkeys(HOOKS, "ours")
    assert git("config", "merge.gitst-plan.driver", cwd=repo) == "git-st merge-driver %O %A %B %P"
    assert "**/.step/*.jsonl merge=gitst-plan" in (repo / ".gitattributes").read_text()
    for plan in (".step/st-plan.jsonl", "sub/dir/.step/other.jsonl"):
        assert git("check-attr", "merge", "--", plan, cwd=repo).endswith("merge: gitst-plan")
    assert "merge driver: set merge.gitst-plan.driver" in result.stdout
    assert ".gitattributes (commit it" in result.stdout


def test_install_twice_changes_nothing(repo):
    (repo / ".gitattributes").write_bytes(b"*.png binary")  # no final newline: we add one
    assert st("hooks", "install", cwd=repo).returncode == 0
    assert (repo / ".gitattributes").read_bytes() == b"*.png binary\n**/.step/*.jsonl merge=gitst-plan\n"
    hooks_before = snapshot(repo / ".git" / "hooks")
    config = repo / ".git" / "config"
    config_before = (config.read_bytes(), config.stat().st_mtime_ns)
    attrs_before = ((repo / ".gitattributes").read_bytes(), (repo / ".gitattributes").stat().st_mtime_ns)

    again = st("hooks", "install", cwd=repo)
    assert again.returncode == 0, again
    assert snapshot(repo / ".git" / "hooks") == hooks_before
    assert (config.read_bytes(), config.stat().st_mtime_ns) == config_before
    assert ((repo / ".gitattributes").read_bytes(), (repo / ".gitattributes").stat().st_mtime_ns) == attrs_before
    assert again.stdout.count("already installed") == len(HOOKS)
    assert "installed /" not in again.stdout


def test_foreign_hook_runs_first_blocks_and_is_restored_byte_for_byte(repo):
    hooks_dir = repo / ".git" / "hooks"
    write_foreign(hooks_dir / "pre-commit")
    before = snapshot(hooks_dir)["pre-commit"]

    result = st("hooks", "install", cwd=repo)
    assert result.returncode == 0, result
    assert "kept as pre-commit.pre-gitst and runs first" in result.stdout
    assert (hooks_dir / "pre-commit.pre-gitst").read_bytes() == FOREIGN
    assert states(repo)["pre-commit"] == "chained"

    (repo / "BLOCK").write_text("")
    head = git("rev-parse", "HEAD", cwd=repo)
    blocked = run(["git", "commit", "--allow-empty", "-m", "blocked"], cwd=repo)
    assert blocked.returncode != 0, blocked
    assert git("rev-parse", "HEAD", cwd=repo) == head
    assert foreign_runs(repo) == 1

    (repo / "BLOCK").unlink()
    ok = run(["git", "commit", "--allow-empty", "-m", "passes"], cwd=repo)
    assert ok.returncode == 0, ok
    assert foreign_runs(repo) == 2

    removed = st("hooks", "uninstall", cwd=repo)
    assert removed.returncode == 0, removed
    assert "put back your hook" in removed.stdout
    after = snapshot(hooks_dir)
    assert after["pre-commit"][:2] == before[:2]  # same bytes, same mode
    assert after["pre-commit"][3] == before[3]  # the very same file (renamed back)
    assert not any(name in after for name in HOOKS[1:])
    assert "pre-commit.pre-gitst" not in after
    assert git("config", "--get-regexp", "^merge\\.", cwd=repo, check=False) == ""
    assert "stays" in removed.stdout  # the committed attribute line is left, and it says so


def test_uninstall_of_one_hook_keeps_the_rest(repo):
    assert st("hooks", "install", cwd=repo).returncode == 0
    result = st("hooks", "uninstall", "--hook", "pre-push", cwd=repo)
    assert result.returncode == 0, result
    assert states(repo) == {name: ("missing" if name == "pre-push" else "ours") for name in HOOKS}
    assert git("config", "merge.gitst-plan.driver", cwd=repo)  # the driver stays with the other hooks


def test_install_one_hook_only(repo):
    result = st("hooks", "install", "--hook", "pre-push", "--no-merge-driver", cwd=repo)
    assert result.returncode == 0, result
    assert states(repo) == {name: ("ours" if name == "pre-push" else "missing") for name in HOOKS}
    assert not (repo / ".gitattributes").exists()
    assert git("config", "--get-regexp", "^merge\\.", cwd=repo, check=False) == ""


def test_install_refuses_and_writes_nothing_when_it_cannot_keep_a_foreign_hook(repo):
    hooks_dir = repo / ".git" / "hooks"
    write_foreign(hooks_dir / "pre-push")
    write_foreign(hooks_dir / "pre-push.pre-gitst", b"#!/bin/sh\nexit 0\n")
    before = snapshot(hooks_dir)
    result = st("hooks", "install", cwd=repo)
    assert result.returncode == 2, result
    assert "pre-push" in result.stderr and "nothing was installed" in result.stderr
    assert "fix:" in result.stderr
    assert snapshot(hooks_dir) == before
    assert not (repo / ".gitattributes").exists()


def test_an_outdated_shim_is_updated(repo):
    assert st("hooks", "install", "--hook", "pre-commit", cwd=repo).returncode == 0
    shim = repo / ".git" / "hooks" / "pre-commit"
    shim.write_bytes(shim.read_bytes().replace(b"exec git-st", b"exec  git-st"))
    assert status_json(repo)["hooks"][0]["outdated"] is True
    assert "outdated" in st("hooks", "status", cwd=repo).stdout
    result = st("hooks", "install", "--hook", "pre-commit", cwd=repo)
    assert "pre-commit: updated" in result.stdout
    assert shim.read_bytes() == (SHIMS / "pre-commit").read_bytes()


def test_status_names_foreign_and_missing(repo):
    write_foreign(repo / ".git" / "hooks" / "post-merge")
    data = status_json(repo)
    assert {h["name"]: h["state"] for h in data["hooks"]} == {
        n: ("foreign" if n == "post-merge" else "missing") for n in HOOKS
    }
    assert data["hooks_dir"] == str(repo / ".git" / "hooks")
    assert data["merge_driver"]["driver"] is None and data["merge_driver"]["plan_attribute"] is False
    text = st("hooks", "status", cwd=repo).stdout
    assert "post-merge     foreign" in text and "pre-commit     missing" in text


def test_absolute_core_hooks_path_gets_the_hooks(repo, tmp_path):
    shared = tmp_path / "shared-hooks"
    git("config", "core.hooksPath", str(shared), cwd=repo)
    write_foreign(shared / "pre-commit")
    result = st("hooks", "install", cwd=repo)
    assert result.returncode == 0, result
    assert f"hooks dir: {shared} (core.hooksPath = {shared})" in result.stdout
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert (shared / "pre-commit").read_bytes() == (SHIMS / "pre-commit").read_bytes()
    (repo / "BLOCK").write_text("")
    assert run(["git", "commit", "--allow-empty", "-m", "x"], cwd=repo).returncode != 0
    assert foreign_runs(repo) == 1  # git ran the hook from core.hooksPath, which ran the kept one


def test_relative_core_hooks_path_from_a_linked_worktree(repo, tmp_path):
    git("config", "core.hooksPath", "githooks", cwd=repo)
    wt = tmp_path / "wt"
    git("worktree", "add", "-q", "-b", "side", str(wt), cwd=repo)
    result = st("hooks", "install", cwd=wt / ".")
    assert result.returncode == 0, result
    # git takes a relative core.hooksPath from the top of the worktree that runs the hook
    assert (wt / "githooks" / "pre-commit").read_bytes() == (SHIMS / "pre-commit").read_bytes()
    assert not (repo / "githooks").exists()
    assert "core.hooksPath is relative" in result.stderr
    sub = wt / "deep" / "dir"
    sub.mkdir(parents=True)
    assert status_json(sub)["hooks_dir"] == str(wt / "githooks")


def test_one_install_from_a_linked_worktree_serves_every_worktree(repo, tmp_path):
    wt = tmp_path / "wt"
    git("worktree", "add", "-q", "-b", "side", str(wt), cwd=repo)
    result = st("hooks", "install", "--no-merge-driver", cwd=wt)
    assert result.returncode == 0, result
    assert (repo / ".git" / "hooks" / "pre-commit").exists()  # the common dir's hooks
    assert states(repo) == states(wt) == dict.fromkeys(HOOKS, "ours")


def test_no_path_of_a_venv_or_worktree_is_baked_into_a_shim(repo, tmp_path):
    wt = tmp_path / "wt"
    git("worktree", "add", "-q", "-b", "side", str(wt), cwd=repo)
    assert st("hooks", "install", cwd=wt).returncode == 0
    for name in HOOKS:
        content = (repo / ".git" / "hooks" / name).read_bytes()
        for baked in (sys.prefix, sys.executable, str(REPO_ROOT), str(repo), str(wt), str(tmp_path)):
            assert baked.encode() not in content, (name, baked)
        # the only command it runs is found on PATH at run time
        assert f"hook={name}\n".encode() in content and b'exec git-st hook "$hook" "$@"' in content


def test_shipped_shims_differ_only_in_their_own_settings():
    def generic(name: str) -> list[bytes]:
        return [
            line
            for line in (SHIMS / name).read_bytes().replace(name.encode(), b"HOOK").splitlines()
            if not line.startswith((b"blocking=", b"stdin_data=", b"skip_own_add="))
        ]

    reference = generic("pre-commit")
    for name in HOOKS:
        assert generic(name) == reference, name
        assert os.access(SHIMS / name, os.X_OK)
    settings = {n: (SHIMS / n).read_text() for n in HOOKS}
    assert "blocking=yes" in settings["pre-commit"] and "blocking=yes" in settings["pre-push"]
    assert "stdin_data=yes" in settings["pre-push"] and "stdin_data=yes" in settings["post-rewrite"]
    assert "blocking=no" in settings["post-merge"] and "stdin_data=no" in settings["post-checkout"]
    assert [n for n in HOOKS if "skip_own_add=yes" in settings[n]] == ["post-checkout"]


def _path_without_git_st() -> str:
    dirs = [
        d
        for d in ("/usr/local/bin", "/usr/bin", "/bin")
        if os.path.isdir(d) and not os.path.exists(os.path.join(d, "git-st"))
    ]
    git_dir = os.path.dirname(shutil.which("git"))
    if git_dir not in dirs:
        assert not os.path.exists(os.path.join(git_dir, "git-st"))
        dirs.append(git_dir)
    return os.pathsep.join(dirs)


def test_without_git_st_the_hook_warns_and_git_goes_on_unless_required(repo):
    assert st("hooks", "install", "--hook", "pre-commit", cwd=repo).returncode == 0
    env = {"PATH": _path_without_git_st()}
    ok = run(["git", "commit", "--allow-empty", "-m", "no gitst"], cwd=repo, env=env)
    assert ok.returncode == 0, ok
    assert "git-st is not on PATH; skipping gitst's pre-commit hook" in ok.stderr

    git("config", "st.hooksRequired", "true", cwd=repo)
    refused = run(["git", "commit", "--allow-empty", "-m", "required"], cwd=repo, env=env)
    assert refused.returncode != 0, refused
    assert "st.hooksRequired is true" in refused.stderr
    assert git("log", "-1", "--format=%s", cwd=repo) == "no gitst"


def test_stdin_reaches_both_the_kept_hook_and_ours(repo, tmp_path):
    """pre-push gets its ref lines on stdin; the kept hook and gitst's each see all of them."""
    hooks_dir = repo / ".git" / "hooks"
    seen = tmp_path / "seen"
    write_foreign(hooks_dir / "pre-push", f"#!/bin/sh\ncat > {seen}\n".encode(), 0o755)
    assert st("hooks", "install", "--hook", "pre-push", cwd=repo).returncode == 0
    remote = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(remote), cwd=tmp_path)
    git("remote", "add", "origin", str(remote), cwd=repo)
    pushed = run(["git", "push", "-q", "origin", "main"], cwd=repo)
    assert pushed.returncode == 0, pushed
    assert seen.read_text().startswith("refs/heads/main ")
    assert git("rev-parse", "main", cwd=remote) == git("rev-parse", "HEAD", cwd=repo)


@pytest.mark.parametrize("hook", ["post-merge", "post-checkout"])
def test_a_failing_kept_post_hook_does_not_stop_ours(repo, hook):
    hooks_dir = repo / ".git" / "hooks"
    write_foreign(hooks_dir / hook, b"#!/bin/sh\nexit 3\n", 0o755)
    assert st("hooks", "install", "--hook", hook, "--no-merge-driver", cwd=repo).returncode == 0
    script = hooks_dir / hook
    args = ["0"] if hook == "post-merge" else ["0" * 40, git("rev-parse", "HEAD", cwd=repo), "1"]
    result = run([str(script), *args], cwd=repo, env={"PATH": _path_without_git_st()})
    assert result.returncode == 3, result  # its status is what the shim reports...
    assert f"skipping gitst's {hook} hook" in result.stderr  # ...after going on to gitst's part


def test_the_post_checkout_shim_starts_no_gitst_inside_gitsts_own_worktree_add(repo, tmp_path):
    """gitst's own `git worktree add` (every `next`, `worktree add`) registers the worktree
    itself: the shim returns before starting an interpreter for nothing. A hand-made
    `git worktree add` still runs the hook and is registered."""
    from tests.support import session_env

    assert st("hooks", "install", cwd=repo).returncode == 0
    log = tmp_path / "git-st.log"
    bindir = tmp_path / "logging-bin"
    bindir.mkdir()
    real = shutil.which("git-st")
    logging = bindir / "git-st"
    logging.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    logging.chmod(0o755)
    env = {**session_env("A"), "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    own = run(["git-st", "worktree", "add", "15"], cwd=repo, env=env)
    assert own.returncode == 0, own
    assert log.read_text().splitlines() == ["worktree add 15"]  # no `hook post-checkout` started
    hand = run(["git", "worktree", "add", "-b", "st/issue-16", str(tmp_path / "sixteen")], cwd=repo, env=env)
    assert hand.returncode == 0, hand
    assert any(line.startswith("hook post-checkout ") for line in log.read_text().splitlines())
    assert "registered worktree" in hand.stderr
    assert (repo / "state" / "active-worktrees" / "16.json").is_file()
