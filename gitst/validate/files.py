"""`git st validate`: which files to check, which kind each is, and every problem found.

Three ways to pick files (each returns one :class:`FileResult` per file):

- :func:`validate_paths` - the paths given (directories recurse), read from the working tree;
- :func:`validate_default` - no path: every tracked file that maps to a kind (attribute or
  pattern), plus every file of a kind in the state dir;
- :func:`validate_staged` - the index blobs (what a commit would record), never the working
  tree and without stashing anything; the pre-commit hook uses it.

``against`` (a revision) gives each file its version at that revision, for the kinds with
transition rules (sdlc-state, st-plan). Paths shown are relative to ``cwd``.

Each runs the same steps: the targets, the kind of each (classify), the check. A file is
read once and its JSON parsed at most once (:class:`gitst.schemas.report.Parsed`), however
many steps look at it: the content sniff, a wide pattern's confirmation, the opt-out hint
and the kind's own check.
"""

from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING, Any, NamedTuple

from gitst.core.diagnostics import READ, Diagnostic, by_position
from gitst.core.errors import GitstError, UsageError
from gitst.core.safepaths import UnsafePath, read_bytes
from gitst.core.safepaths import check as check_safe
from gitst.core.values import field, value_class
from gitst.git.attributes import check_attr
from gitst.git.index import IndexEntry, staged_entries
from gitst.git.objects import blob_ids_at, files_at, read_staged_blobs, resolve_commit
from gitst.git.repo import head_is_unborn, repo_info, require_repo
from gitst.schemas.report import Parsed
from gitst.statedir.paths import refuse_symlinks, state_dir
from gitst.validate import kinds
from gitst.validate.detect import KindChoice, may_not_be, resolve_kind, unconfirmed

if TYPE_CHECKING:
    from gitst.validate.detect import KindSource

__all__ = [
    "validate_default",
    "validate_paths",
    "validate_staged",
]

UNMERGED = "UNMERGED"
NO_KIND = "NO_KIND"
UNKNOWN_KIND = "UNKNOWN_KIND"
SYMLINK = "SYMLINK"  # a file of a kind is a symbolic link (in the work tree, or in git): never followed
STATE_TRACKED = "STATE_TRACKED"  # git tracks a file under the state dir: never runtime state
STRAY_TEMP = "STRAY_TEMP"  # a temp file a crashed writer left in the state dir


@value_class
class FileResult:
    path: str
    kind: str | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    source: KindSource | None = None  # how the kind was chosen
    skipped: str | None = None  # why the file was deliberately not checked

    @property
    def errors(self) -> int:
        return sum(1 for d in self.diagnostics if d.is_error)

    @property
    def warnings(self) -> int:
        return sum(1 for d in self.diagnostics if not d.is_error)

    def ok(self, *, strict: bool = False) -> bool:
        return self.errors == 0 and (not strict or self.warnings == 0)

    def to_dict(self, *, strict: bool = False) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "kind_source": self.source,
            "skipped": self.skipped,
            "ok": self.ok(strict=strict),
            "errors": self.errors,
            "warnings": self.warnings,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }


# ------------------------------------------------------------------------------ values
class _Target(NamedTuple):
    """A file to check: as shown, its path, and whether it was named (not found by recursion)."""

    shown: str
    path: str
    explicit: bool


class _Chosen(NamedTuple):
    """A file whose kind is decided: ``content`` when it was read to sniff the kind (never read
    twice), ``read_error`` when that read failed; ``relpath`` is its path from the top when
    git knows it (its older version is looked up there)."""

    shown: str
    path: str
    choice: KindChoice
    relpath: str | None
    content: Parsed | None = None
    read_error: str | None = None


class _Staged(NamedTuple):
    """One staged path of a kind: its index entries (more than one when unmerged)."""

    relpath: str
    stages: list[IndexEntry]
    choice: KindChoice

    @property
    def checkable(self) -> bool:
        return len(self.stages) == 1 and self.stages[0].stage == 0 and self.stages[0].is_regular_file


