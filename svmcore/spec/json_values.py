"""Reading JSON that may be damaged or hostile: whether a decoded value has the type a
field is annotated with, and decoding that never raises anything but ``JSONValueError``.

Used wherever JSON written by us is read back (the store's columns, the worker's events,
an exported model's description): a value of another type is refused here, once, rather
than met as a TypeError in whatever formats it.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import types
import typing
from typing import Any, NotRequired


class JSONValueError(ValueError):
    """JSON text that cannot be read as the value wanted; the message says why."""


def kind_of(value: Any) -> str:
    """A decoded value in a few words, for a message: 'a JSON array', "the text 'x'"."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"{len(value)} bytes of binary data"
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    if isinstance(value, dict):
        return "a JSON object"
    if isinstance(value, list):
        return "a JSON array"
    if value is None:
        return "null"
    return f"{type(value).__name__} {value!r}"[:60]


def fits(value: Any, hint: Any) -> bool:
    """Whether a JSON value can stand for a field annotated ``hint``: a number for int or
    float alike (JSON keeps no difference; bool is no number), a JSON array for list or
    tuple, an object for dict or a record, a text for an enum; a type not named here is not checked."""
    return fits_types(value, accepted(hint))


def fits_types(value: Any, types_: tuple[type, ...]) -> bool:
    """``fits`` for the types ``accepted`` gave (for a reader that checks many rows)."""
    return isinstance(value, types_) and (not isinstance(value, bool) or bool in types_)


@functools.lru_cache(maxsize=None)
def accepted(hint: Any) -> tuple[type, ...]:
    """The Python types of decoded JSON that ``hint`` accepts (cached: a record's hints
    are few, and checking a row is then a few isinstance calls)."""
    origin = typing.get_origin(hint)
    if origin is NotRequired:
        return accepted(typing.get_args(hint)[0])
    if origin in (typing.Union, types.UnionType):
        return tuple(t for h in typing.get_args(hint) for t in accepted(h))
    if hint is type(None) or hint is None:
        return (type(None),)
    if hint in (int, float):
        return (int, float)
    if hint in (str, bool, dict):
        return (hint,)
    if hint in (list, tuple) or origin in (list, tuple):
        return (list,)
    if origin is dict or dataclasses.is_dataclass(hint):  # a record is read from an object
        return (dict,)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):  # by its value
        return (str,)
    return (object,)


def loads(text: str | bytes, expect: type = dict) -> Any:
    """JSON ``text`` decoded, which must be a ``expect`` (dict: an object, list: an array).
    Raises JSONValueError for text that is not JSON, nests too deeply for the decoder
    (its recursion limit, ~1,000 levels), or holds another type."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise JSONValueError("JSON nested too deeply to read") from None
    except ValueError as e:  # JSONDecodeError, and UnicodeDecodeError for bytes
        raise JSONValueError(f"not JSON ({e})") from None
    if not isinstance(value, expect):
        want = {dict: "object", list: "array"}.get(expect, expect.__name__)
        raise JSONValueError(f"{kind_of(value)}, not a JSON {want}")
    return value
