"""Learn's class exercise, "predict before you measure": the learner picks the remedy they
think lowers the default setup's peak and guesses by how much; the product runs it (a
before and an after run through the queue) and sets the guess beside the measured exact
peaks and the memory model's forecast.

For a room of learners, one round of guesses is collected from every browser, its answers
hidden until the teacher reveals them, and tallied beside the measurement. The round is
kept in ``$SVMCORE_HOME/exercise/class.json`` (written whole and renamed, so a crash never
leaves half of it), so every session of the server, and a restart, see the same round.
The tally and the verdicts are pure (numbers in, text out, tested with ==).
"""

from __future__ import annotations

import json
import logging
import math
import os
import statistics
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field

from svmcore.app.headlines import change_text, signed
from svmcore.app.learn import latest_pair, run_label
from svmcore.app.remedies import REMEDIES, Experiment, Remedy, remedy
from svmcore.app.remedy_results import setup_text
from svmcore.engine.hostinfo import available_memory_bytes, usable_cpus
from svmcore.engine.queue import RunQueue
from svmcore.predict.calibration import load_calibration
from svmcore.predict.launch import forecast
from svmcore.spec.errors import ConfigError
from svmcore.spec.knobs import defaults
from svmcore.spec.result import Forecast
from svmcore.spec.status import RunStatus
from svmcore.spec.units import MiB
from svmcore.store.sqlite import Store

log = logging.getLogger(__name__)
BIN_PTS = 10  # the tally's bins: ten points of the exact peak's change each
MOST_GUESSES = 500  # a round is a class, not a survey: more is a stuck key or a script
NAME_CHARS = 40
CLOSE_PTS = 5.0  # a guess within 5 percentage points of the measurement is well judged


def pct_text(pct: float | None) -> str:
    """'−30%', '+4%', '±0%' (whole percent), '–' when unknown."""
    return "–" if pct is None else signed(pct, 0) + "%"


def checked_guess(pct: float | None) -> float:
    """A guess of the exact peak's change, in percent; ConfigError for one that is no guess."""
    if pct is None:
        raise ConfigError("guess", "type your guess first: the change of the exact peak, in percent")
    if not -100 < pct < 1000:
        raise ConfigError("guess", f"a change of the peak between -100% and +1000% ({pct:g}% given)")
    return float(pct)


@dataclass(frozen=True)
class Guess:
    """One learner's guess: the remedy (``Choice.key``), the change of the exact peak in
    percent, and a name if they gave one."""

    choice: str
    pct: float
    who: str = ""
    at: float = 0.0


@dataclass(frozen=True)
class Round:
    """The class's round: teacher mode on or off, answers revealed or hidden, the guesses
    so far, and the runs prepared ahead (``prepared``: before/after run ids per choice)."""

    teacher: bool = False
    revealed: bool = False
    guesses: tuple[Guess, ...] = ()
    prepared: dict = field(default_factory=dict)
    quick: bool = False

    def guesses_for(self, choice: str) -> list[Guess]:
        return [g for g in self.guesses if g.choice == choice]


def answers_hidden(teacher: bool, revealed: bool) -> bool:
    """Whether the measured answers (the reveal, Learn's table of what each remedy saves, the
    loop that names which phase a remedy cannot lower) are hidden: in teacher mode, until the
    teacher reveals them, which takes at least one guess; alone, a learner sees the page whole."""
    return teacher and not revealed


@dataclass(frozen=True)
class Bin:
    """One bar of the tally: guesses from ``lo`` (included) to ``hi`` percent."""

    lo: float
    hi: float
    count: int


def tally(pcts: list[float], width: float = BIN_PTS) -> tuple[Bin, ...]:
    """The guesses in bins of ``width`` points, from the lowest guess's bin to the highest's
    (empty bins between them kept, so that the spread reads as it is)."""
    if not pcts:
        return ()
    lo, hi = math.floor(min(pcts) / width), math.floor(max(pcts) / width)
    counts = {k: 0 for k in range(lo, hi + 1)}
    for p in pcts:
        counts[math.floor(p / width)] += 1
    return tuple(Bin(k * width, (k + 1) * width, n) for k, n in counts.items())


