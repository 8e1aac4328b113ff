"""`git st board` on a big plan (issue 26: 10,000 items, first paint <= 1 s).

    .venv/bin/python benchmarks/bench_board.py [--items 10000] [--runs 5]

Needs the extra gitst[board], Selenium (the test extra) and Debian's chromium + chromedriver.
A repository with a plan of ``--items`` items imported by the CLI (a quarter completed, some
in progress, blocked and deferred; most items depend on one or two earlier ones), one board
(`python -m gitst board`), then for each run a fresh headless Chromium page:

- **first paint**: navigation start -> the first frame drawn with the board's data (the page
  marks it: ``data-first-paint``, after a ``requestAnimationFrame``), median and max of the runs;
- **graph page**: the Graph tab clicked -> its first page of nodes drawn;
- **snapshot**: one read of everything the page shows (:meth:`Board.build`, in this process):
  the first (the plan read) and a refresh (the plan unchanged: its cache), medians; and the
  size of ``/api/state``.

Prints the machine's load (``uptime``) beside the figures: on a loaded box they are slower.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _plan(n: int) -> list[dict]:
    items = []
    for i in range(1, n + 1):
        item: dict = {"id": f"st-{i:05d}", "step": f"Item {i}: do the {i % 17}th part of the work"}
        if i > 1:
            item["deps"] = [f"st-{max(1, i - 1 - (i % 7)):05d}"] + (
                [f"st-{i // 2:05d}"] if i % 3 == 0 and i > 2 else []
            )
        if i <= n // 4:
            item["status"] = "completed"
        elif i % 50 == 0:
            item["status"] = "in_progress"  # (its deps completed: a rule of the plan)
            item["deps"] = [f"st-{1 + i % (n // 4):05d}"]
        elif i % 41 == 0:
            item["status"] = "blocked"
        elif i % 37 == 0:
            item["status"] = "deferred"
        items.append(item)
    return items


def _repo(tmp: Path, n: int, env: dict) -> Path:
    repo = tmp / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (tmp / "items.json").write_text(json.dumps(_plan(n)))
    gitst = [sys.executable, "-m", "gitst"]
    subprocess.run([*gitst, "init", "-q"], cwd=repo, env=env, check=True)
    subprocess.run(
        [*gitst, "import-plan", "-q", "--allow-multiple-in-progress", str(tmp / "items.json")],
        cwd=repo,
        env=env,
        check=True,
    )
    return repo


def _browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1400,900"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)


def _wait(driver, script: str, deadline: float = 120.0):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.02)
    raise SystemExit(f"timed out: {script}")


def _page_runs(url: str, runs: int) -> tuple[list[float], list[float]]:
    driver = _browser()
    paints, graphs = [], []
    try:
        for _ in range(runs):
            driver.get("about:blank")
            driver.get(url)
            paints.append(float(_wait(driver, "return document.body.getAttribute('data-first-paint')")))
            driver.execute_script(
                "window.__t0 = performance.now();"
                "document.querySelector('#tabs button[data-view=graph]').click();"
                "window.__t1 = performance.now();"
            )
            _wait(driver, "return document.querySelectorAll('#graph g.node').length > 0")
            graphs.append(float(driver.execute_script("return window.__t1 - window.__t0")))
    finally:
        driver.quit()
    return paints, graphs


def _snapshot_times(repo: Path, runs: int) -> tuple[list[float], list[float]]:
    """(a first read: a new board, the plan read; a refresh: the plan unchanged), seconds."""
    from gitst.board.server import Board
    from gitst.plan.store import Target

    here = os.getcwd()
    os.chdir(repo)
    try:
        cold, warm = [], []
        for _ in range(runs):
            board = Board(Target.of(None))
            start = time.perf_counter()
            board.build()
            cold.append(time.perf_counter() - start)
            start = time.perf_counter()
            board.build()
            warm.append(time.perf_counter() - start)
        return cold, warm
    finally:
        os.chdir(here)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    load = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        env = {**os.environ, "ST_UPDATE_PLAN": "0", "PYTHONPATH": str(ROOT)}
        repo = _repo(tmp, args.items, env)
        proc = subprocess.Popen(
            [sys.executable, "-m", "gitst", "board"], cwd=repo, env=env, stdout=subprocess.PIPE, text=True
        )
        try:
            url = proc.stdout.readline().split(" ", 1)[1].strip()
            base, token = url.split("/?token=")
            with urllib.request.urlopen(f"{base}/api/state?token={token}", timeout=60) as response:
                size = len(response.read())
            paints, graphs = _page_runs(url, args.runs)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
        cold, warm = _snapshot_times(repo, args.runs)
    print(f"load: {load}")
    print(f"plan: {args.items} items; /api/state {size / 1e6:.2f} MB")
    print(f"first paint: median {statistics.median(paints):.0f} ms, max {max(paints):.0f} ms ({args.runs} runs)")
    print(f"graph tab (first page of 150 nodes): median {statistics.median(graphs):.0f} ms")
    print(f"snapshot, first read (the plan read): median {statistics.median(cold) * 1000:.0f} ms")
    print(f"snapshot, a refresh (plan unchanged): median {statistics.median(warm) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
