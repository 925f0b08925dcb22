"""`Value`: a dataclass's `==`, `hash` and `repr`, written once for every dataclass.

`@dataclass` writes each of those methods as source text and compiles it, for every class,
when its module is imported: with `__init__` and a frozen class's `__setattr__` and
`__delattr__`, six compilations a class, and about a third of what `mnemodb serve` spent
importing before it could answer `initialize`. Most of those methods are never called in a
server's life. A class declared `@dataclass(eq=False, repr=False)` that derives from
`Value` inherits these instead, which mean what the generated ones mean: equal when of
the same class with equal fields (those compared), hashed by those fields, shown as
`Name(field=value, ...)`. They read the class's fields once, on their first call.

`described` is for the descriptions the server builds once, at start, and only reads: a
tool's parameters, a profile's tools and prompts, the settings. It makes a dataclass (with
`Value` as a base, for `==`, `hash` and `repr`) that type checking holds frozen (assigning
a field is an error under mypy) without `@dataclass(frozen=True)`'s guard at run time,
whose `__setattr__` and `__delattr__` are two more compilations per class, about as many
again as `__init__`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform

__all__ = ["Value", "described"]

_T = TypeVar("_T")

_Getter = Callable[[Any], tuple[Any, ...]]

# Per class: the fields `==` compares, the fields `hash` hashes, and the fields `repr` shows.
_compared: dict[type, _Getter] = {}
_hashed: dict[type, _Getter] = {}
_shown: dict[type, tuple[str, ...]] = {}


def _fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(cls)


def _getter(names: tuple[str, ...]) -> _Getter:
    def get(value: Any) -> tuple[Any, ...]:
        return tuple([getattr(value, name) for name in names])

    return get


def _compared_of(cls: type) -> _Getter:
    get = _compared.get(cls)
    if get is None:
        get = _compared[cls] = _getter(tuple(f.name for f in _fields(cls) if f.compare))
    return get


def _hashed_of(cls: type) -> _Getter:
    get = _hashed.get(cls)
    if get is None:
        # A field's `hash` unset means: hashed if compared, as `@dataclass` does.
        names = tuple(f.name for f in _fields(cls) if (f.compare if f.hash is None else f.hash))
        get = _hashed[cls] = _getter(names)
    return get


class Value:
    """The base of dataclasses declared with `eq=False, repr=False`, giving them the
    `==`, `hash` and `repr` `@dataclass` would have written (frozen ones are hashable)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            get = _compared_of(self.__class__)
            return get(self) == get(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(_hashed_of(self.__class__)(self))

    def __repr__(self) -> str:
        cls = self.__class__
        names = _shown.get(cls)
        if names is None:
            names = _shown[cls] = tuple(f.name for f in _fields(cls) if f.repr)
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{cls.__qualname__}({shown})"


@dataclass_transform(frozen_default=True, eq_default=False)
def described(cls: type[_T]) -> type[_T]:
    """A dataclass of a description built once and only read (derive it from `Value` for
    `==`, `hash` and `repr`): frozen to type checking, not guarded at run time."""
    return dataclasses.dataclass(eq=False, repr=False)(cls)
