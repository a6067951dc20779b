"""``MappingRecord``: a frozen dataclass that also reads as a read-only mapping, for a
record whose readers index it by key (``size["rows"]``) while its fields are typed."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any


class MappingRecord(Mapping):
    """Mix into a ``@dataclass(frozen=True)``: ``record["field"]``, ``.get``, ``dict(record)``
    and ``to_dict()`` see its fields; a key that is no field raises ``KeyError``."""

    def __getitem__(self, key: str) -> Any:
        if key not in self._names():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def _names(self) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(self))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
