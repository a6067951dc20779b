"""Issue 43's small items on the Train page, headless (AppTest): what a small file's size
reads, and the knob labels as the sidebar shows them."""

from __future__ import annotations

import os

from tests.ui.test_apptest import assert_clean, open_page


def test_a_small_files_size_reads_in_kib_not_0_0_mib(app_home):
    os.makedirs(os.path.join(app_home, "datasets"))
    with open(os.path.join(app_home, "datasets", "small.svm"), "w") as f:
        for i in range(300):
            f.write(f"{1 if i % 2 else -1} 1:{i % 7 + 1} 3:{(i * 13) % 5 + 0.5}\n")
    at = open_page()
    at.selectbox(key="train_dataset").set_value("small.svm").run()
    assert_clean(at)
    size = next(i.value for i in at.info if "Training data:" in i.value)
    assert "0.0 MiB" not in size and "0.00 MiB" not in size and "0.00 GiB" not in size, size
    assert "**Training data: " in size and " KiB** as sparse float64" in size, size
    assert at.checkbox(key="train_memory_cap_mb_on").label == "set memory cap (MB)"


def test_a_sweeps_trade_off_points_are_named_beside_them(history_home):
    """Issue 43: the scatter's points were unlabelled."""
    from tests.ui.test_apptest import chart

    at = open_page("pages/2_Sweep.py")
    assert_clean(at)
    done = next(t for t in chart(at, "tradeoff")["data"] if t.get("name") == "completed runs")
    assert done["mode"] == "markers+text"
    assert sorted(done["text"]) == sorted(f"run {i}" for i in history_home["sweep_runs"])


def test_a_random_search_beside_the_grid_is_previewed_as_the_draws_it_takes(app_home):
    """Issue 43: Sweep offered the grid only; a random search draws some of its combinations."""
    at = open_page("pages/2_Sweep.py")
    assert_clean(at)
    assert any(c.value.startswith("4 combinations, 4 valid") for c in at.caption)
    at.segmented_control(key="sweep_search").set_value("random").run()
    at.number_input(key="sweep_draws").set_value(3).run()
    assert_clean(at)
    assert any(c.value.startswith("3 combinations drawn at random, 3 valid") for c in at.caption), \
        [c.value for c in at.caption]
