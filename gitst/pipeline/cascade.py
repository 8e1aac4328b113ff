"""The PR-number cascade: which pull request closes issue N (seed 001, docs/decisions.md).

Steps, in order; the first that answers wins, and a step with more than one candidate
stops the cascade with an error listing them (never a guess):

1. ``arg``                    ``--pr N``
2. ``env``                    ``ST_PR_NUMBER`` — ignored when ``ST_PR_ISSUE`` is set and does
                              not name this issue (a hint must never answer for another
                              session's issue)
3. ``pipeline``               ``state/pipeline/<N>.json`` ``pr_number`` (parseInt; NaN and
                              numbers below 1 count as absent)
4. ``gh-closing-references``  open PRs (``gh pr list --state open --json …``) whose
                              ``closingIssuesReferences`` hold issue N of this repository
5. ``gh-body-keywords``       open PRs whose body says close/closes/closed, fix/fixes/fixed,
                              resolve/resolves/resolved ``#N`` (or ``owner/repo#N``, or the
                              issue's URL, for this repository)
6. ``gh-head-branch``         open PRs whose head branch is the issue's branch
7. ``pull-refs``              fetched ``refs/pull/<n>/head`` refs pointing at the tip of the
                              issue's branch (no network)

Steps 4-6 share one ``gh`` call; ``gh`` missing, unauthenticated or failing skips them
with the reason, and ``offline`` skips them without calling ``gh``. The issue's branch is
``branch`` when given, else the worktree registry's, else the ``st.worktree.branch``
template (:func:`gitst.sessions.registry.branch_of_issue`).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from typing import Any

from gitst.core.errors import GitstError, UsageError
from gitst.core.values import field, value_class
from gitst.git.refs import PullHead, all_refs, pull_heads, tips_by_branch
from gitst.pipeline.gh import GhUnavailable, gh_json, is_pr_number
from gitst.pipeline.state import display_path, list_issue_files, parse_issue, pipeline_dir, pr_number_lookup
from gitst.sessions.registry import branch_of_issue, read_worktree_entry
from gitst.settings import optional_str_setting

__all__ = [
    "STEPS",
    "Lookups",
    "closes_by_reference",
    "closing_references",
    "failure_message",
    "resolve",
]

STEPS: tuple[tuple[str, str], ...] = (
    ("arg", "--pr"),
    ("env", "ST_PR_NUMBER"),
    ("pipeline", "pipeline state pr_number"),
    ("gh-closing-references", "gh: closing references"),
    ("gh-body-keywords", "gh: closing keywords in the body"),
    ("gh-head-branch", "gh: the issue's branch as head"),
    ("pull-refs", "fetched refs/pull/*/head"),
)
LABELS = dict(STEPS)

GH_FIELDS = ("number", "headRefName", "headRefOid", "body", "title", "closingIssuesReferences", "url")
GH_LIMIT = 1000

ANSWER, AMBIGUOUS, NO_ANSWER, SKIPPED, NOT_RUN = "answer", "ambiguous", "no-answer", "skipped", "not-run"

_PR_NUMBER_RE = re.compile(r"^#?([0-9]{1,18})$")
# GitHub's closing keywords, then `#N`, `owner/repo#N` or an issue URL; `#42` is not `#420`.
_CLOSING_RE = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)(?::[ \t]*|[ \t]+)"
    r"(?:(?P<owner>[A-Za-z0-9][\w.-]*)/(?P<repo>[\w.-]+)#"
    r"|https?://[^\s/]+/(?P<url_owner>[\w.-]+)/(?P<url_repo>[\w.-]+)/issues/"
    r"|#)"
    r"(?P<number>[0-9]+)(?!\w)",
    re.IGNORECASE,
)
_PR_URL_RE = re.compile(r"^https?://[^/]+/([^/]+)/([^/]+)/pull/[0-9]+/?$")


@value_class
class Candidate:
    number: int
    title: str | None = None
    head: str | None = None
    evidence: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "title": self.title, "head": self.head, "evidence": self.evidence}

    def describe(self) -> str:
        text = f"#{self.number}"
        if self.title:
            text += f" {self.title!r}"
        if self.head:
            text += f" (head {self.head})"
        return text + (f": {self.evidence}" if self.evidence else "")


@value_class
class Step:
    source: str
    status: str
    reason: str
    candidates: list[Candidate] = field(default_factory=list)

    @property
    def label(self) -> str:
        return LABELS[self.source]

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "status": self.status,
            "reason": self.reason,
            "candidates": [c.to_dict() for c in self.candidates],
        }


@value_class
class Resolution:
    issue: str
    steps: list[Step]

    @property
    def decisive(self) -> Step | None:
        """The step that answered or stopped the cascade as ambiguous."""
        for step in self.steps:
            if step.status in (ANSWER, AMBIGUOUS):
                return step
        return None

    @property
    def pr_number(self) -> int | None:
        step = self.decisive
        return step.candidates[0].number if step and step.status == ANSWER else None

    @property
    def source(self) -> str | None:
        step = self.decisive
        return step.source if step else None

    @property
    def ambiguous(self) -> bool:
        step = self.decisive
        return bool(step and step.status == AMBIGUOUS)

    def to_dict(self) -> dict[str, Any]:
        step = self.decisive
        return {
            "issue": int(self.issue),
            "pr_number": self.pr_number,
            "source": self.source,
            "candidates": [c.to_dict() for c in step.candidates] if step else [],
            "steps": [s.to_dict() for s in self.steps],
        }


def parse_pr_number(value: str, what: str) -> int:
    """A positive PR number from ``value`` (``57`` or ``#57``); UsageError otherwise."""
    match = _PR_NUMBER_RE.match(str(value).strip())
    if not match or not is_pr_number(int(match.group(1))):
        raise UsageError(f"invalid {what} {value!r}: expected a positive PR number such as 57")
    return int(match.group(1))


def closing_references(body: str, issue: int, repo: tuple[str, str] | None) -> list[str]:
    """The closing phrases in ``body`` that close ``issue`` of ``repo`` (owner, name).

    ``owner/repo#N`` and issue URLs count only when they name ``repo`` (compared without
    case); when ``repo`` is unknown they cannot be attributed and do not count.
    """
    found = []
    for match in _CLOSING_RE.finditer(body or ""):
        if int(match.group("number")) != issue:
            continue
        owner = match.group("owner") or match.group("url_owner")
        name = match.group("repo") or match.group("url_repo")
        if owner is not None and not _same_repo((owner, name), repo):
            continue
        found.append(match.group(0))
    return found


def _same_repo(a: tuple[str, str] | None, b: tuple[str, str] | None) -> bool:
    return a is not None and b is not None and a[0].lower() == b[0].lower() and a[1].lower() == b[1].lower()


def _pr_repo(pr: dict[str, Any]) -> tuple[str, str] | None:
    """(owner, name) of the repository a PR belongs to, from its ``url``."""
    match = _PR_URL_RE.match(pr.get("url") or "") if isinstance(pr.get("url"), str) else None
    return (match.group(1), match.group(2)) if match else None


def _reference_repo(ref: dict[str, Any]) -> tuple[str, str] | None:
    repository = ref.get("repository")
    if isinstance(repository, dict):
        owner = repository.get("owner")
        login = owner.get("login") if isinstance(owner, dict) else None
        if isinstance(login, str) and isinstance(repository.get("name"), str):
            return (login, repository["name"])
    url = ref.get("url")
    if isinstance(url, str):
        match = re.match(r"^https?://[^/]+/([^/]+)/([^/]+)/issues/[0-9]+/?$", url)
        if match:
            return (match.group(1), match.group(2))
    return None


def closes_by_reference(pr: dict[str, Any], issue: int) -> bool:
    """True when the PR's ``closingIssuesReferences`` hold ``issue`` of the PR's repository."""
    refs = pr.get("closingIssuesReferences")
    if not isinstance(refs, list):
        return False
    own = _pr_repo(pr)
    for ref in refs:
        if isinstance(ref, int) and not isinstance(ref, bool):
            if ref == issue:
                return True
            continue
        if not isinstance(ref, dict) or ref.get("number") != issue:
            continue
        theirs = _reference_repo(ref)
        if own is None or theirs is None or _same_repo(own, theirs):
            return True
    return False


def _candidate(pr: dict[str, Any], evidence: str) -> Candidate:
    title = pr.get("title") if isinstance(pr.get("title"), str) else None
    head = pr.get("headRefName") if isinstance(pr.get("headRefName"), str) else None
    return Candidate(number=pr["number"], title=title, head=head, evidence=evidence)


def _decide(source: str, candidates: list[Candidate], none_reason: str, what: str) -> Step:
    unique: dict[int, Candidate] = {}
    for cand in candidates:
        unique.setdefault(cand.number, cand)
    found = list(unique.values())
    if not found:
        return Step(source, NO_ANSWER, none_reason)
    if len(found) == 1:
        return Step(source, ANSWER, found[0].evidence, found)
    numbers = ", ".join(f"#{c.number}" for c in found)
    return Step(source, AMBIGUOUS, f"{len(found)} {what}: {numbers}", found)


class Lookups:
    """What the cascades of many issues share, each looked up once: every ref (one
    ``for-each-ref``), the fetched PR heads, each branch's tips, and (``batch``) which
    issues have a pipeline file (one directory listing, so an issue without one costs no
    file system call). ``git st status`` resolves all its rows with one; :func:`resolve`
    makes its own."""

    def __init__(self, cwd: str | os.PathLike[str] | None = None, *, batch: bool = False):
        self.cwd = cwd
        self.batch = batch
        self._refs: dict[str, str] | None = None
        self._heads: list[PullHead] | None = None
        self._tips: dict[str, dict[str, str]] | None = None
        self._pipeline: set[str] | None = None
        self._pipeline_shown: str | None = None

    def refs(self) -> dict[str, str]:
        if self._refs is None:
            self._refs = all_refs(self.cwd)
        return self._refs

    def tips(self, branch: str) -> dict[str, str]:
        """:func:`gitst.git.refs.branch_tips` of ``branch``."""
        if self._tips is None:
            self._tips = tips_by_branch(self.refs())
        return self._tips.get(branch, {})

    def pull_heads(self) -> list[PullHead]:
        if self._heads is None:
            self._heads = pull_heads(self.cwd, refs=self.refs())
        return self._heads

    def may_have_pipeline_file(self, issue: str) -> bool:
        """False only when the batch's listing of ``state/pipeline/`` has no ``<issue>.json``."""
        if not self.batch:
            return True
        if self._pipeline is None:
            self._pipeline = {number for number, _ in list_issue_files(self.cwd)}
        return issue in self._pipeline

    def offline_may_answer(self, issue: str, branch: str | None) -> bool:
        """False when neither offline step can answer for ``issue`` (no ``--pr``, no
        ``ST_PR_NUMBER``, no ``gh``): no pipeline file, and no fetched PR head at a tip of
        ``branch`` - so a row of ``git st status`` without a PR costs no cascade at all.
        (Without ``branch`` the cascade finds the issue's own: it may answer.)"""
        if self.may_have_pipeline_file(issue) or branch is None:
            return True
        try:
            heads = {head.oid for head in self.pull_heads()}
            return any(oid in heads for oid in self.tips(branch).values())
        except GitstError:
            return True  # the cascade says why

    def no_pipeline_file(self, issue: str) -> str:
        if self._pipeline_shown is None:
            self._pipeline_shown = display_path(pipeline_dir(self.cwd) / "N.json")[: -len("N.json")]
        return f"no pipeline state ({self._pipeline_shown}{issue}.json does not exist)"


class _Cascade:
    """One resolution: the steps plus what they share (the branch, the gh answer, refs)."""

    def __init__(
        self,
        issue: str | int,
        *,
        cwd: str | os.PathLike[str] | None,
        pr: str | int | None,
        branch: str | None,
        branch_from: str,
        offline: bool,
        gh_repo: str | None,
        environ: Mapping[str, str] | None,
        lookups: Lookups | None,
    ):
        self.issue = parse_issue(issue)
        self.number = int(self.issue)
        self.cwd = cwd
        self.pr = pr
        self.branch_arg = branch
        self.branch_from = branch_from
        self.offline = offline
        self.gh_repo = gh_repo
        self.environ = os.environ if environ is None else environ
        self.lookups = Lookups(cwd) if lookups is None else lookups
        self._branch: tuple[str | None, str] | None = None
        self._gh_answer: tuple[list[dict[str, Any]] | None, dict[str, str], str] | None = None

    # -- shared lookups ----------------------------------------------------------------

    def branch(self) -> tuple[str | None, str]:
        """(the issue's branch or None, where it came from / why there is none)."""
        if self._branch is None:
            if self.branch_arg:
                self._branch = (self.branch_arg, self.branch_from)
            else:
                try:
                    name = branch_of_issue(self.issue, self.cwd)
                    entry = read_worktree_entry(self.issue, self.cwd) or {}
                    origin = (
                        "the worktree registry" if entry.get("branch") == name else "the st.worktree.branch template"
                    )
                    self._branch = (name, origin)
                except GitstError as exc:
                    self._branch = (None, f"cannot tell the issue's branch: {exc.message}")
        return self._branch

    # -- the steps -----------------------------------------------------------------------

    def step_arg(self) -> Step:
        if self.pr is None:
            return Step("arg", SKIPPED, "not given")
        number = parse_pr_number(str(self.pr), "--pr")
        return Step("arg", ANSWER, f"--pr {number}", [Candidate(number, evidence=f"--pr {number}")])

    def step_env(self) -> Step:
        raw = self.environ.get("ST_PR_NUMBER", "")
        if raw.strip() == "":
            return Step("env", SKIPPED, "ST_PR_NUMBER is not set")
        owner = self.environ.get("ST_PR_ISSUE", "").strip()
        if owner:
            match = _PR_NUMBER_RE.match(owner)
            if not match or str(int(match.group(1))) != self.issue:
                return Step(
                    "env",
                    SKIPPED,
                    f"ST_PR_NUMBER={raw.strip()} is for issue {owner!r} (ST_PR_ISSUE), not issue {self.issue}",
                )
        try:
            number = parse_pr_number(raw, "ST_PR_NUMBER")
        except UsageError:
            return Step("env", NO_ANSWER, f"ST_PR_NUMBER={raw!r} is not a PR number")
        why = f"ST_PR_NUMBER={number}" + (f" (ST_PR_ISSUE={owner})" if owner else "")
        return Step("env", ANSWER, why, [Candidate(number, evidence=why)])

    def step_pipeline(self) -> Step:
        if not self.lookups.may_have_pipeline_file(self.issue):
            return Step("pipeline", NO_ANSWER, self.lookups.no_pipeline_file(self.issue))
        try:
            number, why = pr_number_lookup(self.issue, self.cwd)
        except GitstError as exc:
            return Step("pipeline", SKIPPED, f"cannot read the pipeline state: {exc.message}")
        if number is None:
            return Step("pipeline", NO_ANSWER, why)
        return Step("pipeline", ANSWER, why, [Candidate(number, evidence=why)])

    def _gh(self) -> tuple[list[dict[str, Any]] | None, dict[str, str], str]:
        """(open PRs or None, notes, why not): one ``gh pr list`` shared by steps 4-6."""
        if self._gh_answer is None:
            if self.offline:
                self._gh_answer = (None, {}, "--offline")
            else:
                try:
                    prs, notes = self._open_prs()
                    self._gh_answer = (prs, notes, "")
                except GhUnavailable as exc:
                    self._gh_answer = (None, {}, exc.reason)
        return self._gh_answer

    def _open_prs(self) -> tuple[list[dict[str, Any]], dict[str, str]]:
        notes: dict[str, str] = {}
        fields = list(GH_FIELDS)
        base = ["pr", "list", "--state", "open", "--limit", str(GH_LIMIT)]
        if self.gh_repo:
            base += ["--repo", self.gh_repo]
        try:
            data = gh_json([*base, "--json", ",".join(fields)], self.cwd)
        except GhUnavailable as exc:
            if "Unknown JSON field" not in exc.stderr or "closingIssuesReferences" not in exc.stderr:
                raise
            fields.remove("closingIssuesReferences")
            notes["gh-closing-references"] = "this gh does not know closingIssuesReferences (upgrade gh)"
            data = gh_json([*base, "--json", ",".join(fields)], self.cwd)
        if not isinstance(data, list):
            raise GhUnavailable("gh pr list did not print a JSON list")
        prs = [pr for pr in data if isinstance(pr, dict) and is_pr_number(pr.get("number"))]
        if len(data) >= GH_LIMIT:
            notes["limit"] = f" (only the first {GH_LIMIT} open PRs were listed)"
        return prs, notes

    def step_gh_closing(self) -> Step:
        prs, notes, why_not = self._gh()
        if prs is None:
            return Step("gh-closing-references", SKIPPED, why_not)
        if "gh-closing-references" in notes:
            return Step("gh-closing-references", SKIPPED, notes["gh-closing-references"])
        found = [
            _candidate(pr, f"PR #{pr['number']} lists issue #{self.issue} in closingIssuesReferences")
            for pr in prs
            if closes_by_reference(pr, self.number)
        ]
        return _decide(
            "gh-closing-references",
            found,
            f"none of {len(prs)} open PRs has issue #{self.issue} in closingIssuesReferences" + notes.get("limit", ""),
            f"open PRs close issue #{self.issue}",
        )

    def step_gh_keywords(self) -> Step:
        prs, _, why_not = self._gh()
        if prs is None:
            return Step("gh-body-keywords", SKIPPED, why_not)
        found = []
        for pr in prs:
            body = pr.get("body")
            if not isinstance(body, str):
                body = ""
            phrases = closing_references(body, self.number, _pr_repo(pr))
            if phrases:
                found.append(_candidate(pr, f"PR #{pr['number']} body says {phrases[0]!r}"))
        return _decide(
            "gh-body-keywords",
            found,
            f"no open PR body has a closing keyword for #{self.issue}",
            f"open PR bodies close issue #{self.issue}",
        )

    def step_gh_head(self) -> Step:
        prs, _, why_not = self._gh()
        if prs is None:
            return Step("gh-head-branch", SKIPPED, why_not)
        branch, origin = self.branch()
        if branch is None:
            return Step("gh-head-branch", SKIPPED, origin)
        found = [
            _candidate(pr, f"PR #{pr['number']} has head {branch} (branch from {origin})")
            for pr in prs
            if pr.get("headRefName") == branch
        ]
        if len(found) > 1:
            found = self._narrow_by_tip(found, prs, branch) or found
        return _decide(
            "gh-head-branch",
            found,
            f"no open PR has head {branch} (branch from {origin})",
            f"open PRs have head {branch}",
        )

    def _narrow_by_tip(self, found: list[Candidate], prs: list[dict[str, Any]], branch: str) -> list[Candidate]:
        """Several PRs share the head name (forks): keep those whose head is our branch's tip."""
        try:
            tips = set(self.lookups.tips(branch).values())
        except GitstError:
            return []
        oids = {pr["number"]: pr.get("headRefOid") for pr in prs}
        kept = [c for c in found if oids.get(c.number) in tips]
        for cand in kept:
            cand.evidence += " and its headRefOid is the branch's tip"
        return kept

    def step_pull_refs(self) -> Step:
        branch, origin = self.branch()
        if branch is None:
            return Step("pull-refs", SKIPPED, origin)
        try:
            tips = self.lookups.tips(branch)
            heads = self.lookups.pull_heads()
        except GitstError as exc:
            return Step("pull-refs", SKIPPED, exc.message)
        if not tips:
            return Step("pull-refs", NO_ANSWER, f"branch {branch} (from {origin}) has no local or remote-tracking ref")
        if not heads:
            # the command is the end of the line, unquoted, so that it can be pasted as is; it
            # fetches to refs/pull/*, which this step reads without any configured refspec
            return Step(
                "pull-refs",
                NO_ANSWER,
                f"no refs/pull/*/head fetched; fetch them with: git fetch {self._pull_remote(branch, tips)} "
                "'+refs/pull/*/head:refs/pull/*/head'",
            )
        by_oid: dict[str, list[str]] = {}
        for ref, oid in tips.items():
            by_oid.setdefault(oid, []).append(ref)
        found = [
            Candidate(
                head.number,
                head=branch,
                evidence=f"{head.ref} is {head.oid[:12]}, the tip of {', '.join(by_oid[head.oid])}",
            )
            for head in heads
            if head.oid in by_oid
        ]
        return _decide(
            "pull-refs",
            found,
            f"none of {len(heads)} fetched PR heads is the tip of {branch} (from {origin})",
            f"fetched PR heads are the tip of {branch}",
        )

    def _pull_remote(self, branch: str, tips: dict[str, str]) -> str:
        """The remote to fetch PR heads from, shell-quoted: the one the branch was fetched
        from, else st.remote, else origin."""
        prefix, suffix = "refs/remotes/", "/" + branch
        remote = next(
            (r[len(prefix) : -len(suffix)] for r in tips if r.startswith(prefix) and r.endswith(suffix)), None
        )
        if not remote:
            remote = optional_str_setting("remote", self.cwd) or "origin"
        return shlex.quote(remote)

    def run(self) -> Resolution:
        stages = (
            self.step_arg,
            self.step_env,
            self.step_pipeline,
            self.step_gh_closing,
            self.step_gh_keywords,
            self.step_gh_head,
            self.step_pull_refs,
        )
        steps: list[Step] = []
        for stage in stages:
            step = stage()
            steps.append(step)
            if step.status in (ANSWER, AMBIGUOUS):
                break
        steps += [Step(src, NOT_RUN, "an earlier step decided") for src, _ in STEPS[len(steps) :]]
        return Resolution(self.issue, steps)


def resolve(
    issue: str | int,
    *,
    cwd: str | os.PathLike[str] | None = None,
    pr: str | int | None = None,
    branch: str | None = None,
    branch_from: str = "--branch",
    offline: bool = False,
    gh_repo: str | None = None,
    environ: Mapping[str, str] | None = None,
    lookups: Lookups | None = None,
) -> Resolution:
    """Run the cascade for ``issue``. Bad ``issue``/``pr`` values raise UsageError (exit 2).

    ``branch_from`` says where a given ``branch`` came from (in the steps' reasons);
    ``lookups`` shares refs, PR heads and the pipeline listing between many issues."""
    return _Cascade(
        issue,
        cwd=cwd,
        pr=pr,
        branch=branch,
        branch_from=branch_from,
        offline=offline,
        gh_repo=gh_repo,
        environ=environ,
        lookups=lookups,
    ).run()


def failure_message(resolution: Resolution, *, explained: bool = False) -> tuple[str, str | None]:
    """(why the cascade gave no number, the fix) for stderr, with exit 1."""
    step = resolution.decisive
    if step is not None and step.status == AMBIGUOUS:
        lines = [f"{step.label}: {step.reason}; refusing to guess between:"]
        lines += [f"  {c.describe()}" for c in step.candidates]
        choices = ", ".join(str(c.number) for c in step.candidates)
        return "\n".join(lines), f"pass --pr N with the right one ({choices}), or close the PRs that do not belong"
    message = f"no PR found for issue {resolution.issue}"
    if not explained:
        message += " (run with --explain to see every step)"
    return message, "pass --pr N, or store it with `git st pipeline set " + resolution.issue + " pr_number N`"
