"""A sweep's runs as Optuna's and W&B's dashboards show them: parallel coordinates (one axis
per knob the sweep varied, then the exact peak, the throughput and the accuracy; one line
per completed run), and which knob mattered for each of those objectives (a random forest's
impurity-based importances, scikit-learn's where Optuna's default is fANOVA; they sum to 1).

Pure: run records in, a typed view out, so every answer is tested with ==. scikit-learn is
imported when an importance is asked for, not with the dashboard.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from svmcore.spec.status import RunStatus
from svmcore.store.records import RunRecord

# each objective: its figure of a run's summary, and its label
OBJECTIVES = {"peak": ("peak_rss_mb", "exact peak (MiB)"), "speed": ("samples_per_s", "samples/s"),
              "accuracy": ("accuracy", "accuracy")}
RESULTS = tuple(OBJECTIVES.values())
MIN_RUNS = 4  # fewer completed runs than this say little about which knob mattered
TREES = 64


class Axis(NamedTuple):
    """One axis: each drawn run's value on it (a text axis: the index of its tick) and its ticks."""

    label: str
    values: list[float]
    tickvals: list[float]
    ticktext: list[str]


class ParallelInfo(NamedTuple):
    """The axes, the runs drawn (``colour``: each one's exact peak) and those left out, with why."""

    dimensions: list[Axis]
    runs: list[int]
    colour: list[float]
    left_out: list[tuple[int, str]]


def _result(r: RunRecord, key: str):
    """A result of a run; its peak is the run's peak (a data-parallel run's: all its processes)."""
    return r.summary.run_peak.mb if key == "peak_rss_mb" else getattr(r.summary, key)


RESULT_TICKS = 5


def distinct_ticks(values: list[float], n: int = RESULT_TICKS) -> tuple[list[float], list[str]]:
    """``n`` ticks from the lowest value to the highest, each labelled with the fewest
    decimals that tell every tick apart (a fixed three gave "0.771, 0.771, 0.770" for
    accuracies a thousandth apart)."""
    lo, hi = min(values), max(values)
    if lo == hi:
        return [lo], [_text(lo, 0 if float(lo).is_integer() else 3)]
    vals = [lo + (hi - lo) * i / (n - 1) for i in range(n)]
    for digits in range(0, 8):
        # each tick where its label says it is, and inside the axis (a tick past its end ran into its title)
        scale = 10 ** digits
        first, last = math.ceil(lo * scale - 1e-9) / scale, math.floor(hi * scale + 1e-9) / scale
        ticks = [min(max(round(v, digits), first), last) for v in vals]
        texts = [_text(v, digits) for v in ticks]
        if len(set(texts)) == n:
            return ticks, texts
    return vals, [_text(v, 8) for v in vals]


def _text(v: float, digits: int) -> str:
    return f"{v:,.{digits}f}"


def _ranks(values: list) -> tuple[list[float], list[str]]:
    """Values that are not all numbers (text, on/off, unset) as their rank among those seen, and the names."""
    names = sorted({str(v) for v in values})
    return [float(names.index(str(v))) for v in values], names


