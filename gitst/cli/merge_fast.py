"""`git st merge-driver` without click: what it does with its arguments, and their plain forms.

git runs the driver once per conflicted plan file inside every merge, rebase and `git st land`
of the loop, each in a fresh interpreter: click and the hook installer would cost more than
the merge of a small plan does. So the driver's body lives here, free of click, and
:func:`run` reads its command line as git writes it (``[--published REF]... %O %A %B [%P]``,
with :func:`gitst.cli.plan_fast.parse_line`). Anything else — ``--help``, an unknown option,
a missing or extra argument, a version that is a directory (click's ``Path(dir_okay=False)``
error), shell completion — returns None and the click command in :mod:`gitst.cli.hooks` (the
same body, the help text) handles it, errors included. ``tests/unit/cli/test_merge_fast.py``
checks this grammar against the click declaration and pins the modules the driver imports.
"""

from __future__ import annotations

import os
import stat

from gitst.cli.output import say
from gitst.cli.plan_fast import parse_line
from gitst.plan.merge import MergeConflict, merge_files
from gitst.plan.store import checkpoint_interval

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["GRAMMAR", "merge_driver", "parse", "run"]

# (positional parameters in order, options): as gitst.cli.hooks.merge_driver declares them.
GRAMMAR: tuple[tuple[str, ...], dict[str, tuple[str, object]]] = (
    ("base", "ours", "theirs", "path"),
    {"--published": ("published", "multi")},
)
_VERSIONS = ("base", "ours", "theirs")  # the click.Path(dir_okay=False) arguments


def parse(args: list[str]) -> dict[str, object] | None:
    """The parameters of a plain ``merge-driver …`` command line, else None (click's to parse)."""
    if args[:1] != ["merge-driver"]:
        return None
    positional_names, options = GRAMMAR
    params = parse_line(args[1:], positional_names, options, {**dict.fromkeys(positional_names), "published": ()})
    if params is None or params["theirs"] is None:
        return None  # a missing argument: click's error
    for name in _VERSIONS:
        try:
            mode = os.stat(str(params[name])).st_mode
        except (OSError, ValueError):
            continue  # click accepts a path that does not exist; the merge says what is wrong with it
        if stat.S_ISDIR(mode):
            return None  # click's "is a directory" error
    return params


def run(args: list[str]) -> int | None:
    """Run the merge driver without click; None when the command line is not a plain one."""
    params = parse(args)
    if params is None:
        return None
    body: Callable[..., int] = merge_driver  # the parameters are the click command's (the grammar test)
    return body(**params)


def merge_driver(published: tuple[str, ...], base: str, ours: str, theirs: str, path: str | None) -> int:
    """The driver (its help: :func:`gitst.cli.hooks.merge_driver`): the merge written to OURS and
    one line on stderr when it changed OURS; :class:`MergeConflict` (exit 1) naming the item."""
    shown = path or ours
    try:
        changed = merge_files(
            base, ours, theirs, interval=checkpoint_interval(), path=path, published_refs=list(published) or None
        )
    except MergeConflict as exc:
        import shlex  # lazy: a conflict's fix line only (not on a clean merge's start-up)

        fix = exc.fix.replace("PATH", shlex.quote(shown)) if exc.fix else None
        raise MergeConflict(f"{shown}: cannot merge the plan: {exc.message}", fix=fix) from None
    if changed is not None and changed.kept == "theirs":
        say(
            f"gitst: merged {shown}: theirs kept byte for byte (it is published; its ids never change), "
            "this branch's new events appended after it, re-sequenced, then a checkpoint",
            err=True,
        )
    elif changed is not None:
        say(f"gitst: merged {shown}: their new events appended after ours, re-sequenced, then a checkpoint", err=True)
    return 0
