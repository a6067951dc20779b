"""What a sweep's results mean: finished runs as trade-off points, the Pareto frontier
(lower exact peak, higher accuracy; and with speed as a third objective), the best
setting under a memory budget, what that pick costs in speed, and a default budget
drawn from the results."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from svmcore.spec.errors import ConfigError
from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import RunRecord


@dataclass(frozen=True)
class TradeoffPoint:
    run_id: int
    peak_mb: float
    accuracy: float | None
    samples_per_s: float | None
    status: str
    label: str
    on_frontier: bool = False
    host: str | None = None
    balanced_accuracy: float | None = None
    on_speed_frontier: bool = False  # not beaten on peak, accuracy and samples/s at once
    # the run's peak (``RunSummary.run_peak``): exact, or a data-parallel run's every process summed (sampled)
    all_processes_mb: float | None = None
    largest_worker_mb: float | None = None
    name: str = ""  # the name the user gave the run, if any
    peak_exact: bool = True  # False: peak_mb is a data-parallel run's sampled sum of all its processes


def tradeoff_points(records: list[RunRecord]) -> list[TradeoffPoint]:
    """Finished runs as points; completed ones not dominated in (lower peak, higher
    accuracy) are on the frontier. Out-of-memory runs are kept (at the peak they
    reached) so the view shows where the cap cut in."""
    pts = []
    for r in records:
        s, peak = r.summary, r.summary.run_peak
        if r.status not in (RunStatus.COMPLETED, RunStatus.OOM) or not peak.mb:
            continue
        peaks = peak.parallel
        pts.append(TradeoffPoint(r.id, float(peak.mb), s.accuracy, s.samples_per_s, r.status.value,
                                 r.label or f"run {r.id}", host=r.host, balanced_accuracy=s.balanced_accuracy,
                                 all_processes_mb=peaks.all_processes_mb if peaks else None,
                                 largest_worker_mb=peaks.largest_worker_mb if peaks else None, name=r.shown_name,
                                 peak_exact=peak.exact))
    done = [p for p in pts if p.status == "completed" and p.accuracy is not None]
    frontier = {p.run_id for p in pareto_front(done)}
    speed = {p.run_id for p in speed_front(done)}
    return [TradeoffPoint(**{**p.__dict__, "on_frontier": p.run_id in frontier,
                             "on_speed_frontier": p.run_id in speed}) for p in pts]


def pareto_front(points: list[TradeoffPoint]) -> list[TradeoffPoint]:
    """Points that no other point beats on both peak (lower) and accuracy (higher),
    sorted by peak."""
    front = []
    best_acc = float("-inf")
    for p in sorted(points, key=lambda p: (p.peak_mb, -p.accuracy)):
        if p.accuracy > best_acc:
            front.append(p)
            best_acc = p.accuracy
    return front


OBJECTIVES = ("accuracy", "balanced_accuracy", "samples_per_s")


def fits_budget(p: TradeoffPoint, budget_mb: float) -> bool:
    """Its run peak fits (a data-parallel run's: all its processes, which the machine holds at once)."""
    return p.peak_mb <= budget_mb and (p.all_processes_mb is None or p.all_processes_mb <= budget_mb)


def best_under(points: list[TradeoffPoint], budget_mb: float, objective: str = "accuracy") -> TradeoffPoint | None:
    """The completed run with the best ``objective`` (accuracy, balanced_accuracy or
    samples_per_s) whose exact peak fits ``budget_mb`` (a data-parallel run: and all its
    processes together, since the machine holds them all); ties go to the smaller peak."""
    if objective not in OBJECTIVES:
        raise ConfigError("objective", f"{objective!r} is not one of: {', '.join(OBJECTIVES)}")
    fits = [p for p in points if p.status == "completed" and fits_budget(p, budget_mb)
            and getattr(p, objective) is not None]
    if not fits:
        return None
    return max(fits, key=lambda p: (getattr(p, objective), -p.peak_mb))


def _beats(a: TradeoffPoint, b: TradeoffPoint) -> bool:
    """``a`` is at least as good as ``b`` on peak, accuracy and samples/s, and better on one."""
    sa, sb = a.samples_per_s or 0.0, b.samples_per_s or 0.0
    at_least = a.peak_mb <= b.peak_mb and a.accuracy >= b.accuracy and sa >= sb
    return at_least and (a.peak_mb < b.peak_mb or a.accuracy > b.accuracy or sa > sb)


def speed_front(points: list[TradeoffPoint]) -> list[TradeoffPoint]:
    """Points that no other point beats on all three objectives at once (lower peak,
    higher accuracy, more samples/s), sorted by peak: a fast run that costs memory stays."""
    return sorted((p for p in points if not any(_beats(q, p) for q in points if q is not p)),
                  key=lambda p: (p.peak_mb, -p.accuracy))


def default_budget(points: list[TradeoffPoint]) -> int | None:
    """A budget drawn from the results: the median exact peak of the completed runs,
    rounded up to a whole MiB, so that about half of them fit and the answer is a choice.
    None before any run has completed."""
    peaks = [p.peak_mb for p in points if p.status == "completed"]
    return math.ceil(statistics.median(peaks)) if peaks else None


def speed_cost(best: TradeoffPoint, points: list[TradeoffPoint], budget_mb: float) -> dict:
    """What the pick under the budget costs in speed: its samples/s against the fastest
    completed run under the budget and the fastest completed run of all (percent slower,
    0 when it is the fastest; None where a throughput is missing)."""
    done = [p for p in points if p.status == "completed" and p.samples_per_s]
    under = [p for p in done if fits_budget(p, budget_mb)]

    def slower(than: TradeoffPoint | None) -> float | None:
        if than is None or not best.samples_per_s:
            return None
        return max(0.0, 100 * (1 - best.samples_per_s / than.samples_per_s))

    fastest_under = max(under, key=lambda p: p.samples_per_s, default=None)
    fastest = max(done, key=lambda p: p.samples_per_s, default=None)
    return {"fastest_under": fastest_under, "slower_than_fastest_under_pct": slower(fastest_under),
            "fastest": fastest, "slower_than_fastest_pct": slower(fastest)}


def speed_cost_text(best: TradeoffPoint, cost: dict) -> str:
    """One sentence on what the pick costs in speed (``cost`` is ``speed_cost``'s)."""
    if not best.samples_per_s:
        return "Its throughput was not measured."
    fu, fa = cost["fastest_under"], cost["fastest"]
    if fu is None or fu.run_id == best.run_id:
        text = f"Speed: {best.samples_per_s:,.0f} samples/s, the fastest run under the budget too"
    else:
        text = (f"Speed cost: {best.samples_per_s:,.0f} samples/s, {cost['slower_than_fastest_under_pct']:.0f}% "
                f"slower than the fastest run under the budget (run {fu.run_id}: {fu.samples_per_s:,.0f} samples/s"
                + (f", accuracy {fu.accuracy:.4f}" if fu.accuracy is not None else "") + ")")
    if fa is not None and fu is not None and fa.run_id != fu.run_id:
        text += (f"; the fastest run of all (run {fa.run_id}: {fa.samples_per_s:,.0f} samples/s) peaked at "
                 f"{fa.peak_mb:,.1f} MiB, over the budget")
    return text + "."
