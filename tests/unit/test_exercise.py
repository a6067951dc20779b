"""svmcore.app.exercise: the class exercise's choices and verdicts, compared with ==."""

from __future__ import annotations

from svmcore.app.exercise import choices, pct_text, reveal, verdict

M = "\u2212"


def test_every_choice_starts_from_the_default_setup_and_names_its_change():
    """Issue 43: "smaller batches", the advice every student starts from, was not in the list
    (its experiment started from batch 8,192); every remedy of the advice with a runnable
    default-setup experiment is a choice, named by its change from the setup's value."""
    found = {c.key: c.title for c in choices()}
    assert found["stream:default"] == "Streaming from disk: memory → stream"
    assert found["precision:default-float32"] == "Mixed precision (FP16): float64 → float32"
    assert found["batch:default-1024"] == "Smaller batches: batch size 1,024 → 256"
    assert found["batch:default"] == "Smaller batches: batch size 8,192 → 256"
    assert found["threads:default"] == "Fewer threads: threads 2 → 1"  # the defaults train on one
    assert "sparse:default" not in found, "not runnable on the default setup (it is already sparse)"
    assert {c.split(":")[0] for c in found} >= {"batch", "stream", "precision", "logging", "threads", "gc", "memmap",
                                                "hashing", "ftrl", "compiled", "ddp"}


def test_percent_texts():
    assert [pct_text(v) for v in (-30.4, 4.6, 0.3, -0.4, None)] == [f"{M}30%", "+5%", "\u00b10%", "\u00b10%", "–"]


def test_verdicts():
    assert verdict(-30, -27.2) == f"Well judged: you said {M}30%, the exact peak changed {M}27%."
    assert verdict(-50, -12) == f"Too hopeful by 38 points: you said {M}50%, the exact peak changed {M}12%."
    assert verdict(-10, -45) == f"Too cautious by 35 points: you said {M}10%, the exact peak changed {M}45%."
    assert verdict(-20, 3) == (f"Too hopeful by 23 points: you said {M}20%, the exact peak changed +3%. This remedy "
                               "does not lower the peak of this setup.")


def test_the_reveal_sets_guess_forecast_and_measurement_side_by_side():
    assert reveal(-30, (253.0, 180.0), (250.0, 190.0), False) == {
        "rows": [{"who": "your guess", "peak": "–", "change": f"{M}30%"},
                 {"who": "the memory model's forecast", "peak": "250 → 190 MiB", "change": f"{M}24%"},
                 {"who": "measured: exact peak (kernel high-water mark)", "peak": "253 → 180 MiB",
                  "change": f"{M}29%"}],
        "verdict": f"Well judged: you said {M}30%, the exact peak changed {M}29%.",
        "model": f"The memory model forecast {M}24%, 5 points from the measurement."}


def test_an_uncalibrated_machine_labels_its_lower_bounds_and_a_failed_run_has_no_verdict():
    out = reveal(-30, None, (60.0, 30.0), True)
    assert out["rows"][1] == {"who": "the memory model's lower bound (not calibrated)", "peak": "60 → 30 MiB",
                              "change": f"{M}50%"}
    assert out["rows"][2]["change"] == "–" and out["verdict"] is None
    assert reveal(-30, (100.0, 80.0), (60.0, 30.0), True)["model"].startswith(
        f"The memory model's lower bounds (this machine is not calibrated) changed {M}50%")