def _decided(choice: KindChoice) -> bool:
    """Whether anything is reported about a file (a kind, a skip, or an unusable kind)."""
    return choice.kind is not None or choice.problem is not None or choice.skip is not None


# ------------------------------------------------------------------------------ check
def _run_checks(
    choice: KindChoice, content: Parsed | None, shown: str, against: bytes | None, read_error: str | None = None
) -> FileResult:
    """The result for one file: its kind's findings on ``content`` (parsed at most once, by
    whichever step first reads its JSON), or why it was not checked."""
    if choice.problem:
        return FileResult(shown, None, [Diagnostic(shown, None, UNKNOWN_KIND, choice.problem)], choice.source)
    if choice.skip:
        return FileResult(shown, None, [], choice.source, skipped=choice.skip)
    if choice.kind is None:
        return FileResult(
            shown,
            None,
            [
                Diagnostic(
                    shown,
                    None,
                    NO_KIND,
                    "cannot tell which kind of file this is",
                    fix="pass --kind KIND, or set `st-kind=KIND` for it in .gitattributes "
                    "(git st schema list shows the kinds)",
                )
            ],
        )
    if content is None:
        return FileResult(
            shown, choice.kind, [Diagnostic(shown, None, READ, read_error or "cannot read the file")], choice.source
        )
    not_this_kind = unconfirmed(choice, content)
    if not_this_kind is not None:
        return FileResult(shown, None, [], choice.source, skipped=not_this_kind)
    diagnostics = kinds.check(choice.kind, content.data, shown, against=against, parsed=content)
    diagnostics = by_position(diagnostics)
    if may_not_be(choice, content):
        diagnostics = _with_opt_out(diagnostics, choice.kind)
    return FileResult(shown, choice.kind, diagnostics, choice.source)


def _with_opt_out(diagnostics: list[Diagnostic], kind: str) -> list[Diagnostic]:
    """Findings on a file claimed by a wide pattern (it may not be that kind at all): the
    first error's fix also says how to stop gitst checking it."""
    out = list(diagnostics)
    for index, diagnostic in enumerate(out):
        if diagnostic.is_error:
            opt_out = f"not kind {kind}? `{diagnostic.path} -st-kind` in .gitattributes stops gitst checking it"
            fix = f"{diagnostic.fix}; {opt_out}" if diagnostic.fix else opt_out
            out[index] = diagnostic.replace(fix=fix)
            break
    return out


def _check_chosen(chosen: _Chosen, top: str | None, old: dict[str, bytes | None]) -> FileResult:
    """Read (unless read already, to sniff its kind) and check one file of the work tree."""
    content, error = chosen.content, chosen.read_error
    if chosen.choice.kind and content is None and error is None:
        content, error = _read(chosen.path, top)
    against = old.get(chosen.relpath) if chosen.relpath is not None else None
    return _run_checks(chosen.choice, content, chosen.shown, against, error)


# ------------------------------------------------------------------------------ helpers
def _read(path: str, top: str | None = None) -> tuple[Parsed | None, str | None]:
    """The file's bytes (to be parsed at most once), opened as every gitst reader opens one
    (:mod:`gitst.core.safepaths`: no link below ``top`` followed, no FIFO waited on), or why
    it cannot be read."""
    try:
        data = read_bytes(path, top)
    except UnsafePath as exc:
        return None, exc.message
    except OSError as exc:
        return None, f"cannot read the file: {exc.strerror or exc}"
    if data is None:
        return None, "cannot read the file: it does not exist"
    return Parsed(data), None


def _unsafe(path: str, shown: str, top: str | None) -> Diagnostic | None:
    """A ``SYMLINK`` (or ``READ``, for a FIFO or device) diagnostic when ``path`` cannot be
    opened safely: a link anywhere below the work tree's ``top`` is never followed."""
    try:
        check_safe(path, top, shown=shown)
    except UnsafePath as exc:
        return Diagnostic(shown, None, SYMLINK if exc.is_link else READ, exc.message, fix=exc.fix)
    except OSError:
        return None  # a directory: not a file of a kind, looked at by the caller
    return None


