"""A swarm of agents on three clones of one remote, with faults injected (issue 20, "Must show").

Six agent processes (two per clone) work a plan of 12 items (some with dependencies) that
is committed on main of a bare remote served by `git daemon` on 127.0.0.1. Each clone
stands for a machine (its own ``ST_HOST``) and sets ``git config st.remote origin``, so
every claim goes through the remote. Each agent is a real process with its own session
(``ST_SESSION_ID``) that runs every command in a fresh ``bash -c``, as Claude Code does,
and follows the loop a documented user would write today (tests/e2e/swarm/agent.py):
fetch, pick a ready item at origin/main, ``worktree add N --base origin/main``, work,
``set-status done``, commit, ``sync``, push to main (retrying on rejection),
``worktree remove``.

Faults, each once and each at a known moment (never by luck):

- SIGKILL of ``git st claim`` while its compare-and-swap push is at the remote (held by a
  pre-receive hook until the kill; then it lands: a claim of an owner that is gone);
- SIGKILL of ``git st worktree add`` inside ``git worktree add``: the worktree half made
  (placeholder HEAD, ``initializing`` lock), a wrapper in GIT_EXEC_PATH waits;
- SIGKILL of ``git st sync`` while git's merge runs the plan merge driver (a wrapper
  waits), leaving ``index.lock`` and ``.merge_file_*`` in the worktree;
- the remote unreachable for a few seconds: the daemon stopped, then started again on the
  same port, once the three kills are done and items have landed - right before an agent
  that just pushed its item runs `worktree remove` (so the release meets the outage).

Each killed agent exits; a new agent process with a new session on the same clone resumes
its item. Afterwards: every item landed on main exactly once (one work file, one
completion), `git st doctor` is clean on main, no claim is left on the remote after
`git st gc`, no crash leftover or state file was committed, no command printed a
traceback, no item was held by two live agents at once, and every clone still fetches.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.remote.conftest import Daemon, make_bare
from tests.support import git, mutate, ok, st

pytestmark = pytest.mark.slow(50)  # seconds on the quiet 2-core box: it starts first (tests/conftest.py)

AGENT = Path(__file__).with_name("agent.py")
ITEMS = 12
# item -> its dependencies. 1, 2 and 3 are the items the faults are played on.
DEPS = {7: [1], 8: [2, 4], 9: [5], 10: [6, 7], 11: [8], 12: [9, 10]}
FAULTS = {"claim": ("a", 1), "add": ("b", 2), "sync": ("c", 3)}
CLONES = ("a", "b", "c")
AGENTS_PER_CLONE = 2
RUN_SECONDS = 240  # the agents' deadline (a healthy run takes 90-140 s at load 20); the test waits 20 s more
KILLED = 75

PRE_RECEIVE = r"""#!/bin/sh
# The swarm test's claim fault: hold the push of refs/st/claims/N (N in $HOOK/armed, once)
# until the agent that pushed it has been killed ($HOOK/go), then let it land.
hook='{hook}'
while read old new ref; do
  if [ -f "$hook/armed" ] && [ "$ref" = "refs/st/claims/$(cat "$hook/armed")" ] \
     && mv "$hook/armed" "$hook/armed.taken" 2>/dev/null; then
    : > "$hook/arrived"
    n=0
    while [ ! -e "$hook/go" ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done
  fi
done
exit 0
"""

SLOW_HEAD = """#!/bin/sh
# git (every git below the command finds this one first: GIT_EXEC_PATH), except that `git worktree add`'s
# `git symbolic-ref HEAD <branch>` says so and waits to be killed (the worktree is half
# made: admin dir, placeholder HEAD, `initializing` lock). Only the add fault sets it.
if [ "$1" = symbolic-ref ] && [ "$2" = HEAD ] && [ -n "$SWARM_SLOW_HEAD" ]; then
  : > "$SWARM_SLOW_HEAD"
  sleep 120
fi
exec '{real}/git' "$@"
"""

SLOW_DRIVER = """#!/bin/sh
# git-st, except that the plan merge driver run by a real merge (git holds the index lock)
# says so and waits to be killed; only the sync fault puts this first on PATH.
if [ "$1" = merge-driver ] && [ -n "$SWARM_SLOW_DRIVER" ] \
   && [ -e "$(git rev-parse --git-path index.lock 2>/dev/null)" ]; then
  : > "$SWARM_SLOW_DRIVER"
  sleep 120
fi
exec '{real}' "$@"
"""


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def seed_remote(root: Path) -> Path:
    """The bare remote: main holds the plan and the merge driver's .gitattributes line."""
    bare = make_bare(root)
    seed = root / "seed"  # make_bare's clone
    ok(st("init", cwd=seed))
    ok(st("hooks", "install", cwd=seed))  # writes the plan's merge=gitst-plan attribute
    for number in range(1, ITEMS + 1):
        deps = DEPS.get(number)
        args = ["add", f"item {number}", "-q"]
        if deps:
            args += ["--deps", ",".join(f"st-{d:03d}" for d in deps)]
        mutate(seed, *args)
    git("add", "-A", cwd=seed)
    git("commit", "-q", "-m", "the plan", cwd=seed)
    git("push", "-q", "origin", "main", cwd=seed)
    return bare


def host_env(clone: str) -> dict:
    return {"ST_HOST": f"machine-{clone}"}


def test_a_swarm_of_agents_with_faults_lands_every_item_exactly_once(tmp_path, st_bindir):
    started = time.monotonic()
    shared = tmp_path / "shared"
    for sub in ("logs", "scratch", "reserved", "hook", "failed"):
        (shared / sub).mkdir(parents=True)
    served = tmp_path / "served"
    served.mkdir()
    bare = seed_remote(served)
    write_script(bare / "hooks" / "pre-receive", PRE_RECEIVE.format(hook=shared / "hook"))
    write_script(tmp_path / "slowbin" / "git-st", SLOW_DRIVER.format(real=st_bindir / "git-st"))
    write_script(tmp_path / "slowexec" / "git", SLOW_HEAD.format(real=git("--exec-path", cwd=tmp_path)))

    daemon = Daemon(served)
    daemon.start()
    agents: dict[str, tuple[subprocess.Popen, str, dict]] = {}
    exits: dict[str, int] = {}
    outage: dict = {"state": "waiting"}
    try:
        clones = {}
        for name in CLONES:
            path = tmp_path / f"clone-{name}" / "app"
            path.parent.mkdir()
            git("clone", "-q", daemon.url(), str(path), cwd=path.parent)
            git("config", "st.remote", "origin", cwd=path)
            # The merge driver and the pre-commit hook (no bad state committed); the other
            # hooks only check again what these agents already run.
            ok(st("hooks", "install", "--hook", "pre-commit", cwd=path))
            clones[name] = path
        for _clone, item in FAULTS.values():
            (shared / "reserved" / str(item)).touch()  # only the fault's agent (then its heir) takes it

        deadline = time.time() + RUN_SECONDS
        env = {k: v for k, v in os.environ.items() if k != "ST_SESSION_PID"}

        def spawn(session: str, clone: str, **extra) -> None:
            cfg = {
                "session": session,
                "clone": str(clones[clone]),
                "shared": str(shared),
                "items": ITEMS,
                "deadline": deadline,
                "slowbin": str(tmp_path / "slowbin"),
                "slowexec": str(tmp_path / "slowexec"),
                "index": len(agents),
                **extra,
            }
            with (shared / "logs" / f"{session}.stderr").open("w") as stderr:
                proc = subprocess.Popen(
                    [sys.executable, str(AGENT), json.dumps(cfg)],
                    env={**env, **host_env(clone), "ST_SESSION_ID": session},
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                )
            agents[session] = (proc, clone, cfg)

        for name in CLONES:
            for index in range(1, AGENTS_PER_CLONE + 1):
                fault = next((f for f, (c, _) in FAULTS.items() if c == name and index == 1), None)
                extra = {"fault": fault, "fault_item": FAULTS[fault][1]} if fault else {}
                spawn(f"agent-{name}{index}", name, **extra)

        while time.time() < deadline + 20 and len(exits) < len(agents):
            for session, (proc, clone, cfg) in list(agents.items()):
                if session in exits or proc.poll() is None:  # poll() reaps: a dead agent is no zombie
                    continue
                exits[session] = proc.returncode
                if proc.returncode == KILLED:  # a new agent, a new session, resumes the item
                    spawn(f"agent-{clone}-heir-of-{session}", clone, resume=cfg["fault_item"])
            drive_outage(daemon, outage, read_jsonl(shared / "events.jsonl"), shared)
            time.sleep(0.1)
    finally:
        for proc, _, _ in agents.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        daemon.stop()
    run_seconds = time.monotonic() - started

    events = read_jsonl(shared / "events.jsonl")
    commands = {session: read_jsonl(shared / "logs" / f"{session}.jsonl") for session in agents}
    problems = [f"agent {session} still ran after the deadline" for session in agents if session not in exits]
    problems += [
        f"agent {session} exited {code}"
        for session, code in exits.items()
        if code != (KILLED if agents[session][2].get("fault") else 0)
    ]
    problems += fault_problems(events, outage)
    problems += overlap_problems(events)
    problems += main_problems(bare, tmp_path / "final")
    daemon.start()  # the clones' origin, for what they are left with
    try:
        problems += clone_problems(clones)
    finally:
        daemon.stop()
    problems += traceback_problems(shared, commands)

    summary = (
        f"{len(agents)} agents, {sum(len(c) for c in commands.values())} commands, {run_seconds:.0f} s; "
        f"outage {outage}; the agents' logs: {shared}"
    )
    assert not problems, summary + "\n" + "\n".join(problems)


def write_script(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def unreachable(event: dict) -> bool:
    """An event of a command that could not connect to the remote (the daemon was down)."""
    return event["kind"].endswith(("unreachable", "fetch-failed")) and any(
        words in event.get("err", "") for words in ("unable to connect", "Connection refused", "hung up")
    )


def drive_outage(daemon: Daemon, outage: dict, events: list[dict], shared: Path) -> None:
    """The remote goes away once: when the three kills are done and items have landed, the
    next agent that lands one waits before its `worktree remove` (``outage-hold``); the
    daemon is stopped, and started again on the same port once commands have failed on it
    for 3 s (at most 20 s)."""
    kinds = [event["kind"] for event in events]
    if outage["state"] == "waiting" and kinds.count("killed") == len(FAULTS) and kinds.count("end") >= 2:
        (shared / "outage-wanted").touch()
        outage.update(state="wanted")
    elif outage["state"] == "wanted" and "outage-hold" in kinds:
        daemon.stop()
        (shared / "outage-down").touch()
        outage.update(state="down", down_at=time.monotonic(), seen=len(events))
    elif outage["state"] == "down":
        failed = [event for event in events[outage["seen"] :] if unreachable(event)]
        down_for = time.monotonic() - outage["down_at"]
        if (failed and down_for >= 3) or down_for >= 20:
            daemon.start()
            outage.update(state="back", failed_during=len(failed), down_for=round(down_for, 1))


def fault_problems(events: list[dict], outage: dict) -> list[str]:
    """Every fault happened at its moment; no agent reported an error or ran out of time."""
    killed = {event["fault"]: event for event in events if event["kind"] == "killed"}
    problems = [
        f"the {fault} fault was not injected at its moment: {killed.get(fault)}"
        for fault in FAULTS
        if fault not in killed or not killed[fault]["reached"]
    ]
    if outage["state"] != "back" or not outage.get("failed_during"):
        problems.append(f"the remote outage did not happen as planned: {outage}")
    problems += [
        f"{event['agent']}: {event['kind']}: {json.dumps(event)[:2500]}"
        for event in events
        if event["kind"] in ("error", "agent-timeout", "agent-stuck", "hung")
    ]
    return problems


def overlap_problems(events: list[dict]) -> list[str]:
    """No item was held by two live agents at once. A hold runs from an agent's ``start``
    (after its claim succeeded) to its ``end`` (before it let go) or its kill."""
    holds: dict[int, list[tuple[float, float, str]]] = {}
    open_holds: dict[tuple[str, int], float] = {}
    for event in events:
        key = (event["agent"], event.get("item"))
        if event["kind"] == "start":
            open_holds[key] = event["t"]
        elif event["kind"] in ("end", "killed") and key in open_holds:
            holds.setdefault(key[1], []).append((open_holds.pop(key), event["t"], key[0]))
    for (agent, item), begin in open_holds.items():  # still held when its agent stopped
        holds.setdefault(item, []).append((begin, float("inf"), agent))
    problems = []
    for item, spans in holds.items():
        spans.sort()
        problems += [
            f"item {item} was held by {first} and {second} at once"
            for (_, end, first), (begin, _, second) in itertools.pairwise(spans)
            if begin < end
        ]
    return problems


def main_problems(bare: Path, final: Path) -> list[str]:
    """Main, as a fresh clone of the remote has it: every item landed exactly once (one work
    file, one completion, its id and text unchanged), doctor clean, no leftover committed."""
    git("clone", "-q", str(bare), str(final), cwd=final.parent)
    tree = git("ls-tree", "-r", "--name-only", "HEAD", cwd=final).splitlines()
    problems = []
    for number in range(1, ITEMS + 1):
        files = [path for path in tree if path.startswith(f"work/item-{number:03d}-")]
        if len(files) != 1:
            problems.append(f"item {number}: {len(files)} work files on main (want 1): {files}")
    leftovers = [
        path
        for path in tree
        if Path(path).name.startswith(".merge_file_") or path.endswith(".lock") or "state/" in f"/{path}"
    ]
    if leftovers:
        problems.append(f"crash leftovers or state committed on main: {leftovers}")
    shown = st("show", "--format", "json", cwd=final)
    if shown.returncode != 0:
        return [*problems, f"git st show on main exits {shown.returncode}: {shown.stderr}"]
    items = {item["id"]: item for item in json.loads(shown.stdout)["items"]}
    if len(items) != ITEMS:
        problems.append(f"{len(items)} items on main (want {ITEMS}): {sorted(items)}")
    plan = read_jsonl(final / ".step" / "st-plan.jsonl")
    for number in range(1, ITEMS + 1):
        item_id = f"st-{number:03d}"
        item = items.get(item_id)
        if item is None or item["step"] != f"item {number}":
            problems.append(f"{item_id} is not 'item {number}' on main any more: {item}")
        elif item["status"] != "completed":
            problems.append(f"{item_id} is {item['status']} on main")
        completions = [
            record
            for record in plan
            if record.get("op") == "set_status" and record.get("id") == item_id and record.get("status") == "completed"
        ]
        if len(completions) != 1:
            problems.append(f"{item_id} was completed {len(completions)} times on main (want 1)")
    doctor = st("doctor", cwd=final)
    if doctor.returncode != 0:
        problems.append(f"git st doctor on main exits {doctor.returncode}: {doctor.stdout}{doctor.stderr}")
    return problems + [f"traceback: {r.stderr}" for r in (shown, doctor) if "Traceback" in r.stderr]


def clone_problems(clones: dict[str, Path]) -> list[str]:
    """Each clone still fetches, has no worktree left registered, and after `git st gc` (on
    every machine) the remote holds no claim."""
    problems = []
    results = []
    for name, path in clones.items():
        env = {**host_env(name), "ST_SESSION_ID": f"checker-{name}"}
        fetched = subprocess.run(["git", "fetch", "origin"], cwd=path, capture_output=True, text=True, check=False)
        if fetched.returncode != 0:
            problems.append(f"clone {name}: git fetch exits {fetched.returncode}: {fetched.stderr}")
        gc = st("gc", cwd=path, env=env)
        if gc.returncode != 0:
            problems.append(f"clone {name}: git st gc exits {gc.returncode}: {gc.stderr}")
        listed = st("worktree", "list", "--format", "json", cwd=path, env=env)
        if listed.returncode != 0 or json.loads(listed.stdout)["worktrees"]:
            problems.append(f"clone {name}: worktrees left: {listed.stdout}{listed.stderr}")
        results += [gc, listed]
    remote = st("sessions", "--remote", "--format", "json", cwd=clones[CLONES[0]], env=host_env(CLONES[0]))
    results.append(remote)
    if remote.returncode != 0:
        problems.append(f"git st sessions --remote exits {remote.returncode}: {remote.stderr}")
    else:
        problems += [
            f"a claim is left on the remote after gc: issue {claim['issue']} {claim['state']} "
            f"(session {claim['session']}, host {claim['host']})"
            for claim in json.loads(remote.stdout)["claims"]
        ]
    return problems + [f"traceback: {r.args}: {r.stderr}" for r in results if "Traceback" in r.stderr]


def traceback_problems(shared: Path, commands: dict[str, list[dict]]) -> list[str]:
    """No command of any agent printed a traceback, and no agent died of one itself."""
    problems = [
        f"{session}: traceback from `{line['cmd']}`:\n{line['err'][-3000:]}"
        for session, lines in commands.items()
        for line in lines
        if "Traceback (most recent call last)" in line["err"]
    ]
    for session in commands:
        stderr = (shared / "logs" / f"{session}.stderr").read_text()
        if stderr.strip():
            problems.append(f"agent {session} wrote to its own stderr:\n{stderr[-3000:]}")
    return problems
