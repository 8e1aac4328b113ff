"""Every setting gitst reads, in one table: environment, then git config, then the default.

A bad value is rejected (exit 2, naming where it came from), never ignored. What each
setting means is documented where it is used (docs/*.md); ``git st`` reads nothing from
the environment or git config that is not in :data:`SETTINGS`, except the identities of
the acting session (``ST_SESSION_ID`` and friends, :mod:`gitst.sessions.identity`) and the
PR cascade's own inputs (``ST_PR_NUMBER``/``ST_PR_ISSUE``, :mod:`gitst.pipeline.cascade`).

Cheap to import: git is asked only when a setting has a git key and its variable is unset.
"""

from __future__ import annotations

import os

from gitst.core.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "MAX_SECONDS",
    "SETTINGS",
    "Setting",
    "bool_setting",
    "boolean",
    "choice",
    "float_setting",
    "get",
    "get_all",
    "int_setting",
    "lock_timeout",
    "lock_ttl",
    "not_zero",
    "optional_str_setting",
    "parse_seconds",
    "port_range",
    "positive_int",
    "positive_seconds",
    "present",
    "remote_name",
    "remote_timeout",
    "require_utf8",
    "scoped_key",
    "str_setting",
    "text",
    "worktree_ports",
]


# --- parsers: (raw text, where it came from) -> value; a bad value raises UsageError --------


# The most seconds any setting or option may say (about 31 years): timestamps stay within
# what every clock and JSON reader handles, and a TTL or timeout of 1e308 is refused, not a crash.
MAX_SECONDS = 1_000_000_000


