"""Which knob mattered in a sweep, one objective at a time (exact peak, speed, accuracy),
as Optuna's dashboard shows parameter importances: a random forest (scikit-learn's,
where Optuna's default is fANOVA) fitted to the sweep's completed runs, the knobs the
sweep varied as its features, and its impurity-based importances (they sum to 1).

Pure: run records in, a typed view out (tested with ==). scikit-learn is imported when
an importance is asked for, not with the dashboard.
"""

from __future__ import annotations

from dataclasses import dataclass

from svmcore.spec.status import RunStatus
from svmcore.store.records import RunRecord

OBJECTIVES = {"peak": ("peak_rss_mb", "exact peak (MiB)"), "speed": ("samples_per_s", "samples/s"),
              "accuracy": ("accuracy", "accuracy")}
MIN_RUNS = 4  # fewer completed runs than this say little about which knob mattered
TREES = 64


@dataclass(frozen=True)
class Importance:
    """The knobs' importances for one objective, highest first; or, with none, why not."""

    objective: str
    label: str
    knobs: tuple[str, ...] = ()
    values: tuple[float, ...] = ()
    runs: int = 0
    why_none: str | None = None


def _encoded(values: list) -> list[float]:
    """A knob's values as numbers: numbers as they are, anything else (text, on/off, unset)
    as its rank among the values seen (a forest splits on order, so that is enough)."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return [float(v) for v in values]
    names = sorted({str(v) for v in values})
    return [float(names.index(str(v))) for v in values]


def knob_importance(records: list[RunRecord], knobs: list[str], objective: str, trees: int = TREES,
                    seed: int = 0) -> Importance:
    """The importance of each knob in ``knobs`` that took more than one value among the
    completed runs that measured ``objective`` ('peak', 'speed' or 'accuracy'); importances
    rounded to 4 decimals, the forest's ``seed`` fixed so the answer is the same each time."""
    key, label = OBJECTIVES[objective]
    runs = [r for r in records if r.status == RunStatus.COMPLETED and getattr(r.summary, key) is not None]
    varied = [k for k in knobs if len({str(r.config.get(k)) for r in runs}) > 1]
    if len(runs) < MIN_RUNS:
        return Importance(objective, label, runs=len(runs),
                          why_none=f"{len(runs)} completed run(s) measured it; at least {MIN_RUNS} are needed")
    if not varied:
        return Importance(objective, label, runs=len(runs), why_none="no knob took more than one value")
    y = [float(getattr(r.summary, key)) for r in runs]
    if len(set(y)) == 1:
        return Importance(objective, label, runs=len(runs), why_none=f"every run measured the same {label}")
    from sklearn.ensemble import RandomForestRegressor

    columns = [_encoded([r.config.get(k) for r in runs]) for k in varied]
    X = [list(row) for row in zip(*columns)]
    forest = RandomForestRegressor(n_estimators=trees, random_state=seed, n_jobs=1).fit(X, y)
    ranked = sorted(zip(varied, forest.feature_importances_), key=lambda kv: (-kv[1], kv[0]))
    return Importance(objective, label, tuple(k for k, _ in ranked), tuple(round(float(v), 4) for _, v in ranked),
                      len(runs))
