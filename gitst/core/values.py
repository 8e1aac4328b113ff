"""A base for small value classes that a command can define at no cost.

A ``@dataclass`` is built when its module is imported — ~1 ms each, ~3 ms frozen, on the
2-core dev box — and a plan command in a fresh shell imports a dozen of them before it does
any work (docs/performance.md, "Start-up"). The classes on that path are plain classes with
``__slots__`` and an ``__init__`` of their own; :class:`Value` gives them equality and a
``repr`` from their slots.
"""

from __future__ import annotations

__all__ = ["Value"]


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