def parse_seconds(raw: str, source: str, *, allow_zero: bool = True) -> float:
    """A finite number of seconds up to :data:`MAX_SECONDS` (``0`` allowed unless
    ``allow_zero`` is False)."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise UsageError(f"{source} must be a number of seconds, got {raw!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise UsageError(f"{source} must be a finite number of seconds, got {raw!r}")
    if value > MAX_SECONDS:
        raise UsageError(
            f"{source} must be at most {MAX_SECONDS} seconds (about 31 years), got {raw!r}",
            fix=f"set {source} to a number of seconds up to {MAX_SECONDS} (the default is fine for most uses)",
        )
    if value < 0 or (value == 0 and not allow_zero):
        raise UsageError(
            f"{source} must be {'0 or more' if allow_zero else 'a positive number of'} seconds, got {raw!r}"
        )
    return value


def positive_seconds(raw: str, source: str) -> float:
    return parse_seconds(raw, source, allow_zero=False)


def positive_int(raw: str, source: str, *, maximum: int = 2**53 - 1) -> int:
    """An integer > 0 and at most ``maximum`` (2^53 - 1, the JSON interop limit)."""
    try:
        value = int(raw)
    except (TypeError, ValueError):
        value = 0
    if value <= 0:
        raise UsageError(f"invalid {source} {raw!r}; expected an integer > 0")
    if value > maximum:
        raise UsageError(
            f"invalid {source} {raw!r}; expected an integer > 0 and at most {maximum}",
            fix=f"set {source} to a number from 1 to {maximum}",
        )
    return value


def boolean(raw: str, source: str) -> bool:
    """A boolean as git spells it (git itself normalizes a git config value first, so a key
    written without a value counts as true): true/yes/on/1 or false/no/off/0, any case."""
    lowered = raw.strip().lower()
    if lowered in ("true", "yes", "on", "1"):
        return True
    if lowered in ("false", "no", "off", "0"):
        return False
    raise UsageError(f"{source} must be true or false, got {raw!r}")


def present(raw: str, source: str) -> bool:
    """Any non-blank value means yes (the NO_COLOR convention)."""
    return True


def not_zero(raw: str, source: str) -> bool:
    """Anything but ``0`` means yes (the CLICOLOR_FORCE convention)."""
    return raw != "0"


def text(raw: str, source: str) -> str:
    return raw


def choice(*values: str) -> Callable[[str, str], str]:
    """A parser of one of ``values`` (any case; the first is the default's spelling)."""

    def parse(raw: str, source: str) -> str:
        lowered = raw.strip().lower()
        if lowered not in values:
            raise UsageError(f"{source} must be one of {', '.join(values)}, got {raw!r}")
        return lowered

    return parse


def remote_name(raw: str, source: str) -> str:
    """A remote's name or URL; one starting with ``-`` is refused (git would take it for an
    option: ``--upload-pack=CMD``)."""
    from gitst.git.remote import check_remote_name  # lazy: git.remote is off every fast path

    return check_remote_name(raw, source)


PortRange = tuple[int, int, int]  # (first port, last port, ports per block)


def port_range(raw: str, source: str) -> PortRange | None:
    """``FIRST-LAST/BLOCK`` (``3100-3999/10``: blocks of 10 ports from 3100 to 3999), or
    ``off`` (also ``none``, ``false``, ``no``, ``0``) for no ports at all."""
    value = raw.strip()
    if value.lower() in ("off", "none", "false", "no", "0"):
        return None
    import re  # lazy: the hook fast path loads only os (docs/architecture.md)

    match = re.fullmatch(r"([0-9]{1,5})\s*-\s*([0-9]{1,5})\s*/\s*([0-9]{1,5})", value)
    if match:
        first, last, block = (int(group) for group in match.groups())
        if 1 <= first <= last <= 65535 and 1 <= block <= last - first + 1:
            return first, last, block
    raise UsageError(
        f"{source} must be FIRST-LAST/BLOCK (e.g. 3100-3999/10, ports 1-65535, a block no bigger "
        f"than the range) or off, got {raw!r}"
    )


def require_utf8(raw: str, source: str, *, fix: str | None = None) -> str:
    """``raw`` when it is UTF-8 text; bytes that are not (which Python hands over as lone
    surrogates) are refused, exit 2: every value ends up in UTF-8 JSON or a message."""
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        shown = raw.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
        raise UsageError(f"{source} ({shown}) is not valid UTF-8", fix=fix or f"set {source} to UTF-8 text") from None
    return raw


class Setting:
    """One setting: its environment variable, its git config key, its default and parser."""

    __slots__ = ("default", "doc", "env", "git", "name", "parse")

    def __init__(
        self,
        name: str,
        *,
        env: str | None = None,
        git: str | None = None,
        default: object = None,
        parse: Callable[[str, str], object] = text,
        doc: str = "",
    ):
        self.name, self.env, self.git, self.default, self.parse, self.doc = name, env, git, default, parse, doc


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        Setting(
            "checkpoint_interval",
            env="ST_CHECKPOINT_INTERVAL",
            git="st.checkpointInterval",
            default=50,
            parse=positive_int,
            doc="events between two checkpoints of a plan (docs/plan.md)",
        ),
        Setting(
            "lock_timeout",
            env="ST_LOCK_TIMEOUT",
            default=30.0,
            parse=parse_seconds,
            doc="seconds a writer waits for a busy lock sidecar before exit 3",
        ),
        Setting(
            "lock_ttl",
            env="ST_LOCK_TTL",
            git="st.lockTtl",
            default=1800.0,
            parse=positive_seconds,
            doc="seconds a TTL lock or claim lives without a heartbeat (docs/parallel.md)",
        ),
        Setting(
            "state_dir",
            env="ST_STATE_DIR",
            git="st.stateDir",
            default=None,
            doc="the runtime state dir (default state/ at the main worktree's root)",
        ),
        Setting(
            "gh_timeout",
            env="ST_GH_TIMEOUT",
            default=30.0,
            parse=positive_seconds,
            doc="seconds one gh call may take (docs/pipeline.md)",
        ),
        Setting(
            "comment_author", env="ST_COMMENT_AUTHOR", default=None, doc="author of plan comments (default: the actor)"
        ),
        Setting(
            "worktree_branch",
            git="st.worktree.branch",
            default="st/issue-{issue}",
            doc="branch template of an issue's worktree",
        ),
        Setting(
            "worktree_path",
            git="st.worktree.path",
            default="../{repo}.worktrees/issue-{issue}",
            doc="path template of an issue's worktree, relative to the main worktree",
        ),
        Setting(
            "worktree_copy",
            git="st.worktree.copy",
            default=(),
            doc="untracked files copied into a new worktree (multi-valued globs)",
        ),
        Setting(
            "worktree_ports",
            env="ST_WORKTREE_PORTS",
            git="st.worktree.ports",
            default=(3100, 3999, 10),
            parse=port_range,
            doc="the port blocks `worktree add` hands out (FIRST-LAST/BLOCK, or off; docs/parallel.md)",
        ),
        Setting(
            "auto_repair",
            git="st.autoRepair",
            default=False,
            parse=boolean,
            doc="post-merge/post-rewrite seal a concatenated plan instead of only reporting it",
        ),
        Setting(
            "circuit_threshold",
            env="ST_CIRCUIT_THRESHOLD",
            git="st.circuit.threshold",
            default=5,
            parse=positive_int,
            doc="consecutive failures that open a service's circuit breaker (docs/store.md); "
            "per service: st.circuit.<service>.threshold",
        ),
        Setting(
            "circuit_cooldown",
            env="ST_CIRCUIT_COOLDOWN",
            git="st.circuit.cooldown",
            default=60.0,
            parse=positive_seconds,
            doc="seconds an open circuit waits before it lets one trial call through (docs/store.md); "
            "per service: st.circuit.<service>.cooldown",
        ),
        Setting(
            "circuit_trial_timeout",
            env="ST_CIRCUIT_TRIAL_TIMEOUT",
            git="st.circuit.trialTimeout",
            default=300.0,
            parse=positive_seconds,
            doc="seconds a half-open trial call may stay unreported before another caller may take it "
            "(docs/store.md); per service: st.circuit.<service>.trialTimeout",
        ),
        Setting(
            "sdlc_state",
            env="ST_SDLC_STATE",
            git="st.sdlcState",
            default=None,
            doc="the SDLC state.json `git st sdlc` writes (default state.json at the top of the current worktree)",
        ),
        Setting(
            "update_plan",
            env="ST_UPDATE_PLAN",
            default=True,
            parse=boolean,
            doc="plan writes print the `update_plan: {...}` line (0 turns it off; docs/plan.md)",
        ),
        Setting("no_color", env="NO_COLOR", default=False, parse=present, doc="no colour in human output"),
        Setting(
            "clicolor_force",
            env="CLICOLOR_FORCE",
            default=False,
            parse=not_zero,
            doc="colour even when the output is not a terminal (not with NO_COLOR)",
        ),
        Setting(
            "remote",
            env="ST_REMOTE",
            git="st.remote",
            default=None,
            parse=remote_name,
            doc="the git remote claims go through (refs/st/claims/*; docs/parallel.md)",
        ),
        Setting(
            "remote_timeout",
            env="ST_REMOTE_TIMEOUT",
            git="st.remoteTimeout",
            default=30.0,
            parse=positive_seconds,
            doc="seconds one git call to a remote (fetch, push) may take before git and all it started "
            "are killed and the command exits 4 (docs/parallel.md)",
        ),
        Setting(
            "ci_install",
            env="ST_CI_INSTALL",
            git="st.ci.install",
            default=None,
            doc="what `git st ci-template` has CI install gitst from: one pip requirement pinned to a commit "
            '(docs/hooks.md, "The CI template")',
        ),
        Setting(
            "sync_base",
            env="ST_SYNC_BASE",
            git="st.sync.base",
            default="main",
            doc='the branch `git st sync` merges into the current one (docs/hooks.md, "Keeping PRs mergeable")',
        ),
        Setting(
            "land_check",
            env="ST_LAND_CHECK",
            git="st.land.check",
            default=None,
            doc="the command `git st land` runs (with /bin/sh, in the worktree) before it pushes; "
            "a non-zero exit stops the landing (docs/agent-loop.md)",
        ),
        Setting(
            "land_ttl",
            env="ST_LAND_TTL",
            git="st.land.ttl",
            default=600.0,
            parse=positive_seconds,
            doc="seconds the merge slot of `git st land` is leased for (docs/agent-loop.md)",
        ),
        Setting(
            "land_mode",
            env="ST_LAND_MODE",
            git="st.land.mode",
            default="push",
            parse=choice("push", "pr"),
            doc="how `git st land` updates the base: push (a fast-forward push) or pr (a pull request "
            "through gh; docs/agent-loop.md)",
        ),
        Setting(
            "land_pr_merge",
            env="ST_LAND_PR_MERGE",
            git="st.land.prMerge",
            default="auto",
            parse=choice("auto", "now", "none"),
            doc="what `git st land --pr` does with the PR: auto (GitHub merges it when its checks pass), "
            "now (merge it at once), none (open it only; docs/agent-loop.md)",
        ),
        Setting(
            "land_pr_method",
            env="ST_LAND_PR_METHOD",
            git="st.land.prMethod",
            default="merge",
            parse=choice("merge", "squash", "rebase"),
            doc="how GitHub merges the PR of `git st land --pr`: merge, squash or rebase (docs/agent-loop.md)",
        ),
        Setting(
            "land_pr_hold",
            env="ST_LAND_PR_HOLD",
            git="st.land.prHold",
            default=14 * 86400.0,
            parse=positive_seconds,
            doc="seconds an open PR of `git st land --pr` holds its item on the remote after its session "
            "is gone: no other agent takes it meanwhile (docs/agent-loop.md)",
        ),
        Setting(
            "agent_push_interval",
            env="ST_AGENT_PUSH_INTERVAL",
            git="st.agent.pushInterval",
            default=60.0,
            parse=parse_seconds,
            doc="seconds between two heartbeats of the agent hooks that push to st.remote, per machine "
            '(docs/harness.md, "The rate limit")',
        ),
        Setting(
            "agent_keep_claims",
            env="ST_AGENT_KEEP_CLAIMS",
            git="st.agent.keepClaims",
            default=False,
            parse=boolean,
            doc="the agent hooks keep a session's claims when it stops (Stop, SessionEnd) instead of "
            "releasing them (docs/harness.md)",
        ),
        Setting(
            "agent_context_bytes",
            env="ST_AGENT_CONTEXT_BYTES",
            git="st.agent.contextBytes",
            default=4000,
            parse=positive_int,
            doc="the byte budget of the context SessionStart and `git st prime` print (docs/harness.md)",
        ),
        Setting(
            "resident",
            env="ST_RESIDENT",
            default=False,
            parse=boolean,
            doc="`git-st` hands its command to a resident process with gitst imported already, started on first "
            "use (docs/resident.md)",
        ),
        Setting(
            "resident_idle",
            env="ST_RESIDENT_IDLE",
            default=600.0,
            parse=positive_seconds,
            doc="seconds the resident process waits for a command before it exits (docs/resident.md)",
        ),
        Setting(
            "hooks_required",
            git="st.hooksRequired",
            default=False,
            parse=boolean,
            doc="the hook shims fail (instead of warn) when git-st is not on PATH",
        ),
    )
}


