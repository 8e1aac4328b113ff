"""Value classes that a command can define at no cost.

A ``@dataclass`` is built when its module is imported — ~1 ms each, ~3 ms frozen, on the
2-core dev box: it writes its ``__init__``, ``__repr__``, ``__eq__`` (and ``__setattr__``
when frozen) as source text and ``exec``s each — and a loop command in a fresh shell
(``git st next``, ``land``) imported 35-45 of them, 50-70 ms, before it did any work
(docs/performance.md, "Start-up"). Two ways here cost nothing at import:

- :class:`Value`, a base for plain classes with ``__slots__`` and an ``__init__`` of their
  own (the plan's hot paths): equality and a ``repr`` from their slots;
- :func:`value_class`, a decorator that takes a dataclass's place (``@value_class`` or
  ``@value_class(frozen=True)``; fields are annotations, with a default or a
  :func:`field` ``default_factory``): the same ``__init__`` (positional or by name,
  ``__post_init__`` called), ``__eq__`` and ``__repr__``; frozen instances refuse assignment
  and hash by their fields; :func:`replace` and :func:`as_dict` as in :mod:`dataclasses`. The
  methods are shared by every such class, so defining one costs a few dictionary operations
  (~25 µs against a dataclass's ~1,000). Type checkers see a dataclass (PEP 681,
  ``dataclass_transform``). Its ``__init__`` walks the fields (~1 µs more per instance than
  a dataclass's): for a command's values, not for per-record objects in loops over a plan.
"""

from __future__ import annotations

__all__ = ["FrozenInstanceError", "Value", "as_dict", "field", "replace", "value_class"]

TYPE_CHECKING = False  # not `typing`'s: the plan commands' fast path never imports typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from typing_extensions import dataclass_transform

    T = TypeVar("T")
else:

    def dataclass_transform(**_: object) -> object:
        return lambda decorated: decorated


class Value:
    """Equality (same class, equal slots) and a ``repr`` listing the slots; never hashable."""

    __slots__ = ()
    # The slots equality compares, when not all of them (e.g. a field that only explains).
    _compared: tuple[str, ...] = ()
    __hash__ = None  # type: ignore[assignment]  # compared by content and mutable, like a dataclass

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        names: tuple[str, ...] = self._compared or self.__slots__
        return all(getattr(self, name) == getattr(other, name) for name in names)

    def __repr__(self) -> str:
        names: tuple[str, ...] = self.__slots__
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__name__}({fields})"


# --- @value_class -----------------------------------------------------------------------------

_NONE = object()  # "no default": the field is required