def _state_extras(state: str, cwd: str) -> list[FileResult]:
    """Warnings about what is in the state dir but is no record: temp files a crashed
    writer left behind (``.NAME.*.tmp``; the next write of NAME removes them after an hour)."""
    results = []
    for found in _walk(state):
        name = os.path.basename(found)
        if name.startswith(".") and name.endswith(".tmp"):
            shown = os.path.relpath(found, cwd)
            results.append(
                FileResult(
                    shown,
                    None,
                    [
                        Diagnostic(
                            shown,
                            None,
                            STRAY_TEMP,
                            "a temp file left by a writer that crashed before its rename; the record it was "
                            "meant to replace is intact",
                            severity="warning",
                            fix=f"rm -- {shlex.quote(shown)}",
                        )
                    ],
                )
            )
    return results


def _state_dir(cwd: str) -> str | None:
    """The state dir (a real path), or None when there is none or it is unsafe to look in
    (a symbolic link: :func:`_unsafe_state_dir` reports it)."""
    try:
        path = state_dir(cwd)
        refuse_symlinks(path, path, leaf="dir")
        return os.path.realpath(path)
    except GitstError:
        return None


def _unsafe_state_dir(cwd: str) -> list[FileResult]:
    """The state dir itself when it is a link (or its path has one below the work tree's top)."""
    try:
        path = state_dir(cwd)
        refuse_symlinks(path, path, leaf="dir")
    except UnsafePath as exc:
        shown = os.path.relpath(path, cwd)
        return [FileResult(shown, None, [Diagnostic(shown, None, SYMLINK, exc.message, fix=exc.fix)])]
    except GitstError:
        pass
    return []


def _inside(path: str, directory: str | None) -> str | None:
    """``path`` relative to ``directory`` when inside it (both real paths), else None."""
    if not directory:
        return None
    rel = os.path.relpath(path, directory)
    return None if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel) else rel


def _posix(path: str) -> str:
    return path.replace(os.sep, "/")


def _resolve_against(cwd: str, against: str | None) -> str | None:
    if against is None:
        return None
    commit = resolve_commit(against, cwd)
    if commit is None and against == "HEAD" and head_is_unborn(cwd):
        return None  # the first commit: there is no older version to compare with
    if commit is None:
        raise UsageError(
            f"--against {against}: no such revision", fix="give a commit, branch or tag, e.g. --against HEAD"
        )
    return commit


def _old_versions(top: str | None, commit: str | None, relpaths: list[str]) -> dict[str, bytes | None]:
    if commit is None or top is None or not relpaths:
        return {}
    return files_at(top, commit, relpaths)


def _old_blob_ids(top: str | None, commit: str | None, relpaths: list[str]) -> dict[str, tuple[str, int] | None]:
    if commit is None or top is None or not relpaths:
        return {}
    return blob_ids_at(top, commit, relpaths)


def _walk(directory: str) -> list[str]:
    found: list[str] = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        found.extend(os.path.join(root, name) for name in sorted(files))
    return found


# ------------------------------------------------------------------------------ the paths given
def validate_paths(
    paths: list[str], cwd: str | os.PathLike[str], *, kind: str | None = None, against: str | None = None
) -> list[FileResult]:
    """Check the files named (directories recurse) as they are in the working tree.

    A file named explicitly gets a kind or a ``NO_KIND`` error (content is sniffed when no
    attribute or pattern says); a file found by recursion is checked only when it has a
    kind. ``kind`` forces the kind of every file. A path that does not exist is a usage
    error (nothing is checked).
    """
    cwd = os.path.abspath(cwd)
    if kind is not None:
        kinds.get(kind)
    info = repo_info(cwd)
    top = os.path.realpath(info.toplevel) if info is not None and info.toplevel is not None else None
    commit = _resolve_against(cwd, against) if top else None
    if against is not None and top is None:
        raise UsageError("--against needs a git repository")
    refused, unique = _safe_targets(_targets(paths, cwd), top)
    chosen = _classify_paths(unique, cwd, top, kind)
    old = _old_versions(top, commit, [c.relpath for c in chosen if c.choice.kind and c.relpath is not None])
    return refused + [_check_chosen(c, None, old) for c in chosen]