def scoped_key(key: str, scope: str) -> str:
    """The git config key of ``key`` for one ``scope``: ``st.circuit.threshold`` scoped to
    ``codex`` is ``st.circuit.codex.threshold`` (subsection ``circuit.codex``)."""
    head, _, last = key.rpartition(".")
    return f"{head}.{scope}.{last}"


def get(name: str, cwd: str | os.PathLike[str] | None = None, *, scope: str | None = None) -> object:
    """The value of setting ``name``: its environment variable (when set and not blank),
    else its git config key (when set), else its default.

    With ``scope`` (e.g. a service name), the scoped git config key (:func:`scoped_key`) is
    asked before the plain one: the environment still wins, a scoped key beats the global."""
    setting = SETTINGS[name]
    if setting.env:
        raw = os.environ.get(setting.env, "").strip()
        if raw:
            return setting.parse(require_utf8(raw, setting.env), setting.env)
    if not setting.git:
        return setting.default
    from gitst.git import config  # lazy: git.config is not in show's pinned import set (test_plan_fast.py)

    if scope and setting.parse is not boolean:
        key = scoped_key(setting.git, scope)
        value = config.get(key, cwd)
        if value is not None and value.strip():
            return setting.parse(require_utf8(value.strip(), f"git config {key}"), f"git config {key}")
    source = f"git config {setting.git}"
    if setting.parse is boolean:  # git's own reading: `[st] autoRepair` alone means true
        value = config.get(setting.git, cwd, type="bool")
        written = config.get(setting.git, cwd) if value is None else None
        if written is not None:
            return boolean(written, source)  # not a boolean: refused, naming the key
    else:
        value = config.get(setting.git, cwd)
    if value is not None and value.strip():
        return setting.parse(require_utf8(value.strip(), source), source)
    return setting.default


