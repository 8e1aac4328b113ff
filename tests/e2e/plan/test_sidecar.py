"""The lock sidecar must be ignored and untracked before any write, in the main worktree and in
a linked one; the refusal says the exact fix; `git st init` applies it."""

from __future__ import annotations

from tests.support import git, plan_path, st, st_quick

FIX_IGNORE = "  fix: git st init --file .step/st-plan.jsonl   (or: echo /st-plan.jsonl.lock >> .step/.gitignore)"
FIX_TRACKED = (
    "  fix: git st init --file .step/st-plan.jsonl   (or: git rm --cached -- .step/st-plan.jsonl.lock && git commit)"
)


def _committed_plan_without_rule(repo):
    """A plan committed without any ignore rule (as an older tool or a hand-made file would)."""
    st_quick("init", cwd=repo)
    (repo / ".step/.gitignore").unlink()
    (repo / ".step/st-plan.jsonl.lock").unlink()
    git("add", ".step/st-plan.jsonl", cwd=repo)
    git("commit", "-qm", "plan without a rule", cwd=repo)


def _assert_refused(tree, args, expected_stderr):
    path = plan_path(tree)
    before = path.read_bytes()
    refused = st(*args, cwd=tree)
    assert refused.returncode == 2, refused
    assert refused.stderr.splitlines() == expected_stderr
    assert path.read_bytes() == before


def _assert_refused_then_fixed(tree):
    _assert_refused(
        tree,
        ["add", "--step", "A"],
        [
            (
                "error: lock sidecar .step/st-plan.jsonl.lock is not ignored by git; "
                "a write would leave it in `git status`"
            ),
            FIX_IGNORE,
        ],
    )
    assert not (tree / ".step/st-plan.jsonl.lock").exists()
    # doctor --repair-seq writes too: same refusal
    assert st("doctor", "--repair-seq", cwd=tree).returncode == 2

    fixed = st("init", cwd=tree)
    assert fixed.returncode == 0, fixed
    assert fixed.stdout.splitlines()[:2] == [
        "already initialized: .step/st-plan.jsonl",
        (
            "ignored .step/st-plan.jsonl.lock: added /st-plan.jsonl.lock /st-plan.jsonl.torn-* to .step/.gitignore "
            "(commit it so every clone and worktree inherits the rule)"
        ),
    ]
    assert st("add", "--step", "A", cwd=tree).returncode == 0
    assert "st-plan.jsonl.lock" not in git("status", "--porcelain", "--untracked-files=all", cwd=tree)

    # now the sidecar gets committed by force: refused as tracked, init untracks it
    git("add", "-f", ".step/st-plan.jsonl.lock", cwd=tree)
    git("commit", "-qm", "oops, the lock", cwd=tree)
    _assert_refused(
        tree,
        ["set-status", "st-001", "done"],
        [
            "error: lock sidecar .step/st-plan.jsonl.lock is tracked by git; the plan lock must never be committed",
            FIX_TRACKED,
        ],
    )
    untracked = st("init", cwd=tree)
    assert untracked.returncode == 0, untracked
    assert "untracked .step/st-plan.jsonl.lock (git rm --cached; commit the removal)" in untracked.stdout.splitlines()
    assert git("ls-files", ".step", cwd=tree).splitlines() == [".step/st-plan.jsonl"]
    assert (tree / ".step/st-plan.jsonl.lock").exists()  # the file itself stays
    assert st("set-status", "st-001", "done", cwd=tree).returncode == 0


def test_sidecar_refused_and_fixed_in_the_main_worktree(repo):
    _committed_plan_without_rule(repo)
    _assert_refused_then_fixed(repo)


def test_sidecar_refused_and_fixed_in_a_linked_worktree(repo, tmp_path):
    _committed_plan_without_rule(repo)
    linked = tmp_path / "linked"
    git("worktree", "add", "-q", "-b", "feature", str(linked), cwd=repo)
    assert (linked / ".step/st-plan.jsonl").exists()
    _assert_refused_then_fixed(linked)
    # the rule init wrote is a committed-able file inside the linked worktree, not in main's
    assert (linked / ".step/.gitignore").exists() and not (repo / ".step/.gitignore").exists()


def test_the_rule_travels_with_the_commit_to_new_worktrees(repo, tmp_path):
    assert st("init", cwd=repo).returncode == 0
    git("add", ".step", cwd=repo)
    git("commit", "-qm", "plan and its ignore rule", cwd=repo)
    linked = tmp_path / "other"
    git("worktree", "add", "-q", "-b", "other", str(linked), cwd=repo)
    result = st("add", "--step", "Works at once", cwd=linked)
    assert result.returncode == 0, result
    assert git("status", "--porcelain", cwd=linked).splitlines() == [" M .step/st-plan.jsonl"]


def test_outside_git_no_rule_is_needed(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert st("add", "--step", "No git here", cwd=plain).returncode == 0
    assert st("init", cwd=plain).stdout.splitlines()[0] == "already initialized: .step/st-plan.jsonl"
    assert not (plain / ".step/.gitignore").exists()
