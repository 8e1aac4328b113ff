"""Per-issue pipeline state (seed 001): ``state/pipeline/<N>.json``.

On disk (the nested wrapper)::

    {"<N>": {"current_phase": "building", "pr_number": "42", ...},
     "lastActivity": "2026-04-10T13:06:54.627Z", "heartbeat_pid": 47281}

The issue's data sits under the numeric key; ``lastActivity`` and ``heartbeat_pid`` are
top-level siblings. Scalars are stored as strings ("42", "true"); readers coerce.

Reading: :func:`normalize` applies exactly the seed's coercion table (the typed view the
UI uses); :func:`public_view` is the JSON view of ``git st pipeline show`` (the table's
fields plus the other known fields typed, unknown fields under ``extra``).

Writing: :func:`set_field` / :func:`unset_field` read, change and write back under the
``<file>.lock`` sidecar with an atomic replace, keep the wrapper and every unknown field,
and refresh ``last_updated`` and ``lastActivity``. Decisions are in docs/pipeline.md.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gitst.core.diagnostics import JSON, READ, SCHEMA, Diagnostic
from gitst.core.errors import GitstError, ProblemsFound, UsageError
from gitst.core.jsonio import JSONDecodeError, atomic_write_json, dumps, loads
from gitst.core.safepaths import read_bytes
from gitst.core.suggest import closest
from gitst.core.values import value_class
from gitst.pipeline.check import KEY_COUNT, KEY_MISMATCH
from gitst.pipeline.coerce import js_parse_int, js_string
from gitst.statedir.paths import ensure_state_dir, ignore_if_tracked, refuse_tracked, state_dir, state_path
from gitst.statedir.records import locked

__all__ = [
    "PipelineFileError",
    "display_path",
    "get_field",
    "list_issue_files",
    "list_views",
    "load",
    "load_reporting",
    "normalize",
    "parse_issue",
    "pipeline_path",
    "pr_number_lookup",
    "public_view",
    "refuse_likely_typo",
    "set_field",
    "status_summary",
    "unset_field",
    "validate_field_name",
]

WRAPPER_FIELDS = ("lastActivity", "heartbeat_pid")
COUNT_FIELDS = ("plan_iterations", "review_fix_count", "qa_fix_count", "prompt_rewrite_count")
BOOLEAN_FIELDS = ("review_passed", "qa_passed")
TEXT_FIELDS = ("active_agent_kind", "complexity", "pipeline_run_id")
OBJECT_FIELDS = ("steps", "tokens")
COMPUTED_FIELDS = {
    "verdict": "verdict is computed from review_passed and qa_passed; set those instead",
    "branch": "branch is reserved in the normalized view and is never stored",
}
# Every inner field the view types; anything else on disk goes to the view's ``extra``.
KNOWN_FIELDS = (
    "current_phase",
    "active_agent",
    "issue_type",
    "pr_number",
    "started_at",
    "last_updated",
    *TEXT_FIELDS,
    *COUNT_FIELDS,
    *BOOLEAN_FIELDS,
    "sub_issues",
    *OBJECT_FIELDS,
)

_ISSUE_RE = re.compile(r"^#?([0-9]{1,18})$")
_FIELD_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_UINT_RE = re.compile(r"^[0-9]{1,18}$")


class PipelineFileError(ProblemsFound):
    """A pipeline file that cannot be read as the nested wrapper (exit 1)."""

    def __init__(self, path: Path, code: str, message: str, *, line: int | None = None, col: int | None = None):
        self.path = Path(path)
        self.code = code
        self.detail = message
        self.line = line
        self.col = col
        super().__init__(
            f"{self.location()}: {message}",
            fix="repair or remove the file (`git st validate` shows every problem in it)",
        )

    def location(self) -> str:
        loc = display_path(self.path)
        if self.line is not None:
            loc += f":{self.line}"
            if self.col is not None:
                loc += f":{self.col}"
        return loc

    def diagnostic(self) -> Diagnostic:
        return Diagnostic(display_path(self.path), self.line, self.code, self.detail, col=self.col)


def display_path(path: Path) -> str:
    """``path`` relative to the current directory when it lies below it, else absolute."""
    try:
        return os.path.relpath(path) if Path(path).resolve().is_relative_to(Path.cwd().resolve()) else str(path)
    except (OSError, ValueError):
        return str(path)


# --- issue numbers, paths and timestamps ------------------------------------------------


def parse_issue(value: str | int) -> str:
    """The canonical issue number (``"42"``) of ``42``, ``"42"``, ``"#42"`` or ``"042"``.

    Anything else is rejected (exit 2) before a path is built from it.
    """
    match = _ISSUE_RE.match(str(value).strip())
    if not match or int(match.group(1)) == 0:
        raise UsageError(f"invalid issue number {value!r}: expected a positive integer such as 42")
    return str(int(match.group(1)))


def pipeline_dir(cwd: str | os.PathLike[str] | None = None) -> Path:
    return state_dir(cwd) / "pipeline"


def pipeline_path(issue: str | int, cwd: str | os.PathLike[str] | None = None) -> Path:
    """``state/pipeline/<N>.json`` for a validated issue number (symlinks refused)."""
    return state_path("pipeline", f"{parse_issue(issue)}.json", cwd=cwd)


def now_timestamp() -> str:
    """UTC now as JavaScript's ``toISOString()`` writes it: ``2026-04-10T13:06:54.627Z``."""
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


