"""The resident process (``ST_RESIDENT=1``, docs/resident.md) through the real `bin/git-st`:
a command it runs prints, writes and exits exactly as `git-st` running it itself; it gets the
client's directory, umask, environment and standard input; the session is the one the walk
from the client finds; a client killed or interrupted ends its command; changed code is never
run; an unsafe socket directory is never used; it stops when asked or idle."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.loop.conftest import item, write_plan
from tests.e2e.remote.conftest import clone, make_bare
from tests.support import (
    REPO_ROOT,
    git,
    init_repo,
    process_ends,
    resident_settings,
    run,
    session_env,
    stop_resident,
)


def _wrapper(bindir: Path, root: Path) -> None:
    """`git-st` as installed: the checkout's bin/git-st run by the test interpreter, importing
    the gitst package under ``root``."""
    bindir.mkdir(exist_ok=True)
    script = bindir / "git-st"
    script.write_text(
        f"#!{sys.executable}\nimport runpy, sys\nsys.path.insert(0, {str(root)!r})\n"
        f"runpy.run_path({str(REPO_ROOT / 'bin' / 'git-st')!r}, run_name='__main__')\n"
    )
    script.chmod(0o755)


class Resident:
    """The environment of a client of one test's own resident process."""

    def __init__(self, tmp_path: Path, root: Path = REPO_ROOT):
        settings = resident_settings()
        self.runtime = Path(settings["XDG_RUNTIME_DIR"])
        _wrapper(tmp_path / "resident-bin", root)
        self.env = {**settings, "PATH": f"{tmp_path / 'resident-bin'}{os.pathsep}{os.environ['PATH']}"}

    def st(self, *args: str, cwd: Path, env: dict | None = None, **kwargs: object) -> object:
        return run(["git-st", *args], cwd=cwd, env={**self.env, **(env or {})}, **kwargs)

    def start(self) -> None:
        """Started and listening before the commands a test counts: none of them depends on the
        client's own wait for a process it starts (a loaded box may take longer)."""
        started = run(["git-st", "resident", "start", "--wait", "600"], cwd="/", env=self.env)
        assert started.returncode == 0, started

    def status(self, extra: dict | None = None) -> dict:
        shown = run(["git-st", "resident", "status", "--format", "json"], cwd="/", env={**self.env, **(extra or {})})
        return json.loads(shown.stdout)

    def stop(self) -> None:
        assert stop_resident(self.env), "the resident process did not exit after stop"


@pytest.fixture
def resident(tmp_path):
    served = Resident(tmp_path)
    yield served
    served.stop()


def _plan_repo(path: Path) -> Path:
    repo = init_repo(path)
    write_plan(repo, [item(1), item(2, deps=[1]), item(3, status="completed")])
    git("config", "st.worktree.ports", "off", cwd=repo)
    return repo


def test_commands_run_in_the_resident_process_as_without_it(tmp_path, resident):
    """Same stdout, stderr and exit code for reads, a write, a refused write and a usage error;
    each was served by the resident process (its count), none by `git-st` itself."""
    alone, served = _plan_repo(tmp_path / "alone"), _plan_repo(tmp_path / "served")
    off = {"ST_RESIDENT": "0"}
    resident.start()
    commands = [
        ("show",),
        ("ready", "--format", "json"),
        ("add", "st-004", "four"),
        ("set-status", "st-009", "completed"),
        ("show", "--format", "json", "--no-such-option"),
        ("blocked",),
    ]
    for args in commands:
        expected = resident.st(*args, cwd=alone, env=off)
        got = resident.st(*args, cwd=served)
        assert (got.returncode, got.stdout, got.stderr) == (expected.returncode, expected.stdout, expected.stderr), args
    assert [resident.st(*a, cwd=alone, env=off).returncode for a in commands[3:5]] == [2, 2]  # refused, usage
    assert resident.status()["served"] == len(commands)
    assert git("log", "-1", "--format=%s", cwd=served) == git("log", "-1", "--format=%s", cwd=alone)


