"""Everything the tests share: running real git and the real CLI in temporary directories,
session environments, and reading plan and state files the way a reviewer would."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gitst.schemas.catalog import validator
from tests.reference_schema import reference_validator

REPO_ROOT = Path(__file__).resolve().parents[1]
# the test interpreter's site-packages (the dev venv's), for :func:`write_wrapper`'s `-S` interpreter
_SITE_PACKAGES = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
FIXTURES = REPO_ROOT / "tests" / "fixtures"

# What makes a Python process the tests start measure its coverage ([tool.coverage.run]
# patch = ["subprocess"]): coverage imports threading, typing, dataclasses, socket... before
# the program runs, so a probe of which modules a program imports runs without it.
COVERAGE_ENV = ("COVERAGE_PROCESS_CONFIG", "COVERAGE_PROCESS_START")


# AF_UNIX socket paths hold 107 bytes: a resident process's runtime dir goes under /tmp, never
# under a long TMPDIR a CI runner may set (docs/resident.md: a longer path is never used)
SHORT_TMP = "/tmp" if os.path.isdir("/tmp") else None


def env_without_coverage(env: dict | None = None) -> dict:
    """``env`` (default: this environment) without coverage's variables (COVERAGE_ENV)."""
    clean = dict(os.environ if env is None else env)
    for name in COVERAGE_ENV:
        clean.pop(name, None)
    return clean


def run_shared_dir(tmp_path_factory) -> Path:
    """The directory every xdist worker of this run shares: the parent of each worker's base
    temp (pytest-xdist's documented pattern for a setup made once a run, guarded by a file
    lock there); without xdist, the run's own base temp."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    args: list

    def __repr__(self) -> str:  # shown by pytest when an assertion fails
        return (
            f"Result(rc={self.returncode}, args={self.args!r}\n"
            f"--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr})"
        )


def git(
    *args: str,
    cwd: str | os.PathLike,
    check: bool = True,
    env: dict | None = None,
    input: str | None = None,  # noqa: A002 - mirrors subprocess.run
) -> str:
    """Run real git; return stdout (stripped of the final newline)."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, input=input, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout.rstrip("\n")


