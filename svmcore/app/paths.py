"""Confinement: every file a browser names must lie inside the data folders, after
symlinks are followed."""

from __future__ import annotations

import os

from svmcore.spec.config import shown_name
from svmcore.spec.errors import ConfigError


def is_inside(real: str, real_roots: list[str]) -> bool:
    return any(real == r or real.startswith(r + os.sep) for r in real_roots)


def confine(path: str, roots: list[str], knob: str = "dataset") -> str:
    """Resolve ``path`` and refuse anything outside ``roots`` after symlinks are
    followed. A relative path is looked up in each root in turn; the first one that
    names a file inside the roots wins. Returns the real (symlink-free) path."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise ConfigError(knob, "a file path is required")
    real_roots = [os.path.realpath(r) for r in roots]
    candidates = [path] if os.path.isabs(path) else [os.path.join(root, path) for root in roots]
    inside = False
    for candidate in candidates:
        real = os.path.realpath(candidate)
        if is_inside(real, real_roots):
            inside = True
            if os.path.isfile(real):
                return real
    if inside:
        raise ConfigError(knob, f"no such file in the data folders: {shown_name(os.path.basename(path))}")
    raise ConfigError(knob, "that path is outside the data folders (the data home's datasets and "
                      "uploads folders, and SVMCORE_DATA_DIRS); copy the file there (symlinks that lead outside are refused)")
