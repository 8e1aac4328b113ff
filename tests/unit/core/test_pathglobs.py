"""Reservation globs (gitst.core.pathglobs): ``overlap`` (a walk over both patterns at once) must
agree with brute force over every path up to the size the patterns can need, as judged by
``covers`` (a regular expression: a second, independent reading of the same rules)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitst.core.errors import UsageError
from gitst.core.pathglobs import covers, normalize, overlap

# Segment patterns of at most two tokens over the alphabet {a, b}: a path segment of at most
# two characters witnesses any overlap two of them have, and four segments any overlap of two
# patterns of at most two segments (a directory's name, then what the other adds below it).
TOKENS = ["a", "b", "*", "?", "[ab]", "[!a]", "[a-b]"]
NAMES = ["".join(p) for n in (1, 2) for p in itertools.product("ab", repeat=n)]
PATHS = ["/".join(p) for depth in range(1, 5) for p in itertools.product(NAMES, repeat=depth)]

segment = st.one_of(
    st.just("**"),
    st.lists(st.sampled_from(TOKENS), min_size=1, max_size=2).map("".join),
)
pattern = st.lists(segment, min_size=1, max_size=2).map(lambda parts: normalize("/".join(parts)))
longer = st.lists(segment, min_size=1, max_size=4).map(lambda parts: normalize("/".join(parts)))


_COVERED: dict[str, frozenset[str]] = {}


def covered(pattern_: str) -> frozenset[str]:
    if pattern_ not in _COVERED:
        _COVERED[pattern_] = frozenset(p for p in PATHS if covers(pattern_, p))
    return _COVERED[pattern_]


@settings(max_examples=150, deadline=None)
@given(pattern, pattern)
def test_overlap_is_exactly_some_path_covered_by_both(a, b):
    both = covered(a) & covered(b)
    assert overlap(a, b) == bool(both), (a, b, sorted(both)[:3])
    assert overlap(a, b) == overlap(b, a)


@settings(max_examples=80, deadline=None)
@given(longer, longer)
def test_a_path_covered_by_both_longer_patterns_is_always_an_overlap(a, b):
    """Longer patterns may need longer witnesses than PATHS holds: here only "never a miss"."""
    if covered(a) & covered(b):
        assert overlap(a, b)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("src/api/**", "src/api/v1/app.py", True),
        ("src/api", "src/api/v1/app.py", True),  # a plain name is a directory: it covers what is below
        ("src/*.py", "src/api/app.py", False),  # a glob covers only what it matches
        ("src/*/x.py", "src/api/*.py", True),
        ("docs/*.md", "**/README.md", True),
        ("*.md", "docs/README.md", False),  # anchored at the top
        ("**", "anything/at/all", True),
        ("[!a]x", "[a]x", False),
        ("[!a]x", "[!b]x", True),
        ("a*b", "*c", False),
        ("a*", "*b", True),
    ],
)
def test_overlap_examples(a, b, expected):
    assert overlap(normalize(a), normalize(b)) is expected
    assert overlap(normalize(b), normalize(a)) is expected


def test_covers_examples():
    assert covers("src/api", "src/api")
    assert covers("src/api", "src/api/deep/x.py")
    assert not covers("src/api", "src/apix")
    assert covers("src/**", "src/a/b/c")
    assert not covers("src/**", "lib/src/a")
    assert covers("**/x.py", "x.py") and covers("**/x.py", "a/b/x.py")
    assert not covers("src/*.py", "src/a.py/inner")


@pytest.mark.parametrize(
    ("raw", "norm"), [("./src//api/", "src/api"), ("/docs/*.md", "docs/*.md"), ("a/**/**/b", "a/**/b")]
)
def test_normalize_spells_each_pattern_one_way(raw, norm):
    assert normalize(raw) == norm


@pytest.mark.parametrize("bad", ["", "   ", "../x", "a/../../b", "a\\b", "a\nb", "/", "./"])
def test_normalize_refuses_what_names_no_path_in_the_repository(bad):
    with pytest.raises(UsageError):
        normalize(bad)
