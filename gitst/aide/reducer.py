"""The aide reducer (seed 002): primitives in, entity graph out.

:class:`AideState` applies one primitive at a time (wire form: ``t``, ``p``; already valid
against its schema) and raises :class:`Rejected` with a stable code when a rule forbids
it; a rejected primitive changes nothing. The rules:

- ``entity.create`` rejects an existing id (``AIDE_ID_EXISTS``; removed ids stay taken, and
  ``root`` is the implicit top) or a parent that does not exist (``AIDE_NO_PARENT``):
  parents are created before children;
- every reference (``ref``, ``parent``, ``from``, ``to``, constraint entities) must exist
  (``AIDE_UNKNOWN_REF``) and not be removed (``AIDE_REMOVED_REF``); ``root`` itself cannot be
  updated, removed, moved or styled (``AIDE_ROOT``);
- ``entity.remove`` soft-deletes the entity and its descendants;
- ``entity.move`` never into the entity itself or a descendant (``AIDE_MOVE_CYCLE``);
  ``position`` is an index among the new parent's live children, at most their count
  (``AIDE_BAD_POSITION``); omitted, the entity is appended;
- ``entity.reorder`` lists exactly the live children, each once (``AIDE_REORDER_MISMATCH``);
- ``rel.set``: a type's cardinality is fixed by the first ``rel.set`` stating one
  (``AIDE_CARDINALITY_CHANGED`` for a different one later); ``many_to_one`` replaces the
  source's other link of that type, ``one_to_many`` the target's, ``one_to_one`` both,
  ``many_to_many`` (the default) none; ``rel.remove`` of a link that is not there is
  ``AIDE_NO_SUCH_REL``;
- constraints (``rel.constrain``, ``meta.constrain``; an id redefines): a strict one rejects
  the primitive - or, inside a batch, the whole batch at ``batch.end`` - that would break it
  (``AIDE_CONSTRAINT_VIOLATED``); non-strict ones are reported once, on the final state,
  as warnings (``AIDE_CONSTRAINT_UNMET``). ``meta.constrain`` rules other than
  ``max_children`` / ``min_children`` are kept but not enforced (``AIDE_UNKNOWN_RULE``);
- ``batch.start`` / ``batch.end`` pair up, without nesting (``AIDE_BATCH_NESTED``,
  ``AIDE_BATCH_UNOPENED``); a stream ending inside a batch flushes it (warning
  ``AIDE_BATCH_UNCLOSED``);
- ``voice`` (at most 100 characters: the schema) should have no first person, no
  encouragement, no emojis (warning ``AIDE_VOICE_STYLE``).

Undo is by journal: every change records its inverse, so a rejected primitive or batch is
rolled back exactly, in time proportional to what it changed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitst.core.diagnostics import Severity

ROOT = "root"

ENFORCED_META_RULES = ("max_children", "min_children")

# Primitives that can change what a constraint measures.
_GRAPH_OPS = frozenset(
    {
        "entity.create",
        "entity.remove",
        "entity.move",
        "rel.set",
        "rel.remove",
        "rel.constrain",
        "meta.constrain",
    }
)


class Rejected(Exception):
    """The primitive breaks a rule; the state is unchanged."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Entity:
    id: str
    parent: str | None
    display: str | None
    props: dict[str, Any]
    line: int
    children: list[str] = field(default_factory=list)
    style: dict[str, Any] = field(default_factory=dict)
    removed_line: int | None = None

    @property
    def removed(self) -> bool:
        return self.removed_line is not None


@dataclass
class Constraint:
    id: str
    kind: str  # the primitive that declared it: rel.constrain | meta.constrain
    rule: str
    strict: bool
    spec: dict[str, Any]
    line: int

    @property
    def enforced(self) -> bool:
        return self.kind == "rel.constrain" or self.rule in ENFORCED_META_RULES


@dataclass(frozen=True)
class Finding:
    """A warning or a rejection found after the fact (end of stream)."""

    line: int | None
    code: str
    message: str
    severity: Severity = "warning"


_FIRST_PERSON = re.compile(r"(?i)\b(i|i'm|i've|i'll|i'd|me|my|mine|we|we're|we've|we'll|our|ours)\b")
_ENCOURAGEMENT = re.compile(
    r"(?i)(!|\b(great|awesome|amazing|fantastic|congrat\w*|well done|good job|nice work|keep (it )?up|you can do it)\b)"
)