def _targets(paths: list[str], cwd: str) -> list[_Target]:
    """The files the paths name, directories walked (a path that does not exist: UsageError)."""
    targets: list[_Target] = []
    for given in paths:
        absolute = os.path.join(cwd, given)
        if not os.path.lexists(absolute):
            raise UsageError(f"no such file or directory: {given}")
        if os.path.isdir(absolute) and not os.path.islink(absolute):
            targets.extend(
                _Target(os.path.relpath(found, cwd) if not os.path.isabs(given) else found, found, False)
                for found in _walk(absolute)
            )
        else:
            targets.append(_Target(given, absolute, True))
    return targets


def _safe_targets(targets: list[_Target], top: str | None) -> tuple[list[FileResult], list[_Target]]:
    """Refused (a link or a FIFO, never opened: reported when of a kind or named) and the
    others, each file once (by real path)."""
    seen: set[str] = set()
    unique: list[_Target] = []
    refused: list[FileResult] = []
    for shown, absolute, explicit in targets:
        problem = _unsafe(absolute, shown, top)
        if problem is not None:
            relpath = _posix(os.path.relpath(absolute, top)) if top and _inside(absolute, top) else _posix(shown)
            if explicit or resolve_kind(relpath).kind:
                refused.append(FileResult(shown, resolve_kind(relpath).kind, [problem]))
            continue
        real = os.path.realpath(absolute)
        if real not in seen:
            seen.add(real)
            unique.append(_Target(shown, real, explicit))
    return refused, unique


def _classify_paths(targets: list[_Target], cwd: str, top: str | None, kind: str | None) -> list[_Chosen]:
    """The kind of each file (``--kind``, attribute, pattern, then - for a file named - its
    content, read once); a file found by recursion without a kind is left out."""
    state = _state_dir(cwd) if top else None
    pattern_paths: dict[str, str] = {}
    top_paths: dict[str, str] = {}
    for shown, real, _ in targets:
        in_state = _inside(real, state)
        in_top = _inside(real, top)
        if in_top is not None:
            top_paths[real] = _posix(in_top)
        pattern_paths[real] = (
            "state/" + _posix(in_state) if in_state is not None else top_paths.get(real, _posix(shown))
        )
    attributes: dict[str, str] = {}
    if top and kind is None and top_paths:
        attributes = check_attr(list(top_paths.values()), top)
    chosen: list[_Chosen] = []
    for shown, real, explicit in targets:
        relpath = pattern_paths[real]
        choice = resolve_kind(relpath, option=kind, attribute=attributes.get(top_paths.get(real, "")))
        content = error = None
        if not _decided(choice) and explicit:
            content, error = _read(real)
            if content is not None:
                choice = resolve_kind(relpath, content=content)
        if choice.kind is None and not explicit and choice.problem is None:
            continue  # recursion only picks files of a kind
        chosen.append(_Chosen(shown, real, choice, top_paths.get(real), content, error))
    return chosen


# ------------------------------------------------------------------------------ no path: the repository
def validate_default(cwd: str | os.PathLike[str], *, against: str | None = None) -> list[FileResult]:
    """No path given: every tracked file mapping to a kind, plus the state dir's files."""
    cwd = os.path.abspath(cwd)
    top = os.path.realpath(require_repo(cwd).work_tree)
    commit = _resolve_against(cwd, against)
    state = _state_dir(cwd)
    results = _unsafe_state_dir(cwd)
    refused, chosen, seen = _classify_tracked(cwd, top, state)
    results.extend(refused)
    if state and os.path.isdir(state):
        chosen.extend(_classify_state_files(state, cwd, seen))
        results.extend(_state_extras(state, cwd))
    old = _old_versions(top, commit, [c.relpath for c in chosen if c.choice.kind and c.relpath])
    results.extend(_check_chosen(c, top, old) for c in chosen)
    return results


