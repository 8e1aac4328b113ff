"""Entry point of ``git st`` / ``gitst`` / ``python -m gitst``.

Start-up is lazy: this module imports nothing heavy at load time. ``git st hook …`` is
dispatched before click is imported (a hook with nothing to check must cost about the
interpreter's own start-up), and so is a plan command written in its plain forms
(:mod:`gitst.cli.plan_fast`); every other command's module is imported only when that
command runs. The command table below is the whole command surface: name, the module and
attribute that implement it, its section and one line of help for the listing.
"""

from __future__ import annotations

import importlib
import os
import sys

from gitst import __version__
from gitst.core.errors import ENVIRONMENT, GitstError

# The rest is imported where it is used, each marked ``# lazy:``: click and the command modules
# only when a command that needs them runs, so that `git st hook …` and the plan fast path
# never load them (their import sets are pinned: tests/unit/cli/test_plan_fast.py,
# tests/e2e/hooks/test_precommit.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import click
    from click.shell_completion import CompletionItem

# name: (module, attribute, section, short help)
COMMANDS: dict[str, tuple[str, str, str, str]] = {
    # st plan engine (seed 000)
    "init": ("gitst.cli.plan", "init", "plan", "Start a plan file (and ignore its lock sidecar)."),
    "add": ("gitst.cli.plan", "add", "plan", "Add or update an item."),
    "set-status": ("gitst.cli.plan", "set_status", "plan", "Change an item's status."),
    "set-deps": ("gitst.cli.plan", "set_deps", "plan", "Replace an item's dependencies."),
    "set-notes": ("gitst.cli.plan", "set_notes", "plan", "Replace an item's notes."),
    "add-comment": ("gitst.cli.plan", "add_comment", "plan", "Append a comment to an item."),
    "remove": ("gitst.cli.plan", "remove", "plan", "Remove an item."),
    "import-plan": ("gitst.cli.plan", "import_plan", "plan", "Import items from a JSON file."),
    "show": ("gitst.cli.plan", "show", "plan", "Show the plan."),
    "ready": ("gitst.cli.plan", "ready", "plan", "List pending items whose deps are resolved."),
    "blocked": ("gitst.cli.plan", "blocked", "plan", "List blocked items and items waiting on deps."),
    "doctor": ("gitst.cli.plan", "doctor", "plan", "Check every rule of the plan file; repair seq."),
    "emit-update-plan": ("gitst.cli.plan", "emit_update_plan", "plan", "Print the plan as update_plan JSON."),
    "export": ("gitst.cli.plan", "export", "plan", "Export the materialized items as JSON."),
    # validation (seeds 000-003)
    "validate": ("gitst.cli.validate", "validate", "check", "Validate state files of every known kind."),
    "schema": ("gitst.cli.validate", "schema", "check", "List or print the JSON Schemas."),
    "aide": ("gitst.cli.validate", "aide", "check", "Replay an aide entity-graph stream."),
    # git hooks
    "hooks": ("gitst.cli.hooks", "hooks", "hooks", "Install, uninstall or inspect gitst's git hooks."),
    "hook": ("gitst.cli.hooks", "hook", "hooks", "Run one hook (called by the hook shims)."),
    "merge-driver": ("gitst.cli.hooks", "merge_driver", "hooks", "Merge driver for plan files (%O %A %B %P)."),
    "sync": ("gitst.cli.sync", "sync", "hooks", "Merge the base branch in with the plan driver: PRs stay mergeable."),
    "ci-template": ("gitst.cli.sync", "ci_template", "hooks", "Print a CI workflow that syncs open PRs."),
    # locks, sessions and worktrees (seed 001)
    "lock": ("gitst.cli.lock", "lock", "parallel", "Acquire, renew, release and list TTL locks."),
    "claim": ("gitst.cli.session", "claim", "parallel", "Claim an issue for this session."),
    "check-issue": ("gitst.cli.session", "check_issue", "parallel", "Exit 0 if an issue is free or ours, 1 if not."),
    "release": ("gitst.cli.session", "release", "parallel", "Release this session's claim."),
    "heartbeat": ("gitst.cli.session", "heartbeat", "parallel", "Refresh this session's record and locks."),
    "sessions": ("gitst.cli.session", "sessions", "parallel", "List sessions: live, stale, dead."),
    "whoami": ("gitst.cli.whoami", "whoami", "parallel", "Show the acting session and why it was chosen."),
    "status": ("gitst.cli.status", "status", "parallel", "Sessions, their claims, worktrees and PRs at a glance."),
    "board": ("gitst.cli.board", "board", "parallel", "Live read-only board in the browser: plan, claims, worktrees."),
    "gc": ("gitst.cli.gc", "gc", "parallel", "Clean the state dir: expired leases, dead sessions, temp files."),
    "worktree": ("gitst.cli.worktree", "worktree", "parallel", "One issue, one worktree, one live owner."),
    "trust": ("gitst.cli.worktree", "trust", "parallel", "Trust the committed worktree setup config."),
    # the agent loop: next -> work -> land (docs/agent-loop.md)
    "next": ("gitst.cli.loop", "next_", "loop", "Take the next ready item: claim it, open its worktree."),
    "land": ("gitst.cli.loop", "land", "loop", "Land this worktree's item on the base through the merge slot."),
    "mcp": ("gitst.cli.mcp", "mcp", "loop", "Serve the agent loop to an MCP client over stdio (gitst[mcp])."),
    "reserve": ("gitst.cli.reserve", "reserve", "loop", "Reserve paths for this session; check, list, release."),
    # PRs and pipeline state (seed 001)
    "pr": ("gitst.cli.pr", "pr", "pipeline", "Resolve which PR closes an issue."),
    "pipeline": ("gitst.cli.pipeline", "pipeline", "pipeline", "Read and write state/pipeline/<N>.json."),
    # the rest of the state store (seed 001) and the SDLC state.json writer (seed 003)
    "deliberation": ("gitst.cli.deliberation", "deliberation", "runs", "Record and read agent invocations."),
    "snapshot": ("gitst.cli.snapshot", "snapshot", "runs", "Save a session's context; load another's."),
    "circuit": ("gitst.cli.circuit", "circuit", "runs", "Circuit breakers for external services."),
    "sdlc": ("gitst.cli.sdlc", "sdlc", "runs", "Write the SDLC state.json through its rules."),
    # agent harnesses: Claude Code and Codex hooks (docs/harness.md)
    "setup": ("gitst.cli.agent", "setup", "agents", "Write (or --remove) the hooks of Claude Code or Codex here."),
    "hook-agent": ("gitst.cli.agent", "hook_agent", "agents", "Run one agent-harness hook (the harness calls it)."),
    "prime": ("gitst.cli.agent", "prime", "agents", "Print the session context an agent starts with."),
    "import-update-plan": (
        "gitst.cli.agent",
        "import_update_plan",
        "agents",
        "Mirror an update_plan JSON (Codex) into the plan, ids kept.",
    ),
    # help and shell completion
    "help": ("gitst.cli.help", "help_", "shell", "Show the help of gitst or of a command."),
    "completion": ("gitst.cli.help", "completion", "shell", "Print the shell completion script (bash, zsh, fish)."),
    "resident": (
        "gitst.cli.resident.command",
        "resident",
        "shell",
        "Show or stop the resident process (ST_RESIDENT=1).",
    ),
}

