"""The feature-hashing rule (numpy only): which hashed column and which sign each
original column goes to. ``sources.hash_features`` applies it to a training chunk and
the lean scorer (``svmcore.serve``) to parsed rows, so both fold columns the same way."""

from __future__ import annotations

import numpy as np


def hashed_columns(indices: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(int32 hashed column, float64 sign +-1) of each 0-based column in ``indices``."""
    idx = np.asarray(indices).astype(np.uint64)
    h = (idx + np.uint64(0x632BE59BD9B4E019)) * np.uint64(0x9E3779B97F4A7C15)
    h ^= h >> np.uint64(32)
    cols = (h & np.uint64((1 << bits) - 1)).astype(np.int32)
    sign = np.where((h >> np.uint64(40)) & np.uint64(1), -1.0, 1.0)
    return cols, sign
