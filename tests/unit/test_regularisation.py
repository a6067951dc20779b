"""The default alpha follows the training rows (spec.regularisation), a value set by hand
wins, and every run surface can say which alpha a run used and why."""

import pytest

from svmcore.cli.knobs import knobs_table
from svmcore.spec.config import validate
from svmcore.spec.errors import ConfigError
from svmcore.spec.knobs import KNOBS
from svmcore.spec.regularisation import AUTO_ALPHA_MAX, AUTO_ALPHA_MIN, auto_alpha, auto_l2, regularisation


def test_auto_alpha_falls_as_the_training_rows_grow():
    rows = [1_000, 5_000, 20_000, 200_000, 1_000_000, 10_000_000]
    values = [auto_alpha(n) for n in rows]
    assert values == sorted(values, reverse=True)
    assert values[3] > values[4]  # 2*10^5 needs more than 10^6: the measured best fell from ~3e-6 to ~1e-6


@pytest.mark.parametrize("rows,best", [(200_000, 3e-6), (1_000_000, 1e-6)])
def test_auto_alpha_is_near_the_measured_best(rows, best):
    # bench/results/alpha.md: the grid's best on sparse-text; within a factor of 2 of it on a log scale
    assert best / 2 <= auto_alpha(rows) <= best * 2


@pytest.mark.parametrize("rows,low,high", [(5_000, 0.01, 0.1), (200_000, 0.3, 1.0), (1_000_000, 1.0, 3.0)])
def test_ftrls_auto_l2_grows_with_the_rows_into_the_measured_best(rows, low, high):
    # bench/results/alpha.md: FTRL's l2 adds to a sum over rows, so its best grows as the rows do
    assert low <= auto_l2(rows) <= high
    assert auto_l2(10 * rows) > auto_l2(rows)


def test_auto_alpha_is_kept_in_its_range():
    assert auto_alpha(10) == AUTO_ALPHA_MAX and auto_alpha(0) == AUTO_ALPHA_MAX
    assert auto_alpha(10**9) == AUTO_ALPHA_MIN


def test_alpha_is_auto_by_default_and_auto_is_a_value():
    assert validate().alpha is None and KNOBS["alpha"].default is None
    assert validate(alpha="auto").alpha is None and validate(alpha=" AUTO ").alpha is None
    assert validate(alpha="3e-6").alpha == 3e-6
    with pytest.raises(ConfigError, match="alpha"):
        validate(alpha="automatic")
    assert "or auto" in KNOBS["alpha"].describe_allowed()
    assert "| `--alpha` | float in [1e-09, 10] or auto | auto |" in knobs_table()


def test_regularisation_says_what_was_used_and_why():
    auto = regularisation(validate(), 200_000)
    assert auto["name"] == "alpha" and auto["source"] == "auto" and auto["value"] == auto_alpha(200_000)
    assert "200,000 training rows" in auto["why"]
    assert regularisation(validate(alpha=1e-4), 200_000) == {"name": "alpha", "value": 1e-4, "source": "set",
                                                             "why": "set by hand"}
    ftrl = regularisation(validate(solver="ftrl"), 200_000)
    assert ftrl["name"] == "l2" and ftrl["source"] == "auto" and ftrl["value"] == auto_l2(200_000)
    assert regularisation(validate(solver="ftrl", l2=1.0), 10) == {"name": "l2", "value": 1.0, "source": "set",
                                                                   "why": "set by hand"}
    assert validate(solver="ftrl", l2="auto").l2 is None and validate(solver="ftrl", l2=0).l2 == 0.0
    for model in ("mlp", "mlp-numpy"):  # a fixed default, not chosen from the rows (issue 40: it said auto)
        mlp = regularisation(validate(model=model), 200_000)
        assert mlp["source"] == "default" and mlp["value"] == 1e-5, mlp
        assert mlp["why"].startswith("default: the MLPs' fixed 1e-05") and "auto" not in mlp["why"], mlp
    assert regularisation(validate(model="kernel-svm", rows=1000, batch_size=100), 800) is None


def test_a_sweep_and_a_headline_name_auto_as_auto():
    from svmcore.app.headlines import knob_value_text
    from svmcore.sweeps.grid import grid_label, parse_grid

    grid = parse_grid(["alpha=auto,1e-5"])
    assert grid == {"alpha": [None, 1e-5]}
    assert [grid_label({"alpha": v}) for v in grid["alpha"]] == ["alpha=auto", "alpha=1e-05"]
    assert knob_value_text("alpha", None) == "alpha auto"
    assert knob_value_text("memory_cap_mb", None) == "no memory cap"


def test_auto_alpha_gives_the_smallest_class_the_penalty_a_class_of_balanced_data_gets():
    """The penalty is weighed against the mean loss over all rows, a class of share p bringing p
    of it: the rule, measured on balanced data, is scaled by the classes times the smallest share
    (w8a: 3% positive, 39,800 training rows: 8.6e-6 -> 5.1e-7; the grid's best for balanced
    accuracy was 3e-7). Balanced or unknown classes keep the rule in rows."""
    from svmcore.spec.regularisation import class_balance

    assert class_balance([20_000, 20_000]) == 1.0 and class_balance([]) == 1.0 and class_balance(None) == 1.0
    assert class_balance([48_270, 1_479]) == pytest.approx(2 * 1_479 / 49_749)
    assert class_balance([100, 300, 600]) == pytest.approx(0.3) and class_balance([0, 5, 5]) == 1.0
    assert auto_alpha(39_800) == 8.6e-6
    assert auto_alpha(39_800, class_balance([48_270, 1_479])) == 5.1e-7
    assert auto_alpha(200_000, 1.0) == auto_alpha(200_000)
    assert auto_alpha(10**6, 0.06) == AUTO_ALPHA_MIN  # the floor holds: smaller first steps are huge
    cfg = validate()
    reg = regularisation(cfg, 39_800, [48_270, 1_479])
    assert reg["value"] == 5.1e-7 and reg["source"] == "auto" and "class balance 0.059" in reg["why"]
    assert regularisation(validate(alpha=1e-5), 39_800, [48_270, 1_479])["value"] == 1e-5
    assert regularisation(validate(model="mlp-numpy"), 39_800, [48_270, 1_479])["value"] == 1e-5
