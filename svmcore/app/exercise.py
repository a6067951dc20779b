"""The Learn page's class exercise, "predict before you measure": the learner picks the
remedy they think lowers the default setup's peak and guesses by how much; the product
runs it (a before and an after run through the queue) and sets the guess beside the
measured exact peaks and the memory model's forecast.

The verdicts are pure (numbers in, text out, tested with ==); ``Exercise`` queues the
runs and reads them back.
"""

from __future__ import annotations

from dataclasses import dataclass

from svmcore.app.headlines import MINUS
from svmcore.app.remedies import REMEDIES, Experiment, Remedy
from svmcore.app.remedy_results import setup_text
from svmcore.predict.launch import launch_forecast
from svmcore.spec.errors import ConfigError
from svmcore.store.records import RunStatus
from svmcore.store.sqlite import Store

CLOSE_PTS = 5.0  # a guess within 5 percentage points of the measurement is well judged


@dataclass(frozen=True)
class Choice:
    """A remedy the learner can pick: its key, its experiment on the default setup, and
    how the page names it."""

    remedy: str
    experiment: str
    title: str

    @property
    def key(self) -> str:
        return f"{self.remedy}:{self.experiment}"


def choices(remedies: tuple[Remedy, ...] = REMEDIES) -> list[Choice]:
    """Every remedy with a runnable experiment on the knob defaults themselves (so all
    choices start from one and the same setup)."""
    out = []
    for r in remedies:
        for e in r.experiments:
            if r.pending is None and e.default_setup and not e.before and e.runnable() is None:
                out.append(Choice(r.key, e.key, f"{r.title}: {_change(e)}"))
    return out


def _change(e: Experiment) -> str:
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in e.after.items())


def pct_text(pct: float | None) -> str:
    """'−30%', '+4%', '±0%' (whole percent), '–' when unknown."""
    if pct is None:
        return "–"
    text = f"{abs(pct):.0f}"
    if text == "0":
        return "\u00b10%"
    return ("+" if pct > 0 else MINUS) + text + "%"


def change_pct(before_mb: float | None, after_mb: float | None) -> float | None:
    if not before_mb or after_mb is None:
        return None
    return (after_mb / before_mb - 1) * 100


def verdict(guess_pct: float, measured_pct: float) -> str:
    """How the guess compares with the measurement, in one sentence."""
    said = f"you said {pct_text(guess_pct)}, the exact peak changed {pct_text(measured_pct)}"
    off = guess_pct - measured_pct
    if abs(off) <= CLOSE_PTS:
        head = f"Well judged: {said}."
    elif off < 0:
        head = f"Too hopeful by {abs(off):.0f} points: {said}."
    else:
        head = f"Too cautious by {off:.0f} points: {said}."
    if measured_pct > -1:
        head += " This remedy does not lower the peak of this setup."
    return head


def model_verdict(forecast_pct: float | None, measured_pct: float, lower_bound: bool) -> str:
    """What the memory model said, against the measurement."""
    if forecast_pct is None:
        return "The memory model had no forecast for these runs."
    if lower_bound:
        return (f"The memory model's lower bounds (this machine is not calibrated) changed {pct_text(forecast_pct)}: "
                "they count each byte of data once and no allocator overhead, so they read the change, not the peak.")
    off = abs(forecast_pct - measured_pct)
    return f"The memory model forecast {pct_text(forecast_pct)}, {off:.0f} points from the measurement."


def reveal(guess_pct: float, measured: tuple[float, float] | None, forecast: tuple[float, float] | None,
           lower_bound: bool) -> dict:
    """The rows the page shows side by side (who, peak before → after, change) and the
    verdicts; ``measured`` and ``forecast`` are (before, after) peaks in MiB."""
    def peaks(pair):
        return "–" if pair is None else f"{pair[0]:,.0f} → {pair[1]:,.0f} MiB"

    m_pct = None if measured is None else change_pct(*measured)
    f_pct = None if forecast is None else change_pct(*forecast)
    model = "the memory model's lower bound (not calibrated)" if lower_bound else "the memory model's forecast"
    rows = [{"who": "your guess", "peak": "–", "change": pct_text(guess_pct)},
            {"who": model, "peak": peaks(forecast), "change": pct_text(f_pct)},
            {"who": "measured: exact peak (kernel high-water mark)", "peak": peaks(measured),
             "change": pct_text(m_pct)}]
    if m_pct is None:
        return {"rows": rows, "verdict": None, "model": None}
    return {"rows": rows, "verdict": verdict(guess_pct, m_pct), "model": model_verdict(f_pct, m_pct, lower_bound)}


class Exercise:
    def __init__(self, store: Store, learn):
        self.store = store
        self.learn = learn  # svmcore.app.learn.Learn: queues a remedy's before and after runs

    def choices(self) -> list[Choice]:
        return choices()

    def setup_text(self, quick: bool = False) -> str:
        """The setup every choice starts from, in a few words."""
        return setup_text(Experiment("setup", "setup", {}, {}).configs(None, quick)[0].to_dict())

    def start(self, key: str, guess_pct: float, quick: bool = False) -> dict:
        """Queue the chosen remedy's (``Choice.key``) before and after runs and remember the
        guess with the memory model's forecast of both (taken now, before anything is
        measured)."""
        choice = next((c for c in choices() if c.key == key), None)
        if choice is None:
            raise ConfigError("remedy", f"{key!r} is not one of the exercise's remedies")
        remedy = choice.remedy
        if not -100 < guess_pct < 1000:
            raise ConfigError("guess", f"a change of the peak between -100% and +1000% ({guess_pct:g}% given)")
        r = next(x for x in REMEDIES if x.key == remedy)
        before_cfg, after_cfg = r.experiment(choice.experiment).configs(None, quick)
        fb, fa = launch_forecast(before_cfg, self.store.home), launch_forecast(after_cfg, self.store.home)
        [(before, after)] = self.learn.run_remedy(remedy, experiment=choice.experiment, quick=quick)
        return {"remedy": remedy, "title": choice.title, "guess_pct": float(guess_pct), "before": before,
                "after": after, "forecast": (fb["peak_mb"], fa["peak_mb"]),
                "lower_bound": bool(fb["lower_bound"] or fa["lower_bound"])}

    def outcome(self, started: dict) -> dict:
        """Where the exercise stands: 'measuring' while a run goes, then the reveal (or why
        there is no measurement: a run that did not complete)."""
        recs = [self.store.get_run(started[k]) for k in ("before", "after")]
        if any(r is None for r in recs):
            return {"state": "gone", "text": "Its runs were deleted."}
        if any(not r.status.is_finished() for r in recs):
            return {"state": "measuring", "text": f"Measuring: runs {recs[0].id} (before) and {recs[1].id} (after)."}
        bad = next((r for r in recs if r.status != RunStatus.COMPLETED), None)
        measured = None if bad else (recs[0].result.peak_rss_mb, recs[1].result.peak_rss_mb)
        out = reveal(started["guess_pct"], measured, tuple(started["forecast"]), started["lower_bound"])
        text = f"Run {bad.id} ended {bad.status.value}: nothing to compare." if bad else ""
        return {"state": "done", "text": text, "runs": (recs[0].id, recs[1].id)} | out
