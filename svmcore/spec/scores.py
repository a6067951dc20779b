"""Class-aware scores from a confusion matrix.

Accuracy alone can hide a useless model: on a test set that is 97% one class,
predicting that class everywhere scores 0.97. So every run reports, beside accuracy,
the balanced accuracy (the mean of the per-class recalls), the F1 of the minority
class (macro F1 with more than two classes), per-class recall, the confusion matrix
and the accuracy of always predicting the majority class (the baseline).

Pure numpy on purpose: the worker scores with it and loads nothing else for it.
"""

from __future__ import annotations

import numpy as np

BASELINE_MARGIN = 0.02  # accuracy within this of the baseline: it may mean nothing
CHANCE_MARGIN = 0.10  # balanced accuracy within this of chance (1 / classes): the model tells little apart


def label_text(label) -> str:
    """A class label as people write it: -1.0 -> '-1', 'pos' -> 'pos'."""
    if isinstance(label, (float, np.floating)) and float(label).is_integer():
        return str(int(label))
    return str(label.item() if isinstance(label, np.generic) else label)


def confusion(true_codes: np.ndarray, pred_codes: np.ndarray, n_classes: int) -> np.ndarray:
    """Counts of (true class, predicted class), rows = true."""
    flat = np.asarray(true_codes, np.int64) * n_classes + np.asarray(pred_codes, np.int64)
    return np.bincount(flat, minlength=n_classes * n_classes).reshape(n_classes, n_classes)


def scores(matrix: np.ndarray, classes: list) -> dict:
    """Accuracy, balanced accuracy, F1, per-class recall and the majority baseline of a
    confusion matrix over ``classes`` (rows true, columns predicted)."""
    m = np.asarray(matrix, dtype=np.int64)
    total = int(m.sum())
    support = m.sum(axis=1)
    predicted = m.sum(axis=0)
    hit = np.diag(m)
    present = support > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = np.where(present, hit / np.maximum(support, 1), np.nan)
        precision = np.where(predicted > 0, hit / np.maximum(predicted, 1), 0.0)
        f1 = np.where(precision + np.nan_to_num(recall) > 0,
                      2 * precision * np.nan_to_num(recall) / (precision + np.nan_to_num(recall)), 0.0)
    names = [label_text(c) for c in classes]
    if total == 0:
        return {"accuracy": None, "balanced_accuracy": None, "f1": None, "f1_of": None,
                "baseline_accuracy": None, "per_class_recall": {}, "confusion": {"classes": names, "matrix": m.tolist()}}
    if len(classes) == 2:
        present_idx = np.flatnonzero(present)
        minority = int(present_idx[np.argmin(support[present_idx])]) if present_idx.size else 1
        f1_value, f1_of = float(f1[minority]), names[minority]
    else:
        f1_value, f1_of = float(np.mean(f1[present])), "macro"
    return {
        "accuracy": float(hit.sum() / total),
        "balanced_accuracy": float(np.nanmean(recall[present])),
        "f1": f1_value,
        "f1_of": f1_of,
        "baseline_accuracy": float(support.max() / total),
        "per_class_recall": {names[i]: float(recall[i]) for i in np.flatnonzero(present)},
        "confusion": {"classes": names, "matrix": m.tolist()},
    }


def near_baseline(accuracy: float | None, baseline: float | None, margin: float = BASELINE_MARGIN) -> bool:
    """True when accuracy is no more than ``margin`` above always predicting the majority class."""
    return accuracy is not None and baseline is not None and accuracy - baseline <= margin


def quality_warnings(accuracy: float | None, balanced_accuracy: float | None, baseline: float | None,
                     n_classes: int | None, shuffle: bool | None = None) -> list[dict]:
    """What a run's scores warn about, each ``{"kind", "text"}``. The warning rests on balanced
    accuracy, which tells models apart where accuracy cannot: on a file 97% one class every model
    scores near the 0.97 baseline, but predicting one class has balanced accuracy 1 / classes
    (chance) whatever the mix. Accuracy near the baseline is said in the same warning, not alone."""
    if balanced_accuracy is None or not n_classes or n_classes < 2:
        return []
    chance = 1.0 / n_classes
    if balanced_accuracy - chance > CHANCE_MARGIN:
        return []
    text = (f"balanced accuracy {balanced_accuracy:.4f} is within {CHANCE_MARGIN * 100:.0f} points of chance "
            f"({chance:.4f}, what predicting one class scores): the model barely tells the classes apart")
    if near_baseline(accuracy, baseline):
        text += (f"; its accuracy {accuracy:.4f} is within {BASELINE_MARGIN * 100:.0f} points of always predicting "
                 f"the majority class ({baseline:.4f})")
    if shuffle is False:
        text += "; the rows were trained in file order (shuffle off)"
    return [{"kind": "near-chance", "text": text}]
