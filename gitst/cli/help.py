"""`git st help [COMMAND…]` and `git st completion SHELL`.

``help`` prints the same text as ``COMMAND -h``, so it works wherever gitst runs, with or
without a manual page (``git st --help`` is git's: it runs ``man git-st``). ``completion``
prints a script for bash, zsh or fish (gh's convention); the logic of what to complete is
click's completion protocol, run by the script through ``gitst`` (:mod:`gitst.cli.completion`).
"""

from __future__ import annotations

import click

from gitst.cli.completion import script
from gitst.cli.main import HIDDEN
from gitst.cli.output import write
from gitst.core.errors import UsageError
from gitst.core.suggest import closest

_CONTEXT = {"help_option_names": ["-h", "--help"]}


@click.command("help", context_settings=_CONTEXT)
@click.argument("words", nargs=-1, metavar="[COMMAND]...")
@click.pass_context
def help_(ctx: click.Context, words: tuple[str, ...]) -> int:
    """Show the help of gitst, or of COMMAND (`git st help pipeline get`).

    The same text as `git st COMMAND -h`; the manual (`man git-st`, `git st --help`) has
    every command on one page.
    """
    current = ctx.find_root()
    prog = current.command_path
    command: click.Command = current.command
    for index, word in enumerate(words):
        if not isinstance(command, click.Group):
            raise UsageError(f"`{current.command_path}` has no subcommands (got {word!r})")
        sub = command.get_command(current, word)
        if sub is None:
            names = [name for name in command.list_commands(current) if not _is_hidden(current, name)]
            close = closest(word, names)
            above = " ".join([prog, "help", *words[:index]])
            hint = " or ".join(f"`{above} {name}`" for name in close) if close else None
            raise UsageError(
                f"no such command {word!r} in `{current.command_path}`",
                fix=f"did you mean {hint}?" if hint else f"see `{above}`",
            )
        command = sub
        current = click.Context(command, info_name=word, parent=current)
    write(current.get_help())
    return 0


def _is_hidden(ctx: click.Context, name: str) -> bool:
    """An internal top-level command (``hook``, ``merge-driver``): never suggested."""
    return ctx.parent is None and name in HIDDEN


@click.command("completion", context_settings=_CONTEXT)
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> int:
    """Print the completion script for SHELL (completes `gitst …` and `git st …`).

    \b
      bash:  git st completion bash > ~/.local/share/bash-completion/completions/gitst
             (install.sh does this; or `source <(git st completion bash)` in ~/.bashrc)
      zsh:   git st completion zsh > "${fpath[1]}/_gitst"
      fish:  git st completion fish > ~/.config/fish/completions/gitst.fish
    """
    write(script(shell))
    return 0
