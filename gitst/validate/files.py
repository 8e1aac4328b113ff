"""`git st validate`: which files to check, which kind each is, and every problem found.

Three ways to pick files (each returns one :class:`FileResult` per file):

- :func:`validate_paths` - the paths given (directories recurse), read from the working tree;
- :func:`validate_default` - no path: every tracked file that maps to a kind (attribute or
  pattern), plus every file of a kind in the state dir;
- :func:`validate_staged` - the index blobs (what a commit would record), never the working
  tree and without stashing anything; the pre-commit hook uses it.

``against`` (a revision) gives each file its version at that revision, for the kinds with
transition rules (sdlc-state, st-plan). Paths shown are relative to ``cwd``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from gitst.core.diagnostics import READ, Diagnostic, by_position
from gitst.core.errors import GitstError, UsageError
from gitst.validate.detect import KindChoice, may_not_be, resolve_kind, unconfirmed

TYPE_CHECKING = False
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


@dataclass
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

    def to_dict(self, *, strict: bool = False) -> dict:
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


# ------------------------------------------------------------------------------ helpers
def _run_checks(
    choice: KindChoice, data: bytes | None, shown: str, against: bytes | None, read_error: str | None = None
) -> FileResult:
    from gitst.validate import kinds

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
    if data is None:
        return FileResult(
            shown, choice.kind, [Diagnostic(shown, None, READ, read_error or "cannot read the file")], choice.source
        )
    not_this_kind = unconfirmed(choice, data)
    if not_this_kind is not None:
        return FileResult(shown, None, [], choice.source, skipped=not_this_kind)
    diagnostics = kinds.check(choice.kind, data, shown, against=against)
    diagnostics = by_position(diagnostics)
    if may_not_be(choice, data):
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


def _read(path: str, top: str | None = None) -> tuple[bytes | None, str | None]:
    """The file's bytes, opened as every gitst reader opens one (:mod:`gitst.core.safepaths`:
    no link below ``top`` followed, no FIFO waited on), or why it cannot be read."""
    from gitst.core.safepaths import UnsafePath, read_bytes

    try:
        data = read_bytes(path, top)
    except UnsafePath as exc:
        return None, exc.message
    except OSError as exc:
        return None, f"cannot read the file: {exc.strerror or exc}"
    if data is None:
        return None, "cannot read the file: it does not exist"
    return data, None


def _unsafe(path: str, shown: str, top: str | None) -> Diagnostic | None:
    """A ``SYMLINK`` (or ``READ``, for a FIFO or device) diagnostic when ``path`` cannot be
    opened safely: a link anywhere below the work tree's ``top`` is never followed."""
    from gitst.core.safepaths import UnsafePath, check

    try:
        check(path, top, shown=shown)
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
                            fix=f"rm -- {_sh(shown)}",
                        )
                    ],
                )
            )
    return results


def _sh(text: str) -> str:
    import shlex

    return shlex.quote(text)


def _state_dir(cwd: str) -> str | None:
    """The state dir (a real path), or None when there is none or it is unsafe to look in
    (a symbolic link: :func:`_unsafe_state_dir` reports it)."""
    try:
        from gitst.statedir.paths import refuse_symlinks, state_dir

        path = state_dir(cwd)
        refuse_symlinks(path, path, leaf="dir")
        return os.path.realpath(path)
    except GitstError:
        return None


def _unsafe_state_dir(cwd: str) -> list[FileResult]:
    """The state dir itself when it is a link (or its path has one below the work tree's top)."""
    from gitst.core.safepaths import UnsafePath

    try:
        from gitst.statedir.paths import refuse_symlinks, state_dir

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
    from gitst.git.objects import resolve_commit
    from gitst.git.repo import head_is_unborn

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
    from gitst.git.objects import files_at

    return files_at(top, commit, relpaths)


def _old_blob_ids(top: str | None, commit: str | None, relpaths: list[str]) -> dict[str, tuple[str, int] | None]:
    if commit is None or top is None or not relpaths:
        return {}
    from gitst.git.objects import blob_ids_at

    return blob_ids_at(top, commit, relpaths)


def _walk(directory: str) -> list[str]:
    found: list[str] = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        found.extend(os.path.join(root, name) for name in sorted(files))
    return found


