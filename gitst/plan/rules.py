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

from gitst.core.errors import UsageError
from gitst.core.values import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitst.plan.model import Item

    Key = tuple[str, object] | tuple[str, object, object]  # what identifies a broken rule: (rule, ids, …)


class Violation(Value):
    """One rule broken: ``key`` identifies it (so "before" and "after" can be compared)."""

    __slots__ = ("key", "message")

    def __init__(self, key: Key, message: str):
        self.key = key
        self.message = message


def _targets(item: Item) -> list[str]:
    """The ids ``item`` depends on, each once, in edge order, itself left out (a self-dependency
    is its own rule, not a cycle)."""
    deps = item["deps"]
    if not deps:  # most items, and a generator costs more than the rest of a change
        return []
    item_id = item["id"]
    return list(dict.fromkeys(edge["id"] for edge in deps if edge["id"] != item_id))


def _components(graph: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of 2+ nodes of ``graph`` (edges to nodes that are not
    in it are ignored), Tarjan's algorithm without recursion, roots in the graph's order."""
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
    return components


def _cycles(items: list[Item]) -> list[list[str]]:
    """Every dependency cycle (one path per strongly connected component of 2+ items)."""
    graph = {item["id"]: _targets(item) for item in items}
    paths = []
    for component in _components(graph):
        members = set(component)
        paths.append(_cycle_path(graph, members, next(node for node in graph if node in members)))
    return paths


def _cycle_path(graph: dict[str, list[str]], members: set[str], start: str) -> list[str]:
    """A readable cycle inside one strongly connected component, from ``start`` (its first
    member in plan order): the shortest way back to it, a -> b -> ... -> a."""
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


def _self_dep(item_id: str) -> Violation:
    return Violation(("self-dep", item_id), f"item '{item_id}' cannot depend on itself")


def _unknown_dep(item_id: str, dep: str) -> Violation:
    return Violation(("unknown-dep", item_id, dep), f"item '{item_id}' references unknown dependency '{dep}'")


def _cycle(path: list[str]) -> Violation:
    return Violation(("cycle", frozenset(path)), f"dependency cycle detected: {' -> '.join(path)}")


def violations(items: list[Item], *, allow_multiple_in_progress: bool = False) -> list[Violation]:
    """Every rule the (normalized) items break, in a stable order."""
    status_of = {item["id"]: item["status"] for item in items}
    found = _edge_violations(items, status_of)
    found.extend(_cycle(path) for path in _cycles(items))
    if not allow_multiple_in_progress:
        found.extend(_multiple_in_progress(items))
    found.extend(_unresolved_violations(items, status_of))
    return found


def _edge_violations(items: list[Item], status_of: dict[str, str]) -> list[Violation]:
    """Each edge to the item itself or to an id no item has, in plan and edge order."""
    found: list[Violation] = []
    for item in items:
        item_id = item["id"]
        for edge in item["deps"]:
            dep = edge["id"]
            if dep == item_id:
                found.append(_self_dep(item_id))
            elif dep not in status_of:
                found.append(_unknown_dep(item_id, dep))
    return found


def _multiple_in_progress(items: list[Item]) -> list[Violation]:
    """More than one item ``in_progress`` (without ``--allow-multiple-in-progress``)."""
    in_progress = [item["id"] for item in items if item["status"] == "in_progress"]
    if len(in_progress) <= 1:
        return []
    return [
        Violation(
            ("multiple-in-progress", frozenset(in_progress)),
            f"multiple in_progress items: {', '.join(in_progress)} (pass --allow-multiple-in-progress to allow it)",
        )
    ]


def _unresolved_violations(items: list[Item], status_of: dict[str, str]) -> list[Violation]:
    """Each ``in_progress`` or ``completed`` item with a dependency that is not completed."""
    found: list[Violation] = []
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


def check_mutation(before: list[Item], after: list[Item], *, allow_multiple_in_progress: bool = False) -> None:
    """Raise UsageError (exit 2) naming every rule the mutation breaks that was not broken before."""
    broken = violations(after, allow_multiple_in_progress=allow_multiple_in_progress)
    if not broken:  # the common case: nothing is broken after, so nothing new (the "before" is not needed)
        return
    old = {v.key for v in violations(before, allow_multiple_in_progress=allow_multiple_in_progress)}
    new = [v for v in broken if v.key not in old]
    if new:
        raise UsageError("; ".join(v.message for v in new))


class DependencyRules:
    """The structural dependency rules — self-dependency, unknown dependency, cycle — of a plan
    kept up to date one item at a time: :attr:`breaks` (``{key: message}``) always equals what
    :func:`violations` reports for those rules on the current items, without looking at every
    item again after each change (what makes a full check of a long plan linear in its items).

    Work per change: the changed item's edges, the edges pointing at it and, only when it may
    lie on a cycle (it has live dependents *and* live dependencies) or lay on one, a search of
    the items reachable from it. A plan built one item at a time, each depending on earlier
    ones, never needs that search. :attr:`work` counts the items and edges visited.
    """

    __slots__ = ("_dependents", "_next", "_own", "_pos", "_scc", "_scc_key", "_targets", "breaks", "work")

    def __init__(self, items: list[Item] | tuple[()] = ()):
        self.breaks: dict[Key, str] = {}
        self.work = 0
        self.reset(items)

    def reset(self, items: list[Item] | tuple[()]) -> list[Violation]:
        """Start again from ``items`` (a replace, a base checkpoint); the breaks that are new."""
        before = self.breaks
        self._pos: dict[str, int] = {}  # plan order of each item
        self._targets: dict[str, list[str]] = {}  # what each item depends on (_targets)
        self._dependents: dict[str, dict[str, None]] = {}  # id -> the items with an edge to it
        self._own: dict[str, dict[Key, None]] = {}  # item -> its self-dep and unknown-dep keys
        self._scc: dict[str, frozenset[str]] = {}  # item -> the cycle component it is in
        self._scc_key: dict[frozenset[str], Key] = {}
        self._next = 0
        self.breaks = {}
        for item in items:
            self._pos[item["id"]] = self._next
            self._next += 1
        found: list[Violation] = []
        for item in items:
            self._link(item["id"], _targets(item))
            found.extend(self._own_breaks(item))
        self.work += len(items)
        found.extend(self._add_component(frozenset(component)) for component in _components(self._targets))
        return [v for v in found if v.key not in before]

    def change(self, item_id: str, item: Item | None) -> list[Violation]:
        """Item ``item_id`` is now ``item`` (None: removed); the breaks that are new."""
        if item is not None and self._is_unconnected_new(item_id, item):
            # A new item that depends on nothing and that nothing depends on (how most plans
            # grow): it breaks no rule and mends none; what the general path below would record.
            self._place(item_id)
            self._targets[item_id] = []
            return []
        existed = item_id in self._pos
        exists = item is not None
        old_targets = self._targets.get(item_id)
        targets = _targets(item) if item is not None else None
        gone = self._forget_own(item_id)
        if old_targets is not None and old_targets != targets:
            self._unlink(item_id, old_targets)
        self._set_exists(item_id, existed, exists)
        found = [] if item is None or targets is None else self._relink(item_id, item, old_targets, targets, gone)
        if exists != existed:
            found.extend(self._dependents_see(item_id, exists))
        if (old_targets != targets or exists != existed) and (item_id in self._scc or item_id in self._dependents):
            # (an item nothing depends on, and that was on no cycle, is on none now)
            found.extend(self._recheck_cycles(item_id))
        return found

    def _is_unconnected_new(self, item_id: str, item: Item) -> bool:
        """``item`` is new, depends on nothing, and nothing depends on it or recorded it."""
        return (
            not item["deps"]
            and item_id not in self._pos
            and item_id not in self._dependents
            and item_id not in self._targets
            and item_id not in self._own
            and item_id not in self._scc
        )

    def _set_exists(self, item_id: str, existed: bool, exists: bool) -> None:
        """The item's place in plan order: dropped when it went, the next one when it came."""
        if existed and not exists:
            del self._pos[item_id]
        elif exists and not existed:
            self._place(item_id)

    def _relink(
        self, item_id: str, item: Item, old_targets: list[str] | None, targets: list[str], gone: dict[Key, None] | None
    ) -> list[Violation]:
        """Record the (present) item's edges; its own breaks that were not broken before."""
        if old_targets != targets:
            self._link(item_id, targets)
        if not item["deps"]:
            return []
        return [v for v in self._own_breaks(item) if not gone or v.key not in gone]

    def _place(self, item_id: str) -> None:
        """Give a new item the next position in plan order."""
        self._pos[item_id] = self._next
        self._next += 1

    def _forget_own(self, item_id: str) -> dict[Key, None] | None:
        """Drop the item's self-dependency and unknown-dependency breaks; the keys dropped."""
        gone = self._own.pop(item_id, None)
        if gone:
            for key in gone:
                del self.breaks[key]
        return gone

    def _dependents_see(self, item_id: str, exists: bool) -> list[Violation]:
        """The items depending on ``item_id`` after it appeared (their unknown-dependency breaks
        are mended) or disappeared (each breaks that rule anew: the breaks returned)."""
        if item_id not in self._dependents:
            return []
        sources = sorted(self._dependents[item_id], key=self._pos.__getitem__)
        self.work += len(sources)
        found: list[Violation] = []
        for source in sources:
            key = ("unknown-dep", source, item_id)
            if exists:
                self.breaks.pop(key, None)
                self._own.get(source, {}).pop(key, None)
            else:
                violation = _unknown_dep(source, item_id)
                self.breaks[key] = violation.message
                self._own.setdefault(source, {})[key] = None
                found.append(violation)
        return found

    # --- the structure -----------------------------------------------------------------

    def _link(self, item_id: str, targets: list[str]) -> None:
        self._targets[item_id] = targets
        for dep in targets:
            self._dependents.setdefault(dep, {})[item_id] = None
        self.work += len(targets)

    def _unlink(self, item_id: str, targets: list[str]) -> None:
        del self._targets[item_id]
        for dep in targets:
            sources = self._dependents[dep]
            del sources[item_id]
            if not sources:
                del self._dependents[dep]
        self.work += len(targets)

    def _own_breaks(self, item: Item) -> list[Violation]:
        """The item's self-dependency and unknown dependencies (recorded, and returned)."""
        item_id = item["id"]
        found: dict[Key, Violation] = {}  # two edges to one id (of two types) break a rule once
        for edge in item["deps"]:
            dep = edge["id"]
            if dep == item_id:
                found.setdefault(("self-dep", item_id), _self_dep(item_id))
            elif dep not in self._pos:
                found.setdefault(("unknown-dep", item_id, dep), _unknown_dep(item_id, dep))
        self.work += len(item["deps"])
        if found:
            own = self._own.setdefault(item_id, {})
            for key, violation in found.items():
                own[key] = None
                self.breaks[key] = violation.message
        return list(found.values())

    # --- cycles ----------------------------------------------------------------------

    def _live(self, node: str) -> list[str]:
        return [dep for dep in self._targets[node] if dep in self._pos]

    def _recheck_cycles(self, item_id: str) -> list[Violation]:
        """The cycle components after ``item_id``'s edges or existence changed. Only those
        holding it change: its new component (found from it) absorbs the components it now
        reaches around, and what is left of its old one may split (Tarjan on those alone)."""
        old = self._scc.get(item_id)
        may_cycle = self._may_cycle(item_id)
        if old is None and not may_cycle:
            return []
        component = self._component_of(item_id) if may_cycle else frozenset((item_id,))
        dropped: dict[frozenset[str], Key] = {}
        for members in [old, *(self._scc.get(node) for node in component)]:
            if members is not None and members not in dropped:
                dropped[members] = self._drop_component(members)
        found = []
        if len(component) > 1:
            found.append(self._add_component(component))
        if old is not None:
            found.extend(self._split_rest(old, component))
        gone = set(dropped.values())
        return [v for v in found if v.key not in gone]

    def _may_cycle(self, item_id: str) -> bool:
        """Whether ``item_id`` can lie on a cycle: it exists, has dependents and a live dependency."""
        sources = self._dependents.get(item_id)
        return (
            item_id in self._pos and bool(sources) and any(dep in self._pos for dep in self._targets.get(item_id, ()))
        )

    def _split_rest(self, old: frozenset[str], component: frozenset[str]) -> list[Violation]:
        """The cycles left among the members of ``old`` that are not in ``component`` (recorded)."""
        rest = {node: self._live(node) for node in old if node not in component and node in self._pos}
        self.work += len(rest)
        return [self._add_component(frozenset(part)) for part in _components(rest)]

    def _component_of(self, item_id: str) -> frozenset[str]:
        """The items on a cycle through ``item_id``, with it: reachable from it and reaching it."""
        reach = {item_id}
        frontier = [item_id]
        while frontier:
            node = frontier.pop()
            for dep in self._targets[node]:
                self.work += 1
                if dep in self._pos and dep not in reach:
                    reach.add(dep)
                    frontier.append(dep)
        back = {item_id}
        frontier = [item_id]
        while frontier:
            node = frontier.pop()
            for source in self._dependents.get(node, ()):
                self.work += 1
                if source in reach and source not in back:
                    back.add(source)
                    frontier.append(source)
        return frozenset(back)

    def _add_component(self, members: frozenset[str]) -> Violation:
        start = min(members, key=self._pos.__getitem__)
        violation = _cycle(_cycle_path(self._targets, set(members), start))
        self.work += len(members)
        for node in members:
            self._scc[node] = members
        self._scc_key[members] = violation.key
        self.breaks[violation.key] = violation.message
        return violation

    def _drop_component(self, members: frozenset[str]) -> Key:
        key = self._scc_key.pop(members)
        del self.breaks[key]
        for node in members:
            if self._scc.get(node) is members:
                del self._scc[node]
        return key
