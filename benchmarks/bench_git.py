"""git subprocesses (gitst's one runner) against pygit2, for the paths that read much from git.

Each case runs in a fresh Python process, the way every `git st` command and hook runs,
so the figure includes what the case imports (pygit2's import is the price the in-process
reads must earn back). Each is the median of several alternating runs, timed with
``time.perf_counter`` inside the child around the import and the work. "warm" also times
the work alone in one long-lived process, for reference.

Cases (sizes can be changed with the options):

1. one 20 MB plan blob (`validate --against`, the pre-commit check of a big plan);
2. 2,000 small loose blobs, as `git add` writes them (`validate --staged`, the pre-commit
   check of a commit of many state files);
3. the same number of packed blobs (`validate --against REV`, a pushed range's files);
4. paths touched by 200 commits (post-rewrite after a rebase);
5. 5,000 refs under refs/pull/*/head (the PR cascade's offline step);
6. 20 linked worktrees listed with their branch and HEAD (`worktree list|prune|status`);
7. ahead/behind of 20 branches against main (a status view of 20 worktrees): gitst's
   runner needs one `rev-list --count` per branch, pygit2 answers in-process.

Usage::

    .venv/bin/python benchmarks/bench_git.py [--runs N]

It prints a table: subprocess ms, pygit2 ms, their ratio, and which wins; docs/architecture.md
quotes it and says which path uses which.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SETUP = f"import sys, time\nsys.path.insert(0, {str(ROOT)!r})\nt0 = time.perf_counter()\n"


def cases(args: argparse.Namespace) -> dict[str, tuple[str, str]]:
    """name -> (gitst's subprocess way, the pygit2 way) as code run in a fresh process."""
    return {
        "one 20 MB blob": (
            "from gitst.git.objects import read_objects\nread_objects(REPO, [BIG])\n",
            "import pygit2\nr = pygit2.Repository(REPO)\nr[BIG].data\n",
        ),
        f"{args.blobs:,} loose blobs (staged)": (
            "from gitst.git.objects import read_staged_blobs\nread_staged_blobs(REPO, SMALL, use_pygit2=False)\n",
            "from gitst.git.objects import read_staged_blobs\nread_staged_blobs(REPO, SMALL, use_pygit2=True)\n",
        ),
        f"{args.blobs:,} packed blobs": (
            "from gitst.git.objects import read_objects\nread_objects(PACKED, PACKED_BLOBS)\n",
            "import pygit2\nr = pygit2.Repository(PACKED)\n[r[o].data for o in PACKED_BLOBS]\n",
        ),
        f"paths of {args.commits} commits": (
            "from gitst.git.history import paths_touched_by\npaths_touched_by(COMMITS, REPO)\n",
            (
                "import pygit2\nr = pygit2.Repository(REPO)\nseen = {}\n"
                "for c in COMMITS:\n"
                "    commit = r[c]\n"
                "    old = commit.parents[0].tree if commit.parents else None\n"
                "    diff = old.diff_to_tree(commit.tree) if old is not None else commit.tree.diff_to_tree(swap=True)\n"
                "    for d in diff.deltas:\n"
                "        seen.setdefault(d.new_file.path, None)\n"
            ),
        ),
        f"{args.refs:,} pull refs": (
            "from gitst.git.refs import all_refs\nall_refs(REPO)\n",
            "import pygit2\nr = pygit2.Repository(REPO)\n{ref.name: ref.target for ref in r.references.iterator()}\n",
        ),
        f"{args.worktrees} worktrees": (
            "from gitst.git.worktrees import list_worktrees\nlist_worktrees(REPO)\n",
            (
                "import pygit2\nr = pygit2.Repository(REPO)\n"
                "trees = map(r.lookup_worktree, r.list_worktrees())\n"
                "[(w.path, pygit2.Repository(w.path).head.target) for w in trees]\n"
            ),
        ),
        f"ahead/behind of {args.worktrees} branches": (
            "from gitst.git.history import ahead_behind\nahead_behind(REPO, 'main', BRANCHES, use_pygit2=False)\n",
            "from gitst.git.history import ahead_behind\nahead_behind(REPO, 'main', BRANCHES, use_pygit2=True)\n",
        ),
    }


def git(*args: str, cwd: Path, input: bytes | None = None) -> str:  # noqa: A002 - mirrors subprocess.run
    return subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, check=True).stdout.decode().strip()