# ------------------------------------------------------------------------------ entry points
def validate_paths(
    paths: list[str], cwd: str | os.PathLike, *, kind: str | None = None, against: str | None = None
) -> list[FileResult]:
    """Check the files named (directories recurse) as they are in the working tree.

    A file named explicitly gets a kind or a ``NO_KIND`` error (content is sniffed when no
    attribute or pattern says); a file found by recursion is checked only when it has a
    kind. ``kind`` forces the kind of every file. A path that does not exist is a usage
    error (nothing is checked).
    """
    cwd = os.path.abspath(cwd)
    from gitst.git.repo import repo_info

    if kind is not None:
        from gitst.validate.kinds import get

        get(kind)
    info = repo_info(cwd)
    top = os.path.realpath(info.toplevel) if info is not None and info.toplevel is not None else None
    commit = _resolve_against(cwd, against) if top else None
    if against is not None and top is None:
        raise UsageError("--against needs a git repository")

    targets: list[tuple[str, str, bool]] = []  # (shown, real path, named explicitly)
    for given in paths:
        absolute = os.path.join(cwd, given)
        if not os.path.lexists(absolute):
            raise UsageError(f"no such file or directory: {given}")
        if os.path.isdir(absolute) and not os.path.islink(absolute):
            targets.extend(
                (os.path.relpath(found, cwd) if not os.path.isabs(given) else found, found, False)
                for found in _walk(absolute)
            )
        else:
            targets.append((given, absolute, True))
    seen: set[str] = set()
    unique = []
    refused: list[FileResult] = []
    for shown, absolute, explicit in targets:
        problem = _unsafe(absolute, shown, top)
        if problem is not None:
            # A link (or a FIFO) is never opened: reported when it is of a kind, or was named.
            relpath = _posix(os.path.relpath(absolute, top)) if top and _inside(absolute, top) else _posix(shown)
            if explicit or resolve_kind(relpath).kind:
                refused.append(FileResult(shown, resolve_kind(relpath).kind, [problem]))
            continue
        real = os.path.realpath(absolute)
        if real not in seen:
            seen.add(real)
            unique.append((shown, real, explicit))

    state = _state_dir(cwd) if top else None
    pattern_paths, top_paths = {}, {}
    for shown, real, _ in unique:
        in_state = _inside(real, state)
        in_top = _inside(real, top)
        if in_top is not None:
            top_paths[real] = _posix(in_top)
        pattern_paths[real] = (
            "state/" + _posix(in_state) if in_state is not None else top_paths.get(real, _posix(shown))
        )
    attributes = {}
    if top and kind is None and top_paths:
        from gitst.git.attributes import check_attr

        attributes = check_attr(list(top_paths.values()), top)

    chosen = []
    for shown, real, explicit in unique:
        relpath = pattern_paths[real]
        attribute = attributes.get(top_paths.get(real, ""))
        choice = resolve_kind(relpath, option=kind, attribute=attribute)
        data = error = None
        if choice.kind is None and choice.skip is None and choice.problem is None and explicit:
            data, error = _read(real)
            if data is not None:
                choice = resolve_kind(relpath, data=data)
        if choice.kind is None and not explicit and choice.problem is None:
            continue  # recursion only picks files of a kind
        chosen.append((shown, real, choice, data, error))

    old = _old_versions(top, commit, [top_paths[r] for _, r, c, _, _ in chosen if c.kind and r in top_paths])
    results = refused
    for shown, real, choice, sniffed, sniff_error in chosen:
        # a file read to sniff its kind is not read twice
        if choice.kind and sniffed is None and sniff_error is None:
            data, error = _read(real)
        else:
            data, error = sniffed, sniff_error
        results.append(_run_checks(choice, data, shown, old.get(top_paths.get(real, "")), error))
    return results


def validate_default(cwd: str | os.PathLike, *, against: str | None = None) -> list[FileResult]:
    """No path given: every tracked file mapping to a kind, plus the state dir's files."""
    from gitst.git.attributes import check_attr
    from gitst.git.index import staged_entries
    from gitst.git.repo import require_repo

    cwd = os.path.abspath(cwd)
    top = os.path.realpath(require_repo(cwd).work_tree)
    commit = _resolve_against(cwd, against)
    modes = {entry.path: entry.mode for entry in staged_entries(top)}
    tracked = list(modes)
    attributes = check_attr(tracked, top)
    state = _state_dir(cwd)
    chosen: list[tuple[str, str, KindChoice, str | None]] = []  # shown, real, choice, top-relative
    results: list[FileResult] = _unsafe_state_dir(cwd)
    seen = set()
    for relpath in tracked:
        real = os.path.join(top, relpath)
        shown = os.path.relpath(real, cwd)
        if _inside(real, state) is not None:
            results.append(_tracked_state_file(shown, relpath))
            seen.add(real)
            continue
        choice = resolve_kind(relpath, attribute=attributes.get(relpath))
        if choice.kind is None and choice.problem is None and choice.skip is None:
            continue
        if modes[relpath] == "120000" and choice.kind:
            results.append(_symlink_in_git(shown, relpath, choice))
            continue
        problem = _unsafe(real, shown, top)
        if problem is not None and choice.kind:
            results.append(FileResult(shown, choice.kind, [problem], choice.source))
            continue
        if not os.path.isfile(real):
            continue  # deleted in the working tree, or a submodule
        seen.add(os.path.realpath(real))
        chosen.append((shown, real, choice, relpath))
    if state and os.path.isdir(state):
        for found in _walk(state):
            real = os.path.realpath(found)
            if real in seen or found in seen:
                continue
            choice = resolve_kind("state/" + _posix(os.path.relpath(found, state)))
            if choice.kind is not None:
                chosen.append((os.path.relpath(found, cwd), found, choice, None))
        results.extend(_state_extras(state, cwd))
    old = _old_versions(top, commit, [rel for _, _, c, rel in chosen if c.kind and rel])
    for shown, real, choice, tracked_as in chosen:
        data, error = _read(real, top) if choice.kind else (None, None)
        results.append(_run_checks(choice, data, shown, old.get(tracked_as) if tracked_as else None, error))
    return results


