"""The float16 upcast, measured: float16 is a storage precision only, so every batch's
values are copied to float32 before anything computes with them. ``METER`` counts
the bytes of each float32 copy (exact, from the arrays) and times each copy (measured
with a monotonic clock), so a run can report what half precision costs per batch."""

from __future__ import annotations

import time

import numpy as np


class UpcastMeter:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.batches = 0
        self.bytes_total = 0
        self.bytes_max = 0
        self.stored_bytes_total = 0
        self.seconds_total = 0.0
        self.seconds_max = 0.0

    def summary(self) -> dict | None:
        if not self.batches:
            return None
        n = self.batches
        return {"batches": n, "float32_bytes_per_batch": self.bytes_total / n, "float32_bytes_max": self.bytes_max,
                "float16_bytes_per_batch": self.stored_bytes_total / n, "float32_bytes_total": self.bytes_total,
                "seconds_per_batch": self.seconds_total / n, "seconds_max": self.seconds_max,
                "seconds_total": self.seconds_total,
                "source": "bytes exact (each batch's float32 copy), time measured around each copy"}


METER = UpcastMeter()


def to_compute(values, dtype) -> np.ndarray:
    """``values`` as an array of the compute ``dtype``; a float16 to float32 copy is measured."""
    if getattr(values, "dtype", None) != np.float16 or np.dtype(dtype) == np.float16:
        return np.asarray(values, dtype=dtype)
    # copied out of a memory map first, so that the time is the conversion's, not the disk's
    values = np.array(values) if isinstance(values, np.memmap) else np.asarray(values)
    t = time.perf_counter()
    out = values.astype(dtype)
    dt = time.perf_counter() - t
    m = METER
    m.batches += 1
    m.bytes_total += out.nbytes
    m.bytes_max = max(m.bytes_max, out.nbytes)
    m.stored_bytes_total += values.nbytes
    m.seconds_total += dt
    m.seconds_max = max(m.seconds_max, dt)
    return out
