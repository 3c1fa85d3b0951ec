"""JSON round-trip for every ir type: stable key order, byte-identical for equal objects."""

from __future__ import annotations

import json
from functools import cache
from typing import Any, TypeVar

from pydantic import TypeAdapter

__all__ = ["to_json", "from_json", "to_jsonable", "from_jsonable"]

T = TypeVar("T")


@cache
def _adapter(cls: type) -> TypeAdapter:
    return TypeAdapter(cls)


def to_jsonable(obj: Any) -> Any:
    """``obj`` (a dataclass of ir types) as plain JSON-compatible Python data."""
    return _adapter(type(obj)).dump_python(obj, mode="json")


def from_jsonable(cls: type[T], data: Any) -> T:
    """Rebuild a ``cls`` from what ``to_jsonable`` produced."""
    return _adapter(cls).validate_python(data)


def to_json(obj: Any, *, indent: int | None = 1) -> str:
    """``obj`` as JSON text with sorted keys."""
    return json.dumps(to_jsonable(obj), indent=indent, sort_keys=True) + "\n"


def from_json(cls: type[T], text: str) -> T:
    """Rebuild a ``cls`` from ``to_json`` text."""
    return from_jsonable(cls, json.loads(text))
