"""`git st sync` and the CI template (docs/hooks.md, "Keeping PRs mergeable"): two PR
branches that both appended to the plan; after one is merged on the "host" (a bare remote,
merged with git's own merge — no custom driver, as GitHub or GitLab merge), sync makes the
other mergeable again. Real clones, real merges, the real CLI; `gh` is a small fake."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import yaml

from tests.e2e.remote.conftest import clone
from tests.support import git, st

ENV = {"ST_SESSION_ID": "dev", "ST_UPDATE_PLAN": "0"}


def host_merge(bare: Path, branch: str) -> str:
    """Merge ``branch`` into main in the bare remote the way a git host does: git's own
    merge-ort (`git merge-tree --write-tree`), no merge driver configured."""
    tree = git("merge-tree", "--write-tree", "main", branch, cwd=bare)
    commit = git("commit-tree", tree, "-p", "main", "-p", branch, "-m", f"Merge {branch}", cwd=bare)
    git("update-ref", "refs/heads/main", commit, cwd=bare)
    return commit


def host_conflicts(bare: Path, branch: str) -> int:
    """Exit code of the host's merge of ``branch`` into main: 0 clean, 1 conflicts."""
    import subprocess

    return subprocess.run(
        ["git", "merge-tree", "--write-tree", "main", branch], cwd=bare, capture_output=True, check=False
    ).returncode


def plan_project(tmp_path: Path, bare: Path) -> Path:
    """main holds a plan, the .gitattributes line of `hooks install`, and app.txt."""
    dev = clone(bare.as_uri(), tmp_path / "dev")
    assert st("init", cwd=dev, env=ENV).returncode == 0
    assert st("add", "--step", "Set up", cwd=dev, env=ENV).returncode == 0
    assert st("hooks", "install", cwd=dev, env=ENV).returncode == 0
    (dev / "app.txt").write_text("one\ntwo\nthree\n")
    git("add", "-A", cwd=dev)
    git("commit", "-q", "-m", "plan", cwd=dev)
    git("push", "-q", "origin", "main", cwd=dev)
    return dev


def branch_with(dev: Path, name: str, step: str | None, app: str | None = None) -> None:
    git("switch", "-q", "-c", name, "origin/main", cwd=dev)
    if step:
        assert st("add", "--step", step, cwd=dev, env=ENV).returncode == 0
    if app is not None:
        (dev / "app.txt").write_text(app)
    (dev / f"{name}.txt").write_text(name + "\n")
    git("add", "-A", cwd=dev)
    git("commit", "-q", "-m", name, cwd=dev)
    git("push", "-q", "origin", name, cwd=dev)
    git("switch", "-q", "main", cwd=dev)


def test_sync_makes_the_second_pr_mergeable_on_a_host_without_the_driver(bare, tmp_path):
    """Must show 4."""
    dev = plan_project(tmp_path, bare)
    branch_with(dev, "pr-a", "Write the parser")
    branch_with(dev, "pr-b", "Write the docs")
    host_merge(bare, "pr-a")
    assert host_conflicts(bare, "pr-b") == 1  # the problem: both appended to the plan
    # An agent's fresh clone, no `hooks install`: no driver configured here.
    agent = clone(bare.as_uri(), tmp_path / "agent")
    git("switch", "-q", "pr-b", cwd=agent)
    assert git("config", "--get", "merge.gitst-plan.driver", cwd=agent, check=False) == ""
    before = git("rev-parse", "pr-b", cwd=bare)
    synced = st("sync", "main", cwd=agent, env=ENV)
    assert synced.returncode == 0, synced
    assert "pr-b: merged origin/main into it with the plan merge driver" in synced.stdout
    assert ".step/st-plan.jsonl" in synced.stdout and "not pushed" in synced.stdout
    assert git("rev-parse", "pr-b", cwd=bare) == before  # nothing pushed unless asked
    # git's own merge, as a host runs it, of main and the synced branch: no conflict.
    assert git("merge-tree", "--write-tree", "origin/main", "HEAD", cwd=agent)
    assert host_conflicts_local(agent) == 0
    doctor = st("doctor", cwd=agent, env=ENV)
    assert doctor.returncode == 0, doctor
    titles = [item["step"] for item in __import__("json").loads(st("export", cwd=agent, env=ENV).stdout)["items"]]
    assert {"Set up", "Write the parser", "Write the docs"} <= set(titles)
    pushed = st("sync", "main", "--push", cwd=agent, env=ENV)
    assert pushed.returncode == 0 and "pushed to origin" in pushed.stdout, pushed
    assert host_conflicts(bare, "pr-b") == 0
    host_merge(bare, "pr-b")
    main = clone(bare.as_uri(), tmp_path / "main-after")
    assert st("doctor", cwd=main, env=ENV).returncode == 0