def _classify_tracked(cwd: str, top: str, state: str | None) -> tuple[list[FileResult], list[_Chosen], set[str]]:
    """The tracked files: refused (tracked inside the state dir, a link in git or in the work
    tree), of a kind (to check), and the paths of both seen (the state dir walk skips them)."""
    modes = {entry.path: entry.mode for entry in staged_entries(top)}
    attributes = check_attr(list(modes), top)
    refused: list[FileResult] = []
    chosen: list[_Chosen] = []
    seen: set[str] = set()
    for relpath, mode in modes.items():
        real = os.path.join(top, relpath)
        shown = os.path.relpath(real, cwd)
        if _inside(real, state) is not None:
            refused.append(_tracked_state_file(shown, relpath))
            seen.add(real)
            continue
        choice = resolve_kind(relpath, attribute=attributes.get(relpath))
        if not _decided(choice):
            continue
        problem = _symlink_in_git(shown, relpath, choice) if mode == "120000" and choice.kind else None
        if problem is None and choice.kind:
            unsafe = _unsafe(real, shown, top)
            problem = FileResult(shown, choice.kind, [unsafe], choice.source) if unsafe is not None else None
        if problem is not None:
            refused.append(problem)
        elif os.path.isfile(real):  # else deleted in the working tree, or a submodule
            seen.add(os.path.realpath(real))
            chosen.append(_Chosen(shown, real, choice, relpath))
    return refused, chosen, seen


def _classify_state_files(state: str, cwd: str, seen: set[str]) -> list[_Chosen]:
    """The state dir's files of a kind that are not tracked (matched as ``state/<path>``)."""
    chosen: list[_Chosen] = []
    for found in _walk(state):
        if os.path.realpath(found) in seen or found in seen:
            continue
        choice = resolve_kind("state/" + _posix(os.path.relpath(found, state)))
        if choice.kind is not None:
            chosen.append(_Chosen(os.path.relpath(found, cwd), found, choice, None))
    return chosen


def _tracked_state_file(shown: str, relpath: str) -> FileResult:
    """A file under the state dir that git tracks: an error, and never checked as runtime
    state (gitst's readers ignore it)."""
    message = (
        "is tracked by git inside the state dir, which is this machine's runtime state: gitst ignores "
        "the committed copy (a cloned repository cannot hand out locks, claims or PR numbers)"
    )
    fix = (
        f"git rm -- {shlex.quote(relpath)} && git commit   "
        "(or `git rm --cached` to keep the file as this machine's state)"
    )
    return FileResult(shown, None, [Diagnostic(shown, None, STATE_TRACKED, message, fix=fix)])


def _symlink_in_git(shown: str, relpath: str, choice: KindChoice) -> FileResult:
    """A file of a kind that git stores as a symbolic link (mode 120000): never followed."""
    message = (
        "is a symbolic link in git; gitst never follows a link to a state file (it could point "
        "anywhere on the machine that checks it out)"
    )
    fix = f"git rm --cached -- {shlex.quote(relpath)} and commit the file itself"
    return FileResult(shown, choice.kind, [Diagnostic(shown, None, SYMLINK, message, fix=fix)], choice.source)


# ------------------------------------------------------------------------------ the index
def validate_staged(
    cwd: str | os.PathLike[str], paths: list[str] | None = None, *, kind: str | None = None, against: str | None = None
) -> list[FileResult]:
    """Check what the index holds for every staged file of a kind (``paths``: pathspecs
    relative to ``cwd`` limiting the files). Reads blobs with ``git cat-file``: the working
    tree is never read and nothing is stashed. ``.gitattributes`` is read from the index
    too. An unmerged path of a kind is an ``UNMERGED`` error."""
    cwd = os.path.abspath(cwd)
    top = os.path.realpath(require_repo(cwd).work_tree)
    if kind is not None:
        kinds.get(kind)
    commit = _resolve_against(cwd, against)
    chosen = _classify_staged(staged_entries(cwd, paths), top, kind)
    versions = _staged_versions(chosen, top, commit)
    return [_check_staged(staged, top, cwd, versions) for staged in chosen]


