"""The shipped JSON Schemas (``schemas/*.schema.json``): loading and validators.

Schemas are the single source of truth for shapes; code asks this module instead of
restating them. Each file has ``$id`` ``https://gitst.dev/schemas/<file>``; cross-file
``$ref`` s are resolved from the shipped files only (nothing is ever fetched).

A validator, and a second for verdicts only (the tests hold both to python-jsonschema,
the reference: ``tests/reference_schema.py``):

- :func:`validator` — the fast path (jsonschema-rs), used by every command;
- :func:`compiled` — the schema compiled to Python closures (:mod:`gitst.schemas.compiled`),
  for a few instances where jsonschema-rs's import would cost more than the checks
  (:func:`verdicts` chooses); the same differential tests hold its verdicts.

Format assertion is off in both (``format`` is an annotation in 2020-12); schemas express
timestamps and ids with ``pattern`` so both validators agree.

Diagnostic codes live in the schemas too: a subschema may carry the annotation
``x-gitst-code`` (a code, or ``{keyword: code}``) and ``x-gitst-message`` (same forms).
:func:`annotations_at` finds, for the keyword that failed, the deepest such annotation on
the way to it, so a rule and its code are written once, in the schema.
"""

from __future__ import annotations

import functools
import os

from gitst.core.errors import UsageError
from gitst.core.jsonio import dumps, loads
from gitst.core.values import Value
from gitst.schemas.partial import specialize

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from importlib.abc import Traversable
    from typing import Any

    from jsonschema_rs import ValidationError

    Schema = dict[str, Any]  # a schema document: a JSON object

SCHEMA_BASE = "https://gitst.dev/schemas/"
SUFFIX = ".schema.json"


def _files() -> list[Traversable]:
    """The schema files shipped in this package (``importlib.resources``; a wheel, an
    editable install and a checkout all read the same files)."""
    from importlib.resources import files  # lazy: ~10 ms of imports, only for a zip import or every schema

    return sorted(
        (entry for entry in files(__package__).iterdir() if entry.name.endswith(SUFFIX)), key=lambda entry: entry.name
    )


@functools.lru_cache(maxsize=1)
def _all_schemas() -> dict[str, Schema]:
    return {entry.name[: -len(SUFFIX)]: loads(entry.read_bytes()) for entry in _files()}


def names() -> list[str]:
    """Every shipped schema's name (file name without ``.schema.json``)."""
    return list(_all_schemas())


@functools.cache
def _one(name: str) -> Schema | None:
    """Schema ``name`` read on its own (a command checking one kind reads the few files its
    schema needs, not all of them). The package's files are read next to this module, where a
    checkout, an editable install and an installed wheel all keep them; importlib.resources
    (which costs a command ~10 ms of imports) is the fallback, for an import from a zip."""
    if not name or os.sep in name or "/" in name:
        return None
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + SUFFIX)
    try:
        with open(path, "rb") as handle:
            return loads(handle.read())
    except FileNotFoundError:
        return _all_schemas().get(name)


def load(name: str) -> Schema:
    found = _one(name)
    if found is None:
        raise UsageError(f"no schema named {name!r}; known: {', '.join(names()) or '(none)'}")
    return found


def _needed(name: str) -> dict[str, Schema]:
    """Schema ``name`` and every shipped schema it refers to, directly or not (``$ref`` to
    ``<other>.schema.json``): all a validator of it resolves."""
    found: dict[str, Schema] = {}
    todo = [name]
    while todo:
        current = todo.pop()
        if current in found:
            continue
        found[current] = load(current)
        stack: list[Any] = [found[current]]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                ref = node.get("$ref")
                if isinstance(ref, str):
                    target = ref.split("#", 1)[0].rsplit("/", 1)[-1]
                    if target.endswith(SUFFIX):
                        todo.append(target[: -len(SUFFIX)])
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
    return found


