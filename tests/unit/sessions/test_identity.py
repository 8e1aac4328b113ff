"""Which ancestor is the session: the rules of docs/claims.md, "Who is acting"."""

from __future__ import annotations

import pytest

from gitst.sessions.identity import classify, is_interactive_shell


@pytest.mark.parametrize(
    ("argv", "terminal", "interactive"),
    [
        (["-bash"], True, True),  # a terminal's login shell
        (["bash"], True, True),
        (["/bin/zsh", "-l"], True, True),
        (["bash", "--login", "-i"], True, True),
        (["bash", "--rcfile", "x.rc"], True, True),  # --rcfile takes a value, not a script
        (["bash", "-c", "git st claim 7"], True, False),  # a command, even on a terminal
        (["bash", "-lc", "git st claim 7"], True, False),
        (["bash", "-ic", "git st claim 7"], True, False),
        (["sh", "script.sh"], True, False),  # a script
        (["bash", "-s"], True, False),  # reads a pipe
        (["bash", "-i", "-s"], True, True),
        (["bash"], False, False),  # no terminal: a harness's persistent shell on pipes
        (["fish", "-c", "x"], True, False),
        (["bash", "-o", "vi"], True, True),
    ],
)
def test_interactive_shells(argv, terminal, interactive):
    assert is_interactive_shell(argv, terminal) is interactive


@pytest.mark.parametrize(
    ("name", "argv", "terminal", "parent", "verdict"),
    [
        ("git", None, False, "bash", "git"),
        ("git-st", None, False, "git", "git"),
        ("sh", ["sh", "-c", "git-st claim"], False, "git", "started-by-git"),  # an alias's shell
        ("bash", ["bash", "-c", "x; y"], False, "node", "shell"),
        ("bash", ["-bash"], True, "sshd", "interactive-shell"),
        ("env", None, False, "bash", "wrapper"),
        ("timeout", None, False, "bash", "wrapper"),
        ("codex-linux-san", None, False, "codex", "wrapper"),  # /proc truncates names to 15
        ("sshd", None, False, "systemd", "boundary"),
        ("node", None, False, "systemd", "agent"),
        ("claude", None, False, "zsh", "agent"),
        ("python3", None, False, "bash", "agent"),
        ("Runner.Worker", None, False, "Runner.Listener", "agent"),
    ],
)
def test_classify(name, argv, terminal, parent, verdict):
    assert classify(name, argv, terminal, parent) == verdict
