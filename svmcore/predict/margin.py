"""How far the memory model's forecast can fall short of the measured peak, from its
own measured errors, so that "fits the budget" can be said with a stated confidence.

The bound is distribution-free: of ``n`` measured under-forecasts (measured / predicted
- 1), the k-th smallest with ``k = ceil(confidence * (n + 1))`` is exceeded by a new,
like run with probability at most ``1 - confidence`` (an order-statistic prediction
bound; it needs ``n >= confidence / (1 - confidence)``, 19 runs for 95%). Errors come,
in order of preference, from this machine's own runs (every run stores its forecast
beside its measurement), from the reference benchmark (``bench/results/estimate-accuracy``),
and last from the calibration's in-sample fit, which gives no bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Margin:
    """``rel``: the relative margin to add to a forecast (0.08: +8%), None if unknown;
    ``bound``: whether ``rel`` is a ``confidence`` prediction bound; ``n``: measured
    forecasts it rests on; ``basis``: where they were measured, in words."""

    rel: float | None
    bound: bool
    n: int
    basis: str
    confidence: float = CONFIDENCE

    def upper_mb(self, predicted_mb: float) -> float | None:
        return None if self.rel is None else predicted_mb * (1 + self.rel)


def under_forecasts(history) -> list[float]:
    """measured / predicted - 1 of each completed run that stored a forecast (positive:
    the model predicted too little)."""
    out = []
    for rec in history or []:
        if rec.status.value != "completed":
            continue
        s = rec.summary
        pred, measured = s.prediction and s.prediction.predicted_peak_mb, s.peak_rss_mb
        if pred and measured:
            out.append(measured / pred - 1)
    return out


def bound(errors: list[float], confidence: float = CONFIDENCE) -> float | None:
    """The order-statistic upper bound of the under-forecasts at ``confidence`` (never
    below 0), or None when there are too few to support it."""
    n = len(errors)
    k = math.ceil(confidence * (n + 1) - 1e-9)
    if n == 0 or k > n:
        return None
    return max(0.0, sorted(errors)[k - 1])


def forecast_margin(history=None, reference_errors: list[float] | None = None,
                    fit_error: dict[str, float] | None = None, confidence: float = CONFIDENCE) -> Margin:
    """The margin to leave between a forecast and a budget. ``history``: run records of
    this machine; ``reference_errors``: under-forecasts measured on the reference
    machine; ``fit_error``: the calibration's largest in-sample relative error per phase."""
    local = under_forecasts(history)
    rel = bound(local, confidence)
    if rel is not None:
        return Margin(rel, True, len(local), f"{len(local)} forecasts measured by runs on this machine", confidence)
    ref = list(reference_errors or [])
    rel = bound(ref, confidence)
    if rel is not None:
        return Margin(rel, True, len(ref), f"{len(ref)} forecasts measured on the reference machine "
                                           "(bench/results/estimate-accuracy), not this one", confidence)
    if fit_error:
        return Margin(max(fit_error.values()), False, 0,
                      "the calibration's largest in-sample error (too few measured forecasts for a bound)", confidence)
    return Margin(None, False, len(local), "no measured forecasts yet", confidence)


def statement(predicted_mb: float, budget_mb: float, margin: Margin) -> tuple[bool, str]:
    """Whether a forecast fits ``budget_mb`` with the margin's confidence, and the
    sentence that says so, or says what the margin is."""
    pct = round(100 * margin.confidence)
    upper = margin.upper_mb(predicted_mb)
    if upper is None:
        return False, (f"Predicted {predicted_mb:,.0f} MiB within {budget_mb:,.0f} MiB, with no margin known: "
                       f"{margin.basis}; the measured peak can be higher.")
    how = f"+{100 * margin.rel:.1f}% ({margin.basis})"
    if margin.bound and upper <= budget_mb:
        return True, (f"Fits with {pct}% confidence: predicted {predicted_mb:,.0f} MiB, at most "
                      f"{upper:,.0f} MiB with the model's {pct}% margin of {how}, within {budget_mb:,.0f} MiB.")
    if not margin.bound:
        return False, (f"Predicted {predicted_mb:,.0f} MiB within {budget_mb:,.0f} MiB; no {pct}% bound yet. "
                       f"A margin of {how} would make it {upper:,.0f} MiB.")
    return False, (f"Predicted {predicted_mb:,.0f} MiB, but not within {budget_mb:,.0f} MiB with {pct}% "
                   f"confidence: the model's {pct}% margin is {how}, so it may need up to {upper:,.0f} MiB.")
