"""The run panel's growth line under the outcome and its marks on the memory chart: the
memory a real finished run retained at the end of each pass."""

from __future__ import annotations

from tests.ui.test_apptest import assert_clean, chart, open_page, texts

MARKS = "anonymous memory retained after each pass (exact reading)"


def test_a_finished_run_shows_what_each_pass_retained(history_home):
    at = open_page()
    at.selectbox(key="shown_run").set_value(history_home["completed"]).run()  # 2 passes
    assert_clean(at)
    line = next((t for t in texts(at.caption) if t.startswith("Retained after each pass: ")), None)
    assert line is not None and "2 passes: 4 are needed to tell growth from what a run builds once" in line, \
        texts(at.caption)
    marks = [d for d in chart(at, "train_chart")["data"] if d.get("name") == MARKS]
    assert len(marks) == 1 and len(marks[0]["y"]) == 2 and all(v > 20 for v in marks[0]["y"]), marks
