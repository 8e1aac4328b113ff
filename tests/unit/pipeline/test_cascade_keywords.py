"""Closing keywords and closing references, in-process (the CLI tests cover the wiring)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gitst.pipeline.cascade import closes_by_reference, closing_references

REPO = ("acme", "widgets")
KEYWORDS = ["close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved"]


@settings(max_examples=200, deadline=None)
@given(
    issue=st.integers(min_value=1, max_value=99999),
    extra=st.text(alphabet="0123456789", min_size=1, max_size=3),
    keyword=st.sampled_from(KEYWORDS),
    upper=st.booleans(),
)
def test_a_longer_number_never_closes_its_prefix(issue, extra, keyword, upper):
    longer = int(f"{issue}{extra}")
    word = keyword.upper() if upper else keyword
    body = f"{word} #{longer}\n{word}: acme/widgets#{longer} and {word} https://github.com/acme/widgets/issues/{longer}"
    assert closing_references(body, issue, REPO) == []
    assert len(closing_references(body, longer, REPO)) == 3


@settings(max_examples=100, deadline=None)
@given(
    issue=st.integers(min_value=1, max_value=99999),
    keyword=st.sampled_from(KEYWORDS),
    before=st.sampled_from(["", "Some text. ", "- ", "(", "\n\n"]),
    after=st.sampled_from(["", ".", ",", ")", " and more", "\n"]),
)
def test_every_keyword_form_closes(issue, keyword, before, after):
    body = f"{before}{keyword.capitalize()} #{issue}{after}"
    assert closing_references(body, issue, REPO) == [f"{keyword.capitalize()} #{issue}"]


def test_owner_repo_forms_need_a_known_matching_repository():
    assert closing_references("fixes acme/widgets#42", 42, REPO) == ["fixes acme/widgets#42"]
    assert closing_references("fixes Acme/Widgets#42", 42, REPO) == ["fixes Acme/Widgets#42"]
    assert closing_references("fixes other/widgets#42", 42, REPO) == []
    assert closing_references("fixes acme/widgets#42", 42, None) == []  # cannot be attributed
    assert closing_references("fixes #42", 42, None) == ["fixes #42"]


def test_closing_references_shapes():
    ref = {
        "id": "I_1",
        "number": 42,
        "url": "https://github.com/acme/widgets/issues/42",
        "repository": {"id": "R_1", "name": "widgets", "owner": {"id": "O_1", "login": "acme"}},
    }
    pr = {"number": 7, "url": "https://github.com/acme/widgets/pull/7", "closingIssuesReferences": [ref]}
    assert closes_by_reference(pr, 42)
    assert not closes_by_reference(pr, 4)
    other = {
        **ref,
        "repository": {"name": "widgets", "owner": {"login": "someone-else"}},
        "url": "https://github.com/someone-else/widgets/issues/42",
    }
    assert not closes_by_reference({**pr, "closingIssuesReferences": [other]}, 42)
    assert closes_by_reference({**pr, "closingIssuesReferences": [42]}, 42)  # bare numbers, as early gh printed
    assert not closes_by_reference({**pr, "closingIssuesReferences": None}, 42)
    assert not closes_by_reference({**pr, "closingIssuesReferences": [True, "42", {"number": "42"}]}, 42)
