"""The identifier value types: parsed once by their constructor, trusted afterwards."""

from __future__ import annotations

import pytest

from gitst.core.errors import UsageError
from gitst.sessions.locks import LockName, validate_lock_name
from gitst.statedir import paths
from gitst.statedir.paths import Identifier, IssueId, SessionId, state_path, validate_identifier


def test_an_issue_id_is_the_text_it_was_made_from():
    issue = IssueId("PROJ-7")
    assert issue == "PROJ-7" and isinstance(issue, str) and isinstance(issue, Identifier)
    assert str(issue) == "PROJ-7" and type(str(issue)) is str  # what goes into a record
    assert {issue: 1}["PROJ-7"] == 1 and f"issue {issue}" == "issue PROJ-7"


@pytest.mark.parametrize("bad", ["", "..", ".", "a/b", "../x", "x" * 65, "a b", "7@host"])
def test_an_issue_id_is_refused_with_the_message_of_validate_identifier(bad):
    with pytest.raises(UsageError) as refused:
        IssueId(bad)
    with pytest.raises(UsageError) as same:
        validate_identifier(bad, "issue")
    assert refused.value.message == same.value.message


def test_a_session_id_may_hold_an_at_sign_an_issue_id_may_not():
    assert SessionId("pid-12@host") == "pid-12@host"
    with pytest.raises(UsageError, match="invalid session id"):
        SessionId("a/b")
    with pytest.raises(UsageError, match="invalid issue"):
        IssueId("pid-12@host")


def test_a_parsed_value_is_not_parsed_again(monkeypatch):
    calls = []
    real = paths.validate_identifier
    monkeypatch.setattr(paths, "validate_identifier", lambda *a, **k: calls.append(a) or real(*a, **k))
    issue = IssueId("7")
    assert IssueId(issue) is issue
    state_path("active-worktrees", issue, suffix=".json", root=_root())
    assert calls == [("7", "issue")]  # the constructor's; state_path trusted it and the folder name


def test_state_path_still_checks_a_plain_string():
    with pytest.raises(UsageError):
        state_path("locks", "../escape", suffix=".json", root=_root())
    with pytest.raises(UsageError):
        state_path("not a folder", "x", root=_root())


def test_a_lock_name_of_an_issue_is_valid_for_every_issue_id():
    longest = IssueId("x" * 64)
    name = LockName.of_issue(longest)
    assert name == "issue-" + "x" * 64 and validate_lock_name(name) is name
    assert validate_lock_name(str(name)) == name  # the same name given back by hand is accepted
    with pytest.raises(UsageError, match="invalid lock name"):
        LockName("../x")
    with pytest.raises(UsageError, match="issue id after 'issue-'"):
        validate_lock_name("issue-" + "x" * 70)


def _root():
    import tempfile
    from pathlib import Path

    return Path(tempfile.mkdtemp()) / "state"
