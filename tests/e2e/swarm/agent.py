"""One agent of the swarm test (tests/e2e/swarm/test_swarm.py), run as its own process.

It works the way a documented user's agent works today (README, docs/worktrees.md, docs/claims.md,
docs/hooks.md), and the way Claude Code runs tools: **every** git and gitst command is a
fresh ``bash -c`` (cd, the command, exit), so the session process gitst finds is this
Python process, named by ``ST_SESSION_ID``. The loop:

1. ``git fetch``; the plan at origin/main (``git show``) → ``git st ready --format json``;
2. ``git st worktree add N --base origin/main --print-path`` (claims through the remote,
   ``st.remote``); exit 3 → another agent has it, try the next ready item;
3. fetch again and check the item is still not done on main (a holder may have pushed it
   and released between our read and our claim);
4. the "work": a file unique to the item and this agent, ``git st set-status ID done`` in
   the worktree's plan, ``git add -A``, ``git commit``;
5. ``git st heartbeat`` when it took a worktree over (is the claim ours?), ``git st sync main``, ``git push origin
   HEAD:main``; a rejected push: ``git st sync`` again and push again (bounded);
6. ``git st worktree remove N --delete-branch``.

Fault injection (one kind per agent, on the item the test gives it), each deterministic:

- ``claim``: ``git st claim N`` whose compare-and-swap push is held by the remote's
  pre-receive hook (the test installs it) until this agent has SIGKILLed the command's
  process group; then the hook lets the push land: a claim on the remote whose owner never
  learned it got it.
- ``add``: ``git st worktree add N`` killed inside ``git worktree add``, once git has made
  the worktree's admin dir, its placeholder HEAD and the ``initializing`` lock and runs
  ``git symbolic-ref HEAD`` (a ``git`` wrapper in GIT_EXEC_PATH, for this command only,
  says so and waits).
- ``sync``: ``git st sync main`` killed while git's merge runs the plan merge driver (a
  ``git-st`` wrapper first on PATH, for this command only, says so and waits), leaving
  git's ``index.lock`` and ``.merge_file_*`` files in the worktree.

After a kill the agent logs it and exits 75 at once (a harness that lost its agent); the
test starts a new agent process, with a new session, that resumes the item (``--resume``).

Every command's rc/stdout/stderr goes to ``logs/<session>.jsonl``; the holds (``start`` /
``end`` of an item) and everything the test checks go to the shared append-only
``events.jsonl``.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

KILLED = 75  # exit status of an agent that lost its command to a fault


class Agent:
    def __init__(self, cfg: dict):
        self.cfg = cfg
        self.session = cfg["session"]
        self.clone = Path(cfg["clone"])
        self.shared = Path(cfg["shared"])
        self.items = int(cfg["items"])
        self.deadline = float(cfg["deadline"])
        self.fault = cfg.get("fault")
        self.fault_item = cfg.get("fault_item")
        self.rng = random.Random(self.session)
        self.deps: dict[str, list[str]] = {}
        self.skip: set[int] = set()  # items whose `worktree add` failed for this agent
        self.failing_since: float | None = None
        self.current: int | None = None  # the item this agent holds
        self.taken: dict[int, float] = {}  # item -> when another agent was found holding it
        self.scratch = self.shared / "scratch" / self.session
        self.scratch.mkdir(parents=True, exist_ok=True)
        self.cmdlog = os.open(self.shared / "logs" / f"{self.session}.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        self.events = os.open(self.shared / "events.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND)

    # -- logging -------------------------------------------------------------------------

    def event(self, kind: str, **fields) -> None:
        line = {"t": time.time(), "agent": self.session, "pid": os.getpid(), "kind": kind, **fields}
        os.write(self.events, (json.dumps(line) + "\n").encode())  # one write: O_APPEND keeps lines whole

    def log_command(self, command: str, cwd: Path, rc: int, out: str, err: str, took: float) -> None:
        line = {"t": time.time(), "cmd": command, "cwd": str(cwd), "rc": rc, "out": out, "err": err, "took": took}
        os.write(self.cmdlog, (json.dumps(line) + "\n").encode())

    # -- commands: one fresh shell each ----------------------------------------------------

    def script(self, command: str, cwd: Path) -> str:
        # As the harnesses do: cd, the command, then the shell's own bookkeeping.
        return f"cd {shlex.quote(str(cwd))} && {command}; status=$?; pwd -P >/dev/null; exit $status"

    def sh(self, command: str, cwd: Path | None = None, timeout: float = 120) -> tuple[int, str, str]:
        cwd = cwd or self.clone
        started = time.monotonic()
        proc = subprocess.Popen(
            ["bash", "-c", self.script(command, cwd)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # so a hung command can be killed with everything it started
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            err += f"\n[swarm agent: killed after {timeout} s]"
            self.event("hung", cmd=command)
        rc = proc.returncode
        self.log_command(command, cwd, rc, out, err, time.monotonic() - started)
        return rc, out, err

    def kill_when(self, command: str, cwd: Path, marker: Path, env: dict, what: str) -> None:
        """Run ``command`` in a fresh shell and SIGKILL its whole process group once
        ``marker`` exists (the command is then inside ``what``)."""
        started = time.monotonic()
        out_path, err_path = self.scratch / f"{what}.out", self.scratch / f"{what}.err"
        with out_path.open("w") as out, err_path.open("w") as err:
            proc = subprocess.Popen(
                ["bash", "-c", self.script(command, cwd)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env={**os.environ, **env},
                start_new_session=True,
            )
        limit = time.monotonic() + 90
        while not marker.exists() and proc.poll() is None and time.monotonic() < limit:
            time.sleep(0.01)
        reached = marker.exists()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # nothing of the group outlives the kill
        rc = proc.returncode
        self.log_command(command, cwd, rc, out_path.read_text(), err_path.read_text(), time.monotonic() - started)
        self.event("killed", fault=what, item=self.fault_item, reached=reached, rc=rc)

    # -- the plan on origin/main -------------------------------------------------------------

    def fetch(self) -> bool:
        rc, _, err = self.sh("git fetch -q origin")
        if rc == 0:
            self.failing_since = None
            return True
        self.event("fetch-failed", err=err[-300:])
        self.failing_since = self.failing_since or time.monotonic()
        if time.monotonic() - self.failing_since > 40:  # the outage lasts seconds: this is no outage
            self.event("error", step="git fetch fails for 40 s", err=err[-2000:])
            if self.current is not None:
                self.give_up(self.current, "git fetch")
            sys.exit(1)
        return False

    def main_plan(self) -> Path | None:
        """The plan as of origin/main, in a scratch file the read-only commands take with
        ``--file`` (None: cannot read it)."""
        plan = self.scratch / "main-plan.jsonl"
        rc, _, _ = self.sh(f"git show origin/main:.step/st-plan.jsonl > {shlex.quote(str(plan))}")
        return plan if rc == 0 else None

    def ready(self, plan: Path) -> list[int] | None:
        rc, out, _ = self.sh(f"git st ready --file {shlex.quote(str(plan))} --format json")
        if rc != 0:
            return None
        return [int(item["id"].split("-")[1]) for item in json.loads(out)["items"]]

    def statuses(self, plan: Path) -> dict[str, str] | None:
        """Every item's status (and, in ``self.deps``, its dependencies)."""
        rc, out, _ = self.sh(f"git st show --file {shlex.quote(str(plan))} --format json")
        if rc != 0:
            return None
        items = json.loads(out)["items"]
        self.deps = {item["id"]: [dep["id"] for dep in item["deps"]] for item in items}
        return {item["id"]: item["status"] for item in items}

    def status_of(self, number: int, plan: Path | None = None, cwd: Path | None = None) -> str | None:
        option = f" --file {shlex.quote(str(plan))}" if plan else ""
        rc, out, _ = self.sh(f"git st show {self.item_id(number)}{option} --format json", cwd=cwd)
        return json.loads(out)["item"]["status"] if rc == 0 and out.strip().startswith("{") else None

    def item_id(self, number: int) -> str:
        return f"st-{number:03d}"

    def reserved(self, number: int) -> bool:
        return (self.shared / "reserved" / str(number)).exists()

    def unreserve(self, number: int) -> None:
        (self.shared / "reserved" / str(number)).unlink(missing_ok=True)

    def failed(self) -> set[int]:
        """Items an agent gave up on: nobody tries them again (the test reports why)."""
        return {int(p.name) for p in (self.shared / "failed").iterdir()} | self.skip

    def stuck(self, statuses: dict[str, str]) -> bool:
        """True when every item left is one an agent gave up on, or waits for one."""
        failed = {self.item_id(n) for n in self.failed()}
        if not failed:
            return False

        def blocked(item: str, seen: frozenset = frozenset()) -> bool:
            if item in failed:
                return True
            deps = [d for d in self.deps.get(item, []) if d not in seen and statuses.get(d) != "completed"]
            return any(blocked(d, seen | {item}) for d in deps)

        return all(blocked(item) for item, status in statuses.items() if status != "completed")

    def wait_remote(self) -> None:
        time.sleep(0.3 + self.rng.random() * 0.4)

    # -- the loop ------------------------------------------------------------------------------

    def run(self) -> int:
        self.event("agent-start", clone=str(self.clone), fault=self.fault, resume=self.cfg.get("resume"))
        resume = self.cfg.get("resume")
        if resume is not None:
            self.resume(int(resume))
        while time.time() < self.deadline:
            if not self.fetch():
                self.wait_remote()
                continue
            plan = self.main_plan()
            ready = self.ready(plan) if plan else None
            if plan is None or ready is None:
                self.wait_remote()
                continue
            numbers = [n for n in ready if n == self.fault_item or not (self.reserved(n) or n in self.failed())]
            # Another agent held it a moment ago: it is still working on it, most likely.
            numbers = [n for n in numbers if time.monotonic() - self.taken.get(n, -60.0) > 8]
            if not numbers:  # all done, or what is left is held by others (or cannot be done)
                statuses = self.statuses(plan)
                if statuses is not None and all(status == "completed" for status in statuses.values()):
                    self.event("agent-done")
                    return 0
                if statuses is not None and self.stuck(statuses):
                    self.event("agent-stuck", failed=sorted(self.failed()))
                    return 1
                time.sleep(1.0)
                continue
            # Agents start at different places of the ready list, so they rarely collide.
            numbers.sort()
            turn = int(self.cfg.get("index", 0)) % len(numbers)
            numbers = numbers[turn:] + numbers[:turn]
            if self.fault_item in numbers:  # the fault is played on the agent's first item
                numbers.remove(self.fault_item)
                numbers.insert(0, self.fault_item)
            for number in numbers:
                if number in self.failed():  # given up by another agent meanwhile
                    continue
                outcome = self.try_item(number)
                if outcome != "taken":
                    break
        self.event("agent-timeout")
        return 1

    def try_item(self, number: int) -> str:
        if self.fault == "claim" and number == self.fault_item:
            self.claim_fault(number)
        if self.fault == "add" and number == self.fault_item:
            self.add_fault(number)
        path = self.add(number, resume=False)
        if isinstance(path, str) and not path.startswith("/"):
            return path
        return self.work(number, Path(path))

    def add(self, number: int, *, resume: bool) -> str:
        rc, out, err = self.sh(f"git st worktree add {number} --base origin/main --print-path")
        if rc == 2 and resume:
            # A user told to drop --base for a branch that exists (docs/worktrees.md, "add").
            self.event("note", item=number, what="resume without --base", err=err[-500:])
            rc, out, err = self.sh(f"git st worktree add {number} --print-path")
        if rc == 0 and out.strip():
            return out.strip().splitlines()[-1]
        if rc == 3:
            self.event("taken", item=number, err=err[-300:])
            self.taken[number] = time.monotonic()
            return "taken"
        if rc == 4:
            self.event("add-unreachable", item=number, err=err[-300:])
            self.wait_remote()
            return "unreachable"
        self.event("error", step="worktree add", item=number, rc=rc, err=err[-2000:])
        self.skip.add(number)  # another agent (on another clone) may still do it
        return "error"

    def resume(self, number: int) -> None:
        limit = time.time() + 45
        while time.time() < min(limit, self.deadline):
            path = self.add(number, resume=True)
            if path.startswith("/"):
                self.unreserve(number)
                self.work(number, Path(path))
                return
            if path in ("taken", "error"):
                break
        self.event("error", step="resume", item=number)
        (self.shared / "failed" / str(number)).touch()  # nobody spins on it until the deadline
        self.unreserve(number)

    def work(self, number: int, path: Path) -> str:
        item = self.item_id(number)
        self.event("start", item=number, path=str(path))
        self.current = number
        while True:  # the item may have landed between our read and our claim
            if self.fetch():
                break
            if time.time() > self.deadline:
                return self.give_up(number, "fetch after claim")
            self.wait_remote()
        plan = self.main_plan()
        if plan is not None and self.status_of(number, plan) == "completed":
            self.event("end", item=number, outcome="already-done")
            self.remove(number)
            return "already-done"

        # The work: one file per item and agent (a worktree taken over keeps the dead one's).
        if not list(path.glob(f"work/item-{number:03d}-*.txt")):
            (path / "work").mkdir(exist_ok=True)
            (path / "work" / f"item-{number:03d}-{self.session}.txt").write_text(f"{item} done by {self.session}\n")
        # A worktree taken over may hold the work already (its owner died before pushing).
        rc, out, _ = self.sh("git rev-list --count origin/main..HEAD", cwd=path)
        taken_over = rc != 0 or out.strip() != "0"
        if not taken_over or self.status_of(number, cwd=path) != "completed":
            rc, _, err = self.sh(f"git st set-status {item} done -q", cwd=path)
            if rc != 0:
                return self.give_up(number, "set-status", err)
        rc, out, err = self.sh("git status --porcelain", cwd=path)
        if rc != 0:
            return self.give_up(number, "git status", err)
        if out.strip():
            message = shlex.quote(f"{item}: work item {number}")
            rc, _, err = self.sh(f"git add -A && git commit -q -m {message}", cwd=path)
            if rc != 0:
                return self.give_up(number, "commit", err)

        if self.fault == "sync" and number == self.fault_item:
            self.sync_fault(number, path)

        while taken_over:  # a resumed worktree: is the claim (still) ours?
            rc, _, err = self.sh("git st heartbeat", cwd=path)
            if rc == 0:
                break
            if rc == 3:
                self.event("end", item=number, outcome="lost", err=err[-500:])
                return "lost"
            if rc != 4 or time.time() > self.deadline:
                return self.give_up(number, "heartbeat", err)
            self.event("heartbeat-unreachable", item=number, err=err[-300:])
            self.wait_remote()

        for _attempt in range(60):
            if time.time() > self.deadline:
                break
            rc, _, err = self.sh("git st sync main", cwd=path)
            if rc == 4:
                self.event("sync-unreachable", item=number, err=err[-300:])
                self.wait_remote()
                continue
            if rc != 0:
                return self.give_up(number, "sync", err)
            rc, _, err = self.sh("git push -q origin HEAD:main", cwd=path)
            if rc == 0:
                self.event("end", item=number, outcome="landed")
                self.hold_for_outage(number)
                self.remove(number)
                return "landed"
            self.event("push-rejected", item=number, err=err[-300:])
            time.sleep(self.rng.random() * 0.3)
        return self.give_up(number, "push: rejected every time")

    def remove(self, number: int) -> None:
        """``worktree remove``; when it could not reach the remote (exit 4), ``release`` again
        until the remote answers (docs/remote.md: the next ``release`` that reaches it)."""
        self.current = None
        rc, _, err = self.sh(f"git st worktree remove {number} --delete-branch")
        while rc == 4 and time.time() < self.deadline:
            self.event("remove-unreachable", item=number, err=err[-300:])
            self.wait_remote()
            rc, _, err = self.sh(f"git st release {number}")
        if rc != 0:
            self.event("error", step="worktree remove / release", item=number, rc=rc, err=err[-2000:])

    def hold_for_outage(self, number: int) -> None:
        """When the test asks for it (once), the remote goes away right before this agent
        leaves its item: `worktree remove` then runs while the remote cannot be reached."""
        wanted = self.shared / "outage-wanted"
        try:
            wanted.rename(self.shared / "outage-taken")
        except FileNotFoundError:
            return
        self.event("outage-hold", item=number)
        limit = time.monotonic() + 60
        while not (self.shared / "outage-down").exists() and time.monotonic() < limit:
            time.sleep(0.05)

    def give_up(self, number: int, step: str, err: str = "") -> str:
        """Leave an item this agent cannot finish: say why, let go of the claim, and mark the
        item so that no agent spins on it until the deadline."""
        self.event("error", step=step, item=number, err=err[-2000:])
        (self.shared / "failed" / str(number)).touch()
        self.current = None
        self.sh(f"git st release {number}")
        self.event("end", item=number, outcome="gave-up")
        return "error"

    # -- faults --------------------------------------------------------------------------------

    def claim_fault(self, number: int) -> None:
        hook = self.shared / "hook"
        armed = hook / "armed.tmp"
        armed.write_text(str(number))
        armed.rename(hook / "armed")  # the remote's pre-receive hook holds this claim's push
        self.kill_when(f"git st claim {number}", self.clone, hook / "arrived", {}, "claim")
        (hook / "go").touch()  # let the held push land: the claim's owner is gone already
        limit = time.monotonic() + 30
        landed = False
        while time.monotonic() < limit and not landed:
            rc, out, _ = self.sh(f"git ls-remote origin refs/st/claims/{number}")
            landed = rc == 0 and bool(out.strip())
            if not landed:
                time.sleep(0.1)
        self.event("claim-landed", item=number, landed=landed)
        sys.exit(KILLED)

    def add_fault(self, number: int) -> None:
        # git's own `git symbolic-ref HEAD …` inside `git worktree add` (after it made the
        # worktree's admin dir, its placeholder HEAD and the `initializing` lock) runs the
        # `git` of GIT_EXEC_PATH: a wrapper that says so and waits to be killed.
        marker = self.shared / "add-head"
        env = {"GIT_EXEC_PATH": self.cfg["slowexec"], "SWARM_SLOW_HEAD": str(marker)}
        self.kill_when(f"git st worktree add {number} --base origin/main --print-path", self.clone, marker, env, "add")
        sys.exit(KILLED)

    def sync_fault(self, number: int, path: Path) -> None:
        # The merge must run the plan driver: wait until main's plan moved since our base.
        limit = time.monotonic() + 90
        while time.monotonic() < limit:
            if self.fetch():
                rc, _, _ = self.sh("git diff --quiet HEAD...origin/main -- .step/st-plan.jsonl", cwd=path)
                if rc == 1:
                    break
            time.sleep(0.3)
        marker = self.shared / "sync-driver"
        env = {"SWARM_SLOW_DRIVER": str(marker), "PATH": f"{self.cfg['slowbin']}{os.pathsep}{os.environ['PATH']}"}
        self.kill_when("git st sync main", path, marker, env, "sync")
        leftovers = sorted(p.name for p in path.glob(".merge_file_*"))
        rc, lock, _ = self.sh("git rev-parse --git-path index.lock", cwd=path)
        index_lock = (path / lock.strip()).exists() if rc == 0 else None
        self.event("sync-leftovers", item=number, merge_files=leftovers, index_lock=index_lock)
        sys.exit(KILLED)


if __name__ == "__main__":
    sys.exit(Agent(json.loads(sys.argv[1])).run())
