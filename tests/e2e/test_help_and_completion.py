"""The front door for a newcomer: `git st help [CMD]`, a bare `git st`, hidden internal
commands, "did you mean", usage errors that point somewhere that works, and completion of
`git st <TAB>` / `gitst <TAB>` in a real bash with git's own completion loaded."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support import git_st, run, st

GIT_COMPLETION = next(
    (
        Path(p)
        for p in (
            "/usr/share/bash-completion/completions/git",
            "/usr/share/git-core/contrib/completion/git-completion.bash",
            "/usr/share/git/completion/git-completion.bash",
        )
        if Path(p).is_file()
    ),
    None,
)


def test_help_prints_the_listing_and_help_cmd_prints_the_command_help(repo):
    listing = git_st("help", cwd=repo)
    assert listing.returncode == 0, listing
    assert "Usage: git st [OPTIONS] [COMMAND]" in listing.stdout and "completion" in listing.stdout
    show = git_st("help", "show", cwd=repo)
    assert show.returncode == 0, show
    assert show.stdout == st("show", "-h", cwd=repo).stdout
    assert "Usage: git st show [OPTIONS] [ID]" in show.stdout and "--status" in show.stdout
    nested = git_st("help", "pipeline", "get", cwd=repo)
    assert nested.returncode == 0 and "Usage: git st pipeline get" in nested.stdout
    # gitst is the same program under its own name
    assert run(["gitst", "help", "show"], cwd=repo).stdout.startswith("Usage: gitst show")


def test_help_of_an_unknown_command_says_what_was_meant(repo):
    result = git_st("help", "shwo", cwd=repo)
    assert result.returncode == 2, result
    assert result.stderr == "error: no such command 'shwo' in `git st`\n  fix: did you mean `git st help show`?\n"
    nested = git_st("help", "pipeline", "gte", cwd=repo)
    assert nested.returncode == 2
    assert nested.stderr.endswith("  fix: did you mean `git st help pipeline get`?\n")


def test_bare_git_st_prints_usage_on_stderr_and_exits_1_like_git(repo):
    result = git_st(cwd=repo)
    assert result.returncode == 1, result
    assert result.stdout == ""
    assert result.stderr.startswith("Usage: git st [OPTIONS] [COMMAND]")
    assert "set-status" in result.stderr


def test_internal_commands_are_hidden_from_the_listing_but_still_work(repo):
    listing = st("--help", cwd=repo).stdout
    commands = {line.split()[0] for line in listing.splitlines() if line.startswith("  ") and line.split()}
    assert "hook" not in commands and "merge-driver" not in commands
    assert {"show", "help", "completion", "hooks"} <= commands
    assert st("hook", "--help", cwd=repo).returncode == 0
    assert "Usage: git st merge-driver" in st("merge-driver", "--help", cwd=repo).stdout


def test_mistyped_commands_get_a_did_you_mean(repo):
    top = git_st("shwo", cwd=repo)
    assert top.returncode == 2
    assert "error: No such command 'shwo'." in top.stderr
    assert "  fix: did you mean `git st show`?" in top.stderr
    sub = git_st("pipeline", "gte", "1", "x", cwd=repo)
    assert sub.returncode == 2
    assert "  fix: did you mean `git st pipeline get`?" in sub.stderr
    assert sub.stderr.count("Did you mean") + sub.stderr.count("did you mean") == 1  # said once
    nothing = git_st("zzzzzz", cwd=repo)
    assert nothing.returncode == 2 and "  fix: see `git st help`" in nothing.stderr


def test_usage_errors_point_to_git_st_help_not_to_a_manual_that_may_be_missing(repo):
    result = git_st("show", "--fiel", "x", cwd=repo)
    assert result.returncode == 2
    assert "Try 'git st" not in result.stderr
    assert result.stderr.splitlines()[0] == "Usage: git st show [OPTIONS] [ID]"
    assert "error: No such option '--fiel'" in result.stderr
    assert "  fix: see `git st help show`" in result.stderr
    assert "Traceback" not in result.stderr


def _complete(words: list[str], tmp_path: Path, script: str) -> list[str]:
    """COMPREPLY for the command line ``words`` (cursor at the end of the last word), in a
    real bash that loaded git's completion and ours, as an interactive shell would."""
    assert GIT_COMPLETION is not None, "git's bash completion is part of Debian's git package"
    (tmp_path / "gitst.bash").write_text(script)
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    driver = f"""
source {GIT_COMPLETION}
source {tmp_path / "gitst.bash"}
COMP_WORDS=({quoted})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
func=$(complete -p "${{COMP_WORDS[0]}}" | sed 's/.*-F \\([^ ]*\\).*/\\1/')
"$func" "${{COMP_WORDS[0]}}" "${{COMP_WORDS[-1]}}" "${{COMP_WORDS[-2]}}"
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    result = run(["bash", "--norc", "--noprofile", "-c", driver], cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result
    return [line for line in result.stdout.splitlines() if line]


def test_bash_completes_git_st_through_git_completion_and_gitst_directly(repo, tmp_path):
    script = git_st("completion", "bash", cwd=repo)
    assert script.returncode == 0, script
    assert "_git_st()" in script.stdout
    # `git st sh<TAB>`: git's completion calls _git_st; a finished word gets its space
    assert _complete(["git", "st", "sh"], tmp_path, script.stdout) == ["show "]
    assert _complete(["git", "st", "pipeline", ""], tmp_path, script.stdout) == [
        "get ",
        "list ",
        "set ",
        "show ",
        "unset ",
    ]
    assert _complete(["git", "st", "show", "--fo"], tmp_path, script.stdout) == ["--format "]
    formats = _complete(["git", "st", "show", "--format", ""], tmp_path, script.stdout)
    assert {"markdown ", "mermaid ", "dot ", "json ", "table "} == set(formats)
    # git's global options before `st` (`git -C DIR st ...`)
    assert _complete(["git", "-C", str(repo), "st", "set-st"], tmp_path, script.stdout) == ["set-status "]
    # internal commands are not offered
    assert "hook " not in _complete(["git", "st", "ho"], tmp_path, script.stdout)
    # the gitst and git-st commands
    assert _complete(["gitst", "pip"], tmp_path, script.stdout) == ["pipeline"]
    assert _complete(["git-st", "comp"], tmp_path, script.stdout) == ["completion"]


def test_zsh_and_fish_scripts_hook_into_each_shells_git_completion(repo, tmp_path):
    zsh = git_st("completion", "zsh", cwd=repo)
    assert zsh.returncode == 0 and zsh.stdout.startswith("#compdef gitst git-st")
    assert "_git-st()" in zsh.stdout  # zsh's _git calls _git-<command> for commands it does not know
    fish = git_st("completion", "fish", cwd=repo)
    assert fish.returncode == 0
    assert "complete --no-files --command git --condition '__fish_seen_subcommand_from st'" in fish.stdout
    for shell, text in (("zsh", zsh.stdout), ("fish", fish.stdout)):
        if shutil.which(shell):  # a syntax check where the shell is installed
            (tmp_path / f"c.{shell}").write_text(text)
            checked = run([shell, "-n", str(tmp_path / f"c.{shell}")], cwd=tmp_path)
            assert checked.returncode == 0, checked
    if shutil.which("fish"):  # fish completes non-interactively: `complete -C LINE`
        probe = f"source {tmp_path / 'c.fish'}; complete -C 'git st sh'; complete -C 'gitst pipeline g'"
        done = run(["fish", "--no-config", "-c", probe], cwd=repo)
        assert done.returncode == 0, done
        assert [line.split("\t")[0] for line in done.stdout.splitlines()] == ["show", "get"]
    bad = git_st("completion", "tcsh", cwd=repo)
    assert bad.returncode == 2 and "tcsh" in bad.stderr


def test_bash_completes_ids_and_statuses_of_the_plan_commands(repo, tmp_path):
    """`set-status <TAB>` offers the plan's ids, `set-status ID <TAB>` the statuses."""
    script = git_st("completion", "bash", cwd=repo).stdout
    plan = tmp_path / "plans" / "p.jsonl"  # outside a work tree: no lock sidecar rule needed
    plan.parent.mkdir()
    for step in ("one", "two"):
        assert git_st("add", "--file", str(plan), "--step", step, cwd=plan.parent).returncode == 0
    head = ["git", "st", "set-status", "--file", str(plan)]
    assert _complete([*head, ""], tmp_path, script) == ["st-001 ", "st-002 "]
    assert _complete([*head, "st-001", "in_"], tmp_path, script) == ["in_progress "]
    statuses = _complete([*head, "st-001", ""], tmp_path, script)
    assert statuses[:6] == ["pending ", "in_progress ", "completed ", "blocked ", "deferred ", "canceled "]
    assert "done " in statuses  # the aliases too
    assert _complete(["git", "st", "show", "--file", str(plan), "st-00"], tmp_path, script) == ["st-001 ", "st-002 "]
    assert _complete(["git", "st", "add", "--status", "compl"], tmp_path, script) == ["completed ", "complete "]
