"""Every setting: environment, then git config, then the default; a bad value is refused
naming where it came from."""

from __future__ import annotations

import pytest

from gitst import settings
from gitst.core.errors import UsageError
from tests.support import git


def test_environment_beats_git_config_beats_the_default(repo, monkeypatch):
    assert settings.get("checkpoint_interval", repo) == 50
    git("config", "st.checkpointInterval", "7", cwd=repo)
    assert settings.get("checkpoint_interval", repo) == 7
    monkeypatch.setenv("ST_CHECKPOINT_INTERVAL", "3")
    assert settings.get("checkpoint_interval", repo) == 3
    monkeypatch.setenv("ST_CHECKPOINT_INTERVAL", "  ")  # blank is unset
    assert settings.get("checkpoint_interval", repo) == 7


@pytest.mark.parametrize(
    ("name", "env", "raw", "message"),
    [
        (
            "checkpoint_interval",
            "ST_CHECKPOINT_INTERVAL",
            "0",
            "invalid ST_CHECKPOINT_INTERVAL '0'; expected an integer > 0",
        ),
        ("lock_ttl", "ST_LOCK_TTL", "soon", "ST_LOCK_TTL must be a number of seconds, got 'soon'"),
        ("lock_ttl", "ST_LOCK_TTL", "0", "ST_LOCK_TTL must be a positive number of seconds, got '0'"),
        ("lock_ttl", "ST_LOCK_TTL", "inf", "ST_LOCK_TTL must be a finite number of seconds, got 'inf'"),
        ("lock_timeout", "ST_LOCK_TIMEOUT", "-1", "ST_LOCK_TIMEOUT must be 0 or more seconds, got '-1'"),
        ("gh_timeout", "ST_GH_TIMEOUT", "nan", "ST_GH_TIMEOUT must be a finite number of seconds, got 'nan'"),
        ("remote_timeout", "ST_REMOTE_TIMEOUT", "0", "ST_REMOTE_TIMEOUT must be a positive number of seconds, got '0'"),
        ("land_mode", "ST_LAND_MODE", "merge", "ST_LAND_MODE must be one of push, pr, got 'merge'"),
        ("land_pr_merge", "ST_LAND_PR_MERGE", "later", "ST_LAND_PR_MERGE must be one of auto, now, none, got 'later'"),
        (
            "remote",
            "ST_REMOTE",
            "--upload-pack=touch x",
            (
                "ST_REMOTE '--upload-pack=touch x' is not a remote name: a remote never starts with '-' "
                "(git would read it as an option)"
            ),
        ),
    ],
)
def test_a_bad_environment_value_is_refused(repo, monkeypatch, name, env, raw, message):
    monkeypatch.setenv(env, raw)
    with pytest.raises(UsageError) as caught:
        settings.get(name, repo)
    assert caught.value.message == message


def test_a_bad_git_config_value_names_the_key(repo):
    git("config", "st.autoRepair", "perhaps", cwd=repo)
    with pytest.raises(UsageError, match=r"git config st\.autoRepair must be true or false"):
        settings.get("auto_repair", repo)
    git("config", "st.autoRepair", "yes", cwd=repo)
    assert settings.get("auto_repair", repo) is True
    git("config", "st.autoRepair", "off", cwd=repo)
    assert settings.get("auto_repair", repo) is False
    git("config", "--unset", "st.autoRepair", cwd=repo)
    with (repo / ".git" / "config").open("a") as config:
        config.write("[st]\n\tautoRepair\n")  # a key without a value: git reads it as true
    assert settings.get("auto_repair", repo) is True


def test_a_choice_is_read_in_any_case_and_defaults_to_its_first_spelling(repo):
    assert (settings.get("land_mode", repo), settings.get("land_pr_merge", repo)) == ("push", "auto")
    git("config", "st.land.prMerge", "NOW", cwd=repo)
    git("config", "st.land.prMethod", "Squash", cwd=repo)
    assert (settings.get("land_pr_merge", repo), settings.get("land_pr_method", repo)) == ("now", "squash")
    git("config", "st.land.mode", "fork", cwd=repo)
    with pytest.raises(UsageError, match=r"git config st\.land\.mode must be one of push, pr, got 'fork'"):
        settings.get("land_mode", repo)


def test_multi_valued_settings(repo):
    assert settings.get_all("worktree_copy", repo) == []
    git("config", "--add", "st.worktree.copy", ".env*", cwd=repo)
    git("config", "--add", "st.worktree.copy", "secrets/*", cwd=repo)
    assert settings.get_all("worktree_copy", repo) == [".env*", "secrets/*"]


def test_every_setting_is_documented_somewhere():
    from tests.support import REPO_ROOT

    docs = "".join(p.read_text() for p in (REPO_ROOT / "docs").glob("*.md")) + (REPO_ROOT / "README.md").read_text()
    missing = [s.env or s.git for s in settings.SETTINGS.values() if (s.env or s.git) not in docs]
    assert missing == []


def test_a_scoped_git_key_beats_the_global_one_and_the_environment_beats_both(repo, monkeypatch):
    assert settings.scoped_key("st.circuit.threshold", "api.ollama.com") == "st.circuit.api.ollama.com.threshold"
    assert settings.int_setting("circuit_threshold", repo, scope="codex") == 5  # the default
    git("config", "st.circuit.threshold", "4", cwd=repo)
    git("config", "st.circuit.codex.threshold", "2", cwd=repo)
    assert settings.int_setting("circuit_threshold", repo, scope="codex") == 2
    assert settings.int_setting("circuit_threshold", repo, scope="gemini") == 4
    assert settings.int_setting("circuit_threshold", repo) == 4  # unscoped: the global key only
    monkeypatch.setenv("ST_CIRCUIT_THRESHOLD", "9")
    assert settings.int_setting("circuit_threshold", repo, scope="codex") == 9
    monkeypatch.delenv("ST_CIRCUIT_THRESHOLD")
    git("config", "st.circuit.codex.cooldown", "0", cwd=repo)
    with pytest.raises(UsageError, match=r"git config st\.circuit\.codex\.cooldown must be a positive number"):
        settings.float_setting("circuit_cooldown", repo, scope="codex")