class _Versions(NamedTuple):
    """What the checks of staged files read, fetched in a few batches before any check: the
    index blobs by id, the older versions (``--against``) by path, and for the kinds that
    check blobs themselves (``streamed``: never read here) the older blob ids."""

    streamed: set[str]
    blobs: dict[str, bytes | None]
    old: dict[str, bytes | None]
    old_ids: dict[str, tuple[str, int] | None]


def _staged_versions(chosen: list[_Staged], top: str, commit: str | None) -> _Versions:
    of_kind = [staged for staged in chosen if staged.choice.kind]
    # Kinds that check blobs themselves (st plans: any size, bounded memory) are never read here.
    streamed = {s.relpath for s in of_kind if s.checkable and kinds.streams_blobs(s.choice.kind or "")}
    wanted = [s.stages[0].oid for s in of_kind if s.checkable and s.relpath not in streamed]
    blobs = dict(zip(wanted, read_staged_blobs(top, wanted), strict=True))  # one answer per object
    old = _old_versions(top, commit, [s.relpath for s in of_kind if s.relpath not in streamed])
    return _Versions(streamed, blobs, old, _old_blob_ids(top, commit, sorted(streamed)))


def _check_staged(staged: _Staged, top: str, cwd: str, versions: _Versions) -> FileResult:
    shown = os.path.relpath(os.path.join(top, staged.relpath), cwd)
    refused = _refused_in_index(staged, shown) if staged.choice.kind else None
    if refused is not None:
        return refused
    if staged.relpath in versions.streamed:
        older = versions.old_ids.get(staged.relpath)
        return _check_streamed(staged, top, shown, older[0] if older else None)
    data = versions.blobs.get(staged.stages[0].oid) if staged.choice.kind else None
    content = Parsed(data) if data is not None else None
    return _run_checks(staged.choice, content, shown, versions.old.get(staged.relpath), "the blob cannot be read")


def _classify_staged(entries: list[IndexEntry], top: str, kind: str | None) -> list[_Staged]:
    """The staged paths that map to a kind (or a skip, or an unusable kind), each with its
    entries; ``.gitattributes`` as the index has it."""
    by_path: dict[str, list[IndexEntry]] = {}
    for entry in entries:
        by_path.setdefault(entry.path, []).append(entry)
    attributes = check_attr(list(by_path), top, cached=True) if kind is None else {}
    chosen = []
    for relpath, stages in by_path.items():
        choice = resolve_kind(relpath, option=kind, attribute=attributes.get(relpath))
        if _decided(choice):
            chosen.append(_Staged(relpath, stages, choice))
    return chosen


def _refused_in_index(staged: _Staged, shown: str) -> FileResult | None:
    """Why a staged file of a kind cannot be checked: unmerged, a link, not a regular file."""
    choice, first = staged.choice, staged.stages[0]
    if any(e.stage != 0 for e in staged.stages):
        problem = Diagnostic(
            shown,
            None,
            UNMERGED,
            "the path is unmerged in the index",
            fix="resolve the conflict and `git add` the file",
        )
        return FileResult(shown, choice.kind, [problem], choice.source)
    if first.mode == "120000":
        return _symlink_in_git(shown, staged.relpath, choice)
    if not first.is_regular_file:
        return FileResult(
            shown, choice.kind, [], choice.source, skipped=f"not a regular file in the index (mode {first.mode})"
        )
    return None


def _check_streamed(staged: _Staged, top: str, shown: str, against: str | None) -> FileResult:
    """A blob its kind checks itself, in bounded memory (``against``: the older blob's id)."""
    kind = staged.choice.kind or ""
    diagnostics = kinds.check_blob(kind, top, staged.stages[0].oid, shown, against=against)
    diagnostics.sort(key=lambda d: (d.line is not None, d.line or 0))
    return FileResult(shown, staged.choice.kind, diagnostics, staged.choice.source)
