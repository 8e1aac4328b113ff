"""Render the manual page (roff) from the CLI itself, so it never drifts from --help.

``python -m gitst.cli.manpage [--prog NAME]`` prints it. The pages are committed as
``docs/man/git-st.1`` and ``docs/man/gitst.1`` (written by ``.ci/sync-package-data``, which
``tests/unit/test_package_data.py`` runs with ``--check``) and ship in the wheel as data files
in ``share/man/man1``, beside the venv's ``bin/``, where ``man`` finds them from PATH: that is
what ``git st --help`` (git runs ``man git-st``) needs. The page has no date, so the same
code always renders the same bytes.
"""

from __future__ import annotations

import argparse
import inspect
import sys

import click

from gitst import __version__
from gitst.cli.main import COMMANDS, SECTIONS, build_cli

# A word longer than this gets break points (``\:``) after its separators: otherwise a list of
# choices (``[st-plan|pipeline|…]``) or a URL wider than the terminal is a line troff "cannot
# adjust" and warns about on every `git st --help` (at 80 columns and below).
_LONG_WORD = 24
_BREAK_AFTER = "|/,="


def _breakable(word: str) -> str:
    if len(word) <= _LONG_WORD:
        return word
    return "".join(ch + "\\:" if ch in _BREAK_AFTER else ch for ch in word)


def _roff(text: str) -> str:
    lines = []
    for line in text.replace("\\", "\\e").splitlines():
        safe = "\\&" + line if line.startswith((".", "'")) else line  # not a roff request
        safe = " ".join(_breakable(word) for word in safe.split(" "))
        safe = safe.replace("-", "\\-")
        # roff input is ASCII: anything else is written as its Unicode escape (no preconv needed)
        lines.append("".join(ch if ord(ch) < 128 else f"\\[u{ord(ch):04X}]" for ch in safe))
    return "\n".join(lines)


def _command_help(cmd: click.Command, name: str, ctx_parent: click.Context, prog: str) -> list[str]:
    out = []
    ctx = click.Context(cmd, info_name=name, parent=ctx_parent)
    usage = " ".join(cmd.collect_usage_pieces(ctx))
    out.append(f".SS {_roff(ctx.command_path)} {_roff(usage)}")
    if cmd.help:
        out.append(_roff(inspect.cleandoc(cmd.help.split("\f")[0])))
    for param in cmd.get_params(ctx):
        record = param.get_help_record(ctx)
        if record:
            out.append(".TP")
            out.append(f"\\fB{_roff(record[0])}\\fR")
            out.append(_roff(record[1]))
    if isinstance(cmd, click.Group):
        for sub in cmd.list_commands(ctx):
            subcmd = cmd.get_command(ctx, sub)
            if subcmd is not None:
                out.extend(_command_help(subcmd, sub, ctx, prog))
    return out


def render(prog: str = "git st") -> str:
    cli = build_cli()
    root = click.Context(cli, info_name=prog)
    page = prog.replace(" ", "-").upper()
    out = [
        f'.TH {page} 1 "" "gitst {__version__}" "gitst manual"',
        # left-aligned, not justified: a line holding one long word (a list of choices, a URL)
        # broken at its separators has no space to stretch, and troff warns it "cannot adjust"
        ".ad l",
        ".SH NAME",
        f"{_roff(prog.replace(' ', '-'))} \\- git\\-native plan engine, state validation, hooks and worktree claims",
        ".SH SYNOPSIS",
        f"\\fB{_roff(prog)}\\fR \\fICOMMAND\\fR [\\fIOPTIONS\\fR]",
        ".SH DESCRIPTION",
        _roff(inspect.cleandoc(cli.help or "")),
    ]
    for section, title in SECTIONS:
        out.append(f".SH {_roff(title.upper())}")
        for name, entry in COMMANDS.items():
            if entry[2] != section:
                continue
            try:
                cmd = cli.get_command(root, name)
            except ImportError:
                cmd = None
            if cmd is None:
                out.append(f".SS {_roff(prog)} {_roff(name)}")
                out.append(_roff(entry[3]))
                continue
            out.extend(_command_help(cmd, name, root, prog))
    out += [
        ".SH EXIT STATUS",
        "0 ok; 1 a check found problems; 2 bad usage or rejected input (nothing written);",
        "3 conflict (lock busy, issue claimed by a live owner); 4 environment (not a git",
        "repository, git or gh missing).",
        ".SH ENVIRONMENT",
        "ST_CHECKPOINT_INTERVAL, ST_LOCK_TIMEOUT, ST_STATE_DIR, ST_SESSION_ID, ST_SESSION_PID,",
        "ST_ACTOR, ST_LOCK_TTL, ST_PR_NUMBER, ST_PR_ISSUE, ST_UPDATE_PLAN (0: plan writes print no",
        "update_plan line), NO_COLOR, CLICOLOR_FORCE. See the README and docs/ of gitst.",
        ".SH FILES",
        ".TP",
        "\\&.step/st\\-plan.jsonl",
        "the default plan file, with its lock sidecar .step/st\\-plan.jsonl.lock",
        ".TP",
        "state/",
        "the runtime state dir at the main worktree's root (git\\-ignored)",
    ]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--prog", default="git st")
    args = parser.parse_args(argv)
    sys.stdout.write(render(args.prog))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
