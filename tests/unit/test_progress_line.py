"""The live run panel's progress line (ui.live.progress_line)."""

from __future__ import annotations

from svmcore.app.runs import RunView
from svmcore.spec.result import RunSummary
from svmcore.spec.status import RunStatus
from ui.live import progress_line


def view(phase, events):
    return RunView(3, RunStatus.RUNNING, {"monitor": "full"}, RunSummary(), [], events, None, 0.0, phase, 9.4)


def test_between_the_last_phase_and_the_outcome_the_run_is_finishing_not_starting():
    """Issue 43: "phase: starting" showed for about a second after evaluate on every run."""
    assert progress_line(view(None, []))[1] == "phase: starting · 9 s elapsed"
    ended = [{"kind": "phase_start", "phase": "evaluate", "t_s": 8.0},
             {"kind": "phase_end", "phase": "evaluate", "t_s": 9.0, "wall_s": 1.0, "peak_rss_bytes": 1}]
    assert progress_line(view(None, ended))[1] == "phase: finishing (writing its outcome) · 9 s elapsed"
    assert progress_line(view("evaluate", ended[:1]))[1] == "phase: evaluate · 9 s elapsed"