def class_verdict(pcts: list[float], measured_pct: float | None) -> str | None:
    """How the class guessed, against the measurement: 'The class's median guess was −30%
    (12 guesses, −60% to +0%); the exact peak changed +1%: 0 of 12 within 5 points.'"""
    if not pcts or measured_pct is None:
        return None
    median = statistics.median(pcts)
    close = sum(abs(p - measured_pct) <= CLOSE_PTS for p in pcts)
    spread = f", {pct_text(min(pcts))} to {pct_text(max(pcts))}" if len(pcts) > 1 else ""
    return (f"The class's median guess was {pct_text(median)} ({len(pcts)} guess{'es' if len(pcts) != 1 else ''}"
            f"{spread}); the exact peak changed {pct_text(measured_pct)}: {close} of {len(pcts)} within "
            f"{CLOSE_PTS:.0f} points.")


def prepare_slots(peaks_mb: list[float], available_mb: float, cpus: int, share: float = 0.7) -> int:
    """How many runs to measure at once: as many as the cores allow whose forecast peaks
    fit in ``share`` of the memory available now (the highest peak for each), at least one."""
    if not peaks_mb:
        return 1
    return max(1, min(cpus, int(available_mb * share // max(peaks_mb))))


class Classroom:
    """The round of this data home, shared by every session (thread-safe)."""

    def __init__(self, home: str):
        self.path = os.path.join(home, "exercise", "class.json")
        self._lock = threading.Lock()

    def state(self) -> Round:
        with self._lock:
            return self._read()

    def _read(self) -> Round:
        try:
            with open(self.path) as f:
                raw = json.load(f)
            return Round(bool(raw.get("teacher")), bool(raw.get("revealed")),
                         tuple(Guess(**g) for g in raw.get("guesses", [])), dict(raw.get("prepared") or {}),
                         bool(raw.get("quick")))
        except FileNotFoundError:
            return Round()
        except (OSError, ValueError, TypeError) as e:  # a damaged file: a new round, said in the log
            log.warning("the class round in %s could not be read (%s): a new round starts", self.path, e)
            return Round()

    def _write(self, r: Round) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(self.path), prefix=".class-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(asdict(r), f)
            os.replace(tmp, self.path)
        except BaseException:
            os.unlink(tmp)
            raise

    def _update(self, **changes) -> Round:
        with self._lock:
            r = Round(**{**self._read().__dict__, **changes})
            self._write(r)
            return r

    def set_teacher(self, on: bool) -> Round:
        return self._update(teacher=bool(on), revealed=False)

    def reveal(self, on: bool = True) -> Round:
        """Show the answers to every browser (``on``), or hide them again. Raises ConfigError
        before any guess is in: the answers wait for the class's guesses."""
        if on and not self.state().guesses:
            raise ConfigError("reveal", "no guess is in yet: the answers wait for the class's guesses")
        return self._update(revealed=bool(on))

    def new_round(self) -> Round:
        """No guesses, answers hidden again (the prepared runs stay: they are measurements)."""
        return self._update(guesses=(), revealed=False)

    def set_prepared(self, prepared: dict, quick: bool) -> Round:
        return self._update(prepared=prepared, quick=bool(quick))

    def submit(self, choice: str, pct: float | None, who: str = "") -> Round:
        """Add one guess to the round. Raises ConfigError for a guess that is no guess."""
        pct = checked_guess(pct)
        who = " ".join((who or "").split())[:NAME_CHARS]
        if any(not c.isprintable() for c in who):
            raise ConfigError("name", "a name of printable characters")
        with self._lock:
            r = self._read()
            if len(r.guesses) >= MOST_GUESSES:
                raise ConfigError("guess", f"this round has {MOST_GUESSES} guesses already; start a new round")
            r = Round(**{**r.__dict__, "guesses": r.guesses + (Guess(choice, pct, who, time.time()),)})
            self._write(r)
            return r


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
    """Every remedy of the advice with a runnable experiment on the default setup: from the
    knob defaults themselves, or from the one knob it changes set where the remedy has
    something to change ("Fewer threads: threads 2 → 1"; the defaults train on one)."""
    out = []
    for r in remedies:
        for e in r.experiments:
            if not r.measured_by and e.default_setup and e.runnable() is None \
                    and set(e.before) <= set(e.after):
                out.append(Choice(r.key, e.key, f"{r.title}: {change_text(e.after, {**defaults(), **e.before})}"))
    return out


def change_pct(before_mb: float | None, after_mb: float | None) -> float | None:
    return None if not before_mb or after_mb is None else (after_mb / before_mb - 1) * 100


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
        self.classroom = Classroom(store.home)
        self._prepare_queue: RunQueue | None = None
        self._lock = threading.Lock()

    def choices(self) -> list[Choice]:
        return choices()

    def setup_text(self, quick: bool = False) -> str:
        """The setup every choice starts from, in a few words."""
        return setup_text(Experiment("setup", "setup", {}, {}).configs(None, quick)[0].to_dict())

    def start(self, key: str, guess_pct: float | None, quick: bool = False) -> dict:
        """Remember the guess with the memory model's forecast of the chosen remedy's
        (``Choice.key``) before and after runs (taken now, before anything is measured), and
        its measurement: the pair measured ahead on this machine at this size when there is
        one (``measured``), else the pair queued now."""
        choice, guess_pct = _choice(key), checked_guess(guess_pct)
        fb, fa = self.forecast(key, quick)
        ahead = self.measured(key, quick)
        before, after = ahead or self.learn.run_remedy(choice.remedy, experiment=choice.experiment, quick=quick)[0]
        return {"remedy": choice.remedy, "title": choice.title, "guess_pct": guess_pct, "before": before,
                "after": after, "forecast": (fb.predicted_peak_mb, fa.predicted_peak_mb), "ahead": ahead is not None,
                "lower_bound": fb.lower_bound or fa.lower_bound}

    def forecast(self, key: str, quick: bool = False) -> tuple[Forecast, Forecast]:
        """The memory model's forecast of the choice's before and after runs."""
        cal, cache_dir = load_calibration(self.store.home), os.path.join(self.store.home, "cache")
        before, after = (forecast(cfg, cal, cache_dir=cache_dir) for cfg in _configs(_choice(key), quick))
        return before, after

    def measured(self, key: str, quick: bool = False) -> tuple[int, int] | None:
        """The latest pair of the choice's runs on this machine, both completed, at the
        setting the exercise would run now (its size included): (before, after) run ids."""
        choice = _choice(key)
        want = [c.to_dict() for c in _configs(choice, quick)]
        r = remedy(choice.remedy)
        e = r.experiment(choice.experiment)
        labels = [run_label(r, e, which) for which in ("before", "after")]
        runs = self.store.list_runs(status=[RunStatus.COMPLETED])
        pair = latest_pair(*([x for x in runs if x.label == lab and x.config == cfg] for lab, cfg in zip(labels, want)))
        return pair and (pair[0].id, pair[1].id)

    def prepare(self, quick: bool = False, keys: list[str] | None = None) -> dict:
        """Measure every choice ahead, before the class: each one's before and after runs,
        several at once as far as the machine's memory allows (the forecast peaks, a lower
        bound counted 1.5x, within 70% of the memory available now; at most one a core).
        Exact peaks are each process's own, so running side by side leaves them true; their
        speeds are not compared here. ``keys``: these choices only (default: every one).
        Returns the pairs queued and how many go at once."""
        keys = [_choice(k).key for k in keys] if keys else [c.key for c in choices()]
        peaks = []
        for k in keys:
            for f in self.forecast(k, quick):
                peaks.append(f.predicted_peak_mb * (1.5 if f.lower_bound else 1.0))
        slots = prepare_slots(peaks, available_memory_bytes() / MiB, usable_cpus())
        with self._lock:
            if self._prepare_queue is None or self._prepare_queue.slots != slots:
                self._prepare_queue = RunQueue(self.store, slots=slots)
            queue = self._prepare_queue
        prepared = {}
        for k in keys:
            if self.measured(k, quick) is None:
                choice = _choice(k)
                prepared[k] = list(self.learn.run_remedy(choice.remedy, experiment=choice.experiment, quick=quick,
                                                         queue=queue)[0])
        self.classroom.set_prepared(prepared, quick)
        return {"pairs": prepared, "slots": slots, "already": len(keys) - len(prepared)}

    def prepared(self, quick: bool = False) -> dict:
        """How far the measurements ahead are: choices measured at this size, of all, and
        the runs of the preparation still queued or running."""
        keys = [c.key for c in choices()]
        ids = [i for pair in self.classroom.state().prepared.values() for i in pair]
        live = [i for i in ids if (rec := self.store.get_run(i)) is not None and not rec.status.is_finished()]
        return {"measured": sum(self.measured(k, quick) is not None for k in keys), "of": len(keys), "running": live}

    def class_view(self, key: str, quick: bool = False) -> dict:
        """The class's guesses for one choice, tallied, beside its measurement (measured
        ahead, or by a learner's "Measure it") and the memory model's forecast."""
        pcts = [g.pct for g in self.classroom.state().guesses_for(key)]
        pair = self.measured(key, quick)
        measured = None
        if pair:
            b, a = (self.store.get_run(i) for i in pair)
            measured = change_pct(b.summary.run_peak.mb, a.summary.run_peak.mb)
        fb, fa = self.forecast(key, quick)
        return {"key": key, "title": _choice(key).title, "guesses": pcts, "bins": tally(pcts), "runs": pair,
                "measured_pct": measured, "forecast_pct": change_pct(fb.predicted_peak_mb, fa.predicted_peak_mb),
                "lower_bound": fb.lower_bound or fa.lower_bound, "verdict": class_verdict(pcts, measured)}

    def submit(self, key: str, guess_pct: float | None, who: str = "") -> int:
        """One learner's guess into the class's round; returns how many guesses it has."""
        _choice(key)
        return len(self.classroom.submit(key, guess_pct, who).guesses)

    def outcome(self, started: dict) -> dict:
        """Where the exercise stands: 'measuring' while a run goes, then the reveal (or why
        there is no measurement: a run that did not complete)."""
        recs = [self.store.get_run(started[k]) for k in ("before", "after")]
        if any(r is None for r in recs):
            return {"state": "gone", "text": "Its runs were deleted."}
        if any(not r.status.is_finished() for r in recs):
            return {"state": "measuring", "text": f"Measuring: runs {recs[0].id} (before) and {recs[1].id} (after)."}
        bad = next((r for r in recs if r.status != RunStatus.COMPLETED), None)
        measured = None if bad else (recs[0].summary.run_peak.mb, recs[1].summary.run_peak.mb)
        out = reveal(started["guess_pct"], measured, tuple(started["forecast"]), started["lower_bound"])
        text = f"Run {bad.id} ended {bad.status.value}: nothing to compare." if bad else ""
        return {"state": "done", "text": text, "runs": (recs[0].id, recs[1].id)} | out


def _choice(key: str) -> Choice:
    choice = next((c for c in choices() if c.key == key), None)
    if choice is None:
        raise ConfigError("remedy", f"{key!r} is not one of the exercise's remedies")
    return choice


def _configs(choice: Choice, quick: bool):
    return remedy(choice.remedy).experiment(choice.experiment).configs(None, quick)