# --- reading ----------------------------------------------------------------------------


@value_class
class PipelineFile:
    """A parsed pipeline file: the whole wrapper and the issue's inner object."""

    path: Path
    issue: str
    wrapper: dict[str, Any]
    key: str  # the numeric key the inner object sits under

    @property
    def inner(self) -> dict[str, Any]:
        return self.wrapper.setdefault(self.key, {})


def parse_wrapper(data: bytes, issue: str, path: Path) -> PipelineFile:
    """Parse a file's bytes into the wrapper; PipelineFileError when it is not one.

    The inner object is the one under the key ``<issue>``. A file without any numeric key
    (only bookkeeping) reads as an empty issue object. A file whose only numeric key is
    another issue's, or with several numeric keys, is refused: it is not this issue's file.
    Each refusal carries the code ``git st validate`` gives the same problem (``JSON``,
    ``SCHEMA``, ``PIPELINE_KEY_MISMATCH``, ``PIPELINE_KEY_COUNT``).
    """
    try:
        wrapper = loads(data)
    except JSONDecodeError as exc:
        code = getattr(exc, "code", JSON)
        if code != JSON:  # a limit every reader applies (nesting, integers): no position to show
            raise PipelineFileError(path, code, exc.msg) from None
        raise PipelineFileError(path, JSON, f"not valid JSON: {exc.msg}", line=exc.lineno, col=exc.colno) from None
    if not isinstance(wrapper, dict):
        raise PipelineFileError(
            path, SCHEMA, f"expected a JSON object (the nested wrapper), found {_json_type(wrapper)}"
        )
    numeric = [key for key in wrapper if key.isascii() and key.isdigit()]
    if issue in wrapper or not numeric:
        key = issue
    elif len(numeric) == 1:
        raise PipelineFileError(
            path, KEY_MISMATCH, f"holds issue {numeric[0]}'s data under key {numeric[0]!r}, not issue {issue}'s"
        )
    else:
        raise PipelineFileError(
            path, KEY_COUNT, f"has several numeric keys ({', '.join(numeric)}) and none is {issue!r}"
        )
    inner = wrapper.get(key, {})
    if not isinstance(inner, dict):
        raise PipelineFileError(
            path, SCHEMA, f"the issue data under key {key!r} must be an object, found {_json_type(inner)}"
        )
    return PipelineFile(path=path, issue=issue, wrapper=wrapper, key=key)


def _read(path: Path) -> bytes | None:
    """The file's bytes (None when missing), never through a link nor from a FIFO; a file
    git tracks is not runtime state (:func:`gitst.statedir.paths.ignore_if_tracked`): None."""
    if ignore_if_tracked(path):
        return None
    try:
        return read_bytes(path)
    except IsADirectoryError:
        raise PipelineFileError(path, READ, "is a directory, not a file") from None
    except OSError as exc:
        raise PipelineFileError(path, READ, f"cannot be read: {exc.strerror or exc}") from None


def load(issue: str | int, cwd: str | os.PathLike[str] | None = None) -> PipelineFile | None:
    """The pipeline file of ``issue``, or None when there is none (or git tracks it)."""
    canonical = parse_issue(issue)
    path = pipeline_path(canonical, cwd)
    data = _read(path)
    if data is None:
        return None
    return parse_wrapper(data, canonical, path)