def test_the_session_is_the_one_the_client_would_be(tmp_path, resident):
    """whoami through the resident process: the same session pid, rule and process chain as
    `git-st` finds itself (the walk starts at the client's parent, not the resident process)."""
    repo = _plan_repo(tmp_path / "repo")
    resident.start()
    alone = json.loads(resident.st("whoami", "--format", "json", cwd=repo, env={"ST_RESIDENT": "0"}).stdout)
    served = json.loads(resident.st("whoami", "--format", "json", cwd=repo).stdout)
    assert resident.status()["served"] == 1
    for key in ("session", "pid", "rule", "chain", "liveness"):
        assert served[key] == alone[key], key
    assert served["pid"] == os.getpid()  # this test's interpreter: the agent above the command


def test_directory_umask_environment_and_stdin_are_the_clients(tmp_path, resident):
    repo = _plan_repo(tmp_path / "repo")
    (repo / "sub").mkdir()
    resident.start()
    # stdin: the plan imported from the client's standard input
    imported = resident.st("import-plan", "-", cwd=repo / "sub", input=json.dumps([{"id": "st-005", "step": "five"}]))
    assert imported.returncode == 0, imported
    # the environment: ST_STATE_DIR and NO_COLOR as the client has them
    shown = resident.st("show", "--format", "json", cwd=repo / "sub", env={"NO_COLOR": "1"})
    assert "st-005" in [i["id"] for i in json.loads(shown.stdout)["items"]]
    # the umask: the plan a fresh init writes under umask 077 is private, as without the resident process
    for name, env in (("alone", {"ST_RESIDENT": "0"}), ("served", {})):
        fresh = init_repo(tmp_path / f"umask-{name}")
        proc = subprocess.run(
            ["git-st", "init"],
            cwd=fresh,
            env={**os.environ, **resident.env, **env},
            capture_output=True,
            preexec_fn=lambda: os.umask(0o077),
            check=False,
        )
        assert proc.returncode == 0, proc
    modes = {
        n: (tmp_path / f"umask-{n}" / ".step" / "st-plan.jsonl").stat().st_mode & 0o777 for n in ("alone", "served")
    }
    assert modes == {"alone": 0o600, "served": 0o600}
    assert resident.status()["served"] == 3


