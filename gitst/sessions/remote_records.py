"""What a record on the remote is and how it is read (docs/security.md, "The remote"): the
``claim.json`` of a claim ref or a fence counter, read only when gitst could have written it.

A record is read only when its blob is at most :data:`MAX_RECORD_BYTES` (``cat-file
--batch-check`` first), nests at most :data:`MAX_RECORD_DEPTH` levels, keeps every integer
within 2^53 - 1, and gives every known field its type; anything else is a
:class:`BadRemoteClaim` naming the ref. Split out of :mod:`gitst.sessions.remote_claims` along
its data flow: this is the reading half (bytes -> checked record), the flows that move refs
stay there."""

from __future__ import annotations

import os
import sys
from typing import Any

from gitst.core import jsonio, timestamps
from gitst.core.errors import ProblemsFound, UsageError
from gitst.core.terminal import sanitize
from gitst.git import objects
from gitst.statedir.paths import validate_identifier

__all__ = [
    "CLAIM_FIELDS",
    "CLAIM_FILE",
    "FENCE_FIELDS",
    "MAX_RECORD_BYTES",
    "MAX_RECORD_DEPTH",
    "MAX_TOKEN",
    "BadRemoteClaim",
    "held_by_pr",
    "is_issue_name",
    "parse",
    "read_records",
    "readable",
]

# What a record on the remote may be. A record gitst writes is about 600 bytes (a --desc of up
# to 128 KiB, the longest argument Linux passes, included), 3 levels deep; its token is one
# more than the highest it read, and never beyond MAX_TOKEN.
MAX_RECORD_BYTES = 1 << 20
MAX_RECORD_DEPTH = 8
MAX_TOKEN = jsonio.MAX_SAFE_INTEGER
CLAIM_FILE = "claim.json"


class BadRemoteClaim(ProblemsFound):
    """A ref under ``refs/st/`` on the remote that is not a gitst record (exit 1)."""

    def __init__(self, remote: str, ref: str, why: str):
        super().__init__(
            f"{ref} on {remote} is not a gitst claim record: {why}",
            fix=f"look at it (`git fetch {remote} {ref} && git show FETCH_HEAD`), then delete it: "
            f"git push {remote} :{ref}",
        )


CLAIM_FIELDS: dict[str, type | tuple[type, ...]] = {
    "issue": str,
    "session": str,
    "host": str,
    "token": int,
    "expires_at": str,
    "nonce": str,
}
FENCE_FIELDS: dict[str, type | tuple[type, ...]] = {"issue": str, "token": int}
# Fields a record may lack (or hold null), but never hold with another type: the flows copy
# them into the records they write (a renewal keeps claimed_at, branch, description).
_OPTIONAL_FIELDS: dict[str, type | tuple[type, ...]] = {
    "version": int,
    "actor": str,
    "pid": int,
    "pid_start": int,
    "liveness": str,
    "claimed_at": str,
    "renewed_at": str,
    "ttl": (int, float),
    "branch": str,
    "description": str,
    "previous": dict,
    "pr": dict,  # the claim is held by an open pull request (:func:`gitst.sessions.remote_holds.hold`)
}
# Fields gitst fills itself: never a control character. Free text (actor, host, description:
# ST_ACTOR, ST_HOST, --desc) is read back as written, and shown escaped (terminal.sanitize).
_TEXT_FIELDS = ("issue", "session", "liveness", "branch", "claimed_at", "renewed_at", "nonce")


def parse(
    remote: str, ref: str, raw: bytes | BadRemoteClaim | None, fields: dict[str, Any], issue: str | None
) -> dict[str, Any]:
    """The record ``raw`` of ``ref`` when gitst could have written it, within every local reader's
    limits; else :class:`BadRemoteClaim` saying why (exit 1; ``raw`` itself, when reading failed)."""
    if isinstance(raw, BadRemoteClaim):
        raise raw
    if raw is None:
        raise BadRemoteClaim(remote, ref, f"its commit has no {CLAIM_FILE}")
    if len(raw) > MAX_RECORD_BYTES:
        raise BadRemoteClaim(remote, ref, f"its {CLAIM_FILE} is {len(raw)} bytes, more than {MAX_RECORD_BYTES}")
    if jsonio.too_deep(raw, MAX_RECORD_DEPTH):
        raise BadRemoteClaim(remote, ref, f"its {CLAIM_FILE} nests deeper than {MAX_RECORD_DEPTH} levels")
    try:
        record = jsonio.loads(raw)
    except jsonio.JSONLimitError as exc:
        raise BadRemoteClaim(remote, ref, str(exc)) from None
    except jsonio.JSONDecodeError as exc:
        raise BadRemoteClaim(remote, ref, f"not JSON ({exc})") from None
    if not isinstance(record, dict):
        raise BadRemoteClaim(remote, ref, "not a JSON object")
    problem = _shape_problem(record, fields) or _value_problem(record, fields, issue)
    if problem is not None:
        raise BadRemoteClaim(remote, ref, problem)
    return record


def _shape_problem(record: dict[str, Any], fields: dict[str, Any]) -> str | None:
    """Why a field of ``record`` is not of the type ``fields`` (or an optional field) requires."""
    for key, kind in fields.items():
        value = record.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            return f"field {key!r} is missing or of the wrong type"
    for key, kind in _OPTIONAL_FIELDS.items():
        value = record.get(key)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            return f"field {key!r} is of the wrong type"
    return None


