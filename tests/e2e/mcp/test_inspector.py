"""`git st mcp` driven by the MCP Inspector's CLI mode (npm `@modelcontextprotocol/inspector
--cli`): a client written by the protocol's maintainers, in another language. Skips only when
`npx` is absent (.ci/run installs node and npm in CI). The first run downloads the package
into npm's cache (~2 min; the user's ~/.npm, NPM_CACHE); later runs take seconds."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.support import git, init_repo

INSPECTOR = "@modelcontextprotocol/inspector@2"
# npm's cache of the user running the tests (read before a test's own HOME is set, as
# tests/e2e/test_install.py keeps pip's): in the test's fresh HOME every run downloaded and
# installed the Inspector again (this test: 21 -> 6 s of CPU)
NPM_CACHE = os.path.join(os.environ.get("HOME", ""), ".npm")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("npx") is None, reason="npx (node, npm) is not installed"),
]


def inspect_(repo, *args: str) -> subprocess.Popen:
    """One Inspector CLI call on `git st mcp` in ``repo``, started (:func:`answer` reads it)."""
    return subprocess.Popen(
        ["npx", "-y", INSPECTOR, "--cli", "git", "st", "mcp", *args],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        # the cached package without asking the registry again (~15 s a call, not ~60 s, loaded box)
        env={**os.environ, "npm_config_prefer_offline": "true", "npm_config_cache": NPM_CACHE},
    )


def answer(proc: subprocess.Popen) -> dict:
    """The JSON answer of an Inspector call (exit 0)."""
    stdout, stderr = proc.communicate(timeout=900)  # a first run fetches the package: a hang's deadline
    assert proc.returncode == 0, (stdout, stderr)
    return json.loads(stdout)


def test_inspector_lists_and_calls_the_tools(tmp_path):
    assert not NPM_CACHE.startswith(os.environ["HOME"])  # the user's cache, not this test's new HOME
    repo = init_repo(tmp_path / "repo")
    git("st", "init", "-q", cwd=repo)
    # one after the other: two npx at once may race in npm's cache (the first run installs into it)
    listed = answer(inspect_(repo, "--method", "tools/list"))
    assert {t["name"] for t in listed["tools"]} == {
        "next", "heartbeat", "release", "reserve", "show", "set_status", "add", "status"
    }  # fmt: skip
    added = answer(inspect_(repo, "--method", "tools/call", "--tool-name", "add", "--tool-arg", "step=x"))
    assert added.get("isError") is not True, added
    assert added["structuredContent"]["item"]["id"] == "st-001"
    exported = subprocess.run(["git", "st", "export"], cwd=repo, capture_output=True, text=True, check=True,
                              timeout=300)  # fmt: skip
    assert [i["step"] for i in json.loads(exported.stdout)["items"]] == ["x"]