class SchemaError(Value):
    """One violation: where in the instance (JSON pointer parts) and what.

    ``keyword_location`` is the absolute URI of the failing keyword
    (``https://gitst.dev/schemas/<name>.schema.json#/properties/x/maxLength``); the fast
    validator fills it, the reference one leaves it empty.
    """

    __slots__ = ("keyword_location", "message", "path")

    def __init__(self, path: tuple[Any, ...], message: str, keyword_location: str = "") -> None:
        self.path = path
        self.message = message
        self.keyword_location = keyword_location

    @property
    def code(self) -> str | None:
        """The schema's ``x-gitst-code`` for this failure, if it declares one."""
        return annotations_at(self.keyword_location)[0]

    @property
    def schema_message(self) -> str | None:
        """The schema's ``x-gitst-message`` for this failure, if it declares one."""
        return annotations_at(self.keyword_location)[1]

    @property
    def pointer(self) -> str:
        return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in self.path) if self.path else ""


class FastValidator:
    # ``is_valid(instance)`` is the native method itself, set per instance: no Python frame
    # per call in hot loops (a plan check calls it once per record).
    is_valid: Callable[[Any], bool]

    def __init__(self, name: str, known: tuple[tuple[str, str], ...] = ()) -> None:
        import jsonschema_rs  # lazy: a heavy native import (a few records are checked without it)

        needed = _rust_documents(name)
        resources = [(schema.get("$id", SCHEMA_BASE + n + SUFFIX), schema) for n, schema in needed.items()]
        registry = jsonschema_rs.Registry(resources)
        root = needed[name]
        if known:
            root = specialize(root, dict(known))
        self.name = name
        self._v = jsonschema_rs.Draft202012Validator(root, registry=registry, validate_formats=False)
        self.is_valid = self._v.is_valid

    def errors(self, instance: Any) -> list[SchemaError]:
        found = [_reported(e) for e in self._v.iter_errors(instance)]
        typed = {path for path, kind, _ in found if kind == "Type"}
        # A `not` a value of the wrong type passes (`not: {pattern}` on 12.5) says nothing the
        # type error at the same place does not say better.
        return [error for path, kind, error in found if not (kind == "Not" and path in typed)]


# Every anchored pattern ends in ``(?!\n)$`` because Python's ``$`` also matches before a
# final newline (docs/validate.md). In the Rust engine ``$`` is the end of the text alone, so
# there the lookahead says nothing - and it makes the engine fall back from its automaton to
# backtracking: without it a plan record checks in 1.5 µs instead of 2.5 µs.
_PYTHON_END = "(?!\\n)$"


@functools.cache
def _rust_documents(name: str) -> dict[str, Schema]:
    """:func:`_needed` as jsonschema-rs gets it (:func:`_for_rust`), once per process: the
    whole schema's validator and each specialized one share it (never changed)."""
    return {n: _for_rust(schema) for n, schema in _needed(name).items()}


# Keywords whose values are data, not schemas: a "pattern" key in them is not a pattern.
_DATA = frozenset(("const", "enum", "examples", "default"))


def _for_rust(node: Any) -> Any:
    """``node`` (a schema, not changed) with every pattern's final ``(?!\n)$`` made ``$``."""
    if isinstance(node, dict):
        copy = {key: value if key in _DATA else _for_rust(value) for key, value in node.items()}
        pattern = node.get("pattern")
        if isinstance(pattern, str) and pattern.endswith(_PYTHON_END) and not pattern.endswith("\\" + _PYTHON_END):
            copy["pattern"] = pattern[: -len(_PYTHON_END)] + "$"
        return copy
    if isinstance(node, list):
        return [_for_rust(value) for value in node]
    return node


def _kind(error: ValidationError) -> str:
    return type(error.kind).__name__


def _reported(error: ValidationError) -> tuple[tuple[Any, ...], str, SchemaError]:
    """``(path, kind, SchemaError)`` for one jsonschema-rs error. A ``oneOf``/``anyOf`` none of
    whose branches matched is reported as the error of the branch that matched deepest
    (:func:`best_deep_match`), unless the schema names a code or message for the keyword
    itself that the branch's error would lose."""
    deep = best_deep_match(error)
    if deep is not error:
        outer = annotations_at(error.absolute_keyword_location or "")
        inner = annotations_at(deep.absolute_keyword_location or "")
        if not ((outer[0] and not inner[0]) or (outer[1] and not inner[1])):
            error = deep
    path = tuple(error.instance_path)
    message = _alternatives_message(error) if error is not deep else _message(error)
    return path, _kind(error), SchemaError(path, message, error.absolute_keyword_location or "")


