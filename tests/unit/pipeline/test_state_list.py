"""``gitst.pipeline.state.list_views`` (what ``git st pipeline list`` shows) and
``load_reporting``: every readable issue's view, a diagnostic for each file that cannot be
read, and the others still listed."""

from __future__ import annotations

import json
import os

import pytest

from gitst.pipeline import state


@pytest.fixture
def pipeline_dir(repo, monkeypatch):
    monkeypatch.chdir(repo)
    directory = repo / "state" / "pipeline"
    directory.mkdir(parents=True)
    return directory


def _write(directory, issue: int, inner: dict) -> None:
    (directory / f"{issue}.json").write_text(json.dumps({str(issue): inner, "lastActivity": "2026-04-10T13:06:54Z"}))


def test_views_by_issue_number_and_a_diagnostic_per_unreadable_file(pipeline_dir):
    _write(pipeline_dir, 10, {"current_phase": "qa", "pr_number": "42"})
    _write(pipeline_dir, 2, {"current_phase": "building"})
    (pipeline_dir / "5.json").write_text("{not json")
    os.symlink(pipeline_dir / "2.json", pipeline_dir / "7.json")
    (pipeline_dir / "notes.txt").write_text("not a pipeline file")

    views, problems = state.list_views()
    assert [(v["issue"], v["current_phase"]) for v in views] == [(2, "building"), (10, "qa")]
    assert views[1]["pr_number"] == 42 and "verdict" not in views[1]
    found = [(p.path, p.code) for p in problems]
    assert found == [("state/pipeline/5.json", "JSON"), ("state/pipeline/7.json", "READ")]

    internal, _ = state.list_views(internal=True)
    assert "verdict" in internal[0] and "branch" in internal[0]


def test_no_pipeline_dir_lists_nothing(repo, monkeypatch):
    monkeypatch.chdir(repo)
    assert state.list_views() == ([], [])


def test_status_summary_reports_through_the_same_loader(pipeline_dir):
    _write(pipeline_dir, 3, {"current_phase": "review"})
    (pipeline_dir / "4.json").write_text("[]")
    summary = state.status_summary(["3", "4", "9"])
    assert summary[0]["current_phase"] == "review"
    assert summary[1]["issue"] == 4 and summary[1]["error"].startswith("SCHEMA: ")
    assert summary[2] == {"issue": 9, "error": "no pipeline state (no state/pipeline file)"}
    loaded = state.load_reporting("4")
    assert loaded is not None and not isinstance(loaded, state.PipelineFile) and loaded.code == "SCHEMA"
