"""Run-to-run noise: how far two runs of the same setting differ, and whether a delta the
product shows exceeds that. The one definition of "within noise" for every page and
command that sets runs against each other (Compare's headline, Story, the fit's card,
Learn's remedy verdicts). Where the runs compared include repeats of one setting (knobs
alike but the seed), their own spread counts when it is wider.

Pure: plain values in, plain values out, tested with ==.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass

# Measured on a shared 2-core machine, the default setup: 5 runs with one seed peaked 3.4% apart and ran
# 1.35x apart at the same accuracy; 6 seeds 2.8%, 1.68x and 1.4 points; the reference machine's identical
# runs 4.6% (12-01, docs/benchmarks.md) and 3.8% (12-05). A smaller peak change is the verdicts' "no saving".
NO_SAVING_PCT = 5.0
SPEED_NOISE_RATIO = 1.7
ACCURACY_NOISE_PTS = 1.5


REPEATS_BASIS = "measured on the repeats compared here"


@dataclass(frozen=True)
class Noise:
    """How far runs of one setting differ: the exact peak in percent, the speed as a ratio
    (fastest / slowest), accuracy in points; and where the figures come from."""

    peak_pct: float = NO_SAVING_PCT
    speed_ratio: float = SPEED_NOISE_RATIO
    accuracy_pts: float = ACCURACY_NOISE_PTS
    basis: str = "measured on this kind of machine"

    @property
    def measured(self) -> bool:
        """Widened to the spread of repeats compared here (a delta as large as it is within)."""
        return self.basis == REPEATS_BASIS

    def text(self) -> str:
        return (f"within run-to-run noise: exact peak ±{self.peak_pct:.0f}%, speed {self.speed_ratio:.1f}×, "
                f"accuracy ±{self.accuracy_pts:.1f} points ({self.basis})")


DEFAULT_NOISE = Noise()


# A delta that equals a measured spread is within it: the delta between the lowest and the
# highest repeat is the spread itself, up to how the ratio was rounded.
_ULP = 1e-9


def _inside(size: float, noise: float, measured: bool) -> bool:
    return size <= noise * (1 + _ULP) if measured else size < noise


def peak_within(pct: float | None, noise: Noise = DEFAULT_NOISE) -> bool:
    """A change of the exact peak (percent) smaller than the noise (no larger than the
    spread of the repeats, where the noise was measured on them)."""
    return pct is not None and _inside(abs(pct), noise.peak_pct, noise.measured)


def within(d: dict, noise: Noise = DEFAULT_NOISE) -> dict[str, bool]:
    """Which deltas of ``headlines.deltas`` are within the noise (False where there is no delta)."""
    ratio = d.get("speed_ratio")

    def points(key):
        return d.get(key) is not None and _inside(abs(d[key]) * 100, noise.accuracy_pts, noise.measured)

    return {"peak_pct": peak_within(d.get("peak_pct"), noise),
            "speed_ratio": (ratio is not None and ratio > 0
                            and _inside(max(ratio, 1 / ratio), noise.speed_ratio, noise.measured)),
            "accuracy": points("accuracy"), "balanced_accuracy": points("balanced_accuracy")}


def setting_key(config: dict) -> str:
    """What a run set, apart from its seed: runs with the same key are repeats of one setting."""
    return json.dumps({k: v for k, v in sorted(config.items()) if k != "seed"}, default=str)


def repeat_groups(configs: dict[int, dict]) -> list[list[int]]:
    """Runs that repeat one setting over seeds (two or more each), by first run."""
    groups: dict[str, list[int]] = {}
    for rid in sorted(configs):
        groups.setdefault(setting_key(configs[rid]), []).append(rid)
    return [ids for ids in groups.values() if len(ids) > 1]


@dataclass(frozen=True)
class Spread:
    """One setting's repeats: how many, and the mean, lowest and highest of a figure."""

    runs: tuple[int, ...]
    mean: float
    lo: float
    hi: float

    @property
    def widest_pct(self) -> float:
        """The largest change between two of the repeats, in percent: highest against lowest."""
        return (self.hi / self.lo - 1) * 100 if self.lo > 0 else 0.0


def spread(runs: list[int], values: list[float | None]) -> Spread | None:
    """The spread of one figure over a setting's repeats (None with fewer than two values)."""
    got = [(r, v) for r, v in zip(runs, values) if v is not None]
    if len(got) < 2:
        return None
    vals = [v for _, v in got]
    return Spread(tuple(r for r, _ in got), statistics.fmean(vals), min(vals), max(vals))


def measured_noise(peaks: list[Spread | None], speeds: list[Spread | None], accuracies: list[Spread | None],
                   base: Noise = DEFAULT_NOISE) -> Noise:
    """The noise to judge deltas by: ``base``, widened to the spread of any repeats among the
    runs compared (their peak range in percent, fastest over slowest, accuracy range)."""
    peak = max([base.peak_pct] + [s.widest_pct for s in peaks if s])
    speed = max([base.speed_ratio] + [s.hi / s.lo for s in speeds if s and s.lo > 0])
    acc = max([base.accuracy_pts] + [(s.hi - s.lo) * 100 for s in accuracies if s])
    widened = (peak, speed, acc) != (base.peak_pct, base.speed_ratio, base.accuracy_pts)
    return Noise(peak, speed, acc, REPEATS_BASIS if widened else base.basis)
