"""A shipped JSON Schema compiled to Python closures: verdicts for a few instances at no cost
of native import or build.

Checking a plan of a few hundred records through jsonschema-rs costs a command more in
importing the extension (~15-30 ms) and building the validator (~1-3 ms) than in checking
the records; here the schema becomes a tree of small Python functions in under a
millisecond (~2 ms with its regular expressions), and a plan record checks in ~7 µs. A large
input is still checked by jsonschema-rs, 4-5x faster per record (``catalog.verdicts``
chooses).

Only verdicts: the messages of an invalid instance always come from jsonschema-rs
(``catalog.validator(name).errors``), so there is one wording.

The subset is what the shipped schemas use, with draft 2020-12 meaning: ``type``, ``const``,
``enum``, ``required``, ``properties``, ``additionalProperties`` (beside ``properties`` only),
``items`` (one schema), ``allOf``, ``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``,
``$ref`` (to a shipped document, or a JSON pointer in one), ``minimum``, ``maximum``,
``exclusiveMinimum``, ``exclusiveMaximum``, ``minLength``, ``maxLength``, ``minItems``,
``maxItems``, ``minProperties``, ``maxProperties`` and ``pattern`` (Python's ``re``, as the
reference validator; the schemas' patterns are written so both engines agree,
docs/validate.md). Annotations (``title``, ``description``, ``x-gitst-*``, ...) are skipped.
A schema that uses any other keyword is not compiled (:class:`Unsupported`) and the caller
uses jsonschema-rs: a keyword is never silently ignored.

Instances are what a JSON parser returns (``orjson``/``json``: exact ``dict``, ``list``,
``str``, ``int``, ``float``, ``bool``, ``None``) — and a record about to be written, whose
strings may be ``str`` subclasses (a ``LockName``): every string check takes those as the
string they write. Equality is JSON's (``1 == 1.0``, ``true != 1``).
``tests/unit/schemas/test_differential.py`` holds every verdict equal to jsonschema-rs's and
python-jsonschema's, on every shipped schema.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

from gitst.schemas.partial import ANNOTATIONS as _ANNOTATIONS
from gitst.schemas.partial import discriminator, resolve

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Check = Callable[[Any], bool]
    Schema = dict[str, Any]  # a (sub)schema: a JSON object
    Keyword = Callable[["_Compiler", Any, str, Schema], Check]  # compiles one keyword of a schema

__all__ = ["Unsupported", "compile_schema"]

_NUMBER = (int, float)
_MISSING = object()


class Unsupported(Exception):
    """The schema uses something this compiler does not implement."""


def compile_schema(uri: str, documents: dict[str, Schema]) -> Check:
    """The check of the schema at ``uri`` (a document's ``$id``), resolving ``$ref`` s among
    ``documents`` (by ``$id``). Raises :class:`Unsupported` for a keyword outside the subset,
    a ``$ref`` to a document not given, an anchor or an ``$id`` below a document's root."""
    return _Compiler(documents).ref(uri)


def _true(instance: Any) -> bool:
    return True


def _false(instance: Any) -> bool:
    return False


def _is_integer(x: Any) -> bool:
    kind = type(x)
    return kind is int or (kind is float and x.is_integer())


_TYPES: dict[str, Check] = {
    "object": lambda x: type(x) is dict,
    "array": lambda x: type(x) is list,
    "string": lambda x: isinstance(x, str),  # a str subclass (a LockName) is the JSON string it writes
    "integer": _is_integer,
    "number": lambda x: type(x) in _NUMBER,
    "boolean": lambda x: type(x) is bool,
    "null": lambda x: x is None,
}


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: numbers by value (``1 == 1.0``), booleans only with booleans."""
    kind_a, kind_b = type(a), type(b)
    if kind_a in _NUMBER and kind_b in _NUMBER:
        return a == b
    if kind_a is not kind_b:
        return False
    if kind_a is list:
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if kind_a is dict:
        return a.keys() == b.keys() and all(json_equal(a[key], b[key]) for key in a)
    return a == b


class _Compiler:
    def __init__(self, documents: dict[str, Schema]):
        self.documents = documents
        self.done: dict[str, Check] = {}

    def ref(self, uri: str) -> Check:
        found = self.done.get(uri)
        if found is not None:
            return found
        cell: list[Check] = []

        def placeholder(x: Any) -> bool:  # a reference back into itself, while compiling
            return cell[0](x)

        self.done[uri] = placeholder
        base, _, fragment = uri.partition("#")
        document = self.documents.get(base)
        if document is None:
            raise Unsupported(f"$ref to {base!r}, not a shipped schema")
        try:
            node = resolve(document, fragment)
        except LookupError as exc:
            raise Unsupported(f"$ref {uri!r}: {exc}") from None
        check = self.node(node, base, root=not fragment)
        cell.append(check)
        self.done[uri] = check
        return check

    def node(self, schema: Any, base: str, *, root: bool = False) -> Check:
        if schema is True:
            return _true
        if schema is False:
            return _false
        if type(schema) is not dict:
            raise Unsupported(f"a schema must be an object or a boolean, got {schema!r}")
        if "$id" in schema and not root:
            raise Unsupported("$id below a document's root")
        checks: list[Check] = []
        for key, value in schema.items():
            if key in _ANNOTATIONS or key.startswith("x-") or key in ("then", "else"):
                continue
            compile_keyword = _KEYWORDS.get(key)
            if compile_keyword is None:
                raise Unsupported(f"keyword {key!r}")
            checks.append(compile_keyword(self, value, base, schema))
        return _all(checks)

    def nodes(self, schemas: Any, base: str) -> list[Check]:
        if type(schemas) is not list or not schemas:
            raise Unsupported("a list of schemas must be a non-empty array")
        return [self.node(schema, base) for schema in schemas]


def _all(checks: list[Check]) -> Check:
    if not checks:
        return _true
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda x: first(x) and second(x)
    every = tuple(checks)

    def check(x: Any) -> bool:
        for one in every:  # noqa: SIM110 - a loop: all() over a generator costs a frame per call
            if not one(x):
                return False
        return True

    return check


def _type(compiler: _Compiler, value: Any, base: str, schema: Schema) -> Check:
    names = [value] if type(value) is str else value
    if type(names) is not list or not names or any(name not in _TYPES for name in names):
        raise Unsupported(f"type {value!r}")
    if len(names) == 1:
        return _TYPES[names[0]]
    tests = tuple(_TYPES[name] for name in names)
    return lambda x: any(test(x) for test in tests)


def _const(compiler: _Compiler, value: Any, base: str, schema: Schema) -> Check:
    if type(value) is str:
        return lambda x: isinstance(x, str) and x == value
    return lambda x: json_equal(x, value)


def _enum(compiler: _Compiler, value: Any, base: str, schema: Schema) -> Check:
    if type(value) is not list:
        raise Unsupported("enum must be an array")
    if all(type(option) is str for option in value):
        options = frozenset(value)
        return lambda x: isinstance(x, str) and x in options
    listed = tuple(value)
    return lambda x: any(json_equal(x, option) for option in listed)


def _required(compiler: _Compiler, value: Any, base: str, schema: Schema) -> Check:
    if type(value) is not list or any(type(key) is not str for key in value):
        raise Unsupported("required must be an array of strings")
    keys = tuple(value)
    if len(keys) == 1:
        (key,) = keys
        return lambda x: type(x) is not dict or key in x
    return lambda x: type(x) is not dict or all(key in x for key in keys)


def _properties(compiler: _Compiler, value: Any, base: str, schema: Schema) -> Check:
    if type(value) is not dict:
        raise Unsupported("properties must be an object")
    pairs = tuple((key, compiler.node(sub, base)) for key, sub in value.items())

    def check(x: Any) -> bool:
        if type(x) is dict:
            get = x.get
            for key, test in pairs:
                found = get(key, _MISSING)
                if found is not _MISSING and not test(found):
                    return False
        return True

    return check


def _additional_properties(compiler: _Compiler, value: Any, base: str, schema: Schema) -> Check:
    """Every member whose name the ``properties`` beside it do not list (2020-12; with no
    ``patternProperties``, which this compiler refuses anyway)."""
    named = schema.get("properties", {})
    if type(named) is not dict or "patternProperties" in schema:
        raise Unsupported("additionalProperties beside patternProperties or a malformed properties")
    known = frozenset(named)
    test = compiler.node(value, base)

    def check(x: Any) -> bool:
        if type(x) is dict:
            for key, found in x.items():
                if key not in known and not test(found):
                    return False
        return True

    return check


def _items(compiler: _Compiler, value: Any, base: str, schema: Schema) -> Check:
    if type(value) is list:
        raise Unsupported("items as an array (draft 2019-09 and before)")
    test = compiler.node(value, base)

    def check(x: Any) -> bool:
        if type(x) is list:
            for element in x:
                if not test(element):
                    return False
        return True

    return check


def _all_of(compiler: _Compiler, value: Any, base: str, schema: Schema) -> Check:
    return _all(compiler.nodes(value, base))


def _any_of(compiler: _Compiler, value: Any, base: str, schema: Schema) -> Check:
    tests = tuple(compiler.nodes(value, base))
    return lambda x: any(test(x) for test in tests)


def _one_of(compiler: _Compiler, value: Any, base: str, schema: Schema) -> Check:
    tests = tuple(compiler.nodes(value, base))
    return lambda x: sum(1 for test in tests if test(x)) == 1


def _not(compiler: _Compiler, value: Any, base: str, schema: Schema) -> Check:
    test = compiler.node(value, base)
    return lambda x: not test(x)


def _if(compiler: _Compiler, value: Any, base: str, schema: Schema) -> Check:
    condition = _discriminator(value) or compiler.node(value, base)
    then = compiler.node(schema.get("then", True), base)
    otherwise = compiler.node(schema.get("else", True), base)
    return lambda x: then(x) if condition(x) else otherwise(x)


def _discriminator(schema: Any) -> Check | None:
    """A condition that asks whether one field is one of some strings (the form of every
    ``if`` that picks a record's shape, :func:`gitst.schemas.partial.discriminator`) as one
    dict lookup; None for any other condition. An instance that is not an object passes it,
    as its two keywords say."""
    found = discriminator(schema)
    if found is None:
        return None
    key, options = found

    def check(x: Any) -> bool:
        if type(x) is not dict:
            return True
        value = x.get(key, _MISSING)
        return type(value) is str and value in options

    return check


def _ref(compiler: _Compiler, value: Any, base: str, schema: Schema) -> Check:
    if type(value) is not str:
        raise Unsupported("$ref must be a string")
    uri = base + value if value.startswith("#") else urljoin(base, value)
    target, _, fragment = uri.partition("#")
    # A reference back into a schema being compiled gets its placeholder, which calls the
    # finished check once there is one.
    return compiler.ref(f"{target}#{fragment}" if fragment else target)


def _bound(compare: Callable[[Any, Any], bool]) -> Keyword:
    def compile_bound(compiler: _Compiler, value: Any, base: str, schema: Schema) -> Check:
        if type(value) not in _NUMBER:
            raise Unsupported("a bound must be a number")
        return lambda x: type(x) not in _NUMBER or compare(x, value)

    return compile_bound


def _size(kind: type[str] | type[list[Any]] | type[dict[str, Any]], at_least: bool) -> Keyword:
    def compile_size(compiler: _Compiler, value: Any, base: str, schema: Schema) -> Check:
        if type(value) is not int or value < 0:
            raise Unsupported("a size must be a non-negative integer")
        if at_least:
            return lambda x: not isinstance(x, kind) or len(x) >= value
        return lambda x: not isinstance(x, kind) or len(x) <= value

    return compile_size


def _pattern(compiler: _Compiler, value: Any, base: str, schema: Schema) -> Check:
    if type(value) is not str:
        raise Unsupported("pattern must be a string")
    try:
        search = re.compile(value).search
    except re.error:
        raise Unsupported(f"pattern {value!r}") from None
    return lambda x: not isinstance(x, str) or search(x) is not None


_KEYWORDS: dict[str, Keyword] = {
    "type": _type,
    "const": _const,
    "enum": _enum,
    "required": _required,
    "properties": _properties,
    "additionalProperties": _additional_properties,
    "items": _items,
    "allOf": _all_of,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "not": _not,
    "if": _if,
    "$ref": _ref,
    "minimum": _bound(lambda x, bound: x >= bound),
    "maximum": _bound(lambda x, bound: x <= bound),
    "exclusiveMinimum": _bound(lambda x, bound: x > bound),
    "exclusiveMaximum": _bound(lambda x, bound: x < bound),
    "minLength": _size(str, at_least=True),
    "maxLength": _size(str, at_least=False),
    "minItems": _size(list, at_least=True),
    "maxItems": _size(list, at_least=False),
    "minProperties": _size(dict, at_least=True),
    "maxProperties": _size(dict, at_least=False),
    "pattern": _pattern,
}
