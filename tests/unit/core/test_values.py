"""``gitst.core.values.value_class``: a dataclass's behaviour without its build cost."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import ClassVar

import pytest

from gitst.core.values import FrozenInstanceError, as_dict, field, replace, value_class


@value_class(frozen=True)
class Point:
    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)
    kind: ClassVar[str] = "point"


@value_class(frozen=True)
class Pair:
    number: int
    text: str


@value_class
class Box:
    name: str
    items: list[Point] = field(default_factory=list)
    seen: dict[str, Point] = field(default_factory=dict)


@value_class
class Labelled(Box):
    label: str = "none"


@value_class
class Checked:
    low: int
    high: int

    def __post_init__(self) -> None:
        if self.low > self.high:
            raise ValueError("low above high")


@dataclasses.dataclass(frozen=True)
class DataPoint:
    x: int
    y: int = 0
    tags: list[str] = dataclasses.field(default_factory=list)


def test_it_builds_instances_as_a_dataclass_does() -> None:
    assert Point(1) == Point(1, 0, []) == Point(x=1, tags=[])
    assert Point(1) != Point(2)
    assert repr(Point(1, 2, ["a"])) == repr(DataPoint(1, 2, ["a"])).replace("DataPoint", "Point")
    assert Point(1).tags is not Point(1).tags  # a fresh default per instance
    assert Point.kind == "point" and "kind" not in as_dict(Point(1))  # a ClassVar is no field
    assert Labelled("b").label == "none" and Labelled("b", [], {}, "x").label == "x"  # bases' fields first
    assert Labelled("b") != Box("b")  # another class is never equal


def test_frozen_values_refuse_assignment_and_hash_by_their_fields() -> None:
    point = Point(1, 2)
    with pytest.raises(FrozenInstanceError):
        point.x = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del point.y  # type: ignore[misc]
    assert {Pair(1, "a"): "found"}[Pair(1, "a")] == "found"
    assert hash(Pair(1, "a")) == hash((1, "a"))
    assert len({Pair(1, "a"), Pair(1, "a"), Pair(2, "a")}) == 2
    with pytest.raises(TypeError):
        hash(Box("a"))  # mutable: unhashable, like a dataclass


def test_wrong_arguments_are_type_errors_naming_the_argument() -> None:
    with pytest.raises(TypeError, match="missing required argument: 'x'"):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        Point(1, z=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        Point(1, x=2)  # type: ignore[misc]
    with pytest.raises(TypeError, match="takes 3 arguments but 4"):
        Point(1, 2, [], 4)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="low above high"):
        Checked(2, 1)


def test_replace_and_as_dict_as_in_dataclasses() -> None:
    box = Box("b", [Point(1)], {"p": Point(2, tags=["t"])})
    assert replace(Point(1, 2), y=5) == Point(1, 5)
    with pytest.raises(TypeError, match="no field 'z'"):
        replace(Point(1), z=1)
    assert as_dict(box) == {
        "name": "b",
        "items": [{"x": 1, "y": 0, "tags": []}],
        "seen": {"p": {"x": 2, "y": 0, "tags": ["t"]}},
    }
    assert as_dict(Point(1, 2, ["a"])) == dataclasses.asdict(DataPoint(1, 2, ["a"]))
    copied = as_dict(box)
    copied["items"].append("x")
    assert len(box.items) == 1  # containers are copies


def test_a_value_class_costs_a_fraction_of_a_dataclass_to_define() -> None:
    """Counted, not timed: the dataclass machinery compiles source text for each class
    (``exec``); a value class never does."""
    code = (
        "import builtins\n"
        "from gitst.core.values import value_class, field\n"
        "calls = 0\n"
        "real = builtins.exec\n"
        "def counting(*a, **k):\n"
        "    global calls\n"
        "    calls += 1\n"
        "    return real(*a, **k)\n"
        "builtins.exec = counting\n"
        "for _ in range(20):\n"
        "    @value_class(frozen=True)\n"
        "    class A:\n"
        "        x: int\n"
        "        y: list = field(default_factory=list)\n"
        "print(calls)\n"
        "import dataclasses\n"
        "@dataclasses.dataclass(frozen=True)\n"
        "class B:\n"
        "    x: int\n"
        "print(calls)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    value_classes, and_a_dataclass = (int(n) for n in out.split())
    assert value_classes == 0
    assert and_a_dataclass > 0  # the count sees a dataclass's compiling
