"""The st plan file on disk: an append-only JSONL v3 stream (seed 000).

Where the rest of gitst (the engine, the merge driver, the validators, the tests) takes the
plan's file from. The file's data flow, one module each:

- :mod:`gitst.plan.location` — where the plan is: :class:`PlanLocation` (its path, its lock
  sidecar ``<plan>.lock``, how both are shown, its work tree), resolved once per command;
- :mod:`gitst.plan.records` — the records, line by line: :func:`iter_plan_lines` /
  :func:`parse_plan_bytes` (every line with its 1-based number, bad lines and a torn last
  line reported, never raised), :func:`watermark`,
  :func:`trailing_events`, :func:`needs_checkpoint`, :func:`build_event`,
  :func:`build_checkpoint`, :func:`checkpoint_interval`; the whole file (:func:`open_plan`,
  :func:`read_bytes`, :func:`read_full`);
- :mod:`gitst.plan.tail` — :func:`read_tail`, the O(tail) read: the file is read *backwards*
  from its end until the latest usable checkpoint; only that checkpoint and the records after
  it are parsed; a writer's read (:func:`locked_tail`): under :func:`plan_lock`
  (``<plan>.lock``), the plan opened once for reading and appending;
- :mod:`gitst.plan.append` — :func:`append_records`, the locked append of records made lines
  by :func:`encode_record`: one ``write`` of whole lines + fsync through the descriptor the
  locked read opened; a torn tail is first set aside as ``<plan>.torn-<timestamp>``.

Torn tail: a last line without a newline that does not parse as a JSON object is a write
cut short by a crash (never one holding a CR byte: gitst never writes one, so that is a file
with CR-only line breaks, reported as a bad line and never set aside). Readers skip it with
a warning; the next writer (under the lock) moves
its bytes to ``<plan>.torn-<UTC timestamp>`` and truncates the plan back to the end of the
last whole line before appending. A last line without newline that *does* parse is a whole
record that lost only its newline: readers use it, the next writer adds the newline.
"""

from __future__ import annotations

from gitst.plan.append import append_records, encode_record, set_aside_torn_tail
from gitst.plan.location import DEFAULT_PLAN, PlanLocation, Target, shown_path, torn_glob
from gitst.plan.records import (
    BAD,
    BLANK,
    CR_ONLY,
    ITEM_DEPTH,
    MAX_SEQ,
    RECORD,
    TOO_DEEP,
    TORN,
    VERSION,
    ParsedPlan,
    TornTail,
    build_checkpoint,
    build_event,
    checkpoint_interval,
    deep_item_message,
    iter_lines,
    iter_plan_lines,
    line_blocks,
    needs_checkpoint,
    now_ts,
    open_plan,
    parse_plan_bytes,
    read_bytes,
    read_full,
    schema_problem,
    seq_of,
    too_deep_items,
    too_deep_touched,
    touched_items,
    trailing_events,
    watermark,
)
from gitst.plan.tail import (
    Tail,
    TailProblem,
    last_line_state,
    locked_tail,
    plan_lock,
    read_tail,
    read_tail_bytes,
    read_tail_from,
    reverse_lines,
)

__all__ = [
    "BAD",
    "BLANK",
    "CR_ONLY",
    "DEFAULT_PLAN",
    "ITEM_DEPTH",
    "MAX_SEQ",
    "RECORD",
    "TOO_DEEP",
    "TORN",
    "VERSION",
    "ParsedPlan",
    "PlanLocation",
    "Tail",
    "TailProblem",
    "Target",
    "TornTail",
    "append_records",
    "build_checkpoint",
    "build_event",
    "checkpoint_interval",
    "deep_item_message",
    "encode_record",
    "iter_lines",
    "iter_plan_lines",
    "last_line_state",
    "line_blocks",
    "locked_tail",
    "needs_checkpoint",
    "now_ts",
    "open_plan",
    "parse_plan_bytes",
    "plan_lock",
    "read_bytes",
    "read_full",
    "read_tail",
    "read_tail_bytes",
    "read_tail_from",
    "reverse_lines",
    "schema_problem",
    "seq_of",
    "set_aside_torn_tail",
    "shown_path",
    "too_deep_items",
    "too_deep_touched",
    "torn_glob",
    "touched_items",
    "trailing_events",
    "watermark",
]
