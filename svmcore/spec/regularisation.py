"""The regularisation a run trains with: set by hand, or chosen for the data (the rules' measurements:
docs/benchmarks.md, ``bench/alpha.py``).

SGD's L2 strength ``alpha`` weighs the penalty against the *mean* loss over rows, so the strength a
file needs falls as it grows, but slower than 1 / rows: alpha also sets the step size of SGD's
schedule (eta = 1 / (alpha * t)), and too small a value takes huge first steps. Unset (``auto``),
alpha is ``1e-6 * (10^6 / training rows) ** (2/3)`` (through the best alphas measured at 2*10^5 and
10^6 rows) times the class balance (``class_balance``: against a class of share p the penalty is
alpha / p, and the rule was measured on balanced data), within ``[AUTO_ALPHA_MIN, AUTO_ALPHA_MAX]``.
FTRL's ``l2`` is added to a sum of gradients over rows, not a mean, so its weight against the data
falls faster than the data needs as rows grow: unset, l2 is ``sqrt(training rows / 10^6)`` within
``[AUTO_L2_MIN, AUTO_L2_MAX]``.
"""

from __future__ import annotations

from typing import Any

from svmcore.spec.choices import Solver
from svmcore.spec.registry import LINEAR_MODELS, MINIBATCH_MODELS

AUTO_ALPHA_AT_1M = 1e-6  # the measured best at 10^6 training rows
AUTO_ALPHA_POWER = 2 / 3
AUTO_ALPHA_MIN = 3e-7  # not below: 1e-7 was too small at 10^6 rows (its first steps are huge)
AUTO_ALPHA_MAX = 1e-4  # scikit-learn's own default, for the smallest files
MLP_ALPHA = 1e-5  # the MLPs' L2 when unset: a fixed default, not measured against rows
AUTO_L2_AT_1M = 1.0  # FTRL's best measured l2 at 10^6 training rows
AUTO_L2_POWER = 0.5
AUTO_L2_MIN, AUTO_L2_MAX = 0.01, 10.0


def class_balance(class_counts) -> float:
    """The number of classes times the smallest class's share of the rows, at most 1: 1 when
    the classes are the same size, 0.06 for w8a's 3% positives; 1 when the counts are not known
    (an empty list: synthetic data described from its knobs)."""
    counts = [int(c) for c in class_counts or () if int(c) > 0]
    if len(counts) < 2:
        return 1.0
    return min(1.0, len(counts) * min(counts) / sum(counts))


def auto_alpha(train_rows: int, balance: float = 1.0) -> float:
    """The L2 strength ``auto`` picks for averaged SGD on ``train_rows`` rows whose classes
    have this ``class_balance``."""
    value = AUTO_ALPHA_AT_1M * (1e6 / max(1, int(train_rows))) ** AUTO_ALPHA_POWER * min(1.0, balance)
    return float(f"{min(AUTO_ALPHA_MAX, max(AUTO_ALPHA_MIN, value)):.2g}")  # 2 digits: a value people can type


def auto_l2(train_rows: int) -> float:
    """FTRL's L2 strength ``auto`` picks on ``train_rows`` rows."""
    value = AUTO_L2_AT_1M * (max(1, int(train_rows)) / 1e6) ** AUTO_L2_POWER
    return float(f"{min(AUTO_L2_MAX, max(AUTO_L2_MIN, value)):.2g}")


AUTO_L2_TEXT = f"{AUTO_L2_AT_1M:g} x (training rows / 10^6)^(1/2), within [{AUTO_L2_MIN:g}, {AUTO_L2_MAX:g}]"
AUTO_RULE_TEXT = (f"{AUTO_ALPHA_AT_1M:g} x (10^6 / training rows)^(2/3) x class balance (classes x the "
                  f"smallest class's share, at most 1), within [{AUTO_ALPHA_MIN:g}, {AUTO_ALPHA_MAX:g}]")


def alpha_for(cfg: Any, train_rows: int, class_counts=None) -> float:
    """The alpha an SGD-trained model (linear-svm, kernel-approx, the MLPs) uses on ``train_rows``
    rows of classes counted ``class_counts`` (the scan's; unknown: balanced)."""
    if cfg.alpha is not None:
        return float(cfg.alpha)
    return auto_alpha(train_rows, class_balance(class_counts)) if cfg.model in LINEAR_MODELS else MLP_ALPHA


def l2_for(cfg: Any, train_rows: int) -> float:
    """The l2 FTRL uses on ``train_rows`` rows."""
    return float(cfg.l2) if cfg.l2 is not None else auto_l2(train_rows)


def regularisation(cfg: Any, train_rows: int, class_counts=None) -> dict | None:
    """What regularises this run's model and why: ``{"name", "value", "source", "why"}``
    (source ``set`` = given by hand, ``auto`` = chosen here, ``default`` = a fixed
    default). None for a model without one of these knobs (kernel-svm's is ``c``)."""
    if cfg.model in LINEAR_MODELS and cfg.solver == Solver.FTRL:
        if cfg.l2 is not None:
            return {"name": "l2", "value": float(cfg.l2), "source": "set", "why": "set by hand"}
        return {"name": "l2", "value": auto_l2(train_rows), "source": "auto",
                "why": f"auto: {AUTO_L2_TEXT} ({train_rows:,} training rows)"}
    if cfg.model not in MINIBATCH_MODELS:
        return None
    value = alpha_for(cfg, train_rows, class_counts)
    if cfg.alpha is not None:
        source, why = "set", "set by hand"
    elif cfg.model in LINEAR_MODELS:
        balance = class_balance(class_counts)
        source, why = "auto", f"auto: {AUTO_RULE_TEXT} ({train_rows:,} training rows, class balance {balance:.2g})"
    else:
        source, why = "default", f"default: the MLPs' fixed {MLP_ALPHA:g} (the rule in rows is measured for linear SGD only)"
    return {"name": "alpha", "value": value, "source": source, "why": why}