def _leaves(error: ValidationError) -> list[ValidationError]:
    """The errors of every branch of a ``oneOf``/``anyOf``, nested ones opened too."""
    branches = getattr(error.kind, "context", None) if _kind(error) in ("OneOfNotValid", "AnyOf") else None
    if not branches:
        return [error]
    return [leaf for branch in branches for sub in branch for leaf in _leaves(sub)]


def best_deep_match(error: ValidationError) -> ValidationError:
    """For a ``oneOf``/``anyOf`` that no branch matched: the error of the branch that got
    furthest - the deepest instance path, and at equal depth not a type error (a branch of
    the wrong type is the least likely meant); the first such in schema order. The idea is
    check-jsonschema's "best deep match". Any other error is returned as it is."""
    leaves = _leaves(error)
    if leaves == [error]:
        return error
    return max(leaves, key=lambda leaf: (len(leaf.instance_path), _kind(leaf) != "Type"))


def _alternatives_message(error: ValidationError) -> str:
    """A ``oneOf``/``anyOf`` that is still the one to report: when every branch wanted
    another type, which types (``12.5 is not a string or null``)."""
    if _kind(error) == "OneOfMultipleValid":
        return f"{short(error.instance)} matches more than one of the allowed forms (oneOf)"
    leaves = _leaves(error)
    if leaves != [error] and all(_kind(leaf) == "Type" for leaf in leaves):
        wanted = [name for leaf in leaves for name in _types(leaf)]
        return f"{short(error.instance)} is not {_type_words(list(dict.fromkeys(wanted)))}"
    if leaves != [error]:
        keyword = "anyOf" if _kind(error) == "AnyOf" else "oneOf"
        return f"{short(error.instance)} matches none of the allowed forms ({keyword})"
    return _message(error)


_TYPE_WORDS = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "object": "an object",
    "array": "an array",
    "boolean": "a boolean",
    "null": "null",
}


def _types(error: ValidationError) -> list[str]:
    types = getattr(error.kind, "types", None)
    return [str(t) for t in types] if isinstance(types, list) else []


def _type_words(types: list[str]) -> str:
    words = [_TYPE_WORDS.get(t, t) for t in types]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def short(value: Any, limit: int = 60) -> str:
    """A compact JSON rendering of ``value`` for messages, cut in the middle when long."""
    try:
        text = dumps(value)
    except TypeError:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 20] + "…" + text[-12:]


def _message(error: ValidationError) -> str:
    """jsonschema-rs's message in gitst's words where it has its own: an enum's lists every
    valid value (the validator's own names two and "N other candidates") and the nearest
    one; a type error says which type (``"x" is not an integer``); a ``not`` says what the
    value must not be instead of printing the subschema."""
    kind = _kind(error)
    options = getattr(error.kind, "options", None)
    if kind == "Enum" and isinstance(options, list):
        return enum_message(error.instance, options)
    if kind == "Type" and _types(error):
        return f"{short(error.instance)} is not {_type_words(_types(error))}"
    if kind == "Not":
        forbidden = getattr(error.kind, "schema", None)
        if isinstance(forbidden, dict) and set(forbidden) == {"pattern"}:
            return f"{short(error.instance)} must not match the pattern {forbidden['pattern']}"
        if isinstance(forbidden, dict) and set(forbidden) == {"const"}:
            return f"{short(error.instance)} is not allowed here"
        return f"{short(error.instance)} has a form this field must not have ({short(forbidden)})"
    return error.message


def enum_message(value: Any, options: list[Any]) -> str:
    """``"doen" is not one of "todo", "done"; did you mean "done"?``"""
    import json  # lazy: an error's message only, and json costs every checking command its import

    message = f"{json.dumps(value, ensure_ascii=False)} is not one of " + ", ".join(
        json.dumps(option, ensure_ascii=False) for option in options
    )
    if isinstance(value, str):
        from gitst.core.suggest import closest  # lazy: difflib, for an error's message only

        near = closest(value, [option for option in options if isinstance(option, str)], n=1)
        if near:
            message += f"; did you mean {json.dumps(near[0], ensure_ascii=False)}?"
    return message


