"""Class-aware scores: the numbers that keep a majority-class model from looking good."""

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score, f1_score, recall_score

from svmcore.spec.scores import confusion, label_text, near_baseline, quality_warnings, scores


def _scores(y_true, y_pred, classes):
    classes = np.asarray(classes)
    m = confusion(np.searchsorted(classes, y_true), np.searchsorted(classes, y_pred), len(classes))
    return scores(m, list(classes))


def test_a_majority_class_model_scores_high_accuracy_and_half_balanced_accuracy():
    y = np.array([-1.0] * 97 + [1.0] * 3)
    s = _scores(y, np.full(100, -1.0), [-1.0, 1.0])
    assert s["accuracy"] == 0.97 == s["baseline_accuracy"]
    assert s["balanced_accuracy"] == 0.5
    assert s["f1"] == 0.0 and s["f1_of"] == "1"  # F1 of the minority class
    assert s["per_class_recall"] == {"-1": 1.0, "1": 0.0}
    assert s["confusion"] == {"classes": ["-1", "1"], "matrix": [[97, 0], [3, 0]]}
    assert near_baseline(s["accuracy"], s["baseline_accuracy"])


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("k", [2, 3, 5])
def test_scores_agree_with_scikit_learn(seed, k):
    rng = np.random.default_rng(seed)
    classes = np.arange(k) * 2.0 - 1
    p = rng.dirichlet(np.ones(k))
    y = rng.choice(classes, 500, p=p)
    pred = np.where(rng.random(500) < 0.7, y, rng.choice(classes, 500))
    s = _scores(y, pred, classes)
    assert s["accuracy"] == pytest.approx(np.mean(y == pred))
    assert s["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(y, pred))
    if k == 2:
        minority = classes[np.argmin([np.sum(y == c) for c in classes])]
        assert s["f1"] == pytest.approx(f1_score(y, pred, pos_label=minority))
    else:
        assert s["f1"] == pytest.approx(f1_score(y, pred, average="macro", labels=np.unique(y)))
        assert s["f1_of"] == "macro"
    for c, r in zip(classes, recall_score(y, pred, average=None, labels=classes)):
        assert s["per_class_recall"][label_text(c)] == pytest.approx(r)
    assert s["baseline_accuracy"] == pytest.approx(max(np.mean(y == c) for c in classes))


def test_a_class_absent_from_the_test_rows_is_left_out_of_the_balanced_accuracy():
    s = _scores(np.array([1.0, 1.0, 2.0]), np.array([1.0, 3.0, 2.0]), [1.0, 2.0, 3.0])
    assert s["balanced_accuracy"] == pytest.approx((0.5 + 1.0) / 2)
    assert set(s["per_class_recall"]) == {"1", "2"}


def test_text_labels_and_an_empty_test_set():
    s = _scores(np.array(["ham", "spam"]), np.array(["ham", "ham"]), ["ham", "spam"])
    assert s["per_class_recall"] == {"ham": 1.0, "spam": 0.0}
    empty = scores(np.zeros((2, 2), int), ["a", "b"])
    assert empty["accuracy"] is None and empty["balanced_accuracy"] is None


def test_near_baseline_margin():
    assert near_baseline(0.975, 0.96) and not near_baseline(0.99, 0.96)
    assert not near_baseline(None, 0.9) and not near_baseline(0.9, None)


def test_the_warning_rests_on_balanced_accuracy():
    # issue 20: on a 97%-negative file both models score near the 0.97 baseline; only the first is useless
    useless = quality_warnings(0.972, 0.549, 0.97, 2)
    assert quality_warnings(0.975, 0.573, 0.971, 2)  # seen on a label-sorted file trained in file order
    useful = quality_warnings(0.975, 0.806, 0.97, 2)
    assert [w["kind"] for w in useless] == ["near-chance"] and useful == []
    assert "balanced accuracy 0.5490" in useless[0]["text"] and "0.9700" in useless[0]["text"]
    assert quality_warnings(0.52, 0.52, 0.5, 2)[0]["text"].startswith("balanced accuracy 0.5200")
    assert "shuffle off" in quality_warnings(0.97, 0.5, 0.97, 2, shuffle=False)[0]["text"]
    assert quality_warnings(0.42, 0.42, 0.34, 3)  # three classes: chance is 1/3
    assert not quality_warnings(0.60, 0.60, 0.34, 3)
    assert quality_warnings(None, None, None, 2) == [] and quality_warnings(1.0, 1.0, 1.0, 1) == []