# Internal commands: run by git (hook shims, the merge driver), not by people. They work
# and have their own --help, but the command listing and completion leave them out.
HIDDEN = frozenset({"hook", "merge-driver", "hook-agent"})

# Commands that write (plan, claims, worktrees, state): each warns once, on stderr, when the
# repository's .gitattributes asks for the plan merge driver but this clone has none
# (docs/hooks.md, "A clone without the driver"). None: every subcommand of that group.
# Not `sync`: it passes the driver to the merges it runs itself, configured or not.
MUTATING: dict[str, frozenset[str] | None] = {
    **dict.fromkeys(
        ["init", "add", "set-status", "set-deps", "set-notes", "add-comment", "remove", "import-plan"], None
    ),
    **dict.fromkeys(["claim", "release", "heartbeat", "trust", "next", "land"], None),
    "worktree": frozenset({"add", "remove", "clean"}),
    "lock": frozenset({"acquire", "renew", "release"}),
    "pipeline": frozenset({"set", "unset"}),
}

# The environment variable click's completion protocol is driven by (completion.py).
COMPLETE_VAR = "_GITST_COMPLETE"

SECTIONS = [
    ("plan", "Plan (the st plan file, .step/st-plan.jsonl)"),
    ("check", "Validation"),
    ("hooks", "Git hooks"),
    ("parallel", "Parallel agents: locks, sessions, worktrees"),
    ("loop", "The agent loop: next, land"),
    ("pipeline", "PRs and pipeline state"),
    ("runs", "Agent runs: deliberations, session snapshots, circuit breakers, SDLC state"),
    ("agents", "Agent harnesses: Claude Code and Codex hooks"),
    ("shell", "Help and shell completion"),
]


