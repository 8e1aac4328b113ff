"""`git st board` in a real Chromium (Debian's chromium + chromedriver, driven by Selenium).

One board and one browser serve the module's tests (a plan made by the CLI, changed by the CLI
in other processes while the page is open); the stop tests start their own board. Every wait is
on a DOM or process condition with a generous deadline: the figures (how soon a change shows)
are printed, never raced.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support import git, init_repo, process_gone, session_env, write_wrapper

pytest.importorskip("selenium")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver") or (
    "/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="no chromium/chromedriver (Debian: apt-get install chromium chromium-driver; .ci/run installs them in CI)",
)

XSS = "<img src=x onerror=alert(1)>"
DEADLINE = 60.0  # a hang, not a speed test


def _env(tmp: Path) -> dict:
    """An isolated environment of our own (the module's board outlives one test's monkeypatch)."""
    home = tmp / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test User\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"
    )
    bindir = tmp / "bin"
    bindir.mkdir()
    write_wrapper(bindir, "git-st")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ST_", "GIT_", "CLAUDE_", "CODEX_"))}
    env.update(
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
        PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    return env


def _st(env: dict, repo: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        ["git", "st", *args], cwd=repo, env={**env, **extra}, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc


PLAN = [
    {"id": "st-001", "step": "Write the parser"},
    {"id": "st-002", "step": "Wire the parser into the CLI", "deps": ["st-001"]},
    {"id": "st-003", "step": XSS},
    {"id": "st-004", "step": "Ship it", "deps": ["st-002", "st-003"]},
    {"id": "st-005", "step": "Old idea", "status": "deferred"},
]


def _make_plan(env: dict, repo: Path) -> None:
    """The plan, made by the CLI (init, import-plan) and committed."""
    (repo.parent / "items.json").write_text(json.dumps(PLAN))
    _st(env, repo, "init", "-q")
    _st(env, repo, "import-plan", "-q", str(repo.parent / "items.json"))
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "plan", cwd=repo, env=env)


class Board:
    """A running `git st board` (git → git-st): its URL, its processes."""

    def __init__(self, env: dict, repo: Path, argv: list[str] | None = None, **popen) -> None:
        self.proc = subprocess.Popen(
            argv or ["git", "st", "board"],
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **popen,
        )
        line = self.proc.stdout.readline()
        assert line.startswith("board: http://127.0.0.1:"), (line, self.proc.stderr.read() if not line else "")
        self.url = line.split(" ", 1)[1].strip()
        self.base, self.token = self.url.split("/?token=")

    def get(self, path: str, *, token: str | None = "", host: str | None = None) -> tuple[int, dict, bytes]:
        token = self.token if token == "" else token
        sep = "&" if "?" in path else "?"
        url = self.base + path + (f"{sep}token={token}" if token is not None else "")
        request = urllib.request.Request(url, headers={"Host": host} if host else {})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers), err.read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


def _planned_repo(tmp_path_factory, name: str) -> tuple[dict, Path]:
    """A repository with the plan made by the CLI, in an environment of its own."""
    tmp = tmp_path_factory.mktemp(name)
    env = _env(tmp)
    repo = init_repo(tmp / "repo")
    _make_plan(env, repo)
    return env, repo


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    env, repo = _planned_repo(tmp_path_factory, "board")
    board = Board(env, repo)
    yield env, repo, board
    board.stop()


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1400,900"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def wait_for(condition, what: str, deadline: float = DEADLINE):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {deadline}s waiting for {what}")


def card(driver, item_id: str):
    found = driver.find_elements(By.CSS_SELECTOR, f'#columns .card[data-id="{item_id}"]')
    return found[0] if found else None


def card_text(driver, item_id: str, part: str = "") -> str | None:
    """A card's text (or one part's: ``.title``), read in one script: the page re-renders
    the cards when the plan changes, so a found element can go stale before it is read."""
    return driver.execute_script(
        "const c = document.querySelector(`#columns .card[data-id='${arguments[0]}'] ${arguments[1]}`);"
        "return c ? c.textContent : null;",
        item_id,
        part,
    )


def texts_of(driver, selector: str) -> list[str]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]), e => e.textContent)", selector
    )


def column_of(driver, item_id: str) -> str | None:
    return driver.execute_script(
        "const c = document.querySelector(`#columns .card[data-id='${arguments[0]}']`);"
        "return c ? c.closest('.column').dataset.column : null;",
        item_id,
    )


@pytest.fixture(scope="module")
def page(world, browser):
    _, _repo, board = world
    browser.get(board.url)
    wait_for(lambda: card(browser, "st-004"), "the plan's cards")
    return browser


def test_board_renders_the_plan_made_by_the_cli_with_untrusted_text_as_text(page, world):
    columns = {i: column_of(page, i) for i in ("st-001", "st-002", "st-003", "st-004", "st-005")}
    assert columns == {
        "st-001": "ready",
        "st-002": "blocked",
        "st-003": "ready",
        "st-004": "blocked",
        "st-005": "parked",
    }
    assert card_text(page, "st-003", ".title") == XSS  # the markup is shown, as text
    assert page.find_elements(By.CSS_SELECTOR, "main img") == []  # no element made of it
    with pytest.raises(NoAlertPresentException):
        page.switch_to.alert  # noqa: B018 - the property raises when no alert fired
    assert "waits on st-001" in card_text(page, "st-002")


def test_a_status_set_in_another_process_shows_on_the_open_page(page, world):
    env, repo, _board = world
    version = int(page.find_element(By.TAG_NAME, "body").get_attribute("data-version"))
    started = time.monotonic()
    _st(env, repo, "set-status", "st-001", "in_progress")
    returned = time.monotonic()
    wait_for(lambda: column_of(page, "st-001") == "in_progress", "st-001 in the in-progress column")
    shown = time.monotonic()
    print(  # the figure the issue asks for (within 2 s): reported, not raced
        f"\nboard: set-status shown on the page {shown - returned:.2f} s after the command returned, "
        f"{shown - started:.2f} s after it started (load {os.getloadavg()[0]:.1f})"
    )
    assert int(page.find_element(By.TAG_NAME, "body").get_attribute("data-version")) > version


def test_a_claim_by_a_second_session_shows_with_its_owner(page, world):
    env, repo, _board = world
    holder = subprocess.Popen(["sleep", "300"])
    try:
        _st(env, repo, "claim", "st-003", **session_env("agent-b", pid=holder.pid))
        _st(env, repo, "reserve", "src/parser/**", **session_env("agent-b", pid=holder.pid))
        wait_for(lambda: "held by agent-b" in (card_text(page, "st-003") or ""), "st-003 held by agent-b")
        page.find_element(By.CSS_SELECTOR, '#tabs button[data-view="sessions"]').click()
        wait_for(lambda: "agent-b" in page.find_element(By.ID, "sessions").text, "agent-b in the sessions table")
        assert "live" in page.find_element(By.ID, "sessions").text
        wait_for(lambda: "src/parser/**" in page.find_element(By.ID, "reservations").text, "agent-b's reservation")
        assert "agent-b" in page.find_element(By.ID, "reservations").text
    finally:
        holder.kill()
        holder.wait()
        page.find_element(By.CSS_SELECTOR, '#tabs button[data-view="columns"]').click()


def test_clicking_an_item_shows_its_history_and_the_graph_draws_it(page, world):
    env, repo, _board = world
    _st(env, repo, "add-comment", "st-005", "revisit after the release")  # (its own item: no test order)
    wait_for(lambda: card(page, "st-005"), "st-005's card")
    page.execute_script("document.querySelector(`#columns .card[data-id='st-005']`).click()")
    texts = wait_for(lambda: texts_of(page, "#detail .history li"), "st-005's history")  # read on click
    assert any("upsert: Old idea (deferred)" in t for t in texts), texts
    assert any("add-comment by" in t for t in texts), texts  # the comment, written before the click
    assert any("revisit after the release" in t for t in texts_of(page, "#detail .comments li"))
    if os.environ.get("GITST_BOARD_SCREENSHOT"):  # docs/board.png: see docs/board.md
        page.save_screenshot(os.environ["GITST_BOARD_SCREENSHOT"])
    page.find_element(By.CSS_SELECTOR, '#tabs button[data-view="graph"]').click()
    # (read in one script each: the graph is drawn anew whenever the state changes)
    nodes = wait_for(
        lambda: page.execute_script(
            "return Array.from(document.querySelectorAll('#graph g.node'), n => n.getAttribute('data-id'))"
        ),
        "the graph's nodes",
    )
    assert set(nodes) == {"st-001", "st-002", "st-003", "st-004"}  # parked hidden
    assert page.execute_script("return document.querySelectorAll('#graph path.edge').length") == 3
    page.find_element(By.CSS_SELECTOR, '#tabs button[data-view="columns"]').click()


@pytest.fixture(scope="module")
def quiet(tmp_path_factory):
    """A repository nobody changes while its boards run (the stop tests share it)."""
    env, repo = _planned_repo(tmp_path_factory, "quiet")
    _st(env, repo, "claim", "st-001", **session_env("agent-a"))
    return env, repo


def _refuses_without_token(board: Board) -> None:
    for path in ("/", "/static/board.js", "/static/board.css", "/api/state", "/api/item?id=st-001"):
        assert board.get(path, token=None)[0] == 403, path
        assert board.get(path, token="wrong")[0] == 403, path
        status, headers, _body = board.get(path)
        assert status == 200, path
        assert "script-src 'self'" in headers["content-security-policy"]
    assert board.get("/api/state", host="evil.example:80")[0] == 403  # DNS rebinding


def _fingerprint(repo: Path) -> dict:
    """What a read-only board must leave as it was: every file's bytes (.git included), git's view."""
    files = {}
    for path in sorted(repo.rglob("*")):
        if path.is_file() and not path.is_symlink():
            files[str(path.relative_to(repo))] = hashlib.sha256(path.read_bytes()).hexdigest()
    status = git("status", "--porcelain", "--ignored", cwd=repo)
    return {"files": files, "status": status}


def _port_closed(base: str) -> bool:
    try:
        urllib.request.urlopen(base + "/", timeout=5)
    except urllib.error.HTTPError:
        return False  # it answered (403)
    except OSError:
        return True
    return False


def test_every_route_refuses_a_request_without_the_token_and_ctrl_c_stops_it_leaving_the_repo_as_it_was(quiet):
    """One board for both (a board's start is seconds on the loaded box): 403s, then SIGINT."""
    env, repo = quiet
    before = _fingerprint(repo)
    board = Board(env, repo, start_new_session=True)  # its own process group, as a terminal's job
    try:
        _refuses_without_token(board)
        servers = _servers(repo)
        assert servers, "no board process found"
        os.killpg(board.proc.pid, signal.SIGINT)  # Ctrl-C: the whole foreground job gets it
        wait_for(lambda: all(process_gone(pid) for pid in servers), "the board to exit on SIGINT")
        board.proc.wait(timeout=DEADLINE)  # git itself dies of the SIGINT, as in a terminal
        assert "board: stopped" in board.proc.stderr.read()  # its own shutdown, not a traceback
        assert _port_closed(board.base)
    finally:
        board.stop()
    assert _fingerprint(repo) == before


def test_it_stops_when_its_parent_dies(quiet):
    env, repo = quiet
    parent = (
        "import subprocess, sys\n"
        "p = subprocess.Popen(['git', 'st', 'board'], stdout=subprocess.PIPE, text=True)\n"
        "print(p.stdout.readline().strip(), flush=True)\n"
        "import time; time.sleep(300)\n"
    )
    board = Board(env, repo, argv=[sys.executable, "-c", parent])
    assert board.get("/api/state")[0] == 200
    servers = _servers(repo)
    assert servers, "no board process found"
    board.proc.kill()  # SIGKILL: the parent gets no chance to stop its child
    board.proc.wait(timeout=30)
    wait_for(lambda: all(process_gone(pid) for pid in servers), "the board to exit after its parent died")
    assert _port_closed(board.base)


def _servers(repo: Path) -> list[int]:
    """The pids of the board processes serving ``repo`` (git and git-st: cwd there, `board` in argv)."""
    return [
        int(p.name)
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and _cwd(p) == str(repo).encode() and b"\0board\0" in _cmdline(p)
    ]


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def _cwd(proc: Path) -> bytes:
    try:
        return os.readlink(proc / "cwd").encode()
    except OSError:
        return b""


def test_without_the_extra_it_says_how_to_install_it(tmp_path):
    env = _env(tmp_path)
    repo = init_repo(tmp_path / "repo")
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    # a meta path finder that hides starlette: what a gitst installed without [board] sees
    (blocker / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('starlette', 'uvicorn'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Hide())\n"
    )
    proc = subprocess.run(
        ["git", "st", "board"],
        cwd=repo,
        env={**env, "PYTHONPATH": str(blocker)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 4, proc
    assert "gitst[board]" in proc.stderr and "pip install" in proc.stderr
    assert "Traceback" not in proc.stderr
