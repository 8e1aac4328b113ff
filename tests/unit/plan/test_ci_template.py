"""Where the CI template takes gitst from when neither --install nor st.ci.install says: the
source pip recorded for the running gitst (PEP 610 direct_url.json), only when a CI runner
can reach it and it is pinned."""

from __future__ import annotations

import json

import pytest

from gitst.plan import ci_template


class _Dist:
    def __init__(self, direct_url):
        self.direct_url = direct_url

    def read_text(self, name):
        assert name == "direct_url.json"
        return None if self.direct_url is None else json.dumps(self.direct_url)


@pytest.mark.parametrize(
    ("recorded", "spec"),
    [
        (
            {
                "url": "https://github.com/team/gitst",
                "vcs_info": {"vcs": "git", "commit_id": "ab12", "requested_revision": "v1"},
            },
            "git+https://github.com/team/gitst@ab12",
        ),
        (
            {"url": "https://example.com/gitst-1.0.tar.gz", "archive_info": {"hashes": {"sha256": "ff00"}}},
            "https://example.com/gitst-1.0.tar.gz#sha256=ff00",
        ),
        ({"url": "file:///home/me/gitst", "dir_info": {"editable": True}}, None),  # a checkout here
        ({"url": "file:///tmp/gitst-1.0-py3-none-any.whl", "archive_info": {}}, None),
        ({"url": "https://example.com/gitst-1.0.tar.gz", "archive_info": {}}, None),  # no hash: not pinned
        ({"url": "https://hg.example.com/gitst", "vcs_info": {"vcs": "hg", "commit_id": "1"}}, None),
        (None, None),  # installed from an index (or by a tool that records nothing)
    ],
)
def test_the_running_install_source_is_used_only_when_a_runner_can_reach_it(monkeypatch, recorded, spec):
    import importlib.metadata

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: _Dist(recorded))
    assert ci_template.running_install_spec() == spec