def _tracked_state_file(shown: str, relpath: str) -> FileResult:
    """A file under the state dir that git tracks: an error, and never checked as runtime
    state (gitst's readers ignore it)."""
    message = (
        "is tracked by git inside the state dir, which is this machine's runtime state: gitst ignores "
        "the committed copy (a cloned repository cannot hand out locks, claims or PR numbers)"
    )
    fix = f"git rm -- {_sh(relpath)} && git commit   (or `git rm --cached` to keep the file as this machine's state)"
    return FileResult(shown, None, [Diagnostic(shown, None, STATE_TRACKED, message, fix=fix)])


def _symlink_in_git(shown: str, relpath: str, choice: KindChoice) -> FileResult:
    """A file of a kind that git stores as a symbolic link (mode 120000): never followed."""
    message = (
        "is a symbolic link in git; gitst never follows a link to a state file (it could point "
        "anywhere on the machine that checks it out)"
    )
    fix = f"git rm --cached -- {_sh(relpath)} and commit the file itself"
    return FileResult(shown, choice.kind, [Diagnostic(shown, None, SYMLINK, message, fix=fix)], choice.source)


def validate_staged(
    cwd: str | os.PathLike, paths: list[str] | None = None, *, kind: str | None = None, against: str | None = None
) -> list[FileResult]:
    """Check what the index holds for every staged file of a kind (``paths``: pathspecs
    relative to ``cwd`` limiting the files). Reads blobs with ``git cat-file``: the working
    tree is never read and nothing is stashed. ``.gitattributes`` is read from the index
    too. An unmerged path of a kind is an ``UNMERGED`` error."""
    from gitst.git.attributes import check_attr
    from gitst.git.index import staged_entries
    from gitst.git.objects import read_staged_blobs
    from gitst.git.repo import require_repo

    cwd = os.path.abspath(cwd)
    top = os.path.realpath(require_repo(cwd).work_tree)
    if kind is not None:
        from gitst.validate.kinds import get

        get(kind)
    commit = _resolve_against(cwd, against)
    entries = staged_entries(cwd, paths)
    by_path: dict[str, list] = {}
    for entry in entries:
        by_path.setdefault(entry.path, []).append(entry)
    attributes = check_attr(list(by_path), top, cached=True) if kind is None else {}
    chosen = []
    for relpath, stages in by_path.items():
        choice = resolve_kind(relpath, option=kind, attribute=attributes.get(relpath))
        if choice.kind is None and choice.problem is None and choice.skip is None:
            continue
        chosen.append((relpath, stages, choice))
    from gitst.validate.kinds import streams_blobs

    def checkable(stages) -> bool:
        return len(stages) == 1 and stages[0].stage == 0 and stages[0].is_regular_file

    # Kinds that check blobs themselves (st plans: any size, bounded memory) are never read here.
    streamed = {
        rel for rel, stages, choice in chosen if choice.kind and checkable(stages) and streams_blobs(choice.kind)
    }
    wanted = [
        stages[0].oid for rel, stages, choice in chosen if choice.kind and checkable(stages) and rel not in streamed
    ]
    blobs = dict(zip(wanted, read_staged_blobs(top, wanted), strict=True))  # one answer per object
    old = _old_versions(top, commit, [rel for rel, _, choice in chosen if choice.kind and rel not in streamed])
    old_ids = _old_blob_ids(top, commit, sorted(streamed))
    results = []
    for relpath, stages, choice in chosen:
        shown = os.path.relpath(os.path.join(top, relpath), cwd)
        if choice.kind and any(e.stage != 0 for e in stages):
            results.append(
                FileResult(
                    shown,
                    choice.kind,
                    [
                        Diagnostic(
                            shown,
                            None,
                            UNMERGED,
                            "the path is unmerged in the index",
                            fix="resolve the conflict and `git add` the file",
                        )
                    ],
                    choice.source,
                )
            )
            continue
        if choice.kind and stages[0].mode == "120000":
            results.append(_symlink_in_git(shown, relpath, choice))
            continue
        if choice.kind and not stages[0].is_regular_file:
            results.append(
                FileResult(
                    shown,
                    choice.kind,
                    [],
                    choice.source,
                    skipped=f"not a regular file in the index (mode {stages[0].mode})",
                )
            )
            continue
        if relpath in streamed and choice.kind:
            from gitst.validate.kinds import check_blob

            older = old_ids.get(relpath)
            diagnostics = check_blob(choice.kind, top, stages[0].oid, shown, against=older[0] if older else None)
            diagnostics.sort(key=lambda d: (d.line is not None, d.line or 0))
            results.append(FileResult(shown, choice.kind, diagnostics, choice.source))
            continue
        data = blobs.get(stages[0].oid) if choice.kind else None
        results.append(_run_checks(choice, data, shown, old.get(relpath), "the blob cannot be read"))
    return results