def run(
    args: list[str],
    *,
    cwd: str | os.PathLike,
    env: dict | None = None,
    input: str | None = None,  # noqa: A002 - mirrors subprocess.run
    timeout: float = 300,  # a deadline for a hang, never a speed test: generous under load
    file_size_limit: int | None = None,
) -> Result:
    """Run any command; capture text output. ``file_size_limit`` (bytes): the command runs
    under ``RLIMIT_FSIZE``, so any write past that size fails with EFBIG - a full disk without
    root, a loop device or LD_PRELOAD (Python, and so git started by it, ignore SIGXFSZ)."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    preexec = None
    if file_size_limit is not None:
        # unmeasured: coverage could not write its data file under the limit (a traceback at exit)
        full_env = env_without_coverage(full_env)

        def preexec() -> None:
            import resource
            import signal

            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))

    proc = subprocess.run(
        args,
        cwd=cwd,
        capture_output=True,
        text=True,
        env=full_env,
        input=input,
        timeout=timeout,
        check=False,
        preexec_fn=preexec,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr, list(args))


def st(
    *args: str,
    cwd: str | os.PathLike,
    env: dict | None = None,
    input: str | None = None,  # noqa: A002 - mirrors subprocess.run
    timeout: float = 300,
    file_size_limit: int | None = None,
) -> Result:
    """Run the real CLI as `git-st ARGS` (the wrapper the session fixture put first on PATH)."""
    return run(["git-st", *args], cwd=cwd, env=env, input=input, timeout=timeout, file_size_limit=file_size_limit)


def git_st(
    *args: str,
    cwd: str | os.PathLike,
    env: dict | None = None,
    input: str | None = None,  # noqa: A002 - mirrors subprocess.run
) -> Result:
    """Run the real CLI the way users do: `git st ARGS` (git finds git-st on PATH)."""
    return run(["git", "st", *args], cwd=cwd, env=env, input=input)


def run_on_pty(args: list[str], cwd, env: dict, columns: int = 60) -> str:
    """Run ``args`` with stdout and stderr on a pseudo-terminal; what the terminal got."""
    import fcntl
    import pty
    import select
    import struct
    import termios
    import time

    leader, follower = pty.openpty()

    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    full_env = {**os.environ, **env, "TERM": "xterm-256color"}
    full_env.pop("COLUMNS", None)
    proc = subprocess.Popen(args, cwd=cwd, env=full_env, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    chunks = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                data = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    proc.wait(timeout=30)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def write_wrapper(bindir: Path, name: str = "git-st") -> Path:
    """An executable that runs this checkout's gitst with the test interpreter, started as an
    installed gitst's interpreter starts: without the dev venv's editable-install finder, which
    its ``site`` would import at every start (pathlib, re, urllib.parse: ~16 ms of CPU, paid by
    each of the suite's thousands of `git st` processes). ``-S`` skips ``site``; the wrapper
    puts back what ``site`` gives an installed gitst: the venv's prefix, its site-packages and
    a ``sitecustomize`` on the path (a test hides a module through one)."""
    script = bindir / name
    script.write_text(
        f"#!{sys.executable} -S\n"
        "import sys\n"
        f"sys.prefix = sys.exec_prefix = {sys.prefix!r}\n"
        f"sys.path.insert(0, {str(REPO_ROOT)!r})\n"
        f"sys.path.extend({_SITE_PACKAGES!r})\n"
        "import site\n"
        "site.execsitecustomize()\n"
        f"path = {str(REPO_ROOT / 'bin' / 'git-st')!r}\n"
        "with open(path) as script:\n"
        "    exec(compile(script.read(), path, 'exec'), {'__name__': '__main__'})\n"
    )
    script.chmod(0o755)
    return script


def init_repo(path: Path, *, commit: bool = True) -> Path:
    """A fresh real repository with one commit on `main`."""
    path.mkdir(parents=True, exist_ok=True)
    git("init", "-q", "-b", "main", str(path), cwd=path.parent)
    if commit:
        (path / "README").write_text("test repo\n")
        git("add", "README", cwd=path)
        git("commit", "-q", "-m", "initial", cwd=path)
    return path


def ok(result):
    """``result`` (a tests.helpers.Result), after asserting it exited 0."""
    assert result.returncode == 0, result
    return result


def mutate(repo: Path, *args: str) -> None:
    """A plan mutation through the real CLI entry point, run in this process.

    Setting up branches with many plan mutations is most of these tests' work; an
    interpreter start per mutation would dominate their time. The hooks, merges and rebases
    under test still run as real processes started by git.
    """
    st_quick(*args, cwd=repo)


def session_env(session: str, pid: int | None = None, **extra: str) -> dict:
    """Environment of a session: its id and its session pid (default: this live test process)."""
    env = {"ST_SESSION_ID": session, "ST_SESSION_PID": str(pid if pid is not None else os.getpid())}
    env.update(extra)
    return env


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def process_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs: no such process, or a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def process_ends(pid: int, deadline: float = 60.0) -> bool:
    """True once ``pid`` no longer runs, waiting up to ``deadline`` seconds: a SIGKILL is
    delivered when the kernel next runs the process, which on a loaded box is not at once."""
    import time

    end = time.monotonic() + deadline
    while not process_gone(pid):
        if time.monotonic() >= end:
            return False
        time.sleep(0.05)
    return True


def jsonl(*values: object) -> bytes:
    """The JSONL stream of ``values``: one JSON text a line, each ending in a newline."""
    return b"".join(json.dumps(value).encode() + b"\n" for value in values)


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def assert_valid(record: dict, schema: str) -> None:
    """The record matches its schema in both validators (fast and reference)."""
    assert validator(schema).is_valid(record), [e.message for e in validator(schema).errors(record)]
    assert reference_validator(schema).is_valid(record)


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file below ``directory`` (relative path -> content); symlinks as their target."""
    result = {}
    if not Path(directory).exists():
        return result
    for path in sorted(Path(directory).rglob("*")):
        rel = str(path.relative_to(directory))
        if path.is_symlink():
            result[rel] = b"-> " + os.readlink(path).encode()
        elif path.is_file():
            result[rel] = path.read_bytes()
    return result


def reclaim_log(state: Path) -> list[dict]:
    path = Path(state) / "locks" / "reclaims.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


PLAN = Path(".step/st-plan.jsonl")


def plan_path(root: Path) -> Path:
    return Path(root) / PLAN


def records(path: Path) -> list[dict]:
    """Every line of a plan file as JSON (fails loudly on a line that is not JSON)."""
    return [json.loads(line) for line in Path(path).read_bytes().splitlines() if line.strip()]


def events(path: Path) -> list[dict]:
    return [r for r in records(path) if r["lane"] == "event"]


def checkpoints(path: Path) -> list[dict]:
    return [r for r in records(path) if r["lane"] == "checkpoint"]


def update_plan_line(stdout: str) -> dict:
    lines = stdout.splitlines()
    assert lines and lines[-1].startswith("update_plan: "), stdout
    return json.loads(lines[-1][len("update_plan: ") :])


def show_json(st, cwd, *extra) -> list[dict]:
    result = st("show", "--format", "json", *extra, cwd=cwd)
    assert result.returncode == 0, result
    return json.loads(result.stdout)["items"]


def main_in(cwd, args: list[str], env: dict | None = None) -> tuple[int, str]:
    """``(exit code, stderr)`` of the CLI's own ``main(args)`` run in this process in ``cwd``
    with ``env`` added (unset again afterwards, as are the caches of what git answered)."""
    from gitst.cli.main import main
    from gitst.git import repo as git_repo

    saved_env = {name: os.environ.get(name) for name in (env or {})}
    old_cwd = os.getcwd()
    os.environ.update(env or {})
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
            rc = main(list(args))
    finally:
        os.chdir(old_cwd)
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        git_repo.clear_cache()
    return rc, err.getvalue()


def st_quick(*args: str, cwd, env: dict | None = None) -> None:
    """Run the CLI's own ``main()`` in this process — the same code path as ``git-st`` without
    an interpreter start-up. For *setting up* a plan; what a test checks goes through the real
    executable (``tests.helpers.st``)."""
    rc, err = main_in(cwd, list(args), env)
    assert rc == 0, (args, rc, err)


# --- hostile input: clones that commit links, a sentinel outside, clean refusals ----------


def clone_of(tmp_path: Path, name: str, build) -> Path:
    """A real ``git clone`` of a repository whose one commit ``build(origin)`` made (links,
    state files, anything git stores): what a user gets from a hostile remote."""
    origin = init_repo(tmp_path / f"{name}-origin")
    build(origin)
    git("add", "-A", cwd=origin)
    git("commit", "-q", "-m", "hostile", cwd=origin)
    clone = tmp_path / name
    git("clone", "-q", str(origin), str(clone), cwd=tmp_path)
    return clone


def make_sentinel(directory: Path) -> Path:
    """Files outside every repository a hostile clone may point at: one without its final
    newline (a "torn tail" to a careless writer), one secret, one empty directory."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "no-newline").write_bytes(b"outside data without a newline")
    (directory / "secret").write_text("SENTINEL-SECRET-4242\n")
    (directory / "empty-dir").mkdir(exist_ok=True)
    return directory


def assert_refused(result: Result, code: int) -> None:
    """A clean refusal: the documented exit code, ``error:`` with a ``fix:``, no traceback."""
    assert result.returncode == code, result
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result
    assert "error:" in result.stderr and "  fix: " in result.stderr, result


# --- a fake GitHub CLI: GitHub is the one service the tests cannot reach -------------------

OWNER, NAME = "acme", "widgets"

FAKE_GH = r'''#!{python}
"""A stand-in for GitHub's `gh`: reads its world from $FAKE_GH_WORLD (JSON)."""
import json, os, sys, time

world = json.load(open(os.environ["FAKE_GH_WORLD"]))
with open(world["log"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\n")
mode = world.get("mode", "ok")
if mode == "unauthenticated":
    sys.stderr.write("To get started with GitHub CLI, please run:  gh auth login\n"
                     "Alternatively, populate the GH_TOKEN environment variable "
                     "with a GitHub API authentication token.\n")
    sys.exit(4)
if mode == "failing":
    sys.stderr.write("HTTP 502: Bad Gateway (https://api.github.com/graphql)\n")
    sys.exit(1)
if mode == "no-github-remote":
    sys.stderr.write("none of the git remotes configured for this repository point to a known GitHub host. "
                     "To tell gh about a new GitHub host, please use `gh auth login`\n")
    sys.exit(1)
if mode == "hang":
    time.sleep(30)
if mode == "hang-with-child":  # gh that started a helper of its own, then hangs
    import subprocess
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with open(world["child_pid"], "w") as handle:
        handle.write(str(child.pid))
    time.sleep(60)
if mode == "garbage":
    print("<html>rate limited</html>")
    sys.exit(0)
args = sys.argv[1:]


def flag(name, default=None):
    """`--name VALUE` or `--name=VALUE`, as gh's flag parser takes them."""
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1:]
    return default


def fail(message, code=1):
    sys.stderr.write(message + "\n")
    sys.exit(code)


if " ".join(args[:2]) in world.get("fail", []):  # a GitHub outage of one command (HTTP 502)
    fail("HTTP 502: Bad Gateway (https://api.github.com/graphql)")
if args[:1] == ["pr"] and args[1:2] != ["list"] or args[:1] == ["__github__"]:
    import fcntl, subprocess
    from datetime import datetime, timezone

    lock = open(os.environ["FAKE_GH_WORLD"] + ".lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)  # agents call gh at once: one read-modify-write of the world at a time
    world = json.load(open(os.environ["FAKE_GH_WORLD"]))
    bare = world.get("remote")

    def git(*argv, check=True):
        env = dict(os.environ, GIT_AUTHOR_NAME="GitHub", GIT_AUTHOR_EMAIL="noreply@github.com",
                   GIT_COMMITTER_NAME="GitHub", GIT_COMMITTER_EMAIL="noreply@github.com")
        done = subprocess.run(["git", *argv], cwd=bare, env=env, capture_output=True, text=True)
        if check and done.returncode != 0:
            fail("fake gh: git %s: %s" % (" ".join(argv), done.stderr.strip()))
        return done

    def tip(branch):
        done = git("rev-parse", "--verify", "--quiet", "refs/heads/" + branch, check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    def save():
        with open(os.environ["FAKE_GH_WORLD"] + ".tmp", "w") as handle:
            json.dump(world, handle)
        os.replace(os.environ["FAKE_GH_WORLD"] + ".tmp", os.environ["FAKE_GH_WORLD"])

    def pr_of(number):
        for pr in world["prs"]:
            if str(pr["number"]) == str(number).lstrip("#"):
                if pr["state"] == "OPEN":
                    pr["headRefOid"] = tip(pr["headRefName"]) or pr["headRefOid"]
                return pr
        fail("GraphQL: Could not resolve to a PullRequest with the number of %s. (repository.pullRequest)" % number)

    def github_merges(pr, method):
        """What GitHub does: a merge commit (or one squashed commit) on the base, or no merge at all."""
        base, head = pr["baseRefName"], pr["headRefOid"]
        old = tip(base)
        tree = git("merge-tree", "--write-tree", old, head, check=False)
        if tree.returncode != 0:
            fail("X Pull request %s/%s#%d is not mergeable: the merge commit cannot be cleanly created."
                 % (world["owner"], world["name"], pr["number"]))
        message = "Merge pull request #%d from %s/%s" % (pr["number"], world["owner"], pr["headRefName"])
        parents = ["-p", old, "-p", head] if method == "merge" else ["-p", old]
        if method != "merge":
            message = "%s (#%d)" % (pr["title"], pr["number"])
        new = git("commit-tree", tree.stdout.split()[0], *parents, "-m", message).stdout.strip()
        git("update-ref", "refs/heads/" + base, new, old)
        pr.update(state="MERGED", mergedAt=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                  autoMergeRequest=None)

    verb = args[1]
    if args[0] == "__github__" and verb == "merge-queued":  # the checks passed: GitHub merges what waits
        for pr in world["prs"]:
            if pr["state"] == "OPEN" and pr.get("autoMergeRequest"):
                pr_of(pr["number"])
                github_merges(pr, pr["autoMergeRequest"]["mergeMethod"].lower())
    elif args[0] == "__github__" and verb == "merge":  # a person merges PR N (merge, squash or rebase)
        github_merges(pr_of(args[2]), args[3])
    elif args[0] == "__github__" and verb == "close":  # a person closes the PR unmerged
        pr_of(args[2]).update(state="CLOSED", autoMergeRequest=None)
    elif verb == "view":
        pr = pr_of(args[2])
        print(json.dumps({f: pr.get(f) for f in flag("--json").split(",")}, indent=2))
    elif verb == "create":
        base, head = flag("--base"), flag("--head")
        if not tip(head):
            fail("pull request create failed: GraphQL: Head sha can't be blank, Head ref must be a branch "
                 "(createPullRequest)")
        for pr in world["prs"]:  # a fork's PR from a branch of that name is another head
            if pr["headRefName"] == head and pr["state"] == "OPEN" and not pr.get("isCrossRepository"):
                fail('a pull request for branch "%s" into branch "%s" already exists:\n%s' % (head, base, pr["url"]))
        number = world.setdefault("next_number", 101)
        world["next_number"] = number + 1
        url = "https://github.com/%s/%s/pull/%d" % (world["owner"], world["name"], number)
        world["prs"].append({"number": number, "title": flag("--title"), "body": flag("--body"), "state": "OPEN",
                             "headRefName": head, "headRefOid": tip(head), "baseRefName": base, "url": url,
                             "closingIssuesReferences": [], "mergedAt": None, "autoMergeRequest": None,
                             "isCrossRepository": False})
        print(url)
    elif verb == "merge":
        pr = pr_of(args[2])
        method = next((m for m in ("merge", "squash", "rebase") if "--" + m in args), None)
        if method is None:
            fail("--merge, --rebase, or --squash required when not running interactively")
        if pr["state"] != "OPEN":
            fail("X Pull request %s/%s#%d was already %s" % (world["owner"], world["name"], pr["number"],
                                                           pr["state"].lower()))
        if world.get("push_before_merge"):  # somebody pushes to the PR's branch just before the merge
            git("update-ref", "refs/heads/" + pr["headRefName"],
                git("commit-tree", pr["headRefOid"] + "^{tree}", "-p", pr["headRefOid"], "-m", "theirs").stdout.strip())
            pr_of(pr["number"])
        expected = flag("--match-head-commit")
        if expected is not None and expected != pr["headRefOid"]:
            fail("GraphQL: Head branch was modified. Review and try the merge again. (mergePullRequest)")
        if world.get("checks_pending") and "--auto" in args:
            pr["autoMergeRequest"] = {"mergeMethod": method.upper()}
            print("! Pull request %s/%s#%d will be automatically merged via %s when all requirements are met"
                  % (world["owner"], world["name"], pr["number"], method))
        elif world.get("checks_pending"):
            fail("X Pull request %s/%s#%d is not mergeable: the base branch policy prohibits the merge.\n"
                 "To have the pull request merged after all the requirements have been met, add the `--auto` flag."
                 % (world["owner"], world["name"], pr["number"]))
        else:
            github_merges(pr, method)
            print("✓ Merged pull request %s/%s#%d" % (world["owner"], world["name"], pr["number"]))
    else:
        fail("unknown command %r for fake gh" % args)
    save()
    sys.exit(0)
if args[:2] != ["pr", "list"]:
    sys.stderr.write("unknown command %r for fake gh\n" % args)
    sys.exit(1)
fields = args[args.index("--json") + 1].split(",")
known = ["body", "closingIssuesReferences", "headRefName", "headRefOid", "isCrossRepository", "mergedAt", "number",
         "state", "title", "url"]
if mode == "old-gh":  # a gh of before 2021: neither field
    known.remove("closingIssuesReferences")
    known.remove("isCrossRepository")
for field in fields:
    if field not in known:
        sys.stderr.write('Unknown JSON field: "%s"\nAvailable fields:\n  %s\n' % (field, "\n  ".join(known)))
        sys.exit(1)
state = args[args.index("--state") + 1].upper() if "--state" in args else "OPEN"
limit = int(args[args.index("--limit") + 1]) if "--limit" in args else 30
head = flag("--head")
prs = [pr for pr in world["prs"] if (state == "ALL" or pr["state"] == state) and head in (None, pr["headRefName"])]
print(json.dumps([{f: pr.get(f, False if f == "isCrossRepository" else None) for f in sorted(fields)}
                  for pr in prs[:limit]], indent=2))
'''


def make_pr(
    number: int,
    *,
    head: str = "feature",
    oid: str = "0" * 40,
    body: str = "",
    closes=(),
    title: str | None = None,
    state: str = "OPEN",
    repo: tuple[str, str] = (OWNER, NAME),
    cross: bool = False,
) -> dict:
    """A PR as `gh pr list --json` prints it (closingIssuesReferences may name other repos;
    ``cross``: its head is a fork's branch)."""
    refs = []
    for ref in closes:
        owner, name, issue = ref if isinstance(ref, tuple) else (OWNER, NAME, ref)
        refs.append(
            {
                "id": f"I_kwDOB{issue:06d}",
                "number": issue,
                "repository": {"id": "R_kgDOBw1dGe", "name": name, "owner": {"id": "O_kgDOA", "login": owner}},
                "url": f"https://github.com/{owner}/{name}/issues/{issue}",
            }
        )
    return {
        "number": number,
        "title": title or f"PR {number}",
        "headRefName": head,
        "headRefOid": oid,
        "body": body,
        "state": state,
        "url": f"https://github.com/{repo[0]}/{repo[1]}/pull/{number}",
        "closingIssuesReferences": refs,
        "isCrossRepository": cross,
    }


class FakeGh:
    def __init__(self, root: Path):
        self.bindir = root / "gh-bin"
        self.bindir.mkdir()
        self.world_path = root / "gh-world.json"
        self.log = root / "gh-calls.log"
        self.child_pid = root / "gh-child.pid"  # where mode "hang-with-child" writes its helper's pid
        script = self.bindir / "gh"
        script.write_text(FAKE_GH.replace("{python}", sys.executable))
        script.chmod(0o755)
        self.set([])

    def set(self, prs: list[dict], mode: str = "ok", **world: object) -> None:
        """The world the fake answers from: ``prs``, a failure ``mode``; for the PR route of
        ``land`` also ``remote`` (the bare repository GitHub hosts: ``gh pr merge`` really
        merges there), ``checks_pending`` (``--auto`` waits, a merge now is refused) and
        ``fail`` (commands such as ``"pr create"`` that answer HTTP 502)."""
        state = {"prs": prs, "mode": mode, "log": str(self.log), "child_pid": str(self.child_pid)}
        self.world_path.write_text(json.dumps({**state, "owner": OWNER, "name": NAME, **world}))

    def update(self, **world: object) -> None:
        """Change the world, keeping the PRs gh created meanwhile."""
        self.world_path.write_text(json.dumps({**self.world(), **world}))

    def world(self) -> dict:
        return json.loads(self.world_path.read_text())

    def github(self, *args: str) -> None:
        """GitHub acting on its own: ``merge-queued`` (the checks passed: every PR queued with
        ``--auto`` is merged), ``merge N METHOD`` (a person merges PR N), ``close N`` (a person
        closes PR N unmerged)."""
        done = subprocess.run(
            [str(self.bindir / "gh"), "__github__", *args],
            env={**os.environ, "FAKE_GH_WORLD": str(self.world_path)},
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        lines = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [call for call in lines if call[:1] != ["__github__"]]


GIT_LOG_SEP = "\x1f"  # between a logged git's arguments: an argument may hold spaces (`-c merge.x.name=a b`)


def logging_git(folder: Path, log: Path) -> Path:
    """``folder`` (made) with a `git` that appends its arguments to ``log`` — one line per
    process, ``GIT_LOG_SEP`` between them, written at once — and runs the real git: first on
    PATH, it shows which git processes a command starts (:func:`logged_git`)."""
    real = shutil.which("git")
    assert real is not None
    folder.mkdir()
    wrapper = folder / "git"
    wrapper.write_text(
        f'#!/bin/sh\nline=$(printf "%s\\037" "$@" | tr "\\n" " ")\nprintf "%s\\n" "$line" >> "{log}"\n'
        f'exec {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    return folder


def logged_git(log: Path, *, options: bool = False) -> list[list[str]]:
    """The arguments of each git process :func:`logging_git` logged, without the leading
    ``-C DIR`` / ``-c KEY=VALUE`` options (the subcommand first) unless ``options``."""
    ran = []
    for line in log.read_text().splitlines():
        words = line.rstrip(GIT_LOG_SEP).split(GIT_LOG_SEP)
        while not options and len(words) >= 2 and words[0] in ("-C", "-c"):
            words = words[2:]
        ran.append(words)
    return ran


def resident_settings() -> dict[str, str]:
    """The environment that makes the tests' `git-st` clients of a resident process of their own
    (docs/resident.md; the wrapper runs bin/git-st), in a fresh short runtime dir (AF_UNIX paths
    hold 107 bytes). Coverage is off in it: it would trace the preload and every forked worker,
    whose data is never written."""
    runtime = tempfile.mkdtemp(prefix="st-run-", dir=SHORT_TMP)
    return {"ST_RESIDENT": "1", "XDG_RUNTIME_DIR": runtime, **dict.fromkeys(COVERAGE_ENV, "")}


def stop_resident(env: dict[str, str]) -> bool:
    """Stop the resident process of ``env`` (:func:`resident_settings`) and remove its runtime
    dir; False when it was running and did not end within the deadline."""
    shown = run(["git-st", "resident", "status", "--format", "json"], cwd="/", env=env)
    pid = json.loads(shown.stdout or "{}").get("pid")
    run(["git-st", "resident", "stop"], cwd="/", env=env)
    ended = process_ends(pid) if pid else True
    shutil.rmtree(env["XDG_RUNTIME_DIR"], ignore_errors=True)
    return ended


@contextlib.contextmanager
def resident_env() -> Iterator[dict[str, str]]:
    """:func:`resident_settings`, the resident process stopped at the end."""
    env = resident_settings()
    try:
        yield env
    finally:
        stop_resident(env)


def record_calls(monkeypatch, owner: object, name: str, what: Callable[..., object]) -> list:
    """``owner.name`` wrapped for the test (still called, its answer returned): each call
    appends ``what(*args, **kwargs)`` to the list returned — what a test counts of it."""
    done: list = []
    real = getattr(owner, name)

    def recorded(*args, **kwargs):
        done.append(what(*args, **kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, recorded)
    return done