def get_all(name: str, cwd: str | os.PathLike[str] | None = None) -> list[str]:
    """Every value of a multi-valued git config setting (its default when unset)."""
    setting = SETTINGS[name]
    if setting.git:
        from gitst.git import config  # lazy: as in get()

        return config.get_all(setting.git, cwd)
    default = setting.default
    return [str(value) for value in default] if isinstance(default, (list, tuple)) else []


# --- typed accessors: the value of a setting whose parser gives that type -------------------


def _wrong_type(name: str, value: object, expected: str) -> TypeError:
    return TypeError(f"gitst bug: setting {name} is {type(value).__name__} {value!r}, not {expected}")


def int_setting(name: str, cwd: str | os.PathLike[str] | None = None, *, scope: str | None = None) -> int:
    """The value of integer setting ``name`` (see :func:`get`)."""
    value = get(name, cwd, scope=scope)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong_type(name, value, "an int")
    return value


def float_setting(name: str, cwd: str | os.PathLike[str] | None = None, *, scope: str | None = None) -> float:
    """The value of number setting ``name`` (see :func:`get`), as a float."""
    value = get(name, cwd, scope=scope)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _wrong_type(name, value, "a number")
    return float(value)


def str_setting(name: str, cwd: str | os.PathLike[str] | None = None) -> str:
    """The value of text setting ``name`` that has a default (see :func:`get`)."""
    value = get(name, cwd)
    if not isinstance(value, str):
        raise _wrong_type(name, value, "text")
    return value


