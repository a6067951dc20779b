"""What a sweep's results mean: finished runs as trade-off points, the Pareto frontier
(lower exact peak, higher accuracy) and the best setting under a memory budget."""

from __future__ import annotations

from dataclasses import dataclass

from svmcore.spec.errors import ConfigError
from svmcore.store.sqlite import RunRecord, RunStatus


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


def tradeoff_points(records: list[RunRecord]) -> list[TradeoffPoint]:
    """Finished runs as points; completed ones not dominated in (lower peak, higher
    accuracy) are on the frontier. Out-of-memory runs are kept (at the peak they
    reached) so the view shows where the cap cut in."""
    pts = []
    for r in records:
        s = r.result
        if r.status not in (RunStatus.COMPLETED, RunStatus.OOM) or not s.peak_rss_mb:
            continue
        pts.append(TradeoffPoint(r.id, float(s.peak_rss_mb), s.accuracy, s.samples_per_s, r.status.value,
                                 r.label or f"run {r.id}", host=r.host, balanced_accuracy=s.balanced_accuracy))
    done = [p for p in pts if p.status == "completed" and p.accuracy is not None]
    frontier = {p.run_id for p in pareto_front(done)}
    return [TradeoffPoint(**{**p.__dict__, "on_frontier": p.run_id in frontier}) for p in pts]


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


def best_under(points: list[TradeoffPoint], budget_mb: float, objective: str = "accuracy") -> TradeoffPoint | None:
    """The completed run with the best ``objective`` (accuracy, balanced_accuracy or
    samples_per_s) whose exact peak fits ``budget_mb``; ties go to the smaller peak."""
    if objective not in OBJECTIVES:
        raise ConfigError("objective", f"{objective!r} is not one of: {', '.join(OBJECTIVES)}")
    fits = [p for p in points if p.status == "completed" and p.peak_mb <= budget_mb
            and getattr(p, objective) is not None]
    if not fits:
        return None
    return max(fits, key=lambda p: (getattr(p, objective), -p.peak_mb))