def _held_land(tmp_path: Path, resident: Resident) -> tuple[Path, dict, Path, subprocess.Popen, Path]:
    """A land through the resident process stopped holding the merge slot (ST_LAND_STOP_AT)."""
    tmp_path.mkdir(exist_ok=True)
    bare = make_bare(tmp_path)
    landing = clone(str(bare), tmp_path / "landing")
    write_plan(landing, [item(1)])
    git("push", "-q", "origin", "main", cwd=landing)
    place = clone(str(bare), tmp_path / "clone")
    git("config", "st.worktree.ports", "off", cwd=place)
    git("config", "st.remote", "origin", cwd=place)
    env = session_env("agent-a", os.getpid())
    took = resident.st("next", "--format", "json", cwd=place, env=env)
    assert took.returncode == 0, took
    worktree = Path(json.loads(took.stdout)["path"])
    (worktree / "a.txt").write_text("work\n")
    git("add", "a.txt", cwd=worktree)
    git("commit", "-q", "-m", "work", cwd=worktree)
    marker = tmp_path / "stopped"
    client = subprocess.Popen(
        ["git-st", "land"],
        cwd=worktree,
        env={**os.environ, **resident.env, **env, "ST_LAND_STOP_AT": "holding-slot", "ST_LAND_STOP_FILE": str(marker)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # a terminal's command: SIGINT as a foreground job gets it (a test run started in the
        # background of a shell inherits SIGINT ignored, which git-st and its client keep)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509 - one call, no lock
    )
    deadline = time.monotonic() + 300
    while not marker.exists():
        assert client.poll() is None, client.communicate()
        assert time.monotonic() < deadline, "land never reached its stage"
        time.sleep(0.05)
    return place, env, worktree, client, marker


def test_a_killed_client_ends_its_command_and_the_next_land_finishes(tmp_path, resident):
    """SIGKILL of the client: the worker holding the slot dies with it (its process group
    killed on end-of-file); the next land, through the resident process, lands the item."""
    place, env, worktree, client, marker = _held_land(tmp_path, resident)
    worker = int(marker.read_text().split()[0])
    assert worker != client.pid  # the command ran in the resident process's worker
    client.send_signal(signal.SIGKILL)
    client.wait()
    assert process_ends(worker), "the worker outlived its killed client"
    landed = resident.st("land", "--format", "json", cwd=worktree, env=env)
    assert landed.returncode == 0, landed
    assert json.loads(landed.stdout)["id"] == "st-001"
    assert git("worktree", "list", "--porcelain", cwd=place).count("worktree ") == 1


def test_ctrl_c_reaches_the_command(tmp_path, resident):
    """SIGINT to the client is raised in the worker: the command ends as `git-st` itself
    interrupted there does (its last words, exit 130)."""
    ended = {}
    for mode in ("1", "0"):
        resident.env["ST_RESIDENT"] = mode
        _place, _env, _worktree, client, marker = _held_land(tmp_path / f"resident-{mode}", resident)
        worker = int(marker.read_text().split()[0])
        assert (worker != client.pid) is (mode == "1")
        client.send_signal(signal.SIGINT)
        _out, err = client.communicate(timeout=300)
        assert process_ends(worker)
        ended[mode] = (client.returncode, err.decode().splitlines()[-1])
    assert ended["1"] == ended["0"]
    assert ended["1"][0] == 130, ended


@pytest.mark.parametrize("changed", ["plan/render.py", "schemas/st-item.schema.json"])
def test_changed_code_is_never_run(tmp_path, changed):
    """A resident process whose gitst changed on disk refuses the command (the client runs it on
    the new code) and stops; the next client starts a fresh one. A schema counts as code: the
    resident process compiled every shipped schema before its first command."""
    package = tmp_path / "copy"
    shutil.copytree(REPO_ROOT / "gitst", package / "gitst", ignore=shutil.ignore_patterns("__pycache__"))
    resident = Resident(tmp_path, package)
    resident.env["PYTHONPATH"] = str(package)
    try:
        repo = _plan_repo(tmp_path / "repo")
        resident.start()
        assert resident.st("show", cwd=repo).returncode == 0
        first = resident.status()
        assert first["package"] == str(package / "gitst") and first["served"] == 1
        touched = package / "gitst" / changed
        touched.write_text(touched.read_text() + ("\n# changed\n" if changed.endswith(".py") else "\n"))
        refused = resident.st("show", cwd=repo)
        assert refused.returncode == 0 and "st-001" in refused.stdout  # run by the client itself
        assert process_ends(first["pid"]), "the resident process with changed code did not exit"
        resident.start()  # a fresh one, on the new code
        assert resident.st("show", cwd=repo).returncode == 0
        second = resident.status()
        assert second["pid"] != first["pid"] and second["served"] == 1 and not second["code_changed"]
    finally:
        resident.stop()


def test_an_unsafe_socket_directory_is_never_used(tmp_path, resident):
    """A socket directory others may enter: every command runs in `git-st` itself, quietly."""
    (resident.runtime / "gitst").mkdir(mode=0o755)
    os.chmod(resident.runtime / "gitst", 0o755)
    repo = _plan_repo(tmp_path / "repo")
    shown = resident.st("show", cwd=repo)
    assert shown.returncode == 0 and "st-001" in shown.stdout and shown.stderr == ""
    status = run(["git-st", "resident", "status", "--format", "json"], cwd=repo, env=resident.env)
    assert status.returncode == 1 and json.loads(status.stdout) == {"running": False, "socket": None}
    assert list((resident.runtime / "gitst").iterdir()) == []


def test_it_stops_when_idle_and_when_asked(tmp_path, resident):
    repo = _plan_repo(tmp_path / "repo")
    none = run(["git-st", "resident", "status"], cwd=repo, env=resident.env)
    assert none.returncode == 1 and "no resident process" in none.stdout
    assert resident.st("show", cwd=repo, env={"ST_RESIDENT_IDLE": "0.2"}).returncode == 0
    (log,) = (resident.runtime / "gitst").glob("*.log")
    deadline = time.monotonic() + 240
    while "stopped: idle for 0.2 s" not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    idle = int(log.read_text().split(" gitst resident ")[1].split(":")[0])
    assert process_ends(idle), "an idle resident process did not exit"
    resident.start()
    asked = resident.status()["pid"]
    assert asked != idle
    stopped = run(["git-st", "resident", "stop", "--format", "json"], cwd=repo, env=resident.env)
    assert json.loads(stopped.stdout) == {"stopped": True, "pid": asked}
    assert process_ends(asked)
    assert resident.st("ready", cwd=repo).returncode == 0  # the next command starts one again:
    while log.read_text().count(": serving ") < 3:  # a third "serving" line, from a third process
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    resident.start()
    assert resident.status()["pid"] not in (idle, asked)
    started = run(["git-st", "resident", "start"], cwd="/", env={**resident.env, "ST_RESIDENT": "0"})
    assert started.returncode == 0 and "listens" in started.stdout  # start needs no ST_RESIDENT


def test_a_bad_setting_is_an_error(tmp_path, resident):
    repo = _plan_repo(tmp_path / "repo")
    bad = resident.st("show", cwd=repo, env={"ST_RESIDENT": "maybe"})
    assert bad.returncode == 2 and "ST_RESIDENT must be true or false, got 'maybe'" in bad.stderr


def test_the_client_imports_no_more_than_it_needs(tmp_path, resident):
    """A client's imports beyond the interpreter's own: gitst's client, its wire, the private
    runtime directory (os alone), the setting; no enum, socket.py or signal.py (as much CPU as
    the rest of a client)."""
    repo = _plan_repo(tmp_path / "repo")
    probe = (
        "import sys; before = set(sys.modules)\n"
        "from gitst.cli.resident.client import launch\n"
        "code = launch(['git-st', 'show'])\n"
        "sys.stdout.write(repr(sorted(set(sys.modules) - before)) + ' ' + repr(code) + '\\n')\n"
    )
    env = {**resident.env, "PYTHONPATH": str(REPO_ROOT)}
    out = run([sys.executable, "-c", probe], cwd=repo, env=env).stdout.splitlines()[-1]
    loaded, code = out.rsplit(" ", 1)
    assert code == "0"
    assert set(eval(loaded)) <= {
        "gitst", "gitst.cli", "gitst.cli.resident", "gitst.cli.resident.client", "gitst.cli.resident.wire",
        "gitst.settings", "gitst.core", "gitst.core.errors", "gitst.core.runtime", "_socket", "_signal", "time",
        "array",
    }  # fmt: skip


def test_sessions_racing_through_the_resident_process_get_one_item_each(tmp_path, resident):
    """Four sessions' `next` at once on one clone, three rounds: each item to exactly one."""
    bare = make_bare(tmp_path)
    landing = clone(str(bare), tmp_path / "landing")
    write_plan(landing, [item(n) for n in range(1, 13)])
    git("push", "-q", "origin", "main", cwd=landing)
    place = clone(str(bare), tmp_path / "clone")
    git("config", "st.worktree.ports", "off", cwd=place)
    git("config", "st.remote", "origin", cwd=place)
    resident.start()
    agent = subprocess.Popen(["sleep", "3600"])
    taken: dict[str, str] = {}
    try:
        for round_ in range(3):
            procs = {
                f"r{round_}s{k}": subprocess.Popen(
                    ["git-st", "next", "--format", "json"],
                    cwd=place,
                    env={**os.environ, **resident.env, **session_env(f"r{round_}s{k}", agent.pid)},
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
                for k in range(4)
            }
            for session, proc in procs.items():
                out, err = proc.communicate(timeout=300)
                assert proc.returncode == 0, err
                got = json.loads(out)["id"]
                assert got not in taken, (got, taken)
                taken[got] = session
    finally:
        agent.kill()
        agent.wait()
    assert len(taken) == 12
    assert resident.status()["served"] == 12


def test_a_clone_cannot_put_code_on_the_resident_process_path(tmp_path, resident):
    """A hostile clone holds a `gitst` package and a `click.py`: the resident process its first
    command starts (in that clone's directory) imports neither: python -P, and it moves to /."""
    repo = _plan_repo(tmp_path / "repo")
    marker = tmp_path / "pwned"
    payload = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('imported')\n"
    (repo / "gitst").mkdir()
    (repo / "gitst" / "__init__.py").write_text(payload)
    (repo / "click.py").write_text(payload)
    started = resident.st("resident", "start", "--wait", "600", cwd=repo)  # started from the clone
    assert started.returncode == 0, started
    shown = resident.st("show", cwd=repo)
    assert shown.returncode == 0 and "st-001" in shown.stdout, shown
    assert resident.status()["package"] == str(REPO_ROOT / "gitst") and resident.status()["served"] == 1
    assert resident.st("ready", cwd=repo).returncode == 0
    assert not marker.exists()