def optional_str_setting(name: str, cwd: str | os.PathLike[str] | None = None) -> str | None:
    """The value of text setting ``name`` (see :func:`get`); None when unset and without a default."""
    value = get(name, cwd)
    if value is not None and not isinstance(value, str):
        raise _wrong_type(name, value, "text")
    return value


def bool_setting(name: str, cwd: str | os.PathLike[str] | None = None) -> bool:
    """The value of boolean setting ``name`` (see :func:`get`)."""
    value = get(name, cwd)
    if not isinstance(value, bool):
        raise _wrong_type(name, value, "a boolean")
    return value


def lock_timeout() -> float:
    """``ST_LOCK_TIMEOUT``: how long a writer waits for a lock sidecar."""
    return float_setting("lock_timeout")


def worktree_ports(cwd: str | os.PathLike[str] | None = None) -> PortRange | None:
    """``ST_WORKTREE_PORTS``, else ``git config st.worktree.ports``, else 3100-3999/10; None when off."""
    value = get("worktree_ports", cwd)
    if value is None:
        return None
    if not (isinstance(value, tuple) and len(value) == 3 and all(isinstance(v, int) for v in value)):
        raise _wrong_type("worktree_ports", value, "a port range")
    return value


def remote_timeout(cwd: str | os.PathLike[str] | None = None) -> float:
    """``ST_REMOTE_TIMEOUT``, else ``git config st.remoteTimeout``, else 30 seconds."""
    return float_setting("remote_timeout", cwd)


def lock_ttl(cwd: str | os.PathLike[str] | None = None) -> float:
    """``ST_LOCK_TTL``, else ``git config st.lockTtl``, else 1800 seconds."""
    return float_setting("lock_ttl", cwd)
