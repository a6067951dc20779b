"""svmcore.app.fit: the doctor's short ranked answer and the result card of "Make
it fit", compared with ==."""

from __future__ import annotations

from svmcore.app.fit import CardSide, RemedyLine, diagnosis_answer, fit_card, versus_text
from svmcore.app.headlines import change_text
from tests.helpers import facts


def remedy(title, change, before, after, fits, measured=None):
    return {"title": title, "change": change, "predicted_peak_before_mb": before, "predicted_peak_after_mb": after,
            "fits": fits, "measured": measured}


MEMMAP = remedy("Memory-mapped files (memmap)", {"mode": "memmap"}, 200.0, 145.1, True,
                {"experiment": "1M rows", "machine": "reference", "speed_change_pct": -38.5,
                 "balanced_accuracy_change": -0.0021})
REPORT = {"verdict": "run 3 peaked at 200 MiB in load, 40 MiB above the budget of 160 MiB", "owner": "load",
          "remedies": [MEMMAP, remedy("Streaming from disk", {"mode": "stream"}, 200.0, 146.0, True),
                       remedy("Mixed precision (FP16)", {"precision": "float32"}, 200.0, 178.0, False),
                       remedy("Fewer threads", {"threads": 1}, 200.0, 199.0, False)],
          "useless": [{"title": "Smaller batches"}, {"title": "Periodic gc.collect()"}]}


def test_the_diagnosis_is_a_short_ranked_answer_with_the_rest_folded():
    """Issue 43: doctor's ~20 bullets were all shown; the answer is the verdict and the best
    three remedies, each with the knobs an "Apply" button sets, and how much the detail holds."""
    a = diagnosis_answer(REPORT)
    assert a.verdict == "Run 3 peaked at 200 MiB in load, 40 MiB above the budget of 160 MiB."
    assert a.remedies == (
        RemedyLine(1, "Memory-mapped files (memmap)", {"mode": "memmap"},
                   "memmap: predicted peak 200 MiB → 145 MiB — fits the budget; measured on Learn (reference, "
                   "1M rows): speed \u221238%, balanced accuracy \u22120.002", True),
        RemedyLine(2, "Streaming from disk", {"mode": "stream"}, "stream: predicted peak 200 MiB → 146 MiB — fits "
                                                                 "the budget", True),
        RemedyLine(3, "Mixed precision (FP16)", {"precision": "float32"},
                   "float32: predicted peak 200 MiB → 178 MiB", False))
    assert (a.more_remedies, a.useless) == (1, 2)
    assert diagnosis_answer({"verdict": "run 1 ran out of memory in imports", "remedies": [], "useless": []}) \
        .remedies == ()


def test_change_text_names_knobs_as_the_pickers_do():
    assert change_text({"mode": "memmap", "batch_size": 256}) == "memmap, batch size 256"
    # from a setup: only the knobs that move, each named once
    assert change_text({"mode": "memmap", "batch_size": 256, "memory_cap_mb": 150, "shuffle": True},
                       {"mode": "memory", "batch_size": 1024, "shuffle": True}) == \
        "memory → memmap, batch size 1,024 → 256, no memory cap → memory cap 150 MB"


FAILED = facts(1, "oom", peak_mb=229.0, phase="load", cap="cgroup", cap_mb=180.0)
OVER = facts(1, "completed", peak_mb=200.6, peak_phase="load", accuracy=0.760, balanced_accuracy=0.761,
                samples_per_s=158_074.0)
FITS = facts(4, "completed", peak_mb=162.8, peak_phase="train", accuracy=0.755, balanced_accuracy=0.755,
                samples_per_s=199_960.0)


def attempt(run_id, status, peak, changes, config):
    return {"run_id": run_id, "status": status, "peak_mb": peak, "change": {"changes": changes}, "config": config}


RESULT = {"fits": True, "budget_mb": 175, "summary": "precision float32 → run 2 over budget in load at 196 → "
                                                       "mode memmap → run 3, 163 MiB, fits",
          "attempts": [attempt(2, "completed", 196.1, [{"knobs": {"precision": "float32"}, "why": "forecast 189"}],
                               {"precision": "float32", "memory_cap_mb": 175}),
                       attempt(3, "completed", 162.8, [{"knobs": {"mode": "memmap"}, "why": "run 2 peaked at 196"},
                                                       {"knobs": {}, "why": "its copy is cached"}],
                               {"precision": "float32", "mode": "memmap", "memory_cap_mb": 175})]}


def test_the_card_sets_the_run_that_did_not_fit_beside_the_one_that_fits():
    """Issue 43: the result compared with an intermediate attempt ("0.7x slower than run 3",
    which was faster) and hid in a collapsed expander; the card compares with the run that did
    not fit, lists each change and why, and the knobs "Use these knobs" sets (not the budget's cap)."""
    card = fit_card(RESULT, OVER, FITS, 12.4)
    assert card.fits and card.runs == 2 and card.took_s == 12.4 and card.budget_mb == 175.0
    assert card.failed == CardSide(1, "run 1", "completed: exact peak 201 MiB, owned by load; 26 MiB above the "
                                               "budget of 175 MiB", 200.6, 158_074.0, 0.760, 0.761)
    assert card.fitting == CardSide(4, "run 4", "completed: exact peak 163 MiB, owned by train", 162.8, 199_960.0,
                                    0.755, 0.755)
    assert card.versus == ("Exact peak 201 MiB → 163 MiB (\u221219%), within the budget of 175 MiB; against run 1: "
                           "1.3× faster (within noise), accuracy \u22120.005 (within noise), balanced accuracy "
                           "\u22120.006 (within noise).")
    assert card.changes == (("float32", "forecast 189"), ("memmap", "run 2 peaked at 196"),
                            ("rerun as is", "its copy is cached"))
    assert card.apply == {"precision": "float32", "mode": "memmap"}


def test_an_oom_run_has_no_speed_or_accuracy_to_set_beside_the_fitting_one():
    assert versus_text(FAILED, FITS, 180) == (
        "Exact peak 229 MiB → 163 MiB (\u221229%), within the budget of 180 MiB; run 1 did not complete, so it "
        "has no speed or accuracy to set beside it.")
    assert versus_text(None, FITS, 180) == "Exact peak 163 MiB, within the budget of 180 MiB."


def test_a_card_of_a_fit_that_failed_has_nothing_to_apply():
    card = fit_card(dict(RESULT, fits=False), FAILED, None)
    assert card.fitting is None and card.apply == {} and card.versus == "No run fitted the budget."
    assert card.failed.outcome == "ran out of memory in load: exact peak 229 MiB under a 180 MiB cgroup cap"
