"""Kind ``pipeline``: ``state/pipeline/<N>.json``, the per-issue pipeline state (seed 001).

The schema ``pipeline-file`` holds the shapes (the wrapper, typed siblings, the inner
``pipeline-state`` with its string scalars, ``sub_issues`` and opaque ``steps``/``tokens``;
unknown fields pass). What JSON Schema cannot say is checked here:

- ``PIPELINE_KEY_COUNT``     more than one numeric key (the schema reports none);
- ``PIPELINE_KEY_MISMATCH``  the numeric key differs from the ``<N>`` of the file name;
- ``PIPELINE_FILE_NAME``     the file is not named ``<N>.json``.

The pipeline state reader (:mod:`gitst.pipeline.state`, ``git st pipeline show/list``)
reports the problems it shares with this check under the same codes.
"""

from __future__ import annotations

import os
import re

from gitst.core.diagnostics import Diagnostic
from gitst.schemas.report import DocumentReport, load_document

SCHEMA = "pipeline-file"

KEY_COUNT = "PIPELINE_KEY_COUNT"
KEY_MISMATCH = "PIPELINE_KEY_MISMATCH"
FILE_NAME = "PIPELINE_FILE_NAME"

_NUMERIC = re.compile(r"[0-9]+")
_FILE_NAME = re.compile(r"([0-9]+)\.json")


def check(data: bytes, path: str, *, against: bytes | None = None) -> list[Diagnostic]:
    document, problems = load_document(data, path, SCHEMA)
    if not isinstance(document, dict):
        return problems
    report = DocumentReport(data, path)
    keys = [key for key in document if _NUMERIC.fullmatch(key)]
    if len(keys) > 1:
        report.add(
            (keys[1],),
            KEY_COUNT,
            f"{len(keys)} numeric keys ({', '.join(keys)}): a pipeline file holds exactly one issue",
            fix="keep one issue per file: state/pipeline/<N>.json holds only the key <N>",
        )
    name = _FILE_NAME.fullmatch(os.path.basename(path))
    if name is None:
        report.add((), FILE_NAME, "a pipeline file is named <N>.json after its issue number", placed=False)
    else:
        for key in keys:
            if key != name.group(1):
                report.add(
                    (key,),
                    KEY_MISMATCH,
                    f"numeric key {key!r} differs from the issue number {name.group(1)} in the file name",
                )
    return problems + report.items