def _value_problem(record: dict[str, Any], fields: dict[str, Any], issue: str | None) -> str | None:
    """Why a value of ``record`` is not one gitst writes (None: every value is)."""
    for key in (*_TEXT_FIELDS, "expires_at"):
        value = record.get(key)
        if isinstance(value, str) and _controls(value):
            return f"field {key!r} holds control characters"
    held = record.get("pr")
    if isinstance(held, dict) and (problem := _pr_problem(held)) is not None:
        return problem
    token = record.get("token")
    if isinstance(token, int) and not 1 <= token <= MAX_TOKEN:
        return f"its token {token} is not an integer from 1 to {MAX_TOKEN}"
    if issue is not None and record["issue"] != issue:
        return f"it names issue {record['issue']!r}"
    if "expires_at" in fields:
        try:
            timestamps.parse(record["expires_at"])
        except (ValueError, TypeError, OverflowError):
            return "expires_at is not a timestamp"
    return None


def _controls(text: str) -> bool:
    return any(ord(ch) < 32 or ord(ch) == 127 for ch in text)


def held_by_pr(record: dict[str, Any]) -> int | None:
    """The number of the open pull request that holds this claim
    (:func:`gitst.sessions.remote_holds.hold`), or None."""
    held = record.get("pr")
    number = held.get("number") if isinstance(held, dict) else None
    return number if isinstance(number, int) and not isinstance(number, bool) else None


def _pr_problem(held: dict[str, Any]) -> str | None:
    """Why a claim's ``pr`` is not one gitst writes: ``{"number": 1.., "url": text}``."""
    number, url = held.get("number"), held.get("url")
    if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= MAX_TOKEN:
        return "field 'pr' has no PR number"
    if url is not None and (not isinstance(url, str) or _controls(url)):
        return "field 'pr' holds a url that is no text, or control characters"
    return None


def read_records(
    remote: str, oids: dict[str, str], cwd: str | os.PathLike[str] | None
) -> dict[str, bytes | BadRemoteClaim | None]:
    """``{ref: claim.json of the commit oids[ref]}`` (None: no such file); a blob larger than
    :data:`MAX_RECORD_BYTES` is never read (its size is asked first) but a BadRemoteClaim."""
    refs_ = list(oids)
    sizes = objects.object_sizes(cwd, [f"{oids[ref]}:{CLAIM_FILE}" for ref in refs_])
    out: dict[str, bytes | BadRemoteClaim | None] = {}
    small: dict[str, str] = {}
    for ref, found in zip(refs_, sizes, strict=True):
        if found is None:
            out[ref] = None
        elif found[1] > MAX_RECORD_BYTES:
            out[ref] = BadRemoteClaim(
                remote, ref, f"its {CLAIM_FILE} is {found[1]} bytes, more than {MAX_RECORD_BYTES} (not read)"
            )
        else:
            small[ref] = found[0]
    blobs = objects.read_objects(cwd, list(dict.fromkeys(small.values())))
    content = dict(zip(dict.fromkeys(small.values()), blobs, strict=True))
    for ref, oid in small.items():
        out[ref] = content[oid]
    return out


_REPORTED: set[tuple[str, str]] = set()


def _report_once(remote: str, what: str, message: str) -> None:
    """``gitst: warning: MESSAGE`` on stderr, once per process (``status --watch`` redraws)."""
    if (remote, what) in _REPORTED:
        return
    _REPORTED.add((remote, what))
    print(f"gitst: warning: {sanitize(message)}", file=sys.stderr)


def _shown(name: str) -> str:
    """A ref name for a message: bytes that are not UTF-8 escaped (``\\xff``)."""
    return name.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")


def is_issue_name(issue: str) -> bool:
    """True when ``issue`` (the part of a ref after its namespace) can be an issue id."""
    try:
        validate_identifier(issue, "issue")
    except UsageError:
        return False
    return True


def readable(remote: str, issues: dict[str, str], namespace: str, limit: int) -> list[str]:
    """The names of ``issues`` (refs under ``namespace``) worth reading, sorted: names that are
    no issue id skipped (and reported once), at most ``limit`` (the rest reported)."""
    junk = sorted(issue for issue in issues if not is_issue_name(issue))
    if junk:
        examples = ", ".join(namespace + _shown(issue) for issue in junk[:3])
        _report_once(
            remote,
            "junk",
            f"skipped {len(junk)} ref(s) under {namespace} on {remote} whose names are no issue id "
            f"({examples}{', …' if len(junk) > 3 else ''}): gitst never wrote them; delete them with "
            f"`git push {remote} :REF`",
        )
    skipped = set(junk)
    names = sorted(issue for issue in issues if issue not in skipped)
    if len(names) > limit:
        _report_once(
            remote,
            "count",
            f"{remote} holds {len(names)} claim refs; only the first {limit} ({names[0]} to "
            f"{names[limit - 1]}) were read: delete the ones nobody holds "
            f"(`git push {remote} :{namespace}ISSUE`)",
        )
        names = names[:limit]
    return names