def _axis(label: str, values: list, result: bool = False) -> Axis:
    """A result: its ticks from the lowest to the highest value (``distinct_ticks``); a
    numeric knob: a tick at each value it took; any other (text, on/off, missing): one tick
    per value, in order."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        numbers = [float(v) for v in values]
        if result:
            ticks, texts = distinct_ticks(numbers)
        else:
            ticks = sorted(set(numbers))
            texts = [_text(v, 0 if v.is_integer() else 3) for v in ticks]
        return Axis(label, numbers, ticks, texts)
    ranks, names = _ranks(values)
    return Axis(label, [int(r) for r in ranks], list(range(len(names))), names)


def parallel_info(records: list[RunRecord], knobs: list[str]) -> ParallelInfo:
    """The axes (``knobs`` first, then the results) over the completed runs that have
    every result, the runs drawn (colour: exact peak) and those left out and why."""
    drawn, left = [], []
    for r in sorted(records, key=lambda r: r.id):
        if r.damaged:
            left.append((r.id, "damaged record"))
        elif r.status != RunStatus.COMPLETED:
            left.append((r.id, r.status.value))
        elif any(_result(r, key) is None for key, _ in RESULTS):
            left.append((r.id, "no " + next(lab for key, lab in RESULTS if _result(r, key) is None)))
        else:
            drawn.append(r)
    dims = []
    if drawn:
        dims = [_axis(k, [r.config.get(k) for r in drawn]) for k in knobs]
        sampled = not all(r.summary.run_peak.exact for r in drawn)  # a data-parallel run's peak is a sampled sum
        dims += [_axis("peak (MiB; data-parallel: all processes, sampled)" if key == "peak_rss_mb" and sampled
                       else label, [_result(r, key) for r in drawn], result=True) for key, label in RESULTS]
    return ParallelInfo(dims, [r.id for r in drawn], [float(r.summary.run_peak.mb) for r in drawn], left)


def _inside(value: float, ranges: list) -> bool:
    spans = ranges if ranges and isinstance(ranges[0], (list, tuple)) else [ranges]
    return any(lo <= value <= hi for lo, hi in spans)


def brushed(info: ParallelInfo, ranges: dict[int, list]) -> list[int]:
    """The runs drawn (``parallel_info``) whose line passes inside every range brushed on
    the chart (``{axis index: [lo, hi]}``, or a list of ``[lo, hi]`` for several ranges on
    one axis; a text axis's values are its ticks' indices)."""
    dims = info.dimensions
    return [rid for i, rid in enumerate(info.runs)
            if all(_inside(dims[a].values[i], r) for a, r in ranges.items() if a < len(dims))]


def _numbers(values: list) -> list[float]:
    """A knob's values as numbers: numbers as they are, anything else its rank (a forest splits on order)."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return [float(v) for v in values]
    return _ranks(values)[0]


@dataclass(frozen=True)
class Importance:
    """The knobs' importances for one objective, highest first; or, with none, why not."""

    objective: str
    label: str
    knobs: tuple[str, ...] = ()
    values: tuple[float, ...] = ()
    runs: int = 0
    why_none: str | None = None


def knob_importance(records: list[RunRecord], knobs: list[str], objective: str, trees: int = TREES,
                    seed: int = 0) -> Importance:
    """The importance of each knob in ``knobs`` that took more than one value among the
    completed runs that measured ``objective`` ('peak', 'speed' or 'accuracy'); importances
    rounded to 4 decimals, the forest's ``seed`` fixed so the answer is the same each time."""
    key, label = OBJECTIVES[objective]
    runs = [r for r in records if r.status == RunStatus.COMPLETED and _result(r, key) is not None]
    varied = [k for k in knobs if len({str(r.config.get(k)) for r in runs}) > 1]
    if len(runs) < MIN_RUNS:
        return Importance(objective, label, runs=len(runs),
                          why_none=f"{len(runs)} completed run(s) measured it; at least {MIN_RUNS} are needed")
    if not varied:
        return Importance(objective, label, runs=len(runs), why_none="no knob took more than one value")
    y = [float(_result(r, key)) for r in runs]
    if len(set(y)) == 1:
        return Importance(objective, label, runs=len(runs), why_none=f"every run measured the same {label}")
    from sklearn.ensemble import RandomForestRegressor

    columns = [_numbers([r.config.get(k) for r in runs]) for k in varied]
    X = [list(row) for row in zip(*columns)]
    forest = RandomForestRegressor(n_estimators=trees, random_state=seed, n_jobs=1).fit(X, y)
    ranked = sorted(zip(varied, forest.feature_importances_), key=lambda kv: (-kv[1], kv[0]))
    return Importance(objective, label, tuple(k for k, _ in ranked), tuple(round(float(v), 4) for _, v in ranked),
                      len(runs))
