"""PlanLocation: a plan's place resolved once at a command's edge (gitst.plan.location)."""

from __future__ import annotations

import os
from pathlib import Path

from gitst.plan import engine, store
from gitst.plan.location import DEFAULT_PLAN, PlanLocation, Target, shown_path, torn_glob


def test_the_default_plan_at_the_top_of_a_work_tree(repo, monkeypatch):
    monkeypatch.chdir(repo)
    location = PlanLocation.of(None)
    assert location.path == Path(DEFAULT_PLAN)
    assert location.shown == DEFAULT_PLAN
    assert location.lock == Path(DEFAULT_PLAN + ".lock")
    assert location.shown_lock == DEFAULT_PLAN + ".lock"
    assert location.full == repo / DEFAULT_PLAN
    assert location.full_lock == repo / (DEFAULT_PLAN + ".lock")
    assert location.top == repo
    assert location.git_dir == repo  # .step/ does not exist yet: git is asked from its parent


def test_git_is_asked_from_the_plans_directory_once_it_exists(repo, monkeypatch):
    monkeypatch.chdir(repo)
    (repo / ".step").mkdir()
    assert PlanLocation.of(None).git_dir == repo / ".step"


def test_from_a_subdirectory_the_plan_is_shown_relative_to_it(repo, monkeypatch):
    (repo / "src" / "deep").mkdir(parents=True)
    monkeypatch.chdir(repo / "src" / "deep")
    location = PlanLocation.of(None)
    assert location.shown == os.path.join("..", "..", DEFAULT_PLAN)
    assert location.path == Path(location.shown)
    assert location.shown_lock == location.shown + ".lock"
    assert location.full == repo / DEFAULT_PLAN
    assert location.top == repo


def test_outside_a_work_tree_the_plan_is_in_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    location = PlanLocation.of(None)
    assert location.path == Path(DEFAULT_PLAN)
    assert location.top is None
    assert location.full == tmp_path / DEFAULT_PLAN
    assert location.git_dir == tmp_path


def test_a_file_option_is_shown_normalized_and_finds_its_work_tree(repo, monkeypatch):
    monkeypatch.chdir(repo)
    location = PlanLocation.of("./plans//p.jsonl")
    assert location.shown == "plans/p.jsonl"
    assert location.path == Path("plans/p.jsonl")
    assert location.lock == Path("plans/p.jsonl.lock")
    assert location.shown_lock == "plans/p.jsonl.lock"
    assert location.top == repo
    assert location == PlanLocation.at(Path("plans/p.jsonl"), "plans/p.jsonl")


def test_a_known_path_outside_any_work_tree(tmp_path):
    location = PlanLocation.at(tmp_path / "p.jsonl", "p.jsonl")
    assert location.top is None
    assert location.full_lock == tmp_path / "p.jsonl.lock"
    assert location.git_dir == tmp_path


def test_the_engine_and_the_store_name_the_same_type():
    assert Target is PlanLocation
    assert engine.Target is PlanLocation
    assert store.PlanLocation is PlanLocation


def test_shown_path_and_torn_glob():
    assert shown_path("./a//b/../c") == "a/b/../c"
    assert torn_glob(".step/st-plan.jsonl") == "st-plan.jsonl.torn-*"