def build(root: Path, *, commits: int, refs: int, worktrees: int, blobs: int) -> dict[str, object]:
    repo = root / "repo"
    git("init", "-q", "-b", "main", str(repo), cwd=root)
    git("config", "user.email", "b@example.com", cwd=repo)
    git("config", "user.name", "bench", cwd=repo)
    (repo / "plan.jsonl").write_bytes(b'{"v":3,"seq":1,"lane":"event","op":"init"}\n' * 480_000)  # ~20 MB
    for i in range(commits):
        (repo / f"f{i % 50}.txt").write_text(f"{i}\n")
        git("add", "-A", cwd=repo)
        git("commit", "-q", "-m", f"c{i}", cwd=repo)
    head = git("rev-parse", "HEAD", cwd=repo)
    big = git("rev-parse", "HEAD:plan.jsonl", cwd=repo)
    small = [git("hash-object", "-w", "--stdin", cwd=repo, input=f"blob {i}\n".encode()) for i in range(blobs)]
    git(
        "update-ref",
        "--stdin",
        cwd=repo,
        input="".join(f"create refs/pull/{n}/head {head}\n" for n in range(1, refs + 1)).encode(),
    )
    packed = root / "packed"
    git("init", "-q", str(packed), cwd=root)
    for i in range(blobs):
        (packed / f"f{i}").write_text(f"packed {i}\n")
    git("add", "-A", cwd=packed)
    git("-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-q", "-m", "all", cwd=packed)
    git("repack", "-a", "-d", "-q", cwd=packed)
    git("prune", cwd=packed)
    packed_blobs = git("ls-files", "-s", cwd=packed).split()[1::4]
    branches = []
    for i in range(worktrees):
        branch = f"wt{i}"
        git("worktree", "add", "-q", "-b", branch, str(root / f"wt{i}"), "HEAD~3", cwd=repo)
        branches.append(branch)
    return {
        "REPO": str(repo),
        "BIG": big,
        "SMALL": small,
        "BRANCHES": branches,
        "PACKED": str(packed),
        "PACKED_BLOBS": packed_blobs,
        "COMMITS": git("rev-list", f"-{commits}", "HEAD", cwd=repo).split(),
    }


def child(code: str, data: dict[str, object]) -> float:
    # the case's inputs are read before the clock starts
    prelude = f"import json\nglobals().update(json.load(open({str(data['DATA_FILE'])!r})))\n"
    program = SETUP.replace("t0 = time.perf_counter()\n", prelude + "t0 = time.perf_counter()\n")
    program += code + "print(time.perf_counter() - t0)\n"
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"a case failed:\n{code}\n{proc.stderr}")
    out = proc.stdout
    return float(out.strip().splitlines()[-1])


def warm(code: str, data: dict[str, object], runs: int) -> float:
    """The work alone, in this process (imports done once before timing)."""
    scope: dict[str, object] = dict(data)
    sys.path.insert(0, str(ROOT))
    lines = code.splitlines()
    imports = "\n".join(line for line in lines if line.startswith(("import ", "from ")))
    exec(imports, scope)  # the benchmark's own code
    body = "\n".join(line for line in lines if not line.startswith(("import ", "from ")))
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        exec(body, scope)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--refs", type=int, default=5000)
    parser.add_argument("--worktrees", type=int, default=20)
    parser.add_argument("--blobs", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = build(Path(tmp), commits=args.commits, refs=args.refs, worktrees=args.worktrees, blobs=args.blobs)
        data["DATA_FILE"] = str(Path(tmp) / "data.json")
        Path(str(data["DATA_FILE"])).write_text(json.dumps(data))
        print(
            f"{'case':<30} {'subprocess':>11} {'pygit2':>9} {'pygit2/sub':>11}   "
            f"{'warm sub':>9} {'warm pygit2':>12}  winner"
        )
        for name, (sub_code, py_code) in cases(args).items():
            samples: dict[str, list[float]] = {"sub": [], "py": []}
            for _ in range(args.runs):  # alternate, so drift in the machine's load hits both
                samples["sub"].append(child(sub_code, data))
                samples["py"].append(child(py_code, data))
            sub, py = statistics.median(samples["sub"]), statistics.median(samples["py"])
            warm_sub, warm_py = warm(sub_code, data, args.runs), warm(py_code, data, args.runs)
            winner = "pygit2" if py < sub else "subprocess"
            print(
                f"{name:<30} {sub * 1000:>9.1f}ms {py * 1000:>7.1f}ms {py / sub:>10.2f}x   "
                f"{warm_sub * 1000:>7.1f}ms {warm_py * 1000:>10.1f}ms  {winner}"
            )
        cold_import = statistics.median(child("import pygit2\n", data) for _ in range(args.runs))
        print(f"\npygit2's import alone, in a fresh process: {cold_import * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
