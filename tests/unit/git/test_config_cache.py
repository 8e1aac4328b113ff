"""`git config` read once per command: every answer from the cached `config --list -z` is the
one git itself gives to `config --get`, `--type=bool --get`, `--get-all` and `--get-regexp`."""

from __future__ import annotations

import pytest

from gitst.git import config
from tests.support import git

CONFIG = """\
[st]
\tstateDir = runtime
\tautoRepair
\tflagOff = off
\tflagNum = 2
\tflagBad = maybe
\tempty =
[st "circuit.Codex"]
\tthreshold = 4
[st "worktree"]
\tcopy = .env
\tcopy = .env.local
[remote "origin"]
\turl = /nowhere
\tfetch = +refs/heads/*:refs/remotes/origin/*
\tfetch = +refs/pull/*/head:refs/remotes/origin/pr/*
"""

KEYS = [
    "st.stateDir",
    "ST.STATEDIR",
    "st.autoRepair",
    "st.flagOff",
    "st.flagNum",
    "st.flagBad",
    "st.empty",
    "st.circuit.Codex.threshold",
    "st.circuit.codex.threshold",
    "St.circuit.Codex.Threshold",
    "st.worktree.copy",
    "st.nothing",
    "nosection",
]


@pytest.fixture
def configured(repo):
    with (repo / ".git" / "config").open("a") as handle:
        handle.write(CONFIG)
    yield repo
    config.cache_reads(False)


def _answers(repo) -> list:
    out = []
    for key in KEYS:
        out += [config.get(key, repo), config.get(key, repo, type="bool"), config.get_all(key, repo)]
    return [*out, config.get_regexp(r"^remote\..*\.fetch$", repo), config.get_regexp(r"^st\.worktree\.", repo)]


def test_cached_answers_are_gits_answers_with_one_git_process(configured, monkeypatch):
    asked = _answers(configured)
    calls = []
    real = config.run
    monkeypatch.setattr(config, "run", lambda args, *a, **k: calls.append(args) or real(args, *a, **k))
    config.cache_reads()
    assert _answers(configured) == asked
    assert calls == [["config", "--list", "-z"]]


def test_a_write_drops_the_cache(configured):
    config.cache_reads()
    assert config.get("st.stateDir", configured) == "runtime"
    config.set_local("st.stateDir", "elsewhere", configured)
    assert config.get("st.stateDir", configured) == "elsewhere"
    git("config", "st.stateDir", "outside", cwd=configured)  # not through gitst: kept until forgotten
    assert config.get("st.stateDir", configured) == "elsewhere"
    config.forget()
    assert config.get("st.stateDir", configured) == "outside"
