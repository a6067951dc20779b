"""Reading JSON that may be damaged or hostile: whether a decoded value has the type a
field is annotated with, and decoding that never raises anything but ``JSONValueError``.

Used wherever JSON written by us is read back (the store's columns, the worker's events,
an exported model's description): a value of another type is refused here, once, rather
than met as a TypeError in whatever formats it.
"""

from __future__ import annotations

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
    tuple, an object for dict; a type not named here is not checked."""
    origin = typing.get_origin(hint)
    if origin is NotRequired:
        return fits(value, typing.get_args(hint)[0])
    if origin in (typing.Union, types.UnionType):
        return any(fits(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint in (int, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint in (str, bool, dict):
        return isinstance(value, hint)
    if hint in (list, tuple) or origin in (list, tuple):
        return isinstance(value, list)
    if origin is dict:
        return isinstance(value, dict)
    return True


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