def load_reporting(
    issue: str, path: Path | None = None, cwd: str | os.PathLike[str] | None = None
) -> PipelineFile | Diagnostic | None:
    """:func:`load` of ``issue`` for a reader of many issues: a file that cannot be read is its
    diagnostic (the wrapper's code, else ``READ``: a link in the state dir, an OS error), never
    an exception that stops the others. ``path``: the issue's file as listed, for the message."""
    shown = display_path(path) if path is not None else f"state/pipeline/{issue}.json"
    try:
        return load(issue, cwd)
    except PipelineFileError as exc:
        return exc.diagnostic()
    except GitstError as exc:  # e.g. a symlink in the state dir
        return Diagnostic(shown, None, READ, exc.message)
    except OSError as exc:
        return Diagnostic(shown, None, READ, exc.strerror or str(exc))


def list_views(
    *, internal: bool = False, cwd: str | os.PathLike[str] | None = None
) -> tuple[list[dict[str, Any]], list[Diagnostic]]:
    """``git st pipeline list``: the :func:`public_view` of every issue of ``state/pipeline/``,
    by issue number, and a diagnostic for each file that cannot be read (the others listed)."""
    views: list[dict[str, Any]] = []
    problems: list[Diagnostic] = []
    for issue, path in list_issue_files(cwd):
        loaded = load_reporting(issue, path, cwd)
        if isinstance(loaded, Diagnostic):
            problems.append(loaded)
        elif loaded is not None:
            views.append(public_view(loaded.issue, loaded.inner, loaded.wrapper, internal=internal))
    return views, problems


def list_issue_files(cwd: str | os.PathLike[str] | None = None) -> list[tuple[str, Path]]:
    """Every ``<digits>.json`` in ``state/pipeline/``, by issue number (other names skipped)."""
    directory = pipeline_dir(cwd)
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for name in names:
        stem, _, ext = name.partition(".")
        if ext == "json" and stem.isascii() and stem.isdigit() and int(stem) > 0 and stem == str(int(stem)):
            found.append((stem, directory / name))
    return sorted(found, key=lambda item: int(item[0]))


# --- the seed's coercion table ----------------------------------------------------------


def _or_default(value: Any, default: Any) -> Any:
    """JavaScript ``value || default`` for the table's defaults: missing, null and "" fall back.

    Numbers and booleans become their string form (the field is a string); objects and
    arrays are not a phase or a type, so they fall back too.
    """
    if value is None or value == "" or isinstance(value, (dict, list)):
        return default
    return value if isinstance(value, str) else js_string(value)


def _truth(value: Any) -> bool | None:
    """A stored boolean: "true"/true → True, "false"/false → False, anything else → None."""
    if _is_true(value):
        return True
    if _is_false(value):
        return False
    return None


def _is_true(value: Any) -> bool:
    # The seed stores "true"; a JSON true is the same value written by another encoder.
    return value is True or value == "true"


def _is_false(value: Any) -> bool:
    return value is False or value == "false"


def normalize(inner: dict[str, Any], wrapper: dict[str, Any] | None = None) -> dict[str, Any]:
    """The seed's normalized view, exactly its coercion table (all eight fields).

    | current_phase | default "unknown"                                     |
    | active_agent  | "" → null                                             |
    | issue_type    | default "feature"                                     |
    | pr_number     | parseInt(), NaN → null                                |
    | started_at    | passthrough (missing → null)                          |
    | last_updated  | last_updated, else the wrapper's lastActivity, else null |
    | verdict       | both passed "true" → PASS; either "false" → FAIL; else null |
    | branch        | null (reserved)                                       |
    """
    wrapper = wrapper or {}
    review, qa = inner.get("review_passed"), inner.get("qa_passed")
    if _is_true(review) and _is_true(qa):
        verdict = "PASS"
    elif _is_false(review) or _is_false(qa):
        verdict = "FAIL"
    else:
        verdict = None
    agent = inner.get("active_agent")
    pr_raw = inner.get("pr_number")
    return {
        "current_phase": _or_default(inner.get("current_phase"), "unknown"),
        "active_agent": None if agent is None or agent == "" else agent,
        "issue_type": _or_default(inner.get("issue_type"), "feature"),
        "pr_number": None if pr_raw is None else js_parse_int(pr_raw),
        "started_at": inner.get("started_at"),
        "last_updated": inner.get("last_updated") or wrapper.get("lastActivity") or None,
        "verdict": verdict,
        "branch": None,
    }


