"""Back-references held weakly, so that a lint's objects form no reference cycle.

A node that points back at its owner (a Command at its Script, an Assignment at its Command, a
fact at its Job) through a :class:`BackRef` does not keep the owner alive: when the lint's
result is dropped, reference counting frees its shell model and facts at once, instead of the
cyclic garbage collector, whose full collections the language server would otherwise run inside
the typing latency (server/documents.py). The owner outlives what it owns as long as whoever
reads a node holds the node's owner (the Job, the LintResult).
"""
from __future__ import annotations

import weakref
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class BackRef(Generic[T]):
    """A dataclass field (``script: BackRef[Script] = BackRef()``) or attribute whose value, an
    object or None (the default), is held through a weak reference. Reading it once the object
    was freed raises ReferenceError: a bug (the reader dropped the owner), never a silent
    None."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.slot = "_" + name + "_ref"

    def __get__(self, obj: Any, objtype: Any = None) -> T | None:
        if obj is None:
            return None  # the dataclass field's default
        ref = obj.__dict__.get(self.slot)
        if ref is None:
            return None
        value = ref()
        if value is None:
            raise ReferenceError(f"{type(obj).__name__}.{self.name}: the object was freed")
        return value

    def __set__(self, obj: Any, value: T | None) -> None:
        # (through __dict__, which a frozen dataclass's __init__ may also do)
        obj.__dict__[self.slot] = weakref.ref(value) if value is not None else None


class Owner(BackRef[T]):
    """A :class:`BackRef` every instance sets (``job: Owner[Job] = Owner()``): reading it gives
    the object, never None; ReferenceError once the object was freed, or when it was never
    set."""

    def __get__(self, obj: Any, objtype: Any = None) -> T:
        value = super().__get__(obj, objtype)
        if value is None and obj is not None:
            raise ReferenceError(f"{type(obj).__name__}.{self.name}: never set")
        # (None only for the class itself: the dataclass field's default)
        return value  # type: ignore[return-value]
