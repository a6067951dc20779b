"""A run repeated over seeds (Train's "Repeat over 2 more seeds"), with real worker runs on
the lean path: the same knobs with the next free seeds, and Compare's noise widened to their
measured spread."""

from __future__ import annotations

import random
import time

import pytest

from svmcore.app.lab import Lab
from svmcore.app.noise import DEFAULT_NOISE
from svmcore.spec.errors import ConfigError

LEAN = {"mode": "stream", "parser": "native", "solver": "native", "epochs": 1}


def _wait(lab, ids, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(not lab.store.get_run(i).status.is_finished() for i in ids):
        time.sleep(0.1)
    return [lab.store.get_run(i) for i in ids]


def test_a_run_repeated_over_seeds_and_compared_as_a_group(tmp_path):
    (tmp_path / "datasets").mkdir()
    path = tmp_path / "datasets" / "tiny.svm"
    rng = random.Random(3)
    path.write_text("".join(("1" if i % 2 else "-1") + " " + " ".join(
        f"{j}:{rng.random():.3f}" for j in sorted(rng.sample(range(1, 2048), 15))) + "\n" for i in range(1500)))
    lab = Lab(str(tmp_path))
    first = lab.runs.launch(dict(LEAN, dataset=str(path), seed=4), name="tiny")
    _wait(lab, [first])
    again = lab.runs.repeat(first, 2)
    recs = _wait(lab, again)
    assert [r.config["seed"] for r in recs] == [5, 6] and all(r.status.value == "completed" for r in recs)
    assert [r.label for r in recs] == [f"repeat of run {first}"] * 2 and [r.name for r in recs] == ["tiny"] * 2
    assert {k: v for k, v in recs[0].config.items() if k != "seed"} == {
        k: v for k, v in lab.store.get_run(first).config.items() if k != "seed"}
    [later] = lab.runs.repeat(first, 1)  # the next seed no run of the setting has
    assert lab.store.get_run(later).config["seed"] == 7
    _wait(lab, [later])
    assert lab.runs.repeats([first, *again, later]) == [[first, *again, later]]
    cmp = lab.runs.compare([first, *again], first)
    assert cmp.noise.peak_pct >= DEFAULT_NOISE.peak_pct and cmp.noise.speed_ratio >= DEFAULT_NOISE.speed_ratio
    assert {r.name for r in cmp.runs if r.id != first} == {"seed 5", "seed 6"}
    with pytest.raises(ConfigError, match="repeat over 1 to 9 more seeds"):
        lab.runs.repeat(first, 10)