def _count(value: Any) -> int | None:
    return None if value is None else js_parse_int(value)


def public_view(
    issue: str, inner: dict[str, Any], wrapper: dict[str, Any], *, internal: bool = False
) -> dict[str, Any]:
    """The JSON view of one issue (docs/pipeline.md, "JSON view").

    The table's fields first, then the other known fields typed — counts as numbers
    (parseInt, NaN → null), booleans as booleans ("true"/"false", else null), text,
    ``sub_issues``/``steps``/``tokens`` as stored —, the wrapper's ``heartbeat_pid`` and
    ``last_activity``, and every unknown inner field unchanged under ``extra``. ``verdict``
    and ``branch`` only with ``internal``.
    """
    table = normalize(inner, wrapper)
    view: dict[str, Any] = {"issue": int(issue)}
    for name in ("current_phase", "active_agent", "issue_type", "pr_number", "started_at", "last_updated"):
        view[name] = table[name]
    for name in TEXT_FIELDS:
        view[name] = inner.get(name)
    for name in COUNT_FIELDS:
        view[name] = _count(inner.get(name))
    for name in BOOLEAN_FIELDS:
        view[name] = _truth(inner.get(name))
    view["sub_issues"] = inner.get("sub_issues")
    for name in OBJECT_FIELDS:
        view[name] = inner.get(name)
    view["heartbeat_pid"] = _count(wrapper.get("heartbeat_pid"))
    view["last_activity"] = wrapper.get("lastActivity")
    view["extra"] = {key: value for key, value in inner.items() if key not in KNOWN_FIELDS}
    if internal:
        view["verdict"] = table["verdict"]
        view["branch"] = table["branch"]
    return view


STATUS_FIELDS = ("current_phase", "active_agent", "issue_type", "pr_number", "last_updated", "verdict")