def prog_name(argv0: str | None = None) -> str:
    name = os.path.basename(argv0 or sys.argv[0] or "git-st")
    return "git st" if name == "git-st" else "gitst"


def build_cli() -> click.Group:
    """The click group; imported and built only when a non-hook command runs."""
    import click  # lazy: the command table is read without click (hook and plan fast paths)

    class LazyGroup(click.Group):
        def list_commands(self, ctx: click.Context) -> list[str]:
            return list(COMMANDS)

        def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
            entry = COMMANDS.get(name)
            if entry is None:
                return None
            module = importlib.import_module(entry[0])
            command: click.Command = getattr(module, entry[1])
            return command

        def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
            for section, title in SECTIONS:
                rows = [
                    (name, entry[3]) for name, entry in COMMANDS.items() if entry[2] == section and name not in HIDDEN
                ]
                if rows:
                    with formatter.section(title):
                        formatter.write_dl(rows)

        def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
            # From the table: completing a command name imports no command module.
            from click.shell_completion import CompletionItem  # lazy: completion only

            return [
                CompletionItem(name, help=entry[3])
                for name, entry in COMMANDS.items()
                if name.startswith(incomplete) and name not in HIDDEN
            ]

    @click.group(
        cls=LazyGroup,
        context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
        invoke_without_command=True,
    )
    @click.version_option(__version__, "--version", "-V", prog_name="gitst", message="%(prog)s %(version)s")
    @click.pass_context
    def cli(ctx: click.Context) -> int | None:
        """git-native plan engine, state validation, hooks and worktree claims.

        Run `git st help COMMAND` (or `git st COMMAND -h`) for a command's options. Exit
        codes: 0 ok, 1 problems found, 2 bad usage or rejected input, 3 conflict (lock busy,
        issue claimed), 4 environment (not a git repo, git or gh missing).

        Claims belong to a session: ST_SESSION_ID (or CLAUDE_SESSION_ID, CODEX_THREAD_ID),
        alive as long as the agent process above the command's shell, or your terminal's
        shell; ST_SESSION_PID names that process instead. `git st whoami` shows both.
        """
        if ctx.invoked_subcommand is None:
            # git's convention: the command alone prints its usage on stderr and exits 1.
            click.echo(ctx.get_help(), err=True)
            return 1
        return None

    return cli


# Commands whose arguments come from git, not from a person: paths git passes may be any bytes.
_RAW_ARGUMENTS = ("hook", "merge-driver", "hook-agent")


def _require_utf8(args: list[str]) -> None:
    """Arguments end up in UTF-8 JSON and in messages: bytes that are not UTF-8 (which Python
    hands over as lone surrogates) are refused, exit 2, before anything runs."""
    from gitst.settings import require_utf8  # lazy: not on the hook path (git config, subprocess)

    for position, arg in enumerate(args, 1):
        require_utf8(arg, f"argument {position}", fix="pass text and paths as UTF-8 (gitst stores them in UTF-8 JSON)")