class _Factory:
    """A field's ``default_factory``: called for each instance that does not pass the field."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], object]) -> None:
        self.make = make


def field(*, default_factory: Callable[[], T]) -> T:
    """A field whose default is made for each instance (``field(default_factory=list)``)."""
    return _Factory(default_factory)  # type: ignore[return-value]  # the class attribute the decorator reads


class FrozenInstanceError(AttributeError):
    """Assignment to a field of a frozen value (as ``dataclasses.FrozenInstanceError``)."""


# The fields of a value class: (name, default or _NONE, _Factory or None), base classes' first.
_Spec = tuple[tuple[str, object, "_Factory | None"], ...]


def _annotations(klass: type) -> dict[str, object]:
    """The class's own annotations (not its bases'), without importing ``inspect``."""
    own: dict[str, object] | None = klass.__dict__.get("__annotations__")  # noqa: RUF063 - inspect costs ~10 ms to import
    if own is None and "__annotate__" in klass.__dict__:  # Python 3.14, no `from __future__ import annotations`
        own = klass.__annotations__
    return own or {}


def _spec_of(cls: type) -> _Spec:
    fields: dict[str, tuple[str, object, _Factory | None]] = {}
    for klass in reversed(cls.__mro__[1:]):  # a base value class's fields come first
        inherited: _Spec | None = klass.__dict__.get("__value_fields__")
        if inherited is not None:
            fields.update((name, (name, default, make)) for name, default, make in inherited)
    for name, annotation in _annotations(cls).items():
        if str(annotation).startswith(("ClassVar", "typing.ClassVar")):
            continue
        default = cls.__dict__.get(name, _NONE)
        if isinstance(default, _Factory):
            fields[name] = (name, _NONE, default)
            delattr(cls, name)  # the factory is no class attribute for instances to share
        else:
            fields[name] = (name, default, None)
    return tuple(fields.values())


def _init(self: object, *args: object, **kwargs: object) -> None:
    spec: _Spec = type(self).__value_fields__  # type: ignore[attr-defined]
    if len(args) > len(spec):
        raise TypeError(f"{type(self).__name__}() takes {len(spec)} arguments but {len(args)} were given")
    put = object.__setattr__
    for position, (name, default, make) in enumerate(spec):
        if position < len(args):
            if name in kwargs:
                raise TypeError(f"{type(self).__name__}() got multiple values for argument {name!r}")
            got = args[position]
        elif name in kwargs:
            got = kwargs.pop(name)
        elif make is not None:
            got = make.make()
        elif default is not _NONE:
            got = default
        else:
            raise TypeError(f"{type(self).__name__}() missing required argument: {name!r}")
        put(self, name, got)
    if kwargs:
        raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {next(iter(kwargs))!r}")
    post = getattr(self, "__post_init__", None)
    if post is not None:
        post()


def _names(obj: object) -> list[str]:
    return [name for name, _default, _make in type(obj).__value_fields__]  # type: ignore[attr-defined]


def _values(self: object) -> tuple[object, ...]:
    return tuple(getattr(self, name) for name in _names(self))


def _eq(self: object, other: object) -> bool:
    if type(other) is not type(self):
        return NotImplemented
    return _values(self) == _values(other)


def _repr(self: object) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _names(self))
    return f"{type(self).__qualname__}({shown})"


def _hash(self: object) -> int:
    return hash(_values(self))


def _refuse(self: object, name: str, _value: object = None) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")


@dataclass_transform(field_specifiers=(field,))
def value_class(cls: type[T] | None = None, /, *, frozen: bool = False) -> Any:  # the class, or a decorator making one
    """``cls`` made a value class (module docstring): ``@value_class`` or ``@value_class(frozen=True)``."""

    def make(klass: type[T]) -> type[T]:
        klass.__value_fields__ = _spec_of(klass)  # type: ignore[attr-defined]
        own = klass.__dict__
        for name, method in (("__init__", _init), ("__eq__", _eq), ("__repr__", _repr)):
            if name not in own:
                setattr(klass, name, method)
        if frozen:
            klass.__setattr__ = _refuse  # type: ignore[method-assign]
            klass.__delattr__ = _refuse  # type: ignore[method-assign]
            if own.get("__hash__") is None:
                klass.__hash__ = _hash  # type: ignore[method-assign]
        elif "__hash__" not in own:
            klass.__hash__ = None  # type: ignore[assignment]  # mutable, compared by content: unhashable, like a dataclass
        return klass

    return make if cls is None else make(cls)


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of the value ``obj`` with ``changes`` (as ``dataclasses.replace``)."""
    kwargs = {name: changes.pop(name) if name in changes else getattr(obj, name) for name in _names(obj)}
    if changes:
        raise TypeError(f"{type(obj).__name__} has no field {next(iter(changes))!r}")
    return type(obj)(**kwargs)


def as_dict(obj: object) -> dict[str, Any]:
    """The value's fields as a dict; value classes in it (alone, or in lists, tuples and dicts)
    turned into dicts too, containers copied (as ``dataclasses.asdict``)."""
    return {name: _plain(getattr(obj, name)) for name in _names(obj)}


def _plain(item: Any) -> Any:
    if hasattr(type(item), "__value_fields__"):
        return as_dict(item)
    if isinstance(item, (list, tuple)):
        return type(item)(_plain(x) for x in item)
    if isinstance(item, dict):
        return {_plain(k): _plain(v) for k, v in item.items()}
    return item