def status_summary(issues: list[str] | None = None, cwd: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """The pipeline status of ``issues`` (default: every issue of ``state/pipeline/``), by issue
    number: ``{"issue": N, <the seed's normalized fields>}``, or ``{"issue": N, "error": …}``
    for an issue whose file cannot be read or does not exist (named with its diagnostic code)."""
    if issues is None:
        wanted = [issue for issue, _ in list_issue_files(cwd)]
    else:
        wanted = sorted({parse_issue(issue) for issue in issues}, key=int)
    summary: list[dict[str, Any]] = []
    for issue in wanted:
        loaded = load_reporting(issue, cwd=cwd)
        if isinstance(loaded, Diagnostic):
            summary.append({"issue": int(issue), "error": f"{loaded.code}: {loaded.message}"})
            continue
        if loaded is None:
            summary.append({"issue": int(issue), "error": "no pipeline state (no state/pipeline file)"})
            continue
        table = normalize(loaded.inner, loaded.wrapper)
        for name in ("active_agent", "last_updated"):  # typed as text in the summary whatever the file holds
            value = table[name]
            if value is not None and not isinstance(value, str):
                table[name] = _show(value) if isinstance(value, (dict, list)) else js_string(value)
        summary.append({"issue": int(issue), **{name: table[name] for name in STATUS_FIELDS}})
    return summary


def pr_number_lookup(issue: str | int, cwd: str | os.PathLike[str] | None = None) -> tuple[int | None, str]:
    """``(pr_number, why)``: the parseInt'ed ``pr_number`` when it is a PR number (> 0).

    Raises PipelineFileError when the file exists but cannot be read.
    """
    loaded = load(issue, cwd)
    if loaded is None:
        return None, f"no pipeline state ({display_path(pipeline_path(issue, cwd))} does not exist)"
    where = display_path(loaded.path)
    if "pr_number" not in loaded.inner or loaded.inner["pr_number"] is None:
        return None, f"{where} has no pr_number"
    raw = loaded.inner["pr_number"]
    number = normalize(loaded.inner, loaded.wrapper)["pr_number"]
    if number is None:
        return None, f"{where} pr_number {raw!r} is not a number (parseInt gives NaN)"
    if number <= 0:
        return None, f"{where} pr_number {raw!r} is not a PR number (parseInt gives {number})"
    return number, f"{where} pr_number {raw!r}"


def read_pr_number(issue: str | int, cwd: str | os.PathLike[str] | None = None) -> int | None:
    """The issue's stored PR number (parseInt; NaN, missing file or field → None).

    A file that exists but is not a pipeline file raises PipelineFileError (exit 1).
    """
    return pr_number_lookup(issue, cwd)[0]


# --- writing ----------------------------------------------------------------------------


def validate_field_name(field: str) -> str:
    if field in COMPUTED_FIELDS:
        raise UsageError(f"cannot store {field!r}: {COMPUTED_FIELDS[field]}")
    if not _FIELD_RE.match(field) or field.isdigit():
        raise UsageError(
            f"invalid field name {field!r}: use a letter or '_' then up to 63 letters, digits, '_' or '-'",
        )
    return field


def stored_form(field: str, value: Any, *, from_json: bool = False) -> Any:
    """What ``set`` writes for ``field``: the seed's string form, checked for known fields.

    ``value`` is the command line's text, or (``from_json``) a decoded JSON value: JSON
    numbers and booleans are turned into their string form, strings stay, objects and
    arrays are stored as they are. ``heartbeat_pid`` is the one number the seed stores as
    a JSON number.
    """
    if from_json:
        value = _from_json(field, value)
    if field == "heartbeat_pid":
        return _heartbeat_pid(value)
    if field == "sub_issues" or field in OBJECT_FIELDS:
        return _structured(field, value)
    if isinstance(value, str):
        return _checked_text(field, value)
    if field in KNOWN_FIELDS or field == "lastActivity":
        raise UsageError(f"{field} is stored as a string, got {_show(value)}")
    return value


def _from_json(field: str, value: Any) -> Any:
    """A decoded JSON value in the seed's form: numbers and booleans as their string form;
    null is refused (``unset`` removes a field)."""
    if value is None:
        raise UsageError(f"refusing to store null in {field!r}", fix=f"use `git st pipeline unset N {field}`")
    if isinstance(value, (bool, int, float)):
        return js_string(value)
    return value


def _heartbeat_pid(value: Any) -> int:
    """The one number the seed stores as a JSON number: a positive process id."""
    text = value if isinstance(value, str) else None
    if text is None or not _UINT_RE.match(text) or int(text) == 0:
        raise UsageError(f"heartbeat_pid must be a positive process id, got {_show(value)}")
    return int(text)


def _structured(field: str, value: Any) -> Any:
    """``sub_issues`` (an array of issue numbers) and the object fields, stored as they are."""
    if field == "sub_issues":
        if not isinstance(value, list) or not all(_is_issue_number(item) for item in value):
            raise UsageError(
                f"sub_issues must be a JSON array of issue numbers, got {_show(value)}",
                fix="pass it as JSON: `git st pipeline set --json N sub_issues '[43, 44]'`",
            )
        return value
    if not isinstance(value, dict):
        raise UsageError(
            f"{field} must be a JSON object, got {_show(value)}",
            fix=f"pass it as JSON: `git st pipeline set --json N {field} '{{...}}'`",
        )
    return value


def _checked_text(field: str, value: str) -> str:
    """The stored string of a text value; the typed fields must hold what their type says."""
    if field == "pr_number":
        if not (_UINT_RE.match(value) and int(value) > 0):
            raise UsageError(f"pr_number must be a positive integer, got {value!r}")
        return str(int(value))
    if field in COUNT_FIELDS:
        if not _UINT_RE.match(value):
            raise UsageError(f"{field} must be a whole number (0 or more), got {value!r}")
        return str(int(value))
    if field in BOOLEAN_FIELDS:
        if value.lower() not in ("true", "false"):
            raise UsageError(f"{field} must be true or false, got {value!r}")
        return value.lower()
    return value


def _is_issue_number(item: Any) -> bool:
    return isinstance(item, int) and not isinstance(item, bool) and item > 0


def _show(value: Any) -> str:
    return dumps(value)


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number" if isinstance(value, (int, float)) else "an object"


def get_field(issue: str | int, field: str, cwd: str | os.PathLike[str] | None = None) -> tuple[bool, Any]:
    """``(found, stored value)`` of ``field``; the wrapper's siblings by their own names."""
    loaded = load(issue, cwd)
    if loaded is None:
        return False, None
    holder = loaded.wrapper if field in WRAPPER_FIELDS else loaded.inner
    if field not in holder:
        return False, None
    return True, holder[field]


def _modify(
    issue: str | int, cwd: str | os.PathLike[str] | None, change: Callable[[PipelineFile], bool]
) -> PipelineFile:
    """Read-modify-write of the issue's file under its lock; ``change(file)`` edits in place."""
    canonical = parse_issue(issue)
    path = pipeline_path(canonical, cwd)
    sidecar = state_path("pipeline", f"{canonical}.json.lock", root=path.parent.parent)
    refuse_tracked(path)  # a committed copy is never replaced (nor read: see _read)
    ensure_state_dir(path.parent.parent, cwd)  # runtime-only: make sure git ignores it
    # The sidecar is checked like the file: a symlink there is refused with a clear message
    # (filelock itself would die with ELOOP, or in older versions open and truncate the target).
    with locked(sidecar):
        data = _read(path)
        if data is None:
            loaded = PipelineFile(path=path, issue=canonical, wrapper={canonical: {}}, key=canonical)
        else:
            loaded = parse_wrapper(data, canonical, path)
            if loaded.key not in loaded.wrapper:  # bookkeeping only: the issue key goes first
                loaded.wrapper = {loaded.key: {}, **loaded.wrapper}
        changed = change(loaded)
        if changed:
            atomic_write_json(path, loaded.wrapper)
    return loaded


def _touch(loaded: PipelineFile, explicit: str | None) -> None:
    stamp = now_timestamp()
    if explicit != "last_updated":
        loaded.inner["last_updated"] = stamp
    if explicit != "lastActivity":
        loaded.wrapper["lastActivity"] = stamp


# Words people write for a seed field that is not their name (``pipeline set 12 status …``).
FIELD_SYNONYMS = {
    "status": "current_phase",
    "phase": "current_phase",
    "state": "current_phase",
    "agent": "active_agent",
    "type": "issue_type",
    "pr": "pr_number",
    "pr_num": "pr_number",
    "updated_at": "last_updated",
    "last_activity": "lastActivity",
}


def refuse_likely_typo(field: str, issue: str = "N", value: str = "VALUE") -> None:
    """Refuse (exit 2, nothing written) a field that is not one of the seed's but looks like
    one (a typo, another case, or a synonym such as ``status`` for ``current_phase``): stored,
    it would land under ``extra`` and no reader of the seed's field would see it."""
    known = (*KNOWN_FIELDS, *WRAPPER_FIELDS)
    if field in known:
        return
    near = ([FIELD_SYNONYMS[field.lower()]] if field.lower() in FIELD_SYNONYMS else []) + closest(field, known, n=2)
    if near:
        raise UsageError(
            f"{field!r} is not a pipeline field; did you mean {' or '.join(dict.fromkeys(near))}? "
            "(a field the seed does not know is stored as it is, under extra)",
            fix=f"git st pipeline set {issue} {near[0]} {value}   (or --new-field to store {field!r} as it is)",
        )


def set_field(
    issue: str | int,
    field: str,
    value: Any,
    *,
    cwd: str | os.PathLike[str] | None = None,
    from_json: bool = False,
    new_field: bool = False,
) -> PipelineFile:
    """Store ``field`` (validated, in the seed's string form) and refresh the timestamps.

    Creates the file in the nested wrapper shape when it is missing. Returns the file as
    written. A field that looks like a mistyped seed field is refused unless ``new_field``
    (:func:`refuse_likely_typo`).
    """
    validate_field_name(field)
    if not new_field:
        shown = shlex.quote(value) if isinstance(value, str) and not from_json else "VALUE"
        refuse_likely_typo(field, parse_issue(issue), shown)
    stored = stored_form(field, value, from_json=from_json)

    def change(loaded: PipelineFile) -> bool:
        holder = loaded.wrapper if field in WRAPPER_FIELDS else loaded.inner
        holder[field] = stored
        _touch(loaded, field)
        return True

    return _modify(issue, cwd, change)


def unset_field(issue: str | int, field: str, *, cwd: str | os.PathLike[str] | None = None) -> bool:
    """Remove ``field``; True when it was there (the timestamps are then refreshed)."""
    validate_field_name(field)
    if load(issue, cwd) is None:
        return False
    removed = []

    def change(loaded: PipelineFile) -> bool:
        holder = loaded.wrapper if field in WRAPPER_FIELDS else loaded.inner
        if field not in holder:
            return False
        del holder[field]
        removed.append(field)
        _touch(loaded, field)
        return True

    _modify(issue, cwd, change)
    return bool(removed)
