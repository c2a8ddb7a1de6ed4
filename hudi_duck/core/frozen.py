"""Frozen dataclass values made by the thousand.

A plan makes a value per listed file, file slice and timeline file name (5,000 base
files, 5,000 slices and 3,000 instants for a table of 5,000 file groups and 500
commits). A frozen dataclass's generated ``__init__`` sets each field through
``object.__setattr__``, which costs about three times filling the instance's
dictionary at once. The value is the same either way: equality, hashing, ``repr``
and the refusal to change a field come from the class, not from ``__init__``.
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")

_new = object.__new__
_set = object.__setattr__


def frozen_value(cls: type[T], fields: dict[str, Any]) -> T:
    """The instance of frozen dataclass ``cls`` holding ``fields`` (every field, by name):
    what ``cls(**fields)`` makes, without its per-field ``object.__setattr__``."""
    made = _new(cls)
    _set(made, "__dict__", fields)
    return made