def host_conflicts_local(path: Path) -> int:
    import subprocess

    return subprocess.run(
        [
            "git",
            "-c",
            "merge.gitst-plan.driver=git merge-file --quiet %A %O %B",
            "merge-tree",
            "--write-tree",
            "origin/main",
            "HEAD",
        ],
        cwd=path,
        capture_output=True,
        check=False,
    ).returncode


def test_sync_refuses_conflicts_outside_the_plan_and_writes_nothing(bare, tmp_path):
    dev = plan_project(tmp_path, bare)
    branch_with(dev, "pr-a", "Parser", app="one\nTWO\nthree\n")
    branch_with(dev, "pr-b", "Docs", app="one\n2\nthree\n")
    host_merge(bare, "pr-a")
    agent = clone(bare.as_uri(), tmp_path / "agent")
    git("switch", "-q", "pr-b", cwd=agent)
    head = git("rev-parse", "HEAD", cwd=agent)
    refused = st("sync", "main", "--push", cwd=agent, env=ENV)
    assert refused.returncode == 3, refused
    assert "conflicts with origin/main outside the plan: app.txt" in refused.stderr
    assert git("rev-parse", "HEAD", cwd=agent) == head
    assert git("status", "--porcelain", "--untracked-files=no", cwd=agent) == ""
    assert not (agent / ".git" / "MERGE_HEAD").exists()


def test_sync_rebase_and_nothing_to_do(bare, tmp_path):
    dev = plan_project(tmp_path, bare)
    branch_with(dev, "pr-a", "Parser")
    branch_with(dev, "pr-b", "Docs")
    agent = clone(bare.as_uri(), tmp_path / "agent")
    git("switch", "-q", "pr-b", cwd=agent)
    same = st("sync", cwd=agent, env=ENV)  # main has not moved
    assert same.returncode == 0 and "already contains origin/main" in same.stdout, same
    host_merge(bare, "pr-a")
    rebased = st("sync", "--rebase", "--push", cwd=agent, env=ENV)
    assert rebased.returncode == 0 and "rebased it onto origin/main" in rebased.stdout, rebased
    assert git("rev-parse", "origin/main", cwd=agent) in git("rev-list", "HEAD", cwd=agent).split()
    assert host_conflicts(bare, "pr-b") == 0
    assert st("doctor", cwd=agent, env=ENV).returncode == 0


