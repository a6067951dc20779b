"""Growth per pass: how much more memory a run holds at the end of each training pass than at
the end of the one before, told from what it retained after each (``result.PassMemory``).

The estimator: the median of the pass-to-pass differences of the retained anonymous memory
(RssAnon, every process of the run; file-backed pages, such as a memory-mapped dataset being
paged in, are left out: the kernel can drop them), with the lowest and highest difference as
its spread. Pass 1 is the baseline: what a run builds once (its model, a spill, a cache filled
in the first pass) is in it, and each later pass gives one difference. The median is robust to
one pass in which the allocator kept or gave back a block. One pass gives no difference: growth
is not measurable. Two or three give one or two: shown, not judged, since what a run builds once
can take more than one pass. From four passes on a run grows when the median is at
least ``GROWTH_NOISE_MB`` and every difference a rise of at least half that: growth that goes on
to the last pass. Anything else is within noise. Pure: no import beyond math and dataclasses (the
lean worker loads it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Runs that keep nothing from pass to pass differ by less than this between passes: measured on
# this machine's runs of 20,000-100,000 rows, 5 passes (memory, stream, memmap, the lean path and
# scikit-learn's solver), whose differences stayed within -0.3..+0.4 MiB (docs/runs.md).
GROWTH_NOISE_MB = 1.0
JUDGED_FROM_PASSES = 4


@dataclass(frozen=True)
class Growth:
    """The retained anonymous memory after each pass (MiB) and the growth per pass it shows:
    the median difference and its range (None with one pass)."""

    retained_mb: tuple[float, ...]
    per_pass_mb: float | None
    lo_mb: float | None
    hi_mb: float | None
    of: str = "anonymous memory"  # a data-parallel run's: of all its processes, summed
    heap_mb: tuple[float, ...] = ()  # a traced run's: the heap its tracker saw after each pass

    @property
    def passes(self) -> int:
        return len(self.retained_mb)

    @property
    def judged(self) -> bool:
        """Enough passes to tell growth from noise."""
        return self.passes >= JUDGED_FROM_PASSES

    @property
    def grows(self) -> bool:
        return self.judged and self.per_pass_mb >= GROWTH_NOISE_MB and self.lo_mb >= GROWTH_NOISE_MB / 2

    def reaching(self, limit_mb: float, peak_mb: float) -> int | None:
        """The pass in which a peak of ``peak_mb`` in the last pass, growing by the median per
        pass, meets ``limit_mb`` (a pass already run when it met it there); None when it does not grow."""
        if not self.grows:
            return None
        return max(1, math.ceil(self.passes + (limit_mb - peak_mb) / self.per_pass_mb))

    def text(self) -> str:
        """'retained after each pass: 141, 143, 145 MiB; +2.0 MiB a pass (1.8-2.2)', with what it means."""
        if not self.retained_mb:
            return "retained after each pass: no pass ended"
        head = f"retained after each pass: {_list(self.retained_mb)} MiB ({self.of}, exact readings)"
        if self.heap_mb:
            head += f", of which the traced heap {_list(self.heap_mb)} MiB"
        if self.per_pass_mb is None:
            return f"{head}; one pass: growth is not measurable"
        rate = f"{self.per_pass_mb:+.1f} MiB a pass"
        if not self.judged:
            return (f"{head}; {rate} ({self.passes} passes: {JUDGED_FROM_PASSES} are needed to tell growth from what "
                    "a run builds once)")
        spread = f"{rate} ({self.lo_mb:.1f} to {self.hi_mb:.1f})"
        if self.grows:
            return f"{head}; {spread}: it grows pass after pass"
        if -GROWTH_NOISE_MB < self.lo_mb and self.hi_mb < GROWTH_NOISE_MB:
            return f"{head}; {spread}: within noise (a run that keeps nothing varies by up to {GROWTH_NOISE_MB:g} MiB)"
        return f"{head}; {spread}: no growth pass after pass (it rose or fell in some passes only)"

    def to_dict(self) -> dict:
        return {"retained_anon_mb": [round(v, 1) for v in self.retained_mb], "per_pass_mb": _round(self.per_pass_mb),
                "lo_mb": _round(self.lo_mb), "hi_mb": _round(self.hi_mb), "grows": self.grows, "judged": self.judged,
                **({"traced_heap_mb": [round(v, 1) for v in self.heap_mb]} if self.heap_mb else {})}


def growth_of(retained_mb: list[float | None], of: str = "anonymous memory", heap_mb: tuple = ()) -> Growth:
    """The growth of a run that retained ``retained_mb`` (``of`` what) after its passes (unread passes
    left out); ``heap_mb``: a traced run's heap after each pass, shown beside."""
    got = tuple(v for v in retained_mb if v is not None)
    diffs = [b - a for a, b in zip(got, got[1:])]
    if not diffs:
        return Growth(got, None, None, None, of, tuple(heap_mb))
    return Growth(got, _median(diffs), min(diffs), max(diffs), of, tuple(heap_mb))


def _median(values: list[float]) -> float:
    """``statistics.median`` without its imports (random, decimal, fractions): the lean worker loads this module."""
    v, mid = sorted(values), len(values) // 2
    return v[mid] if len(values) % 2 else (v[mid - 1] + v[mid]) / 2


def _list(values: tuple[float, ...], most: int = 8) -> str:
    shown = [f"{v:,.0f}" for v in values]
    if len(shown) > most:  # a long run: its first passes and its last
        shown = shown[:most - 2] + ["…", shown[-1]]
    return ", ".join(shown)


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 2)