def _is_emoji(char: str) -> bool:
    code = ord(char)
    return (
        0x1F000 <= code <= 0x1FAFF
        or 0x2600 <= code <= 0x27BF
        or 0x2B00 <= code <= 0x2BFF
        or code in (0xFE0F, 0x200D, 0x3030, 0x303D)
    )


def voice_style_problems(text: str) -> list[str]:
    """What in a voice line breaks the seed's style (no first person, encouragement, emojis)."""
    problems = []
    match = _FIRST_PERSON.search(text)
    if match:
        problems.append(f"first person ({match.group()!r})")
    match = _ENCOURAGEMENT.search(text)
    if match:
        problems.append(f"encouragement ({match.group()!r})")
    if any(_is_emoji(ch) for ch in text):
        problems.append("emoji")
    return problems


class AideState:
    """The entity graph a stream builds, plus relationships, constraints, style and meta."""

    def __init__(self) -> None:
        self.entities: dict[str, Entity] = {ROOT: Entity(ROOT, None, None, {}, 0)}
        self.links: dict[tuple[str, str, str], int] = {}  # (from, type, to) -> line
        self._out: dict[tuple[str, str], dict[str, None]] = {}
        self._in: dict[tuple[str, str], dict[str, None]] = {}
        self.cardinality: dict[str, str] = {}
        self.constraints: dict[str, Constraint] = {}
        self.style: dict[str, Any] = {}
        self.meta: dict[str, Any] = {}
        self.annotations: list[dict[str, Any]] = []
        self.escalations: list[dict[str, Any]] = []
        self.voice: list[dict[str, Any]] = []
        self.batch_line: int | None = None
        self.applied = 0
        self._journal: list[Callable[[], None]] = []
        self._batch_mark = 0
        self._batch_violations: frozenset[str] = frozenset()

    # ---------------------------------------------------------------- journalled changes
    def _set(self, obj: Any, attr: str, value: Any) -> None:
        old = getattr(obj, attr)
        setattr(obj, attr, value)
        self._journal.append(lambda: setattr(obj, attr, old))

    def _dset(self, mapping: dict[Any, Any], key: Any, value: Any) -> None:
        if key in mapping:
            old = mapping[key]
            self._journal.append(lambda: mapping.__setitem__(key, old))
        else:
            self._journal.append(lambda: mapping.pop(key, None))
        mapping[key] = value

    def _ddel(self, mapping: dict[Any, Any], key: Any) -> None:
        old = mapping.pop(key)
        self._journal.append(lambda: mapping.__setitem__(key, old))

    def _linsert(self, items: list[Any], index: int, value: Any) -> None:
        items.insert(index, value)
        self._journal.append(lambda: items.pop(index))

    def _lremove(self, items: list[Any], value: Any) -> None:
        index = items.index(value)
        del items[index]
        self._journal.append(lambda: items.insert(index, value))

    def _lappend(self, items: list[Any], value: Any) -> None:
        items.append(value)
        self._journal.append(items.pop)

    def _undo_to(self, mark: int) -> None:
        while len(self._journal) > mark:
            self._journal.pop()()

    # ---------------------------------------------------------------- lookups
    def live(self, entity_id: str) -> bool:
        entity = self.entities.get(entity_id)
        return entity is not None and not entity.removed

    def _require(self, entity_id: str, role: str) -> Entity:
        entity = self.entities.get(entity_id)
        if entity is None:
            raise Rejected("AIDE_UNKNOWN_REF", f"{role} {entity_id!r} does not exist")
        if entity.removed:
            raise Rejected("AIDE_REMOVED_REF", f"{role} {entity_id!r} was removed on line {entity.removed_line}")
        return entity

    def _require_not_root(self, entity_id: str, what: str) -> Entity:
        if entity_id == ROOT:
            raise Rejected("AIDE_ROOT", f"{what} does not apply to root, the implicit top-level entity")
        return self._require(entity_id, "ref")

    def _parent_of(self, entity: Entity) -> Entity:
        """The parent of ``entity``; only root has none (and ops on root are rejected)."""
        if entity.parent is None:
            raise Rejected("AIDE_ROOT", f"{entity.id!r} has no parent: it is root, the implicit top-level entity")
        return self.entities[entity.parent]

    def live_children(self, entity: Entity) -> list[str]:
        return [c for c in entity.children if not self.entities[c].removed]

    def targets(self, source: str, rel_type: str) -> set[str]:
        return {t for t in self._out.get((source, rel_type), ()) if self.live(t)}

    def link_count(self, entity_id: str, rel_type: str) -> int:
        outgoing = sum(1 for t in self._out.get((entity_id, rel_type), ()) if self.live(t))
        incoming = sum(1 for s in self._in.get((entity_id, rel_type), ()) if self.live(s))
        return outgoing + incoming

    def effective_display(self, entity: Entity) -> str | None:
        node: Entity | None = entity
        while node is not None:
            if node.display:
                return node.display
            node = self.entities.get(node.parent) if node.parent else None
        return None

    # ---------------------------------------------------------------- applying
    def apply(self, op: dict[str, Any], line: int) -> list[Finding]:
        """Apply one primitive (wire form, schema-valid). Raises Rejected; returns warnings."""
        kind = op["t"]
        handler = getattr(self, "_op_" + kind.replace(".", "_"))
        mark = len(self._journal)
        before = None
        if (
            self.batch_line is None
            and kind in _GRAPH_OPS
            and (op.get("strict") is True or any(c.strict for c in self.constraints.values()))
        ):
            before = self.strict_violations()
        try:
            findings = handler(op, line) or []
        except Rejected:
            self._undo_to(mark)
            raise
        if before is not None:
            new = self.strict_violations() - before
            if new:
                self._undo_to(mark)
                raise Rejected("AIDE_CONSTRAINT_VIOLATED", "would break " + "; ".join(sorted(new)))
        if self.batch_line is None:
            self._journal.clear()
        self.applied += 1
        return findings

    def finish(self) -> list[Finding]:
        """End of stream: flush an open batch, report non-strict constraints not met."""
        findings = []
        if self.batch_line is not None:
            opened = self.batch_line
            findings.append(
                Finding(
                    opened,
                    "AIDE_BATCH_UNCLOSED",
                    "the stream ends inside the batch opened here; its lines are flushed as they are",
                )
            )
            try:
                self._close_batch()
            except Rejected as exc:
                findings.append(Finding(opened, exc.code, exc.message, "error"))
        for constraint in self.constraints.values():
            if constraint.strict or not constraint.enforced:
                continue
            findings.extend(
                Finding(constraint.line, "AIDE_CONSTRAINT_UNMET", problem)
                for problem in self._violations_of(constraint)
            )
        return findings

    # ---------------------------------------------------------------- entity primitives
    def _op_entity_create(self, op: dict[str, Any], line: int) -> None:
        entity_id, parent_id = op["id"], op["parent"]
        existing = self.entities.get(entity_id)
        if existing is not None:
            if entity_id == ROOT:
                raise Rejected("AIDE_ID_EXISTS", "root is the implicit top-level entity; it cannot be created")
            state = f"removed on line {existing.removed_line}" if existing.removed else "live"
            raise Rejected(
                "AIDE_ID_EXISTS", f"entity {entity_id!r} already exists (created on line {existing.line}, {state})"
            )
        parent = self.entities.get(parent_id)
        if parent is None:
            raise Rejected("AIDE_NO_PARENT", f"parent {parent_id!r} does not exist: create parents before children")
        if parent.removed:
            raise Rejected("AIDE_REMOVED_REF", f"parent {parent_id!r} was removed on line {parent.removed_line}")
        self._dset(self.entities, entity_id, Entity(entity_id, parent_id, op.get("display"), dict(op["p"]), line))
        self._lappend(parent.children, entity_id)

    def _op_entity_update(self, op: dict[str, Any], line: int) -> None:
        entity = self._require_not_root(op["ref"], "entity.update")
        self._set(entity, "props", {**entity.props, **op["p"]})

    def _op_entity_remove(self, op: dict[str, Any], line: int) -> None:
        entity = self._require_not_root(op["ref"], "entity.remove")
        stack = [entity]
        while stack:
            node = stack.pop()
            if not node.removed:
                self._set(node, "removed_line", line)
                stack.extend(self.entities[c] for c in node.children)

    def _op_entity_move(self, op: dict[str, Any], line: int) -> None:
        entity = self._require_not_root(op["ref"], "entity.move")
        parent_id = op["parent"]
        parent = self.entities.get(parent_id)
        if parent is None:
            raise Rejected("AIDE_NO_PARENT", f"parent {parent_id!r} does not exist")
        if parent.removed:
            raise Rejected("AIDE_REMOVED_REF", f"parent {parent_id!r} was removed on line {parent.removed_line}")
        node: Entity | None = parent
        while node is not None:
            if node.id == entity.id:
                raise Rejected(
                    "AIDE_MOVE_CYCLE", f"cannot move {entity.id!r} into itself or its descendant {parent_id!r}"
                )
            node = self.entities.get(node.parent) if node.parent else None
        siblings = [c for c in self.live_children(parent) if c != entity.id]
        position = op.get("position")
        if position is not None and position > len(siblings):
            raise Rejected(
                "AIDE_BAD_POSITION",
                f"position {position} is past the end: {parent_id!r} has {len(siblings)} other live children",
            )
        self._lremove(self._parent_of(entity).children, entity.id)
        if position is None or position == len(siblings):
            index = len(parent.children)
        else:
            index = parent.children.index(siblings[position])
        self._linsert(parent.children, index, entity.id)
        self._set(entity, "parent", parent_id)

    def _op_entity_reorder(self, op: dict[str, Any], line: int) -> None:
        entity = self._require(op["ref"], "ref")
        live = self.live_children(entity)
        given = op["children"]
        problems = self._reorder_problems(live, given)
        if problems:
            raise Rejected(
                "AIDE_REORDER_MISMATCH",
                f"children must list exactly the live children of {entity.id!r}; " + "; ".join(problems),
            )
        removed = [c for c in entity.children if c not in live]
        self._set(entity, "children", list(given) + removed)

    def _reorder_problems(self, live: list[str], given: list[str]) -> list[str]:
        """How ``given`` differs from the live children ``live`` (none: a permutation)."""
        problems = []
        duplicates = sorted({c for c in given if given.count(c) > 1})
        if duplicates:
            problems.append(f"listed twice: {', '.join(duplicates)}")
        missing = [c for c in live if c not in given]
        if missing:
            problems.append(f"missing: {', '.join(missing)}")
        extra = [c for c in dict.fromkeys(given) if c not in live]
        if extra:
            problems.append(f"not live children: {', '.join(self._not_live(c) for c in extra)}")
        return problems

    def _not_live(self, entity_id: str) -> str:
        """Why ``entity_id`` is no live child here, for a message."""
        other = self.entities.get(entity_id)
        if other is None:
            return f"{entity_id} (does not exist)"
        if other.removed:
            return f"{entity_id} (removed)"
        return f"{entity_id} (child of {other.parent})"

    # ---------------------------------------------------------------- relationships
    def _add_link(self, source: str, rel_type: str, target: str, line: int) -> None:
        self._dset(self.links, (source, rel_type, target), line)
        for index, key, value in ((self._out, (source, rel_type), target), (self._in, (target, rel_type), source)):
            if key not in index:
                self._dset(index, key, {})
            self._dset(index[key], value, None)

    def _del_link(self, source: str, rel_type: str, target: str) -> None:
        self._ddel(self.links, (source, rel_type, target))
        self._ddel(self._out[(source, rel_type)], target)
        self._ddel(self._in[(target, rel_type)], source)

    def _op_rel_set(self, op: dict[str, Any], line: int) -> None:
        source, target, rel_type = op["from"], op["to"], op["type"]
        self._require(source, "from")
        self._require(target, "to")
        stated = op.get("cardinality")
        persisted = self.cardinality.get(rel_type)
        if stated and persisted and stated != persisted:
            raise Rejected(
                "AIDE_CARDINALITY_CHANGED",
                f"relationship type {rel_type!r} has cardinality {persisted}; it cannot change to {stated}",
            )
        if stated and not persisted:
            self._dset(self.cardinality, rel_type, stated)
        cardinality = stated or persisted or "many_to_many"
        if (source, rel_type, target) in self.links:
            return
        if cardinality in ("many_to_one", "one_to_one"):
            for other in list(self._out.get((source, rel_type), ())):
                self._del_link(source, rel_type, other)
        if cardinality in ("one_to_many", "one_to_one"):
            for other in list(self._in.get((target, rel_type), ())):
                self._del_link(other, rel_type, target)
        self._add_link(source, rel_type, target, line)

    def _op_rel_remove(self, op: dict[str, Any], line: int) -> None:
        source, target, rel_type = op["from"], op["to"], op["type"]
        self._require(source, "from")
        self._require(target, "to")
        if (source, rel_type, target) not in self.links:
            raise Rejected("AIDE_NO_SUCH_REL", f"there is no {rel_type!r} relationship from {source!r} to {target!r}")
        self._del_link(source, rel_type, target)

    # ---------------------------------------------------------------- constraints
    def _op_rel_constrain(self, op: dict[str, Any], line: int) -> None:
        for entity_id in op["entities"]:
            self._require(entity_id, "constrained entity")
        spec = {k: v for k, v in op.items() if k != "t"}
        self._dset(
            self.constraints,
            op["id"],
            Constraint(op["id"], "rel.constrain", op["rule"], bool(op.get("strict", False)), spec, line),
        )

    def _op_meta_constrain(self, op: dict[str, Any], line: int) -> list[Finding]:
        findings = []
        if "parent" in op:
            self._require(op["parent"], "constrained parent")
        if op["rule"] not in ENFORCED_META_RULES:
            findings.append(
                Finding(
                    line,
                    "AIDE_UNKNOWN_RULE",
                    f"meta.constrain rule {op['rule']!r} is recorded but not enforced "
                    f"(enforced: {', '.join(ENFORCED_META_RULES)})",
                )
            )
        spec = {k: v for k, v in op.items() if k != "t"}
        self._dset(
            self.constraints,
            op["id"],
            Constraint(op["id"], "meta.constrain", op["rule"], bool(op.get("strict", False)), spec, line),
        )
        return findings

    def _violations_of(self, constraint: Constraint) -> Iterator[str]:
        spec, rule = constraint.spec, constraint.rule
        label = f"constraint {constraint.id!r} ({rule}{', strict' if constraint.strict else ''})"
        if spec.get("message"):
            label += f" \u2014 {spec['message']}"
        if constraint.kind == "rel.constrain":
            entities = [e for e in spec["entities"] if self.live(e)]
            if rule in ("exclude_pair", "require_pair"):
                yield from self._pair_violations(label, rule, spec["rel_type"], entities)
            else:
                yield from self._link_count_violations(label, rule, spec["rel_type"], entities, spec["value"])
        elif rule in ENFORCED_META_RULES:
            yield from self._child_count_violations(label, rule, spec)

    def _pair_violations(self, label: str, rule: str, rel_type: str, entities: list[str]) -> Iterator[str]:
        """``exclude_pair``: two entities share no target, nor link each other; ``require_pair``:
        they have the same targets."""
        if len(entities) != 2:
            return
        first, second = entities
        t1, t2 = self.targets(first, rel_type), self.targets(second, rel_type)
        if rule == "exclude_pair":
            shared = sorted(t1 & t2)
            if shared:
                yield f"{label}: {first} and {second} are both {rel_type} {', '.join(shared)}"
            elif second in t1 or first in t2:
                yield f"{label}: {first} and {second} are linked by {rel_type}"
        elif t1 != t2:
            yield (
                f"{label}: {first} is {rel_type} {sorted(t1) or 'nothing'}, "
                f"{second} is {rel_type} {sorted(t2) or 'nothing'}"
            )

    def _link_count_violations(
        self, label: str, rule: str, rel_type: str, entities: list[str], value: Any
    ) -> Iterator[str]:
        """``max_links`` / ``min_links``: each entity's count of ``rel_type`` links."""
        for entity_id in entities:
            count = self.link_count(entity_id, rel_type)
            if (rule == "max_links" and count > value) or (rule == "min_links" and count < value):
                yield f"{label}: {entity_id} has {count} {rel_type} links (limit {value})"

    def _child_count_violations(self, label: str, rule: str, spec: dict[str, Any]) -> Iterator[str]:
        """``max_children`` / ``min_children``: the parent's live children."""
        parent = self.entities.get(spec.get("parent", ""))
        if parent is None or parent.removed:
            return
        count = len(self.live_children(parent))
        value = spec["value"]
        if (rule == "max_children" and count > value) or (rule == "min_children" and count < value):
            yield f"{label}: {parent.id} has {count} children (limit {value})"

    def strict_violations(self) -> frozenset[str]:
        return frozenset(
            problem
            for constraint in self.constraints.values()
            if constraint.strict
            for problem in self._violations_of(constraint)
        )

    # ---------------------------------------------------------------- style and meta
    def _op_style_set(self, op: dict[str, Any], line: int) -> None:
        self._set(self, "style", {**self.style, **op["p"]})

    def _op_style_entity(self, op: dict[str, Any], line: int) -> None:
        entity = self._require_not_root(op["ref"], "style.entity (use style.set for global style)")
        self._set(entity, "style", {**entity.style, **op["p"]})

    def _op_meta_set(self, op: dict[str, Any], line: int) -> None:
        self._set(self, "meta", {**self.meta, **op["p"]})

    def _op_meta_annotate(self, op: dict[str, Any], line: int) -> None:
        self._lappend(self.annotations, {**op["p"], "line": line})

    # ---------------------------------------------------------------- signals
    def _op_escalate(self, op: dict[str, Any], line: int) -> None:
        self._lappend(
            self.escalations, {"tier": op["tier"], "reason": op["reason"], "extract": op["extract"], "line": line}
        )

    def _op_voice(self, op: dict[str, Any], line: int) -> list[Finding] | None:
        self._lappend(self.voice, {"text": op["text"], "line": line})
        problems = voice_style_problems(op["text"])
        if problems:
            return [
                Finding(
                    line,
                    "AIDE_VOICE_STYLE",
                    "voice lines state facts: no first person, no encouragement, no emojis; found "
                    + ", ".join(problems),
                )
            ]
        return None

    def _op_batch_start(self, op: dict[str, Any], line: int) -> None:
        if self.batch_line is not None:
            raise Rejected(
                "AIDE_BATCH_NESTED",
                f"batch.start inside the batch opened on line {self.batch_line}; batches do not nest",
            )
        self._batch_violations = self.strict_violations()
        self._batch_mark = len(self._journal)
        self.batch_line = line

    def _op_batch_end(self, op: dict[str, Any], line: int) -> None:
        if self.batch_line is None:
            raise Rejected("AIDE_BATCH_UNOPENED", "batch.end without a batch.start")
        self._close_batch()

    def _close_batch(self) -> None:
        opened, self.batch_line = self.batch_line, None
        new = self.strict_violations() - self._batch_violations
        if new:
            self._undo_to(self._batch_mark)
            self._journal.clear()
            raise Rejected(
                "AIDE_CONSTRAINT_VIOLATED",
                f"the batch opened on line {opened} is rolled back: it would break " + "; ".join(sorted(new)),
            )
        self._journal.clear()

    # ---------------------------------------------------------------- views
    def tree(self) -> list[dict[str, Any]]:
        """The live entities under root, nested (built without recursion)."""

        def node_of(entity: Entity) -> dict[str, Any]:
            return {
                "id": entity.id,
                "display": entity.display,
                "effective_display": self.effective_display(entity),
                "props": entity.props,
                **({"style": entity.style} if entity.style else {}),
                "line": entity.line,
                "children": [],
            }

        top: list[dict[str, Any]] = []
        stack = [(self.entities[ROOT], top)]
        while stack:
            entity, into = stack.pop()
            for child_id in self.live_children(entity):
                child = self.entities[child_id]
                node = node_of(child)
                into.append(node)
                stack.append((child, node["children"]))
        return top

    def to_dict(self) -> dict[str, Any]:
        return {
            "entities": self.tree(),
            "removed": [
                {"id": e.id, "parent": e.parent, "line": e.line, "removed_line": e.removed_line}
                for e in self.entities.values()
                if e.removed
            ],
            "relationships": [
                {
                    "from": s,
                    "type": t,
                    "to": d,
                    "cardinality": self.cardinality.get(t, "many_to_many"),
                    "line": line,
                    "active": self.live(s) and self.live(d),
                }
                for (s, t, d), line in self.links.items()
            ],
            "constraints": [
                {
                    **c.spec,
                    "kind": c.kind,
                    "strict": c.strict,
                    "enforced": c.enforced,
                    "line": c.line,
                    "satisfied": not any(True for _ in self._violations_of(c)) if c.enforced else None,
                }
                for c in self.constraints.values()
            ],
            "style": self.style,
            "meta": {**self.meta, "annotations": self.annotations},
            "signals": {"escalations": self.escalations, "voice": self.voice},
        }