def _fail(message: str, code: int) -> int:
    """``message`` on stderr (control characters escaped, docs/conventions.md; prefixes
    coloured on a terminal) and ``code``."""
    from gitst.cli.output import sanitize, write  # lazy: the error path only (re)

    write(_coloured(sanitize(message)), err=True)
    return code


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        return _dispatch(args)
    except GitstError as exc:
        return _fail(exc.render(), exc.exit_code)
    except MemoryError:
        return _fail("error: out of memory", ENVIRONMENT)
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            return _broken_pipe()
        # The environment's fault (a full disk, EIO, a vanished directory) that no caller
        # turned into a more precise message: still a message and exit 4, never a traceback.
        where = f": {exc.filename}" if exc.filename else ""
        return _fail(f"error: {exc.strerror or exc}{where}", ENVIRONMENT)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


def _dispatch(args: list[str]) -> int:
    """Run the command: a hook and a plain plan command line without click, the rest with it."""
    if args[:1] == ["hook"] and not ({"-h", "--help"} & set(args)):
        # Fast path: decides without click whether the hook has anything to do.
        from gitst.hooks.entry import run_hook  # lazy: the hook path only

        return run_hook(args[1:])
    if args[:1] == ["hook-agent"] and not ({"-h", "--help"} & set(args)):
        # Fast path: an agent hook's no-op costs about the interpreter's start-up (docs/harness.md).
        from gitst.harness.entry import run as run_agent_hook  # lazy: the agent-hook path only

        return run_agent_hook(args[1:])
    if args[:1] and args[0] not in _RAW_ARGUMENTS:
        _require_utf8(args)
    _link_manual()
    try:
        return _run_command(args)
    finally:
        _cache_config(False)


def _run_command(args: list[str]) -> int:
    """The command after the checks every one gets: the merge driver's and a plan command's
    plain command line without click, the rest with it."""
    _warn_missing_driver(args)
    if args[:1] == ["merge-driver"]:
        # git runs it inside every merge of a plan (each `land`): its plain command line runs without click.
        from gitst.cli.merge_fast import run as run_merge_driver  # lazy: the merge driver only (pinned import set)

        _cache_config()
        code = run_merge_driver(args)
        if code is not None:
            return code
    if args and COMMANDS.get(args[0], ("",))[0] == "gitst.cli.plan":
        # Plan commands run without click when their command line is a plain one.
        from gitst.cli.plan_fast import run  # lazy: plan commands only (pinned import sets)

        code = run(args)
        if code is not None:
            return code
    return _run_click(args)


class _ConfigCache:
    """Whether this command answers its git config reads from one ``git config --list``."""

    on = False


def _cache_config(on: bool = True) -> None:
    """Turn :func:`gitst.git.config.cache_reads` on for the rest of the command — once: the
    listing the missing-driver warning read is the command's own — or off again at its end."""
    if on == _ConfigCache.on:
        return
    from gitst.git import config  # lazy: not on the hook or the `show` fast path (pinned import sets)

    config.cache_reads(on)
    _ConfigCache.on = on


def _broken_pipe() -> int:
    """The reader went away (e.g. `| head`); don't print a traceback about it."""
    try:  # noqa: SIM105 - contextlib.suppress would be one more import on every start
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stays open: the interpreter flushes stdout at exit
    except OSError:
        pass
    return 0


def _warn_missing_driver(args: list[str]) -> None:
    """The beads failure, said once per writing command: ``.gitattributes`` names the plan
    driver, this clone does not define it, so git would merge plans as plain text."""
    if not args or {"-h", "--help"} & set(args) or args[0] not in MUTATING:
        return
    subcommands = MUTATING[args[0]]
    if subcommands is not None and (len(args) < 2 or args[1] not in subcommands):
        return
    from gitst.plan.driver import missing_driver_warning  # lazy: writing commands only (no gitst.plan on the hook path)

    _cache_config()  # its config read is the command's own listing (one git process for both)
    try:
        warning = missing_driver_warning()
    except GitstError:
        return  # not in a repository: the command itself says so
    if warning:
        print(warning, file=sys.stderr)


def _coloured(rendered: str) -> str:
    """An error report with its ``error:`` and ``fix:`` prefixes coloured on a terminal."""
    from gitst.cli.output import colour_report  # lazy: the error path only (re)

    return colour_report(rendered, sys.stderr)