def run_ci_template(bare: Path, tmp_path: Path, open_prs: list[str]):
    """The template's script part, run as a GitHub runner would: in a fresh clone of ``bare``
    (what actions/checkout leaves: main checked out), with a fake `gh` listing ``open_prs``."""
    import subprocess

    fake = tmp_path / "fakebin"
    fake.mkdir()
    gh = fake / "gh"
    gh.write_text(
        "#!/bin/sh\n"
        "# what `gh pr list --base main --state open --json headRefName,isCrossRepository --jq …` prints\n"
        '[ "$1 $2" = "pr list" ] || { echo "fake gh: unexpected $*" >&2; exit 2; }\n'
        f"printf '{''.join(name + chr(92) + 'n' for name in open_prs)}'\n"
    )
    gh.chmod(gh.stat().st_mode | stat.S_IXUSR)
    runner = clone(bare.as_uri(), tmp_path / "runner")
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    env = {
        **os.environ,
        "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}",
        "BASE": "main",
        "RUNNER_TEMP": str(temp),
        "GH_TOKEN": "fake",
    }
    return subprocess.run(
        ["bash", "-c", _template_script()],
        cwd=runner,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


PINNED = "git+https://example.com/team/gitst@0123456789abcdef0123456789abcdef01234567"


def _template_script() -> str:
    text = st("ci-template", "github", "--install", PINNED, cwd=Path.cwd()).stdout
    workflow = yaml.safe_load(text)
    steps = workflow["jobs"]["sync"]["steps"]
    return next(step["run"] for step in steps if step.get("id") == "sync")


def test_ci_template_syncs_only_the_prs_whose_only_conflicts_are_plan_files(bare, tmp_path):
    """Must show 5: the template's script part, run against a bare remote with three open
    branches after main moved: plan-only conflicts are synced and pushed, a clean PR and a PR
    with a code conflict are left alone (the latter named in a warning)."""
    dev = plan_project(tmp_path, bare)
    branch_with(dev, "plan-only", "Docs")
    branch_with(dev, "clean", None)
    branch_with(dev, "code-conflict", "Parser", app="one\n2\nthree\n")
    branch_with(dev, "landed", "Release", app="one\nTWO\nthree\n")
    host_merge(bare, "landed")
    assert [host_conflicts(bare, b) for b in ("plan-only", "clean", "code-conflict")] == [1, 0, 1]
    tips = {b: git("rev-parse", b, cwd=bare) for b in ("clean", "code-conflict")}
    proc = run_ci_template(bare, tmp_path, ["plan-only", "clean", "code-conflict"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "::warning::code-conflict conflicts with main outside the plan" in proc.stdout
    assert "clean merges cleanly with origin/main as it is: nothing to do" in proc.stdout
    assert host_conflicts(bare, "plan-only") == 0  # synced and pushed
    assert git("merge-base", "--is-ancestor", "main", "plan-only", cwd=bare, check=False) == ""
    assert {b: git("rev-parse", b, cwd=bare) for b in tips} == tips  # the other two untouched
    check = clone(bare.as_uri(), tmp_path / "check")
    git("switch", "-q", "plan-only", cwd=check)
    assert st("doctor", cwd=check, env=ENV).returncode == 0


def test_ci_template_is_package_data_and_valid_yaml():
    text = st("ci-template", "github", "--install", PINNED, cwd=Path.cwd()).stdout
    from importlib.resources import files

    template = files("gitst.plan").joinpath("templates/github-sync.yml").read_text(encoding="utf-8")
    assert text == template.replace("@GITST_INSTALL@", f'"{PINNED}"')
    workflow = yaml.safe_load(text)
    assert workflow["on"] if "on" in workflow else workflow[True]  # YAML 1.1 reads `on:` as True
    assert 'git st sync "$BASE" --push --plan-conflicts-only' in _template_script()


def _install_step(text: str) -> dict:
    steps = yaml.safe_load(text)["jobs"]["sync"]["steps"]
    return next(step for step in steps if step.get("name") == "Install gitst")


def test_ci_template_installs_gitst_from_where_the_user_pinned_it(repo):
    """Issue 20.10: never `pip install gitst` from a package index (no release exists there and
    the name could be anyone's): the source is --install, else st.ci.install; without either
    (and this checkout is no URL a runner can reach) nothing is printed, exit 2, with the fix."""
    refused = st("ci-template", "github", cwd=repo)
    assert refused.returncode == 2 and refused.stdout == "", refused
    assert "fix: git st ci-template github --install 'git+https://" in refused.stderr
    assert "git config st.ci.install" in refused.stderr and "Traceback" not in refused.stderr

    step = _install_step(st("ci-template", "github", "--install", PINNED, cwd=repo).stdout)
    assert step["env"] == {"GITST_INSTALL": PINNED}
    assert step["run"] == 'python -m pip install --quiet "$GITST_INSTALL"'

    git("config", "st.ci.install", PINNED.replace("0123", "4567"), cwd=repo)
    configured = st("ci-template", "github", cwd=repo)
    assert configured.returncode == 0, configured
    assert _install_step(configured.stdout)["env"] == {"GITST_INSTALL": PINNED.replace("0123", "4567")}
    assert "git config st.ci.install" in configured.stderr

    for bad, words in (
        ("gitst", "names a package, not a pinned source"),
        ("gitst>=0.1", "names a package, not a pinned source"),
        ("./gitst", "is a path on this machine"),
        ("git+https://x/y@${{ secrets.TOKEN }}", "cannot go into a workflow"),
        ("git+https://x/y@1\nrun: evil", "cannot go into a workflow"),
    ):
        result = st("ci-template", "github", "--install", bad, cwd=repo)
        assert result.returncode == 2 and result.stdout == "" and words in result.stderr, (bad, result)


def test_a_plan_contradiction_is_refused_after_one_driver_run_and_undone(bare, tmp_path):
    """Both branches add the item id `docs` (a contradiction the driver cannot merge): sync
    says so (exit 3) with the branch as it was — the merge undone, no MERGE_HEAD — and git
    ran the plan driver once (the merge itself), not a trial merge first."""
    dev = plan_project(tmp_path, bare)
    for name, step in (("pr-a", "Write the docs"), ("pr-b", "Review the docs")):
        git("switch", "-q", "-c", name, "origin/main", cwd=dev)
        assert st("add", "--id", "docs", "--step", step, cwd=dev, env=ENV).returncode == 0
        git("commit", "-q", "-am", name, cwd=dev)
        git("push", "-q", "origin", name, cwd=dev)
        git("switch", "-q", "main", cwd=dev)
    host_merge(bare, "pr-a")
    agent = clone(bare.as_uri(), tmp_path / "agent")
    git("switch", "-q", "pr-b", cwd=agent)
    head = git("rev-parse", "HEAD", cwd=agent)
    runs = tmp_path / "driver-runs"
    wrapper = tmp_path / "counting" / "git-st"
    wrapper.parent.mkdir()
    real = __import__("shutil").which("git-st")
    wrapper.write_text(f'#!/bin/sh\n[ "$1" = merge-driver ] && echo x >> "{runs}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    env = {**ENV, "PATH": f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}"}
    refused = st("sync", "main", cwd=agent, env=env)
    assert refused.returncode == 3, refused
    assert "the plan merge driver cannot merge .step/st-plan.jsonl of pr-b and origin/main" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert len(runs.read_text().splitlines()) == 1  # the merge's own run; no trial merge with the driver first
    assert git("rev-parse", "HEAD", cwd=agent) == head
    assert git("status", "--porcelain", "--untracked-files=no", cwd=agent) == ""
    assert not (agent / ".git" / "MERGE_HEAD").exists()
