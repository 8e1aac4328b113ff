"""``gitst.deliberations.store.build``: the record from a JSON document and the command line's
fields, with the token counts merged into the document's ``tokens`` block (the merge that
``git st deliberation add`` used to do in the CLI)."""

from __future__ import annotations

import pytest

from gitst.core.errors import UsageError
from gitst.deliberations import store


def test_token_counts_merge_into_the_documents_block_keeping_its_other_fields():
    document = {"role": "judge", "status": "completed", "tokens": {"input": 1, "output": 2, "cached": 9}}
    record = store.build(document, {}, session="s-1", tokens=(None, 40), now=0.0)
    assert record["tokens"] == {"input": 1, "output": 40, "cached": 9}
    assert document["tokens"] == {"input": 1, "output": 2, "cached": 9}  # the caller's document is not changed
    both = store.build(document, {}, session="s-1", tokens=(5, 6), now=0.0)
    assert both["tokens"] == {"input": 5, "output": 6, "cached": 9}


def test_without_token_counts_the_documents_block_stays_as_it_is():
    document = {"role": "judge", "status": "completed", "tokens": {"input": 1, "cached": 9}}
    record = store.build(document, {"model": "m"}, session="s-1", now=0.0)
    assert record["tokens"] == {"input": 1, "cached": 9}
    assert record["model"] == "m" and record["session"] == "s-1"
    assert "tokens" not in store.build(None, {"role": "r", "status": "ok"}, session="s-1", now=0.0)


def test_token_counts_without_a_document_make_the_block():
    record = store.build(None, {"role": "builder", "status": "failed"}, session="s-1", tokens=(3, None), now=0.0)
    assert record["tokens"] == {"input": 3}


def test_merge_tokens_replaces_a_block_that_is_not_an_object():
    assert store.merge_tokens("lots", 1, 2) == {"input": 1, "output": 2}
    assert store.merge_tokens(None, None, None) is None
    assert store.merge_tokens({"input": 1}, None, None) is None


def test_the_merged_record_is_still_checked():
    with pytest.raises(UsageError, match="needs role"):
        store.build({"status": "completed"}, {}, session="s-1", tokens=(1, 1), now=0.0)