@functools.cache
def validator(name: str) -> FastValidator:
    """The fast validator for schema ``name`` (cached per process)."""
    return FastValidator(name)


@functools.lru_cache(maxsize=64)
def specialized(name: str, known: tuple[tuple[str, str], ...]) -> Callable[[Any], bool]:
    """jsonschema-rs's ``is_valid`` of schema ``name`` for the instances whose top-level
    fields ``known`` (``(("lane", "event"), ("op", "set_status"))``) hold those strings: the
    ``if`` s those fields decide are decided once (:mod:`gitst.schemas.partial`). The same
    verdict as :func:`validator`'s on every such instance - and only on those."""
    return FastValidator(name, known).is_valid


@functools.cache
def compiled(name: str) -> Callable[[Any], bool] | None:
    """Schema ``name`` compiled to Python closures (:mod:`gitst.schemas.compiled`): verdicts
    with no native import and no build. None when the schema uses a keyword outside the
    compiled subset."""
    from gitst.schemas.compiled import Unsupported, compile_schema  # lazy: urllib.parse, for a few instances only

    documents = {schema.get("$id", SCHEMA_BASE + n + SUFFIX): schema for n, schema in _needed(name).items()}
    try:
        return compile_schema(load(name).get("$id", SCHEMA_BASE + name + SUFFIX), documents)
    except Unsupported:
        return None


def verdicts(name: str, *, few: bool) -> Callable[[Any], bool]:
    """Whether an instance is valid under schema ``name``, as a function. For ``few``
    instances (a check of a few hundred), the schema compiled to Python: jsonschema-rs's
    import and build would cost more than the checks. Otherwise - or when the schema does
    not compile - jsonschema-rs's ``is_valid``. The messages of an invalid instance always
    come from :func:`validator` (``errors``)."""
    if few:
        check = compiled(name)
        if check is not None:
            return check
    return validator(name).is_valid


def _by_id() -> dict[str, Schema]:
    return {schema.get("$id", SCHEMA_BASE + n + SUFFIX): schema for n, schema in _all_schemas().items()}


def _pick(annotation: Any, keyword: str) -> str | None:
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, dict):
        value = annotation.get(keyword, annotation.get("*"))
        return value if isinstance(value, str) else None
    return None


@functools.lru_cache(maxsize=4096)
def annotations_at(keyword_location: str) -> tuple[str | None, str | None]:
    """``(code, message)`` declared by the schema for the keyword at ``keyword_location``.

    Walks from the schema document named by the URI down the JSON pointer; every subschema
    passed may declare ``x-gitst-code`` / ``x-gitst-message``; the deepest one wins.
    """
    if not keyword_location or "#" not in keyword_location:
        return None, None
    base, _, fragment = keyword_location.partition("#")
    node: Any = _by_id().get(base)
    if node is None:
        return None, None
    parts = [p.replace("~1", "/").replace("~0", "~") for p in fragment.split("/")[1:]] if fragment else []
    keyword = parts[-1] if parts else ""
    code = message = None
    for part in [None, *parts[:-1]]:
        if part is not None:
            node = _child(node, part)
            if node is None:
                break
        if isinstance(node, dict):
            code = _pick(node.get("x-gitst-code"), keyword) or code
            message = _pick(node.get("x-gitst-message"), keyword) or message
    return code, message


def _child(node: Any, part: str) -> Any:
    """What ``part`` (a key, or an array index) names in a schema node; None when nothing."""
    if isinstance(node, dict):
        return node.get(part)
    if isinstance(node, list) and part.isdigit() and int(part) < len(node):
        return node[int(part)]
    return None


def schema_text(name: str) -> bytes:
    """The bytes of schema ``name`` as shipped (UsageError for an unknown name)."""
    load(name)
    from importlib.resources import files  # lazy: ~10 ms of imports, for `git st schema show` only

    return files(__package__).joinpath(name + SUFFIX).read_bytes()
