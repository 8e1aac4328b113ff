"""The rules a mutation must keep: no self-dependency, no unknown dependency, no cycle, no
``in_progress``/``completed`` item with unresolved dependencies, at most one ``in_progress``
item unless ``--allow-multiple-in-progress``.

A mutation is rejected when it *introduces* a violation: :func:`check_mutation` compares the
violations of the state after the mutation with those before it, so a plan that already
breaks a rule (two items in progress written with the flag, a merge that left a dangling
dependency) can still be worked on, while every new break is refused. Reads never apply
these rules. Cycle detection is iterative (Tarjan), so a 10,000-long chain costs nothing
special and never meets Python's recursion limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitst.core.errors import UsageError


@dataclass(frozen=True)
class Violation:
    key: tuple  # identifies the violation, so "before" and "after" can be compared
    message: str


def _cycles(items: list[dict]) -> list[list[str]]:
    """Every dependency cycle (one path per strongly connected component of 2+ items)."""
    graph: dict[str, list[str]] = {}
    for item in items:
        targets = []
        for edge in item["deps"]:
            dep = edge["id"]
            if dep != item["id"] and dep not in targets:
                targets.append(dep)
        graph[item["id"]] = targets
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, pos = work.pop()
            if pos == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            targets = graph[node]
            descended = False
            while pos < len(targets):
                nxt = targets[pos]
                pos += 1
                if nxt not in graph:
                    continue
                if nxt not in index:
                    work.append((node, pos))
                    work.append((nxt, 0))
                    descended = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if descended:
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return [_cycle_path(graph, set(component)) for component in components]


def _cycle_path(graph: dict[str, list[str]], members: set[str]) -> list[str]:
    """A readable cycle inside one strongly connected component: a -> b -> ... -> a."""
    order = [node for node in graph if node in members]
    start = order[0]
    parent: dict[str, str] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for dep in graph[node]:
                if dep == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return [*reversed(path), start]
                if dep in members and dep not in seen:
                    seen.add(dep)
                    parent[dep] = node
                    nxt_frontier.append(dep)
        frontier = nxt_frontier
    return [start, start]  # unreachable for a real component


def violations(items: list[dict], *, allow_multiple_in_progress: bool = False) -> list[Violation]:
    """Every rule the (normalized) items break, in a stable order."""
    found: list[Violation] = []
    status_of = {item["id"]: item["status"] for item in items}
    for item in items:
        item_id = item["id"]
        for edge in item["deps"]:
            dep = edge["id"]
            if dep == item_id:
                found.append(Violation(("self-dep", item_id), f"item '{item_id}' cannot depend on itself"))
            elif dep not in status_of:
                found.append(
                    Violation(("unknown-dep", item_id, dep), f"item '{item_id}' references unknown dependency '{dep}'")
                )
    found.extend(
        Violation(("cycle", frozenset(path)), f"dependency cycle detected: {' -> '.join(path)}")
        for path in _cycles(items)
    )
    in_progress = [item["id"] for item in items if item["status"] == "in_progress"]
    if len(in_progress) > 1 and not allow_multiple_in_progress:
        found.append(
            Violation(
                ("multiple-in-progress", frozenset(in_progress)),
                f"multiple in_progress items: {', '.join(in_progress)} (pass --allow-multiple-in-progress to allow it)",
            )
        )
    for item in items:
        status = item["status"]
        if status not in ("in_progress", "completed"):
            continue
        unresolved = []
        for edge in item["deps"]:
            dep = edge["id"]
            if status_of.get(dep) != "completed" and dep not in unresolved:
                unresolved.append(dep)
        if unresolved:
            found.append(
                Violation(
                    ("unresolved", item["id"], status),
                    f"item '{item['id']}' cannot be {status}; unresolved dependencies: {', '.join(unresolved)}",
                )
            )
    return found


def check_mutation(before: list[dict], after: list[dict], *, allow_multiple_in_progress: bool = False) -> None:
    """Raise UsageError (exit 2) naming every rule the mutation breaks that was not broken before."""
    old = {v.key for v in violations(before, allow_multiple_in_progress=allow_multiple_in_progress)}
    new = [v for v in violations(after, allow_multiple_in_progress=allow_multiple_in_progress) if v.key not in old]
    if new:
        raise UsageError("; ".join(v.message for v in new))
