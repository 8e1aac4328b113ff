"""`share_reads`: a worktree gitst made reads its git config from what was read where the
command runs — no `git config --list` of its own — only when the two cannot differ: no
per-worktree config file turned on, no conditional include, not inside a nested repository."""

from __future__ import annotations

import pytest

from gitst.git import config, runner
from tests.support import git, init_repo


@pytest.fixture
def two(tmp_path):
    main = init_repo(tmp_path / "main")
    git("config", "st.probe", "main-value", cwd=main)
    git("worktree", "add", "-q", "-b", "side", str(tmp_path / "side"), cwd=main)
    (tmp_path / "side" / ".step").mkdir()
    config.cache_reads(True)
    yield main, tmp_path / "side"
    config.cache_reads(False)


@pytest.fixture
def listed(monkeypatch):
    """The directories gitst ran `git config --list` in."""
    seen: list[str] = []
    launch = runner._launch

    def counting(argv, *args, **kwargs):
        if "--list" in argv:
            seen.append(argv[2] if argv[1] == "-C" else "")
        return launch(argv, *args, **kwargs)

    monkeypatch.setattr(runner, "_launch", counting)
    return seen


def test_a_worktree_of_the_same_config_reads_none_of_its_own(two, listed):
    main, side = two
    assert config.get("st.probe", main) == "main-value"
    config.share_reads(side, main)
    assert config.get("st.probe", side / ".step") == "main-value"
    assert config.get("st.probe", side) == "main-value"
    assert listed == [str(main)]


@pytest.mark.parametrize(
    "setting",
    [("extensions.worktreeConfig", "true"), ("includeIf.onbranch:side.path", "side.config")],
)
def test_a_config_that_may_differ_is_read_there(two, listed, setting):
    main, side = two
    git("config", *setting, cwd=main)
    if setting[0] == "extensions.worktreeConfig":
        git("config", "--worktree", "st.probe", "side-value", cwd=side)
    else:
        (main / ".git" / "side.config").write_text("[st]\n\tprobe = side-value\n")
    assert config.get("st.probe", main) == "main-value"
    config.share_reads(side, main)
    assert config.get("st.probe", side / ".step") == "side-value"
    assert len(listed) == 2


def test_a_nested_repository_reads_its_own(two, listed):
    main, side = two
    nested = init_repo(side / "vendor" / "lib")
    git("config", "st.probe", "nested-value", cwd=nested)
    config.get("st.probe", main)
    config.share_reads(side, main)
    assert config.get("st.probe", nested) == "nested-value"
    assert len(listed) == 2