def _link_manual() -> None:
    """Put the manual where ``man`` looks when it is not there yet (``uv tool install``).

    ``git st --help`` runs ``man git-st``, and man looks beside each PATH entry ``DIR/bin``
    in ``DIR/share/man``. pip in a venv, pipx and install.sh put the page there; uv tool
    links only the commands into ``~/.local/bin`` and leaves the page in its venv. So when
    this process was started through a link in a ``bin`` directory that has no page beside
    it, and the venv it points into ships one, link it there (two stats when all is well).
    """
    argv0 = sys.argv[0] if sys.argv else ""
    if not (os.path.isabs(argv0) and os.path.islink(argv0)):
        return
    bindir = os.path.dirname(argv0)
    mandir = os.path.join(os.path.dirname(bindir), "share", "man", "man1")
    if os.path.basename(bindir) != "bin" or os.path.exists(os.path.join(mandir, "git-st.1")):
        return
    shipped = os.path.join(sys.prefix, "share", "man", "man1")
    if not os.path.isfile(os.path.join(shipped, "git-st.1")):
        return
    if not os.path.realpath(argv0).startswith(os.path.realpath(sys.prefix) + os.sep):
        return
    try:
        os.makedirs(mandir, exist_ok=True)
        for page in ("git-st.1", "gitst.1"):
            if not os.path.lexists(os.path.join(mandir, page)):
                os.symlink(os.path.join(shipped, page), os.path.join(mandir, page))
    except OSError:
        pass  # a read-only or foreign directory: `git st help` still works


def _suggest(exc: click.UsageError) -> str | None:
    """``did you mean …`` for a mistyped command name (git's and bd's "did you mean")."""
    import re  # lazy: git-st imports no re on its way to a command (docs/performance.md)

    import click  # lazy: loaded already (a usage error is click's); main.py imports no click at start-up

    from gitst.core.suggest import closest  # lazy: usage errors only

    match = re.match(r"No such command '(.+)'\.", exc.message)
    ctx = exc.ctx
    if match is None or ctx is None:
        return None
    typed = match.group(1)
    if ctx.parent is None:
        names = [name for name in COMMANDS if name not in HIDDEN]
    elif isinstance(ctx.command, click.Group):  # (a command is unknown only to a group)
        names = list(ctx.command.list_commands(ctx))
    else:
        return None
    close = closest(typed, names)
    if not close:
        return None
    path = ctx.command_path
    return "did you mean " + " or ".join(f"`{path} {name}`" for name in close) + "?"


def _usage_error(exc: click.UsageError) -> str:
    """A click usage error the gitst way: usage line, ``error:``, and a ``fix:`` that works
    everywhere (``git st help CMD``; click's own hint points at ``--help``, which needs man
    for the top-level command)."""
    lines = []
    ctx = exc.ctx
    if ctx is not None:
        lines.append(ctx.get_usage())
    message = exc.format_message()
    fix = _suggest(exc)
    if fix is not None:
        message = message.split(" Did you mean")[0]  # click's own hint, said once below
    lines.append(f"error: {message}")
    if fix is None:
        prog = prog_name()
        words = ctx.command_path.split()[len(prog.split()) :] if ctx is not None else []
        fix = "see `" + " ".join([prog, "help", *words]) + "`"
    lines.append(f"  fix: {fix}")
    return "\n".join(lines)


def _run_click(args: list[str]) -> int:
    import click  # lazy: the command table is read without click (hook and plan fast paths)

    cli = build_cli()
    _cache_config()  # one `git config --list` per directory for the whole command
    try:
        rv = cli.main(args=args, prog_name=prog_name(), standalone_mode=False, complete_var=COMPLETE_VAR)
    except click.UsageError as exc:
        return _fail(_usage_error(exc), exc.exit_code)
    except click.ClickException as exc:
        return _fail(f"error: {exc.format_message()}", exc.exit_code)
    except click.Abort:
        print("error: aborted", file=sys.stderr)
        return 130
    return rv if isinstance(rv, int) else 0


if __name__ == "__main__":
    raise SystemExit(main())
